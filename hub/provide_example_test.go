package hub_test

import (
	"context"
	"fmt"

	"github.com/switchboard-rpc/switchboard/hub"
)

// An application follows what the peers provide, as the MCP endpoint
// does to tell agents their tool list changed: the watcher only signals,
// a goroutine of its own reads the new state.
func ExampleHub_WatchProvided() {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	changed := make(chan struct{}, 1)
	stop := h.WatchProvided(func() {
		select {
		case changed <- struct{}{}:
		default: // one signal pending is enough
		}
	})
	defer stop()

	service, leave := join(h, nil)
	if err := service.Call(context.Background(), "rpc.provide", []string{"page.summary", "page.*"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	<-changed
	fmt.Println(h.ProvidedNames())
	leave()
	<-changed
	fmt.Println(h.ProvidedNames())
	// Output:
	// [page.* page.summary]
	// []
}

package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A service provides a described method: the hub's rpc.discover, and so
// its MCP endpoint's tool list, carries the summary and the params.
func ExampleClient_ProvideDescribed() {
	url, stop := demoHub()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws := strings.Replace(url, "http", "ws", 1)

	service, err := client.Dial(ctx, ws, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer service.Close()
	type summaryParams struct {
		Words int `json:"words"`
	}
	summary := peer.Func(func(_ context.Context, p summaryParams) (string, error) {
		return fmt.Sprintf("a page, in %d words", p.Words), nil
	})
	_, err = service.ProvideDescribed(ctx, "page.summary", summary, client.Description{
		Summary: "Summarizes the open page",
		Params:  map[string]string{"words": "At most this many words"},
	})
	if err != nil {
		log.Fatal(err)
	}

	agent, err := client.Dial(ctx, ws, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
	var doc struct {
		Methods []struct {
			Name, Summary string
			Params        []struct{ Name, Description string }
		}
	}
	if err := agent.Call(ctx, "rpc.discover", nil, &doc); err != nil {
		log.Fatal(err)
	}
	for _, m := range doc.Methods {
		if m.Name == "page.summary" {
			b, _ := json.Marshal(m.Params)
			fmt.Println(m.Summary, string(b))
		}
	}
	// Output: Summarizes the open page [{"Name":"words","Description":"At most this many words"}]
}

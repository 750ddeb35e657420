package hub_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestBuiltinsDocumented: docs/protocol.md's table of system methods
// lists exactly the built-in methods, each sent as the table says (a
// call, a notification, or either; by the hub when peers answer it).
func TestBuiltinsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## System methods\n")
	if !ok {
		t.Fatal(`docs/protocol.md has no "## System methods" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	name := regexp.MustCompile("`(rpc\\.[a-z]+)`")
	documented := map[string]string{} // name -> its "who sends it" cell
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`rpc.") {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = strings.TrimSpace(cells[2])
		}
	}
	for _, b := range hub.Builtins() {
		who, ok := documented[b.Name]
		if !ok {
			t.Errorf("%s is not in docs/protocol.md's table of system methods", b.Name)
			continue
		}
		delete(documented, b.Name)
		kind := "call"
		switch {
		case b.Call && b.Notification:
			kind = "call or notification"
		case b.Notification:
			kind = "notification"
		}
		if !strings.HasSuffix(who, kind) || strings.HasSuffix(who, "or "+kind) {
			t.Errorf("%s: the docs say %q, the table a %s", b.Name, who, kind)
		}
		if fromHub := strings.HasPrefix(who, "hub,"); fromHub != (b.Home == hub.HomeClient) {
			t.Errorf("%s: the docs say %q, the table that %s answers it", b.Name, who, b.Home)
		}
	}
	for n := range documented {
		t.Errorf("docs/protocol.md lists %s, which is no built-in method", n)
	}
}

// TestBuiltinsAnswered: a server answers every built-in method a peer
// may send (with anything but -32601), and no other rpc.* name: those
// the hub sends, and unknown ones, are -32601.
func TestBuiltinsAnswered(t *testing.T) {
	rh := startHub(t, nil)
	c := rh.dial(t, nil)
	call := func(method string) error {
		ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
		defer cancel()
		return c.Call(ctx, method, nil, nil)
	}
	notFound := func(err error) bool {
		e, ok := errors.AsType[*peer.Error](err)
		return ok && e.Code == peer.CodeMethodNotFound
	}
	for _, b := range hub.Builtins() {
		err := call(b.Name)
		if nf := notFound(err); nf != (b.Home == hub.HomeClient) {
			t.Errorf("%s (answered by %s): %v", b.Name, b.Home, err)
		}
	}
	for _, m := range []string{"rpc.nothing", "rpc.", "rpc.Subscribe", "rpc.subscribe.x", "rpc.auth2"} {
		if err := call(m); !notFound(err) {
			t.Errorf("%s: %v, want -32601", m, err)
		}
	}
	if _, ok := hub.BuiltinMethod("rpc.nothing"); ok {
		t.Error("BuiltinMethod found rpc.nothing")
	}
	if b, ok := hub.BuiltinMethod("rpc.publish"); !ok || b.Action != hub.Publish || !b.Call || !b.Notification {
		t.Errorf("BuiltinMethod(rpc.publish) = %+v, %v", b, ok)
	}
}

package routing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// With -max-forwards 2, a third call of a provider that holds two waits
// for a slot instead of being refused (its caller is slowed down, as calls
// of the hub's own methods are): it reaches the provider once one of the
// two has been answered, and every call gets its result.
func TestForwardLimits(t *testing.T) {
	h := hubproc.StartDemo(t, "-max-forwards", "2", "-forward-timeout", "60s")
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	held := make(chan int, 10)
	release := make(chan struct{}, 10)
	provide(t, svc, "svc.hold", peer.Func(func(ctx context.Context, p []int) (int, error) {
		held <- p[0]
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-release:
			return p[0], nil
		}
	}))
	heldCall := func() int {
		t.Helper()
		return testkit.Recv(t, held, "a call to reach the provider")
	}
	ws := testclient.DialWS(t, h.WebSocketURL())
	for id := 1; id <= 3; id++ {
		testclient.Send(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","method":"svc.hold","params":[%d],"id":%d}`, id, id))
	}
	first := []int{heldCall(), heldCall()}
	select {
	case id := <-held:
		t.Fatalf("call %d reached the provider while it held %v", id, first)
	default:
	}
	release <- struct{}{} // one of the two answers: the third gets its slot
	third := heldCall()
	if slices.Contains(first, third) {
		t.Fatalf("call %d reached the provider twice", third)
	}
	release <- struct{}{}
	release <- struct{}{}
	var got []int
	for range 3 {
		m := decode(t, testclient.Receive(t, ws, 30*time.Second))
		if m.Error != nil {
			t.Fatalf("call %s answered %d %s; want its result", m.ID, m.Error.Code, m.Error.Message)
		}
		var n int
		if err := json.Unmarshal(m.Result, &n); err != nil || string(m.ID) != fmt.Sprint(n) {
			t.Fatalf("call %s answered %s", m.ID, m.Result)
		}
		got = append(got, n)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("results %v; want 1, 2, 3", got)
	}
}

// Equally idle providers take turns: ten calls one after the other go
// p1, p2, p1, p2...
func TestSequentialCallsTakeTurns(t *testing.T) {
	h := hubproc.StartDemo(t)
	for _, name := range []string{"p1", "p2"} {
		p, _ := testclient.Dial(t, h.WebSocketURL(), nil)
		provide(t, p, "svc.who", peer.Func(func(context.Context, []int) (string, error) { return name, nil }))
	}
	caller, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	var whos []string
	for range 10 {
		var who string
		if err := caller.Call(t.Context(), "svc.who", []int{}, &who); err != nil {
			t.Fatal(err)
		}
		whos = append(whos, who)
	}
	for i := 1; i < len(whos); i++ {
		if whos[i] == whos[i-1] {
			t.Fatalf("providers %v: not in turn", whos)
		}
	}
}

// A notification is forwarded as one; in a batch each element goes where
// it belongs, and the batch's answer holds the answers of its calls.
func TestNotificationsAndBatches(t *testing.T) {
	h := hubproc.StartDemo(t)
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	provide(t, svc, "svc.add", peer.Func(add))
	notes := make(chan string, 10)
	provide(t, svc, "svc.note", peer.Func(func(_ context.Context, s []string) (struct{}, error) {
		notes <- s[0]
		return struct{}{}, nil
	}))
	note := func(want string) {
		t.Helper()
		select {
		case got := <-notes:
			if got != want {
				t.Fatalf("provider noted %q; want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("note %q not forwarded within 30s", want)
		}
	}
	ws := testclient.DialWS(t, h.WebSocketURL())
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"svc.note","params":["alone"]}`)
	note("alone")
	testclient.Send(t, ws, `[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1},`+
		`{"jsonrpc":"2.0","method":"svc.add","params":[3,4],"id":2},`+
		`{"jsonrpc":"2.0","method":"svc.note","params":["batched"]},`+
		`{"jsonrpc":"2.0","method":"svc.missing","id":3}]`)
	var answers []message
	got := testclient.Receive(t, ws, 30*time.Second)
	if err := json.Unmarshal([]byte(got), &answers); err != nil {
		t.Fatalf("batch answer %s: %v", got, err)
	}
	note("batched")
	byID := map[string]message{}
	for _, a := range answers {
		byID[string(a.ID)] = a
	}
	if len(answers) != 3 || string(byID["1"].Result) != "3" || string(byID["2"].Result) != "7" ||
		byID["3"].Error == nil || byID["3"].Error.Code != -32601 {
		t.Fatalf("batch answer %s", got)
	}
	// The notification got no answer: the next message is the ping's.
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":"p"}`)
	if got := testclient.Receive(t, ws, 30*time.Second); !strings.Contains(got, `"id":"p"`) {
		t.Fatalf("after the notification: %s", got)
	}
}

// A peer is never forwarded its own call: alone, it gets -32601; with
// another provider, every call goes to that one.
func TestNeverForwardedToItself(t *testing.T) {
	h := hubproc.StartDemo(t)
	self, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	provide(t, self, "svc.who", peer.Func(func(context.Context, []int) (string, error) { return "self", nil }))
	var who string
	err := self.Call(t.Context(), "svc.who", []int{}, &who)
	if e := peer.ToError(err); e == nil || e.Code != -32601 {
		t.Fatalf("calling only itself: %v, %q; want -32601", err, who)
	}
	other, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	provide(t, other, "svc.who", peer.Func(func(context.Context, []int) (string, error) { return "other", nil }))
	for range 6 {
		if err := self.Call(t.Context(), "svc.who", []int{}, &who); err != nil || who != "other" {
			t.Fatalf("calling with another provider: %v, %q; want other", err, who)
		}
	}
}

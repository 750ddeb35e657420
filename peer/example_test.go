package peer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/peer"
)

// demoMux serves a few methods for the examples.
func demoMux() *peer.Mux {
	mux := peer.NewMux()
	mux.Handle("add", peer.Func(func(ctx context.Context, p struct{ A, B float64 }) (float64, error) {
		return p.A + p.B, nil
	}))
	mux.Handle("divide", peer.Func(func(ctx context.Context, p struct{ X, Y float64 }) (float64, error) {
		if p.Y == 0 {
			return 0, &peer.Error{Code: 1001, Message: "division by zero"}
		}
		return p.X / p.Y, nil
	}))
	mux.Handle("sleep", peer.Func(func(ctx context.Context, p struct {
		MS int `json:"ms"`
	}) (int, error) {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(time.Duration(p.MS) * time.Millisecond)
		for elapsed := 10; ; elapsed += 10 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err() // answered as -32002 when cancelled
			case <-deadline:
				return p.MS, nil
			case <-tick.C:
				peer.Progress(ctx, map[string]int{"elapsed": elapsed})
			}
		}
	}))
	mux.Handle("download", peer.Func(func(ctx context.Context, p []string) (int, error) {
		for pct := 25; pct < 100; pct += 25 {
			if err := peer.Progress(ctx, map[string]int{"percent": pct}); err != nil {
				return 0, err
			}
		}
		return 4096, nil
	}))
	return mux
}

func ExampleConn_Call() {
	a, b := peer.Pipe(nil, &peer.Options{Router: demoMux()}) // b serves; a calls
	defer b.Close()

	var sum float64
	// Params by position...
	if err := a.Call(context.Background(), "add", []float64{1, 2}, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum)
	// ...or by name.
	if err := a.Call(context.Background(), "add", map[string]float64{"a": 40, "b": 2}, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum)

	// Errors from the other side are *peer.Error values.
	var e *peer.Error
	err := a.Call(context.Background(), "divide", []float64{1, 0}, nil)
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Message)
	}
	// Output:
	// 3
	// 42
	// 1001 division by zero
}

func ExampleFunc() {
	type point struct {
		X, Y int
	}
	mux := peer.NewMux()
	mux.Handle("norm1", peer.Func(func(ctx context.Context, p point) (int, error) {
		return abs(p.X) + abs(p.Y), nil
	}))
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"norm1","params":[3,-4],"id":1}`,
		`{"jsonrpc":"2.0","method":"norm1","params":{"X":3,"Y":-4},"id":2}`,
		`{"jsonrpc":"2.0","method":"norm1","params":["three"],"id":3}`,
	} {
		fmt.Println(string(peer.Respond(context.Background(), []byte(body), &peer.Options{Router: mux})))
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":7}
	// {"jsonrpc":"2.0","id":2,"result":7}
	// {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params","data":"param 0: json: cannot unmarshal string into Go value of type int"}}
}

func ExampleAllowUnknownFields() {
	type query struct {
		Text  string `json:"text"`
		Limit *int   `json:"limit"` // a pointer: optional
	}
	search := func(ctx context.Context, q query) (string, error) { return q.Text, nil }
	mux := peer.NewMux()
	mux.Handle("search", peer.Func(search))
	mux.Handle("search.lenient", peer.AllowUnknownFields(peer.Func(search)))
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"search","params":{"limit":5},"id":1}`,
		`{"jsonrpc":"2.0","method":"search","params":{"text":"go","limt":5},"id":2}`,
		`{"jsonrpc":"2.0","method":"search.lenient","params":{"text":"go","limt":5},"id":3}`,
	} {
		fmt.Println(string(peer.Respond(context.Background(), []byte(body), &peer.Options{Router: mux})))
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params","data":"missing param \"text\""}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params","data":"unknown param \"limt\""}}
	// {"jsonrpc":"2.0","id":3,"result":"go"}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func ExampleConn_Batch() {
	a, b := peer.Pipe(nil, &peer.Options{Router: demoMux()})
	defer b.Close()

	var x, y float64
	batch := []peer.BatchElem{
		{Method: "add", Params: []float64{1, 2}, Result: &x},
		{Method: "divide", Params: []float64{1, 4}, Result: &y},
		{Method: "divide", Params: []float64{1, 0}},
		{Method: "nope"},
	}
	// One message goes out; the replies come back in any order and are
	// matched by id.
	if err := a.Batch(context.Background(), batch); err != nil {
		log.Fatal(err)
	}
	fmt.Println(x, y)
	fmt.Println(batch[2].Err)
	fmt.Println(batch[3].Err)
	// Output:
	// 3 0.25
	// jsonrpc error 1001: division by zero
	// jsonrpc error -32601: Method not found
}

func ExampleWithProgress() {
	a, b := peer.Pipe(nil, &peer.Options{Router: demoMux()})
	defer b.Close()

	ctx := peer.WithProgress(context.Background(), func(data json.RawMessage) {
		fmt.Println("progress", string(data)) // in order, before Call returns
	})
	var size int
	if err := a.Call(ctx, "download", []string{"big.iso"}, &size); err != nil {
		log.Fatal(err)
	}
	fmt.Println("done", size)
	// Output:
	// progress {"percent":25}
	// progress {"percent":50}
	// progress {"percent":75}
	// done 4096
}

func ExampleConn_Call_cancel() {
	a, b := peer.Pipe(nil, &peer.Options{Router: demoMux()})
	defer b.Close()

	// The caller gives up after 20ms: Call returns, and rpc.cancel tells
	// the other side, whose handler context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := a.Call(ctx, "sleep", map[string]int{"ms": 10000}, nil)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}

func ExampleConn_Call_callback() {
	// The serving side calls back to its caller, on the same connection,
	// while the caller's call is still pending.
	server := peer.NewMux()
	server.Handle("greet", peer.Func(func(ctx context.Context, p []string) (string, error) {
		var name string
		if err := peer.ConnFromContext(ctx).Call(ctx, "name", nil, &name); err != nil {
			return "", err
		}
		return p[0] + ", " + name, nil
	}))
	client := peer.NewMux()
	client.Handle("name", peer.Func(func(context.Context, struct{}) (string, error) {
		return "Ada", nil
	}))
	a, b := peer.Pipe(&peer.Options{Router: client}, &peer.Options{Router: server})
	defer b.Close()

	var s string
	if err := a.Call(context.Background(), "greet", []string{"Hello"}, &s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s)
	// Output: Hello, Ada
}

func ExampleRespond() {
	mux := peer.NewMux()
	mux.Handle("sum", peer.Func(func(ctx context.Context, xs []int) (int, error) {
		t := 0
		for _, x := range xs {
			t += x
		}
		return t, nil
	}))
	opts := &peer.Options{Router: mux}
	// A batch: the notification gets no reply, the rest come back in one array.
	body := `[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
	          {"jsonrpc":"2.0","method":"sum","params":[7]},
	          {"foo":"boo"}]`
	fmt.Println(string(peer.Respond(context.Background(), []byte(body), opts)))
	// Only notifications: nothing to send back (HTTP 204).
	fmt.Println(peer.Respond(context.Background(), []byte(`{"jsonrpc":"2.0","method":"sum","params":[1]}`), opts) == nil)
	// Output:
	// [{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},{"jsonrpc":"2.0","id":"1","result":7}]
	// true
}

// A WebSocket server serving demoMux on each connection it accepts, and
// a client calling it over a WebSocket. Accepted with AcceptWebSocket,
// the replies to calls that arrive together leave in one write.
func ExampleAcceptWebSocket() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, _, err := peer.AcceptWebSocket(w, r, nil)
		if err != nil {
			return // AcceptWebSocket has answered
		}
		peer.NewConn(t, &peer.Options{Router: demoMux()}).Serve(r.Context()) //nolint:errcheck
	}))
	defer srv.Close()

	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		log.Fatal(err)
	}
	c := peer.NewConn(peer.WebSocket(ws), nil)
	go c.Serve(context.Background()) //nolint:errcheck
	defer func() { c.Close(); <-c.Done() }()

	var sum float64
	if err := c.Call(context.Background(), "add", []float64{20, 22}, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum)
	// Output: 42
}

// A method documented for rpc.discover: its summary and its parameters'
// descriptions go beside the schemas that Func derives.
func ExampleMux_Describe() {
	mux := peer.NewMux()
	mux.Handle("add", peer.Func(func(ctx context.Context, p struct{ A, B float64 }) (float64, error) {
		return p.A + p.B, nil
	}))
	mux.Describe("add", peer.Doc{Summary: "Adds two numbers.", Params: map[string]string{"A": "the first", "B": "the second"}})
	opts := &peer.Options{Router: mux}
	reply := peer.Respond(context.Background(), []byte(`{"jsonrpc":"2.0","method":"rpc.discover","id":1}`), opts)
	var doc struct {
		Result struct {
			Methods []struct {
				Name, Summary string
				Params        []struct{ Name, Description string }
			}
		}
	}
	if err := json.Unmarshal(reply, &doc); err != nil {
		log.Fatal(err)
	}
	for _, m := range doc.Result.Methods {
		fmt.Println(m.Name+":", m.Summary)
		for _, p := range m.Params {
			fmt.Printf("  %s: %s\n", p.Name, p.Description)
		}
	}
	// Output:
	// add: Adds two numbers.
	//   A: the first
	//   B: the second
}

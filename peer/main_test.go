package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// specMux serves the methods of the JSON-RPC 2.0 specification's examples.
func specMux() *Mux {
	m := NewMux()
	m.Handle("subtract", Func(func(_ context.Context, p struct {
		Minuend    float64 `json:"minuend"`
		Subtrahend float64 `json:"subtrahend"`
	}) (float64, error) {
		return p.Minuend - p.Subtrahend, nil
	}))
	m.Handle("sum", Func(func(_ context.Context, xs []float64) (float64, error) {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s, nil
	}))
	m.Handle("get_data", Func(func(context.Context, struct{}) ([]any, error) {
		return []any{"hello", 5}, nil
	}))
	for _, name := range []string{"update", "notify_hello", "notify_sum"} {
		m.HandleFunc(name, func(context.Context, *Request) (any, error) { return nil, nil })
	}
	m.Handle("echo", Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		if p == nil {
			return json.RawMessage("null"), nil
		}
		return p, nil
	}))
	m.Handle("add", Func(func(_ context.Context, p struct{ A, B float64 }) (float64, error) {
		return p.A + p.B, nil
	}))
	m.HandleFunc("fail", func(context.Context, *Request) (any, error) {
		return nil, errors.New("it failed")
	})
	m.HandleFunc("custom", func(context.Context, *Request) (any, error) {
		return nil, (&Error{Code: 42, Message: "custom"}).WithData(map[string]int{"x": 1})
	})
	m.HandleFunc("panic", func(context.Context, *Request) (any, error) { panic("boom") })
	m.HandleFunc("bad_raw", func(context.Context, *Request) (any, error) {
		return json.RawMessage(`{"oops"`), nil
	})
	return m
}

// rawPeer is a Conn under test and the raw other end of its transport.
type rawPeer struct {
	t    testing.TB
	c    *Conn
	ct   *countingTransport
	raw  Transport
	sent int64
	next int
}

// countingTransport counts the reader's calls to Read: the reader reads,
// dispatches and reads again, so n reads entered means n-1 messages fully
// dispatched.
type countingTransport struct {
	Transport
	reads atomic.Int64
}

func (c *countingTransport) Read(ctx context.Context) ([]byte, error) {
	c.reads.Add(1)
	return c.Transport.Read(ctx)
}

func newRawPeer(t testing.TB, opts *Options) *rawPeer {
	ta, tb := NewPipeTransport()
	ct := &countingTransport{Transport: ta}
	c := NewConn(ct, opts)
	go c.Serve(context.Background()) //nolint:errcheck
	t.Cleanup(func() {
		c.Close()
		<-c.Done()
	})
	return &rawPeer{t: t, c: c, ct: ct, raw: tb}
}

func (p *rawPeer) write(msg string) {
	p.t.Helper()
	if err := p.raw.Write(context.Background(), []byte(msg)); err != nil {
		p.t.Fatalf("write: %v", err)
	}
	p.sent++
}

func (p *rawPeer) read() string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	b, err := p.raw.Read(ctx)
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	return string(b)
}

// roundTrip sends in and returns the reply, or "" when there is none. It
// waits until the Conn is idle (every handler done and every reply
// written), then sends a ping: whatever arrives before the ping's reply
// was the answer to in.
func (p *rawPeer) roundTrip(in string) string {
	p.t.Helper()
	p.write(in)
	p.next++
	sentinel := fmt.Sprintf(`"sentinel-%d"`, p.next)
	p.waitIdle()
	p.write(`{"jsonrpc":"2.0","method":"rpc.ping","id":` + sentinel + `}`)
	var got []string
	for {
		m := p.read()
		if bytes.Contains([]byte(m), []byte(sentinel)) {
			break
		}
		got = append(got, m)
	}
	switch len(got) {
	case 0:
		return ""
	case 1:
		return got[0]
	}
	p.t.Fatalf("more than one reply: %q", got)
	return ""
}

// waitIdle waits until the Conn has dispatched everything sent to it, run
// every handler and written every reply.
func (p *rawPeer) waitIdle() {
	p.t.Helper()
	deadline := time.Now().Add(testkit.Wait)
	for {
		c := p.c
		c.mu.Lock()
		idle := p.ct.reads.Load() > p.sent && c.running == 0 && c.lent == 0 && c.out.idle()
		c.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatal("connection did not become idle")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

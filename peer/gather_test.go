package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// clientFrame is a WebSocket frame as a client sends it: masked.
func clientFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	f := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	f = append(f, 1, 2, 3, 4) // the masking key
	return append(f, payload...)
}

func TestMessageWaiting(t *testing.T) {
	call := []byte(`{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}`)
	text := clientFrame(true, 1, call)
	mid := clientFrame(true, 2, bytes.Repeat([]byte("m"), 300))
	large := clientFrame(true, 1, bytes.Repeat([]byte("l"), 70000))
	tests := []struct {
		name     string
		buffered []byte
		want     bool
	}{
		{"nothing", nil, false},
		{"one byte", text[:1], false},
		{"text", text, true},
		{"text and more", append(append([]byte(nil), text...), text[:3]...), true},
		{"text but its last byte", text[:len(text)-1], false},
		{"binary, 16-bit length", mid, true},
		{"16-bit length, cut in its header", mid[:3], false},
		{"16-bit length, cut", mid[:len(mid)-1], false},
		{"64-bit length", large, true},
		{"64-bit length, cut", large[:len(large)-1], false},
		{"not final", clientFrame(false, 1, call), false},
		{"close", clientFrame(true, 8, []byte{3, 232}), false},
		{"ping", clientFrame(true, 9, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(tt.buffered), 1<<17)
			if len(tt.buffered) > 0 {
				if _, err := br.Peek(len(tt.buffered)); err != nil {
					t.Fatal(err)
				}
			}
			if got := (&wsTransport{br: br}).messageWaiting(); got != tt.want {
				t.Fatalf("messageWaiting = %v, want %v", got, tt.want)
			}
		})
	}
}

// countingListener counts the writes made to the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// gatherServer serves opts over WebSockets accepted with AcceptWebSocket
// on 127.0.0.1, counting the server's writes, and returns a raw WebSocket
// dialed to it whose writes the test can gather into one, with gc.
func gatherServer(t *testing.T, opts *Options) (ws *websocket.Conn, gc *transport.Conn, writes *atomic.Int64) {
	t.Helper()
	var served sync.WaitGroup
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr, _, err := AcceptWebSocket(w, r, nil)
		if err != nil {
			return
		}
		served.Go(func() { NewConn(tr, opts).Serve(context.Background()) }) //nolint:errcheck
	}))
	l := &countingListener{Listener: ts.Listener}
	ts.Listener = l
	ts.Start()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		gc = transport.New(c)
		return gc, nil
	}
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dial}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ws.Close(websocket.StatusNormalClosure, "") //nolint:errcheck
		served.Wait()
		ts.Close()
	})
	return ws, gc, &l.writes
}

// sendTogether writes frames to ws in one write of the network
// connection, so that the server reads them together.
func sendTogether(t *testing.T, ws *websocket.Conn, gc *transport.Conn, frames ...string) {
	t.Helper()
	gc.Hold()
	for _, f := range frames {
		if err := ws.Write(t.Context(), websocket.MessageText, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := gc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// readReply reads one message from ws and returns its id.
func readReply(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ ID json.RawMessage }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("reply %s: %v", b, err)
	}
	return string(r.ID)
}

// The replies to calls that arrive together leave together: a client
// pipelining 32 calls gets their replies in a write or two of the
// server's, not 32.
func TestAcceptWebSocketGathersReplies(t *testing.T) {
	ws, gc, writes := gatherServer(t, &Options{Router: specMux()})
	ws.SetReadLimit(-1)
	// On a loaded machine, a reader descheduled in a handler can lose the
	// reading to the watchdog, and what it held goes out at once: one try
	// may then take many writes. Never gathered in five is the defect.
	var tries []int64
	for try := range 5 {
		var frames []string
		for i := range 32 {
			frames = append(frames, fmt.Sprintf(`{"jsonrpc":"2.0","method":"add","params":[%d,1],"id":%d}`, i, try*32+i))
		}
		before := writes.Load()
		sendTogether(t, ws, gc, frames...)
		seen := map[string]bool{}
		for range 32 {
			seen[readReply(t, ws)] = true
		}
		if len(seen) != 32 {
			t.Fatalf("%d distinct replies to 32 calls", len(seen))
		}
		n := writes.Load() - before
		if n <= 2 {
			return
		}
		tries = append(tries, n)
	}
	t.Fatalf("the server wrote 32 replies in %v writes", tries)
}

// A reply held back while the reader runs the next call does not wait
// for that call when it is slow: the reader's watchdog moves the reading
// on, and the held reply leaves then.
func TestHeldReplyBeforeSlowCall(t *testing.T) {
	release := make(chan struct{})
	mux := NewMux()
	mux.Handle("add", Func(func(ctx context.Context, p []int) (int, error) { return p[0] + p[1], nil }))
	mux.Handle("wait", Func(func(ctx context.Context, _ []int) (int, error) {
		<-release
		return 0, nil
	}))
	ws, gc, _ := gatherServer(t, &Options{Router: mux})
	defer close(release)
	sendTogether(t, ws, gc,
		`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`,
		`{"jsonrpc":"2.0","method":"wait","params":[],"id":2}`)
	if id := readReply(t, ws); id != "1" {
		t.Fatalf("first reply is to %s, want 1", id)
	}
}

// The reader may look at the buffered input (messageWaiting) while
// another goroutine closes the connection, whose close handshake reads
// that input too: the two must not race.
func TestMessageWaitingDuringClose(t *testing.T) {
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		tr, _, err := AcceptWebSocket(w, r, nil)
		if err != nil {
			return
		}
		if _, err := tr.Read(r.Context()); err != nil { // the reader's first message
			t.Error(err)
			return
		}
		looked, stop := make(chan struct{}), make(chan struct{})
		var looker sync.WaitGroup
		looker.Go(func() {
			for i := 0; ; i++ {
				tr.(*wsTransport).messageWaiting()
				if i == 100 {
					close(looked)
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
		<-looked
		tr.Close(CloseNormal, "") //nolint:errcheck
		close(stop)
		looker.Wait()
	}))
	defer ts.Close()
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow() //nolint:errcheck
	for range 200 {
		if err := ws.Write(t.Context(), websocket.MessageText, []byte(`{}`)); err != nil {
			break
		}
	}
	// Answer the server's close, so that its handshake ends at once.
	ws.Read(t.Context()) //nolint:errcheck
	<-done
}

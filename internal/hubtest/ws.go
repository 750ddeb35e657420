package hubtest

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The helpers below talk to any server on 127.0.0.1 whose /rpc is the
// hub's, a [Hub] or one a test built itself with net/http/httptest: a
// raw WebSocket for the exact bytes, or a served [peer.Conn].

// WSURL returns the WebSocket URL of /rpc on the server at base, an
// http:// or https:// URL with no path.
func WSURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/rpc" }

// DialWS opens a WebSocket to url within [testkit.Wait], or fails the
// test. It is closed at the end of the test, or by the test.
func DialWS(t testing.TB, url string, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// ServePeer serves ws as a [peer.Conn] configured by opts. At the end of
// the test it is closed and its Serve waited for.
func ServePeer(t testing.TB, ws *websocket.Conn, opts *peer.Options) *peer.Conn {
	t.Helper()
	c := peer.NewConn(peer.WebSocket(ws), opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Serve(context.Background()) // the result is in c.Err
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c
}

// WriteText writes msg as one text message within [testkit.Wait], or
// fails the test.
func WriteText(t testing.TB, ws *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// ReadText reads one message within [testkit.Wait], or fails the test.
func ReadText(t testing.TB, ws *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// DialTCP opens a TCP connection to addr whose deadline, 10 s ahead,
// bounds the test; it is closed at the end of the test.
func DialTCP(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

// WantCode fails the test unless err is a JSON-RPC error ([*peer.Error])
// of code.
func WantCode(t testing.TB, err error, code peer.Code) {
	t.Helper()
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != code {
		t.Fatalf("got %v, want error %d", err, code)
	}
}

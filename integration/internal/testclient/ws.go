package testclient

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// DialWS opens a raw WebSocket to url, for the exact bytes, within 10 s;
// it is closed when the test ends, or by the test.
func DialWS(t testing.TB, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// Send writes msg as one text message within 10 s.
func Send(t testing.TB, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("write %.200s: %v", msg, err)
	}
}

// Receive reads one message, for up to d.
func Receive(t testing.TB, c *websocket.Conn, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

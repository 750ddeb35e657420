package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestFrameTrack(t *testing.T) {
	type step struct {
		frame   []byte
		between bool // after the frame
	}
	steps := []step{
		{frame(false, true, 1, []byte("hi")), true},
		{frame(false, true, 1, nil), true},
		{frame(false, false, 1, []byte("part")), false},
		{frame(false, true, 9, []byte("ping")), false}, // a control frame inside a message
		{frame(false, true, 0, []byte("end")), true},
		{frame(false, true, 10, nil), true}, // a control frame between messages
		{frame(false, true, 2, bytes.Repeat([]byte{'x'}, 126)), true},
		{frame(false, true, 1, bytes.Repeat([]byte{'y'}, 70000)), true},
		{frame(true, true, 1, []byte("masked")), true},
	}
	// Fed whole, and a byte at a time, after the handshake's response:
	// between is true exactly at the end of a message.
	resp := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
	f := frameTrack{inHead: true}
	f.feed(resp)
	for i, s := range steps {
		f.feed(s.frame)
		if f.between() != s.between {
			t.Fatalf("whole, after frame %d: between %v", i, f.between())
		}
	}
	f = frameTrack{inHead: true}
	for j := range resp {
		if f.between() {
			t.Fatalf("between after %d bytes of the response", j)
		}
		f.feed(resp[j : j+1])
	}
	for i, s := range steps {
		for j := range s.frame {
			f.feed(s.frame[j : j+1])
			if j < len(s.frame)-1 && f.between() {
				t.Fatalf("bytewise, frame %d: between after %d of %d bytes", i, j+1, len(s.frame))
			}
		}
		if f.between() != s.between {
			t.Fatalf("bytewise, after frame %d: between %v", i, f.between())
		}
	}
}

// tcpPair returns the two ends of a TCP connection on 127.0.0.1: the
// dialed one wrapped in a Conn, and the accepted one.
func tcpPair(t *testing.T) (gc *Conn, sc net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err = ln.Accept()
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	gc = New(nc)
	t.Cleanup(func() {
		gc.Close()
		sc.Close()
	})
	return gc, sc
}

// readFull reads len(b) bytes from c.
func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestInterruptBetween checks that an interrupted read returns
// ErrInterrupted only between two messages.
func TestInterruptBetween(t *testing.T) {
	gc, sc := tcpPair(t)
	buf := make([]byte, 64)

	// Within the handshake's response: not interrupted.
	resp := []byte("HTTP/1.1 101 Switching Protocols\r\n\r\n")
	if _, err := sc.Write(resp[:10]); err != nil {
		t.Fatal(err)
	}
	if n, err := readFull(gc, buf[:10]); err != nil || n != 10 {
		t.Fatalf("read %d, %v", n, err)
	}
	gc.Interrupt()
	wrote := make(chan error, 1)
	go func() {
		_, err := sc.Write(resp[10:])
		wrote <- err
	}()
	if n, err := readFull(gc, buf[:len(resp)-10]); err != nil || n != len(resp)-10 {
		t.Fatalf("read %d, %v; want the rest of the response", n, err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}

	// Between messages, at the start: interrupted.
	gc.Interrupt()
	if _, err := gc.Read(buf); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("read at a message boundary: %v, want ErrInterrupted", err)
	}
	// And reading goes on afterwards.
	msg := frame(false, true, 1, []byte("hello"))
	if _, err := sc.Write(msg); err != nil {
		t.Fatal(err)
	}
	if n, err := readFull(gc, buf[:len(msg)]); err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// In the middle of a message, the interrupted read waits for the rest.
	msg = frame(false, true, 1, []byte("world"))
	if _, err := sc.Write(msg[:4]); err != nil {
		t.Fatal(err)
	}
	if n, err := readFull(gc, buf[:4]); err != nil || n != 4 {
		t.Fatalf("read %d, %v", n, err)
	}
	gc.Interrupt()
	errc := make(chan error, 1)
	go func() {
		_, err := readFull(gc, buf[4:len(msg)])
		errc <- err
	}()
	if _, err := sc.Write(msg[4:]); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil || !bytes.Equal(buf[:len(msg)], msg) {
		t.Fatalf("read %q, %v; want the whole message", buf[:len(msg)], err)
	}
	// Back at a boundary, a new interruption works again.
	gc.Interrupt()
	if _, err := gc.Read(buf); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("read at a message boundary: %v, want ErrInterrupted", err)
	}
}

// TestInterruptHeader holds the coder/websocket of go.mod to what
// Interrupt relies on, though its documentation says the opposite ("on
// any error from any method, the connection is closed"): a Reader call
// that fails because the read of a frame header was interrupted leaves
// the connection open, and the next Reader call reads the next message;
// writes go on too. If an upgrade of the library breaks this, this test
// fails, and a peer.Conn whose caller reads its own reply would close its
// connection whenever a reading caller's ctx ends.
func TestInterruptHeader(t *testing.T) {
	send := make(chan string)
	echoed := make(chan string, 4)
	served := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow() //nolint:errcheck
		ctx := r.Context()
		go func() {
			for s := range send {
				if ws.Write(ctx, websocket.MessageText, []byte(s)) != nil {
					return
				}
			}
		}()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				close(echoed)
				return
			}
			echoed <- string(b)
		}
	}))
	defer ts.Close()
	defer close(send)
	var gc *Conn
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			gc = New(nc)
			return gc, nil
		},
	}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+ts.Listener.Addr().String(), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ws.Close(websocket.StatusNormalClosure, "") //nolint:errcheck
		<-served
	}()

	for i, word := range []string{"one", "two", "three"} {
		// The read of the next frame header is interrupted, at once if it
		// started after Interrupt, as it may have.
		errc := make(chan error, 1)
		go func() {
			_, _, err := ws.Reader(context.Background())
			errc <- err
		}()
		gc.Interrupt()
		if err := <-errc; !errors.Is(err, ErrInterrupted) {
			t.Fatalf("round %d: interrupted Reader: %v, want ErrInterrupted", i, err)
		}
		// The connection is open: the next message is read whole, and
		// what this side writes arrives.
		send <- word
		typ, b, err := ws.Read(ctx)
		if err != nil || typ != websocket.MessageText || string(b) != word {
			t.Fatalf("round %d: after the interrupted read: %v %q %v; the library closed the connection?", i, typ, b, err)
		}
		if err := ws.Write(ctx, websocket.MessageText, []byte(word)); err != nil {
			t.Fatalf("round %d: write after the interrupted read: %v", i, err)
		}
		if got := <-echoed; got != word {
			t.Fatalf("round %d: the other side read %q, want %q", i, got, word)
		}
	}
}

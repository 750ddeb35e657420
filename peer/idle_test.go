package peer

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
)

// idleConns is how many connections TestIdleCost opens: enough for the
// cost of one to stand out of the noise, few enough for a loaded machine.
const idleConns = 200

// TestIdleCost pins what an idle served connection costs: the stack and
// heap the server holds for it once it has served a call and waits for
// the next message (the HTTP server's goroutine, parked in the reader,
// the hijacked socket and its buffers, the WebSocket and the Conn). A
// hub holds tens of thousands of them. An edit that doubles either (a
// few words more in the reader's frame, say, double every idle reader's
// stack; see readLoop) fails here.
func TestIdleCost(t *testing.T) {
	var serving sync.WaitGroup
	serving.Add(idleConns)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr, _, err := AcceptWebSocket(w, r, nil)
		if err != nil {
			serving.Done()
			return
		}
		c := NewConn(tr, nil)
		serving.Done()
		_ = c.Serve(r.Context())
	}))
	defer srv.Close()
	stackBefore, heapBefore := memInUse()
	goroutines := runtime.NumGoroutine()

	conns := make([]net.Conn, idleConns)
	defer func() {
		for _, nc := range conns {
			if nc != nil {
				_ = nc.Close()
			}
		}
	}()
	for i := range conns {
		nc, err := rawHandshake(srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = nc
	}
	serving.Wait()
	// Each connection serves one call, so that its reader has been
	// through a whole message and back to its read, as a connection that
	// went idle has.
	for _, nc := range conns {
		if err := rawPing(nc); err != nil {
			t.Fatal(err)
		}
	}
	stackAfter, heapAfter := memInUse()
	goroutines = (runtime.NumGoroutine() - goroutines) / idleConns
	stack := (stackAfter - stackBefore) / idleConns
	heap := (heapAfter - heapBefore) / idleConns
	t.Logf("an idle served connection: %d goroutines, %d B of stack, %d B of heap", goroutines, stack, heap)
	// The bounds, and what was measured, are in race_test.go and
	// norace_test.go.
	if limit := int64(idleStackLimit); stack > limit {
		t.Errorf("an idle connection holds %d B of stack, more than %d B", stack, limit)
	}
	if limit := int64(idleHeapLimit); heap > limit {
		t.Errorf("an idle connection holds %d B of heap, more than %d B", heap, limit)
	}
}

// memInUse returns the bytes of stack and of heap in use after a
// collection.
func memInUse() (stack, heap int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.StackInuse), int64(m.HeapInuse)
}

// rawHandshake opens a WebSocket to addr with nothing of its own on the
// heap but the socket: no library, no buffers, no goroutine.
func rawHandshake(addr string) (net.Conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(nc, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", addr, key)
	// The response's head ends with an empty line; nothing follows it
	// until the first call is answered.
	br := bufio.NewReaderSize(nc, 16)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || br.Buffered() != 0 {
		_ = nc.Close()
		return nil, fmt.Errorf("handshake: %s, %d bytes more", resp.Status, br.Buffered())
	}
	return nc, nil
}

// rawPing sends rpc.ping in a masked text frame and reads the reply.
func rawPing(nc net.Conn) error {
	payload := []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)
	frame := append([]byte{0x81, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...) // mask 0: as is
	if _, err := nc.Write(frame); err != nil {
		return err
	}
	var head [2]byte
	if _, err := io.ReadFull(nc, head[:]); err != nil {
		return err
	}
	reply := make([]byte, head[1]&0x7f)
	if _, err := io.ReadFull(nc, reply); err != nil {
		return err
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{}}`; string(reply) != want {
		return fmt.Errorf("rpc.ping answered %s, want %s", reply, want)
	}
	return nil
}

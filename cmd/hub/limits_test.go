package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// TestSlowloris: a client that sends its headers a byte at a time, and
// one that sends nothing, are cut off once -header-timeout has passed,
// while a normal client is served meanwhile. Headers complete would take
// the first client 20 seconds.
func TestSlowloris(t *testing.T) {
	const headerTimeout = 300 * time.Millisecond
	url, _ := start(t, "-header-timeout", headerTimeout.String())
	addr := strings.TrimPrefix(url, "http://")

	begun := time.Now()
	slow := dialRaw(t, addr)
	silent := dialRaw(t, addr)
	stop := make(chan struct{})
	dripped := make(chan error, 1)
	go func() {
		dripped <- drip(slow, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\nX-Slow: "+strings.Repeat("a", 1000), stop)
	}()
	defer func() {
		close(stop)
		<-dripped
	}()

	if resp, body := httpDo(t, "GET", url+"/healthz", "", ""); resp.StatusCode != 200 || !strings.HasPrefix(body, "ok ") {
		t.Fatalf("a normal client meanwhile: %d %q", resp.StatusCode, body)
	}
	// Each is closed, with a 400 for a request begun or nothing at all.
	for name, c := range map[string]net.Conn{"byte by byte": slow, "silent": silent} {
		var got strings.Builder
		_, err := io.Copy(&got, c) // until the hub closes it
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: still open after %v", name, time.Since(begun))
		}
		if d := time.Since(begun); d < headerTimeout {
			t.Errorf("%s: closed after %v, before -header-timeout", name, d)
		}
		if s := got.String(); s != "" && !strings.HasPrefix(s, "HTTP/1.1 400 ") {
			t.Errorf("%s: answered %q", name, s)
		}
	}
}

// drip writes s to c one byte every 20ms until stop is closed or a write
// fails, as a slowloris client does.
func drip(c net.Conn, s string, stop <-chan struct{}) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := range len(s) {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-stop:
			return nil
		}
	}
	return nil
}

// TestConnLimitFlag: -max-conns-per-addr 2 lets two connections from
// 127.0.0.1 in and answers a third with 503 until one of them closes.
func TestConnLimitFlag(t *testing.T) {
	url, _ := start(t, "-max-conns-per-addr", "2")
	addr := strings.TrimPrefix(url, "http://")
	c1, c2 := dialRaw(t, addr), dialRaw(t, addr)
	r1 := bufio.NewReader(c1)
	if status := rawGet(t, c1, r1, addr); status != 200 {
		t.Fatalf("first: %d", status)
	}
	if status := rawGet(t, c2, bufio.NewReader(c2), addr); status != 200 {
		t.Fatalf("second: %d", status)
	}
	c3 := dialRaw(t, addr)
	if status := rawGet(t, c3, bufio.NewReader(c3), addr); status != 503 {
		t.Fatalf("third: %d, want 503", status)
	}
	if status := rawGet(t, c1, r1, addr); status != 200 {
		t.Fatalf("first again: %d", status)
	}
}

// dialRaw opens a TCP connection with a deadline that bounds the test.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	return hubtest.DialTCP(t, addr)
}

// rawGet sends GET /healthz on c and returns the status.
func rawGet(t *testing.T, c net.Conn, r *bufio.Reader, addr string) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

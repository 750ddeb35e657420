package cluster_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// link is a TCP proxy between a node and NATS that fails the way a
// network does without closing anything: stall holds every byte in both
// directions (a NATS server that hangs, packets dropped), and the node
// notices nothing; down cuts the connections and refuses new ones, which
// the node notices at once.
type link struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu    sync.Mutex
	open  chan struct{} // closed while bytes flow
	held  bytes.Buffer  // what was held since stall
	down  bool
	conns map[net.Conn]struct{}
}

// startLink proxies to target (host:port) until the test ends.
func startLink(t *testing.T, target string) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &link{target: target, ln: ln, open: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(l.open)
	l.wg.Go(l.accept)
	t.Cleanup(l.close)
	return l
}

// addr returns the address the node dials.
func (l *link) addr() string { return l.ln.Addr().String() }

// stall holds whatever either side sends from now on, until resume.
func (l *link) stall() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held.Reset()
	l.open = make(chan struct{})
}

// resume lets what was held through, and what follows.
func (l *link) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.open:
	default:
		close(l.open)
	}
}

// holds reports whether what was held since stall contains s.
func (l *link) holds(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Contains(l.held.Bytes(), []byte(s))
}

// setDown cuts every connection and refuses new ones (down), or lets
// them through again.
func (l *link) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
	if down {
		for c := range l.conns {
			_ = c.Close()
		}
	}
}

func (l *link) close() {
	_ = l.ln.Close()
	l.setDown(true)
	l.resume()
	l.wg.Wait()
}

func (l *link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", l.target)
		l.mu.Lock()
		if err != nil || l.down {
			l.mu.Unlock()
			_ = c.Close()
			if s != nil {
				_ = s.Close()
			}
			continue
		}
		l.conns[c], l.conns[s] = struct{}{}, struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() { l.pipe(s, c) })
		l.wg.Go(func() { l.pipe(c, s) })
	}
}

// pipe copies src to dst, holding each chunk while the link is stalled;
// either side ending ends both.
func (l *link) pipe(dst, src net.Conn) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		l.mu.Lock()
		delete(l.conns, src)
		delete(l.conns, dst)
		l.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		l.mu.Lock()
		open := l.open
		select {
		case <-open:
		default:
			l.held.Write(buf[:n])
		}
		l.mu.Unlock()
		<-open // close resumes it too
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

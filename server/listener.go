package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// ListenerOptions configures a [Listener]. A nil *ListenerOptions is
// valid: no limits, no TLS.
type ListenerOptions struct {
	// MaxConns caps the connections open at once. 0: no limit.
	MaxConns int

	// MaxConnsPerAddr caps the connections open at once from one remote
	// address: one IPv4 address, or one IPv6 /64 network (what one host
	// is usually given). 0: no limit. Behind a reverse proxy every
	// connection comes from the proxy's address, so leave it 0 there and
	// let the proxy limit its clients, or list it in TrustedProxies.
	MaxConnsPerAddr int

	// TrustedProxies lists the networks of reverse proxies, whose
	// connections MaxConnsPerAddr does not cap: the server caps their
	// clients' instead (server.Options.TrustedProxies).
	TrustedProxies []netip.Prefix

	// TLSConfig, if set, serves TLS on every connection accepted, as
	// tls.NewListener does (the handshake runs on the connection's first
	// read or write, on the http.Server's goroutine for it). It must hold
	// a certificate.
	TLSConfig *tls.Config

	// Logger receives the first refused connection and then at most one
	// line per 10 seconds (the counts are in Stats). Nil discards them.
	Logger *zap.Logger
}

// Listener is a net.Listener that caps the connections open at once, in
// total and per remote address, and can serve TLS. A connection over a
// limit never reaches the http.Server: the listener answers it with
// "503 Service Unavailable" once it has read the request's head (over TLS
// when the listener serves TLS), reads what the client sends until it
// closes, all within a second, and closes it. At most 64 refused
// connections are answered at a time; beyond that they are closed at once.
//
// A connection counts until it is closed, and a WebSocket for as long as
// it is open. Use it with http.Server.Serve:
//
//	ln, _ := net.Listen("tcp", ":8443")
//	hs.Serve(server.NewListener(ln, &server.ListenerOptions{MaxConns: 10000, TLSConfig: cfg}))
//
// Its methods are safe for concurrent use.
type Listener struct {
	net.Listener
	o   ListenerOptions
	log *zap.Logger

	mu       sync.Mutex
	open     int
	perAddr  map[netip.Addr]int
	refusing map[net.Conn]struct{} // being answered 503
	closed   bool
	wg       sync.WaitGroup // the goroutines answering 503

	refused [numLimits]atomic.Uint64
	logged  atomic.Int64 // when a refusal was last logged, in Unix nanoseconds
}

// limit is the limit a connection was refused by.
type limit int

const (
	limitConns limit = iota
	limitConnsPerAddr
	numLimits
)

var limitNames = [numLimits]string{"max_conns", "max_conns_per_addr"}

const (
	// refuseTimeout bounds answering one refused connection.
	refuseTimeout = time.Second
	// maxRefusing caps the refused connections being answered at once.
	maxRefusing = 64
	// refusalLogEvery spaces the log lines about refusals.
	refusalLogEvery = 10 * time.Second

	// retryAfter is the Retry-After of every 503 a client is refused
	// with, here and by the Server: the seconds it should wait.
	retryAfter = "1"

	refusal503 = "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Length: 21\r\n" +
		"Connection: close\r\n" +
		"Retry-After: " + retryAfter + "\r\n\r\n" +
		"too many connections\n"
)

// NewListener returns a Listener accepting from ln, configured by opts.
func NewListener(ln net.Listener, opts *ListenerOptions) *Listener {
	l := &Listener{Listener: ln, perAddr: make(map[netip.Addr]int), refusing: make(map[net.Conn]struct{})}
	if opts != nil {
		l.o = *opts
	}
	l.log = l.o.Logger
	if l.log == nil {
		l.log = zap.NewNop()
	}
	return l
}

// Accept returns the next connection within the limits; it answers and
// closes the others itself.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := hostOf(c.RemoteAddr())
		if l.trusted(c.RemoteAddr()) {
			addr = netip.Addr{} // counted in MaxConns only
		}
		if refused, ok := l.admit(addr); !ok {
			l.refuse(c, refused)
			continue
		}
		var lc net.Conn = &limitedConn{Conn: c, release: func() { l.release(addr) }}
		if l.o.TLSConfig != nil {
			lc = tls.Server(lc, l.o.TLSConfig)
		}
		return lc, nil
	}
}

// Close closes the listener, cuts short the 503 answers under way, and
// waits for them to end.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	for c := range l.refusing {
		_ = c.SetDeadline(time.Now())
	}
	l.mu.Unlock()
	l.wg.Wait()
	return err
}

// ListenerStats are a Listener's counters.
type ListenerStats struct {
	Open int // connections open now

	// Refused counts the connections refused since the listener was
	// made, by the limit they were over: "max_conns" or
	// "max_conns_per_addr". Both are present, counted or not.
	Refused map[string]uint64
}

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	st := ListenerStats{Open: open, Refused: make(map[string]uint64, numLimits)}
	for i := range numLimits {
		st.Refused[limitNames[i]] = l.refused[i].Load()
	}
	return st
}

// admit counts a new connection from addr in, or reports the limit it is
// over. An invalid addr (not an IP connection) has no per-address limit.
func (l *Listener) admit(addr netip.Addr) (limit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.o.MaxConns > 0 && l.open >= l.o.MaxConns {
		return limitConns, false
	}
	perAddr := l.o.MaxConnsPerAddr > 0 && addr.IsValid()
	if perAddr && l.perAddr[addr] >= l.o.MaxConnsPerAddr {
		return limitConnsPerAddr, false
	}
	l.open++
	if perAddr {
		l.perAddr[addr]++
	}
	return 0, true
}

// release counts a connection admit let in out again.
func (l *Listener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if n, ok := l.perAddr[addr]; ok {
		if n <= 1 {
			delete(l.perAddr, addr)
		} else {
			l.perAddr[addr] = n - 1
		}
	}
}

// refuse counts and logs a connection over a limit, and answers it with
// 503 on a goroutine of its own, bounded by refuseTimeout, or closes it at
// once when too many are being answered already.
func (l *Listener) refuse(c net.Conn, over limit) {
	total := l.refused[over].Add(1)
	if now, last := time.Now().UnixNano(), l.logged.Load(); (last == 0 || now-last >= int64(refusalLogEvery)) && l.logged.CompareAndSwap(last, now) {
		l.log.Warn("connection refused", zap.String("reason", limitNames[over]),
			zap.String("remote", c.RemoteAddr().String()), zap.Uint64("refused", total))
	}
	l.mu.Lock()
	if l.closed || len(l.refusing) >= maxRefusing {
		l.mu.Unlock()
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Now().Add(refuseTimeout)) // before Close can cut it short
	l.refusing[c] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		var rw io.ReadWriter = c
		if l.o.TLSConfig != nil {
			rw = tls.Server(c, l.o.TLSConfig)
		}
		// The answer waits for the request: an HTTP client takes a
		// response that comes before its request for a stray one (Go's
		// transport logs it, drops it, and sees its connection closed).
		in := bufio.NewReader(io.LimitReader(rw, 64<<10))
		if _, err := http.ReadRequest(in); err == nil {
			if _, err := io.WriteString(rw, refusal503); err == nil {
				// Closing with the request's body unread would reset
				// the connection, which can destroy the answer before
				// the client has read it: read until the client closes.
				_, _ = io.Copy(io.Discard, in)
			}
		}
		_ = c.Close()
		l.mu.Lock()
		delete(l.refusing, c)
		l.mu.Unlock()
	}()
}

// trusted reports whether a is the address of a trusted proxy.
func (l *Listener) trusted(a net.Addr) bool {
	if len(l.o.TrustedProxies) == 0 {
		return false
	}
	p := proxies{trusted: l.o.TrustedProxies}
	tcp, ok := a.(*net.TCPAddr)
	return ok && p.isTrusted(tcp.AddrPort().Addr())
}

// hostOf returns the address a per-address limit counts a remote
// address under: the IPv4 address, or the IPv6 /64 prefix. It is invalid
// for addresses that are not IP.
func hostOf(a net.Addr) netip.Addr {
	var ap netip.AddrPort
	if tcp, ok := a.(*net.TCPAddr); ok {
		ap = tcp.AddrPort()
	} else if p, err := netip.ParseAddrPort(a.String()); err == nil {
		ap = p
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		ip = p.Addr()
	}
	return ip
}

// limitedConn is a connection a Listener counts until it is closed.
type limitedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite lets net/http half-close the connection after an error
// answer, as it does with a bare *net.TCPConn.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

// This file finds a request's client behind trusted reverse proxies, and
// caps the WebSockets of one client that come through them.

// proxies is what Options.TrustedProxies and MaxConnsPerAddr make of
// requests that come through a trusted proxy.
type proxies struct {
	trusted []netip.Prefix
	max     int // MaxConnsPerAddr; 0: no cap

	mu   sync.Mutex
	open map[netip.Addr]int // WebSockets by client address
}

// clientOf rewrites r.RemoteAddr to the client's address when r comes
// from a trusted proxy that says who its client is, and reports whether
// it did. The client is the last address of X-Forwarded-For (or of the
// "for" parameters of Forwarded, which wins when both are set) that is
// not itself a trusted proxy: an address a client wrote into the header
// itself comes before those the proxies appended, and is never believed.
func (p *proxies) clientOf(r *http.Request) bool {
	if len(p.trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !p.isTrusted(ap.Addr()) {
		return false
	}
	hops := forwardedFor(r.Header)
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			return false // garbled: nothing before it can be trusted
		}
		if !p.isTrusted(a) {
			r.RemoteAddr = netip.AddrPortFrom(a, 0).String()
			return true
		}
	}
	return false
}

// proxiedKey marks, in a request's context, a request whose RemoteAddr
// clientOf rewrote.
type proxiedKey struct{}

func (p *proxies) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, pre := range p.trusted {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the client addresses the proxies wrote, first hop
// first: the "for" parameters of Forwarded (RFC 7239), or else the
// addresses of X-Forwarded-For.
func forwardedFor(h http.Header) []string {
	var hops []string
	for _, v := range h.Values("Forwarded") {
		for elem := range strings.SplitSeq(v, ",") {
			for pair := range strings.SplitSeq(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					hops = append(hops, strings.Trim(val, `"`))
				}
			}
		}
	}
	if len(hops) > 0 {
		return hops
	}
	for _, v := range h.Values("X-Forwarded-For") {
		for a := range strings.SplitSeq(v, ",") {
			hops = append(hops, strings.TrimSpace(a))
		}
	}
	return hops
}

// parseHop reads one address of a forwarding header: an IP, with or
// without a port, IPv6 in brackets when with one.
func parseHop(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return a.Unmap().WithZone(""), err == nil
}

// take counts one more WebSocket from client, unless MaxConnsPerAddr are
// open already, and returns the function that gives it back, or nil.
func (p *proxies) take(client string) (release func()) {
	ap, err := netip.ParseAddrPort(client)
	if err != nil || p.max <= 0 {
		return func() {}
	}
	a := hostOf(net.TCPAddrFromAddrPort(ap))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[a] >= p.max {
		return nil
	}
	if p.open == nil {
		p.open = make(map[netip.Addr]int)
	}
	p.open[a]++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.open[a]--; p.open[a] == 0 {
			delete(p.open, a)
		}
	}
}

package server

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
)

// originAllowed reports whether a browser request from its Origin may use
// /rpc: same host, or a match in AllowedOrigins (the patterns mean what
// coder/websocket's OriginPatterns mean). No Origin: not a browser.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, pattern := range s.o.AllowedOrigins {
		if pattern == "*" {
			return true
		}
		target := u.Host
		if strings.Contains(pattern, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(target)); ok {
			return true
		}
	}
	return false
}

// hostAllowed checks the Host header against AllowedHosts, or, when none
// are set and the request came in on a loopback address, against the
// names that can only mean this machine (the DNS rebinding defence). The
// health probes pass whatever their Host: they tell only whether the
// server is alive and ready, and probes address a server by its IP.
func (s *Server) hostAllowed(r *http.Request) bool {
	if isProbe(r) {
		return true
	}
	host := requestHost(r)
	if len(s.o.AllowedHosts) > 0 {
		ip, ipErr := netip.ParseAddr(host)
		for _, pattern := range s.o.AllowedHosts {
			if p, ok := ipPattern(pattern); ok {
				if ipErr == nil && p.Contains(ip.Unmap()) {
					return true
				}
				continue
			}
			if ok, _ := path.Match(strings.ToLower(pattern), host); ok {
				return true
			}
		}
		return false
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopback(local) {
		return true
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(host) != nil
}

// hostIsIP reports whether r's Host header is an IP address, with or
// without a port. No DNS rebinding sends one: a page that re-binds its
// name to the server's address has its browser send that name.
func hostIsIP(r *http.Request) bool {
	_, err := netip.ParseAddr(requestHost(r))
	return err == nil
}

// requestHost returns r's Host without its port, brackets and final dot,
// in lower case.
func requestHost(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// ipPattern reads an AllowedHosts entry that is an IP address or a CIDR
// ("10.0.0.0/8", "[::1]"): the network it names.
func ipPattern(pattern string) (netip.Prefix, bool) {
	pattern = strings.Trim(pattern, "[]")
	if p, err := netip.ParsePrefix(pattern); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(pattern); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// isProbe reports whether r asks for a health probe: /healthz or /readyz.
func isProbe(r *http.Request) bool {
	return r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
}

func isLoopback(a net.Addr) bool {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.IsLoopback()
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// authenticate runs Options.Authenticate. On refusal it answers the
// request (401, or 403 for ErrForbidden; a POST also gets a -32001 error
// body), logs and counts it, and returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, post bool) (identity any, ok bool) {
	if op, ok := r.Context().Value(operatorKey{}).(operator); ok {
		return op.identity, true // AdminHandler authenticated it
	}
	if s.o.Authenticate == nil {
		return nil, true
	}
	return s.authenticateWith(s.o.Authenticate, w, r, post)
}

// authenticateWith is authenticate with auth in place of
// Options.Authenticate.
func (s *Server) authenticateWith(auth func(*http.Request) (any, error), w http.ResponseWriter, r *http.Request, post bool) (identity any, ok bool) {
	identity, err := auth(r)
	if err == nil {
		return identity, true
	}
	status := http.StatusUnauthorized
	if errors.Is(err, ErrForbidden) {
		status = http.StatusForbidden
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
	}
	s.counters.refused[refusedAuth].Add(1)
	s.audit.request(auditAuth, "auth", r, status, err)
	if post {
		writeJSON(w, status, []byte(`{"jsonrpc":"2.0","error":{"code":-32001,"message":"Unauthorized"},"id":null}`))
	} else {
		plain(w, status, http.StatusText(status)+"\n")
	}
	return nil, false
}

func isUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && headerHas(r.Header, "Upgrade", "websocket")
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

package server

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"go.uber.org/zap"
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
// names that can only mean this machine (the DNS rebinding defence).
func (s *Server) hostAllowed(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if len(s.o.AllowedHosts) > 0 {
		for _, pattern := range s.o.AllowedHosts {
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
	s.log.Info("request refused", zap.String("reason", "auth"), zap.Int("status", status),
		zap.String("remote", r.RemoteAddr), zap.Error(err))
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

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"

	"github.com/switchboard-rpc/switchboard/server"
	adminpage "github.com/switchboard-rpc/switchboard/web/admin"
	"go.uber.org/zap"
)

// Defaults of the connection limits. A NAT gateway can put many users
// behind one address, each with a few tabs open: the per-address limit
// stops one host from taking every connection, not a busy office.
const (
	defaultMaxConns        = 10000
	defaultMaxConnsPerAddr = 2000
)

// listenConfig is what the flags say about connections: TLS, timeouts,
// limits, and where /metrics is served.
type listenConfig struct {
	tlsCert, tlsKey  string
	headerTimeout    time.Duration
	idleTimeout      time.Duration
	handshakeTimeout time.Duration
	maxConns         int
	maxConnsPerAddr  int
	trustedProxies   []netip.Prefix
	metricsAddr      string
	pprof            bool
}

func (c *listenConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM `file` of the certificate (chain); with -tls-key, serve https:// and wss://")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM `file` of the certificate's private key")
	fs.DurationVar(&c.headerTimeout, "header-timeout", 10*time.Second, "the longest `duration` a client may take to send a request's headers (and, with TLS, to do its handshake)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "how long a keep-alive connection may stay idle between requests (`duration`)")
	fs.DurationVar(&c.handshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "the longest `duration` a WebSocket handshake may take once its headers are in (authentication, the 101 response)")
	fs.IntVar(&c.maxConns, "max-conns", defaultMaxConns, "most `connections` open at once; more are answered 503 and closed (0: no limit)")
	fs.IntVar(&c.maxConnsPerAddr, "max-conns-per-addr", defaultMaxConnsPerAddr, "most `connections` open at once from one IP address, or IPv6 /64 (0: no limit; behind a reverse proxy, list it in -trusted-proxies)")
	fs.Func("trusted-proxies", "comma-separated `CIDRs` (or IPs) of reverse proxies in front of the hub: for their requests, the client address comes from X-Forwarded-For or Forwarded, for -max-conns-per-addr and the logs", func(s string) error {
		p, err := parsePrefixes(s)
		c.trustedProxies = p
		return err
	})
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve /metrics on this `address` only, without authentication, to a Host of -hosts or any IP address (default: on -addr, only to a token of -token-file, never to a JSON Web Token); the admin API is served there at /rpc, to a token of -token-file")
	fs.BoolVar(&c.pprof, "pprof", false, "also serve Go's profiles (/debug/pprof/: CPU, heap, allocations, goroutines) on -metrics-addr, which it needs")
}

// listen listens on addr with the connection limits, and TLS when
// certificate is not nil: it gives the certificate of each handshake.
func (c *listenConfig) listen(addr string, certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error), log *zap.Logger) (*server.Listener, error) {
	var cfg *tls.Config
	if certificate != nil {
		cfg = tlsConfig(certificate)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return server.NewListener(ln, &server.ListenerOptions{
		MaxConns:        c.maxConns,
		MaxConnsPerAddr: c.maxConnsPerAddr,
		TrustedProxies:  c.trustedProxies,
		TLSConfig:       cfg,
		Logger:          log,
	}), nil
}

// parsePrefixes reads a comma-separated list of CIDRs; a bare IP is a
// network of that one address.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range splitList(s) {
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", part)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// loadCert loads the certificate of -tls-cert and -tls-key; nil without
// them.
func (c *listenConfig) loadCert() (*tls.Certificate, error) {
	if c.tlsCert == "" && c.tlsKey == "" {
		return nil, nil
	}
	if c.tlsCert == "" || c.tlsKey == "" {
		return nil, errors.New("-tls-cert and -tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	return &cert, nil
}

// tlsConfig is the TLS configuration of the listener: certificate gives
// the certificate of each handshake, so that a reload can replace it.
// Only HTTP/1.1 is offered: a WebSocket upgrade needs it, and a browser
// that had an HTTP/2 connection to the hub would try to open its
// WebSockets over that.
func tlsConfig(certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		GetCertificate: certificate,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
	}
}

// hideMetrics answers /metrics on the main listener with 404 when
// -metrics-addr moves it elsewhere. Every other path goes to h.
func (c *listenConfig) hideMetrics(h http.Handler) http.Handler {
	if c.metricsAddr == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveMetrics serves /metrics, /healthz and /readyz of h on -metrics-addr, if
// set, the admin API (admin, which authenticates its callers) at /rpc and
// its page at /admin/, and Go's profiles with -pprof, until stop is called. guard puts the Host
// check in front of every path of that listener, which a request by IP
// address passes; it asks for no token (see the -metrics-addr flag).
func (c *listenConfig) serveMetrics(h, admin http.Handler, guard func(http.Handler) http.Handler, log *zap.Logger) (stop func(context.Context) error, err error) {
	if c.metricsAddr == "" {
		if c.pprof {
			return nil, errors.New("-pprof needs -metrics-addr: profiles are not served on -addr")
		}
		return func(context.Context) error { return nil }, nil
	}
	ln, err := net.Listen("tcp", c.metricsAddr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.Handle("/healthz", h)
	mux.Handle("/readyz", h)
	mux.Handle("/rpc", admin)
	mux.Handle("/admin/", adminpage.Handler("/admin/")) // the page calls /rpc with the token it is given
	if c.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index) // and the named profiles: heap, allocs, goroutine...
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	hs := &http.Server{Handler: guard(mux), ReadHeaderTimeout: c.headerTimeout, IdleTimeout: c.idleTimeout, ErrorLog: httpErrorLog(log)}
	log.Info("metrics listening", zap.String("addr", ln.Addr().String()))
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("-metrics-addr is beyond loopback: anyone who reaches it can read the metrics (and, without -token-file or JWTs, call the admin API)")
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln) // ErrServerClosed once stopped
	}()
	return func(ctx context.Context) error {
		err := hs.Shutdown(ctx)
		<-served
		return err
	}, nil
}

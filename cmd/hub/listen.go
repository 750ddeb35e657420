package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
)

// Defaults of the connection limits. A NAT gateway can put many users
// behind one address, each with a few tabs open: the per-address limit
// stops one host from taking every connection, not a busy office.
const (
	defaultMaxConns        = 10000
	defaultMaxConnsPerAddr = 2000
)

// listenConfig is what the flags say about connections: TLS, timeouts
// and limits.
type listenConfig struct {
	tlsCert, tlsKey  string
	headerTimeout    time.Duration
	idleTimeout      time.Duration
	handshakeTimeout time.Duration
	maxConns         int
	maxConnsPerAddr  int
}

func (c *listenConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM `file` of the certificate (chain); with -tls-key, serve https:// and wss://")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM `file` of the certificate's private key")
	fs.DurationVar(&c.headerTimeout, "header-timeout", 10*time.Second, "how long a client may `take` to send a request's headers (and, with TLS, to do its handshake)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "how long a keep-alive connection may `wait` between requests")
	fs.DurationVar(&c.handshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "how long a WebSocket handshake may `take` once its headers are in (authentication, the 101 response)")
	fs.IntVar(&c.maxConns, "max-conns", defaultMaxConns, "most `connections` open at once; more are answered 503 and closed (0: no limit)")
	fs.IntVar(&c.maxConnsPerAddr, "max-conns-per-addr", defaultMaxConnsPerAddr, "most `connections` open at once from one IP address, or IPv6 /64 (0: no limit; use 0 behind a reverse proxy)")
}

// listen listens on addr with the connection limits, and TLS when a
// certificate is given.
func (c *listenConfig) listen(addr string, log *zap.Logger) (net.Listener, error) {
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return server.NewListener(ln, &server.ListenerOptions{
		MaxConns:        c.maxConns,
		MaxConnsPerAddr: c.maxConnsPerAddr,
		TLSConfig:       cfg,
		Logger:          log,
	}), nil
}

// tlsConfig loads the certificate; nil without -tls-cert and -tls-key.
// Only HTTP/1.1 is offered: a WebSocket upgrade needs it, and a browser
// that had an HTTP/2 connection to the hub would try to open its
// WebSockets over that.
func (c *listenConfig) tlsConfig() (*tls.Config, error) {
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
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"},
	}, nil
}

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/redact"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// validate checks what the hub would refuse once running, before it
// runs: the log settings, the addresses, the files the flags name (TLS,
// tokens, JWT key, NATS credentials) and the rules. The hub runs it at
// start and on each reload, and check-config runs it: a configuration
// check-config accepts is one the hub starts with. Each error names where
// the value came from (file and line, environment variable or flag), the
// key, and the form wanted.
func (c *config) validate() error {
	if _, err := zapcore.ParseLevel(c.logLevel); err != nil {
		return c.at("log-level", fmt.Errorf("%q is no log level: want debug, info, warn or error", c.logLevel))
	}
	switch c.logFormat {
	case "auto", "json", "console":
	default:
		return c.at("log-format", fmt.Errorf("%q is no log format: want auto, json or console", c.logFormat))
	}
	for _, a := range []struct{ name, value string }{{"addr", c.addr}, {"metrics-addr", c.listen.metricsAddr}} {
		if a.value == "" && a.name != "addr" {
			continue
		}
		if err := checkAddr(a.value); err != nil {
			return c.at(a.name, err)
		}
	}
	if c.cluster.nats == "embedded" {
		if err := checkAddr(c.cluster.listen); err != nil {
			return c.at("nats-listen", err)
		}
	}
	if err := c.checkTLS(); err != nil {
		return err
	}
	if c.tokenFile != "" {
		if _, err := readTokens(c.tokenFile); err != nil {
			return c.at("token-file", err)
		}
	}
	if c.identity.jwtKey != "" && c.identity.jwks == "" { // a JWKS would be fetched: the hub says at start
		if _, err := c.identity.verifier(context.Background(), zap.NewNop()); err != nil {
			return c.at("jwt-key", err)
		}
	}
	if c.identity.jwks != "" {
		if u, err := url.Parse(c.identity.jwks); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return c.at("jwks", fmt.Errorf("%q is no URL: want https://host/path", redact.URL(c.identity.jwks)))
		}
	}
	if c.listen.pprof && c.listen.metricsAddr == "" {
		return c.at("pprof", errors.New("needs metrics-addr: profiles are not served on addr"))
	}
	if c.cluster.jetStream && c.cluster.nats == "" {
		return c.at("nats-jetstream", errors.New("needs nats: want the NATS servers' URLs, or embedded"))
	}
	if (c.cluster.tlsCert == "") != (c.cluster.tlsKey == "") {
		name := "nats-tls-cert"
		if c.cluster.tlsCert == "" {
			name = "nats-tls-key"
		}
		return c.at(name, errors.New("set alone: want nats-tls-cert and nats-tls-key together"))
	}
	for _, f := range []struct{ name, file string }{
		{"nats-creds", c.cluster.creds}, {"nats-nkey", c.cluster.nkey}, {"nats-tls-ca", c.cluster.tlsCA},
		{"nats-tls-cert", c.cluster.tlsCert}, {"nats-tls-key", c.cluster.tlsKey},
	} {
		if err := readable(f.file); err != nil {
			return c.at(f.name, err)
		}
	}
	if _, err := c.identity.ruleSet(); err != nil {
		return err
	}
	return nil
}

// checkTLS checks that -tls-cert and -tls-key name readable files that
// make a certificate and its key.
func (c *config) checkTLS() error {
	cert, key := c.listen.tlsCert, c.listen.tlsKey
	if cert == "" && key == "" {
		return nil
	}
	if cert == "" {
		return c.at("tls-key", errors.New("set without tls-cert: want both or neither"))
	}
	if key == "" {
		return c.at("tls-cert", errors.New("set without tls-key: want both or neither"))
	}
	if err := readable(cert); err != nil {
		return c.at("tls-cert", err)
	}
	if err := readable(key); err != nil {
		return c.at("tls-key", err)
	}
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return c.at("tls-cert", fmt.Errorf("with tls-key: %w (want a PEM certificate and its PEM private key)", err))
	}
	return nil
}

// readable checks that file, if named, can be read.
func readable(file string) error {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return err
	} else if st.IsDir() {
		return fmt.Errorf("%s is a directory: want a file", file)
	}
	return nil
}

// checkAddr checks a listening address: host:port, the port a number from
// 0 to 65535. The host is not resolved.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port, such as 127.0.0.1:8080 or :8080", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err == nil {
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil { // a service name ("http") is what net.Listen takes too
		return fmt.Errorf("%q: port %q: want a number from 0 to 65535", addr, port)
	}
	return nil
}

// at says where the value of the named flag came from, before err: the
// config file and line, the environment variable, or the flag.
func (c *config) at(name string, err error) error {
	if fc := c.identity.file; fc != nil {
		if o, ok := fc.origin[name]; ok {
			if o == envName(name) {
				return fmt.Errorf("%s: %w", o, err)
			}
			return fmt.Errorf("%s: %s: %w", o, name, err)
		}
	}
	return fmt.Errorf("-%s: %w", name, err)
}

// wantForm explains a value flag f refused: the form it wants. Errors of
// flags that say so themselves are returned as they are.
func wantForm(f *flag.Flag, value string, err error) error {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return fmt.Errorf("%q is not a boolean: want true or false", value)
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err
	}
	example := f.DefValue
	if example == "0" || example == "" {
		example = "100"
	}
	switch g.Get().(type) {
	case int, int64:
		return fmt.Errorf("%q is not a whole number: want digits only, such as %s (no units, no exponent)", value, example)
	case uint, uint64:
		return fmt.Errorf("%q is not a whole number: want digits only, 0 or more, such as %s (no units, no exponent)", value, example)
	case float64:
		return fmt.Errorf("%q is not a number: want a decimal number, such as %s", value, example)
	case time.Duration:
		return fmt.Errorf("%q is not a duration: want a number and a unit, such as 10s, 1m30s or 500ms", value)
	}
	return err
}

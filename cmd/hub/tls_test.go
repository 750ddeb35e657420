package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// TestTLS runs the hub with a certificate made for the test: https://
// and wss:// work for a client that trusts it, a client that does not is
// refused by its own TLS stack, and plain HTTP gets 400.
func TestTLS(t *testing.T) {
	cert := hubtest.NewCert(t)
	p := startProc(t, "-demo", "-tls-cert", cert.CertFile, "-tls-key", cert.KeyFile)
	addr := p.Addr(t, "hub listening")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Roots}}}
	defer trusting.CloseIdleConnections()
	status, body, err := postAdd(ctx, trusting, "https://"+addr+"/rpc")
	if err != nil || status != 200 || body != `{"jsonrpc":"2.0","id":1,"result":3}` {
		t.Fatalf("https POST: %d %s %v", status, body, err)
	}

	c, err := client.Dial(ctx, "wss://"+addr+"/rpc", &client.Options{TLSConfig: &tls.Config{RootCAs: cert.Roots}})
	if err != nil {
		t.Fatalf("wss: %v", err)
	}
	var sum float64
	err = c.Call(ctx, "add", []float64{1, 2}, &sum)
	c.Close()
	if err != nil || sum != 3 {
		t.Fatalf("add over wss = %v, %v", sum, err)
	}

	untrusting := &http.Client{Transport: &http.Transport{}}
	defer untrusting.CloseIdleConnections()
	var verr *tls.CertificateVerificationError
	if _, _, err := postAdd(ctx, untrusting, "https://"+addr+"/rpc"); !errors.As(err, &verr) {
		t.Fatalf("a client without the CA: %v, want a certificate verification error", err)
	}

	status, body, err = postAdd(ctx, untrusting, "http://"+addr+"/rpc")
	if err != nil || status != 400 || !strings.Contains(body, "HTTPS") {
		t.Fatalf("plain HTTP to the TLS port: %d %q %v, want 400", status, body, err)
	}

	if log := p.Stop(t); !strings.Contains(log, `"tls":true`) {
		t.Fatalf("the listening line does not say TLS:\n%s", log)
	}
}

func TestTLSFlags(t *testing.T) {
	cert := hubtest.NewCert(t)
	for _, args := range [][]string{
		{"-tls-cert", cert.CertFile},
		{"-tls-key", cert.KeyFile},
		{"-tls-cert", cert.KeyFile, "-tls-key", cert.CertFile},
		{"-tls-cert", cert.CertFile + ".missing", "-tls-key", cert.KeyFile},
	} {
		if err := run(t.Context(), append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, nil); err == nil {
			t.Errorf("run %q: no error", args)
		}
	}
}

// postAdd POSTs add(1, 2) to url and returns the status and body.
func postAdd(ctx context.Context, c *http.Client, url string, header ...string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

package hubtest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// add POSTs add(1, 2) and returns the response body.
func add(t *testing.T, c *http.Client, url string, header http.Header) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

const three = `{"jsonrpc":"2.0","id":1,"result":3}`

func TestRestart(t *testing.T) {
	h := hubtest.Start(t, nil)
	if want := "ws://" + h.Addr() + "/rpc"; h.WS() != want {
		t.Errorf("WS() = %q, want %q", h.WS(), want)
	}
	if got, err := add(t, http.DefaultClient, h.HTTP(), nil); err != nil || got != three {
		t.Fatalf("add = %s, %v", got, err)
	}
	ws, _, err := websocket.Dial(ctx(t), h.WS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	before := h.Hub()
	if n := h.Publish("x", 1); n != 0 {
		t.Errorf("delivered to %d", n)
	}

	h.Stop()
	if _, _, err := ws.Read(ctx(t)); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("read after Stop: %v; want close 1001", err)
	}
	if _, err := add(t, http.DefaultClient, h.HTTP(), nil); err == nil {
		t.Fatal("POST to a stopped hub went through")
	}
	h.Stop() // again: nothing to do

	h.Start()
	if got, err := add(t, http.DefaultClient, h.HTTP(), nil); err != nil || got != three {
		t.Fatalf("add after Start = %s, %v", got, err)
	}
	if h.Hub() == before {
		t.Error("the restarted hub is the old one")
	}
}

func TestTLSAndAuth(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{
		Server: server.Options{Authenticate: server.TokenAuth(map[string]string{"s3cret": "alice"})},
		TLS:    true,
	})
	if !strings.HasPrefix(h.WS(), "wss://") || !strings.HasPrefix(h.HTTP(), "https://") {
		t.Fatalf("URLs %s and %s", h.WS(), h.HTTP())
	}
	roots := x509.NewCertPool()
	roots.AddCert(h.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	auth := http.Header{"Authorization": {"Bearer s3cret"}}
	if got, err := add(t, c, h.HTTP(), auth); err != nil || got != three {
		t.Fatalf("add = %s, %v", got, err)
	}
	if got, err := add(t, c, h.HTTP(), nil); err != nil || !strings.Contains(got, "-32001") {
		t.Fatalf("add without a token = %s, %v", got, err)
	}
	h.Stop()
	h.Start()
	tr.CloseIdleConnections()
	if got, err := add(t, c, h.HTTP(), auth); err != nil || got != three {
		t.Fatalf("add after Start = %s, %v", got, err)
	}
	var uerr *tls.CertificateVerificationError
	if _, err := add(t, http.DefaultClient, h.HTTP(), auth); !errors.As(err, &uerr) {
		t.Fatalf("add without the certificate: %v", err)
	}
}

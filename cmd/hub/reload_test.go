package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// TestReload: SIGHUP reads the config file again. Changed rules refuse
// what they no longer allow, and end the subscriptions they no longer
// allow (the peer is told with rpc.revoked), while connected peers stay
// and a subscription still allowed keeps its position; a rotated key takes over; a broken file is refused
// and the running configuration stays; a setting only a restart changes
// is named; and SIGTERM still drains.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	keyFile := testkit.WriteFile(t, filepath.Join(dir, "hub.key"), hmacKey)
	config := filepath.Join(dir, "hub.yaml")
	write := func(content string) {
		t.Helper()
		testkit.WriteFile(t, config, []byte(content))
	}
	rules := func(userTopics ...string) string {
		return "demo: true\njwt-key: " + keyFile + "\nanonymous: false\nrules:\n" +
			"  - {allow: [subscribe], to: [\"" + strings.Join(userTopics, `", "`) + "\"], who: authenticated}\n" +
			"  - {allow: [publish, subscribe, call], to: [\">\"], who: role=backend}\n"
	}
	write(rules("news.>", "sports.>"))
	p := startProc(t, "-config", config)
	url := "ws://" + p.Addr(t, "hub listening") + "/rpc"

	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	revoked := make(chan client.Revoked, 1)
	dial := func(token string) *client.Client {
		t.Helper()
		c, err := client.Dial(ctx, url, &client.Options{Token: token, MaxAttempts: -1, OnRevoked: func(r client.Revoked) { revoked <- r }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	whoami := func(c *client.Client) string {
		t.Helper()
		var me struct{ ID string }
		if err := c.Call(ctx, "rpc.whoami", nil, &me); err != nil {
			t.Fatal(err)
		}
		return me.ID
	}
	refused := func(err error) bool {
		var e *peer.Error
		return errors.As(err, &e) && e.Code == peer.CodeUnauthorized
	}
	alice := dial(signJWT(t, "alice", nil))
	backend := dial(signJWT(t, "orders", jwt.MapClaims{"role": "backend"}))
	aliceID := whoami(alice)
	events := make(chan client.Event, 16)
	news, err := alice.Subscribe(ctx, "news.>", func(ev client.Event) { events <- ev })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Subscribe(ctx, "sports.>", func(ev client.Event) { events <- ev }); err != nil {
		t.Fatal(err)
	}
	publish := func(topic string) client.Event {
		t.Helper()
		if _, err := backend.Publish(ctx, topic, 1); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			return ev
		case <-ctx.Done():
			t.Fatal("alice received no event")
			return client.Event{}
		}
	}
	first := publish("news.today")

	// New rules: users get sports, not news.
	write(rules("sports.>"))
	p.Signal(t, syscall.SIGHUP)
	p.WaitLog(t, `"msg":"configuration reloaded"`, 1)
	p.WaitLog(t, `"msg":"reload: ended what the new rules refuse","peers":2,"peers_affected":1,"subscriptions":1,"methods":0`, 1)
	if r := testkit.Recv(t, revoked, "rpc.revoked after the reload"); strings.Join(r.Topics, ",") != "news.>" || len(r.Methods) != 0 {
		t.Errorf("rpc.revoked %+v, want news.> only", r)
	}
	testkit.WaitFor(t, "the news subscription ended", func() bool { return errors.Is(news.Err(), client.ErrRevoked) })
	if _, err := alice.Subscribe(ctx, "news.local", func(client.Event) {}); !refused(err) {
		t.Errorf("news.local after the reload: %v, want -32001", err)
	}
	if _, err := alice.Subscribe(ctx, "sports.today", func(client.Event) {}); err != nil {
		t.Errorf("sports.today after the reload: %v", err)
	}
	if second := publish("sports.today"); second.Seq != first.Seq+1 || second.Epoch != first.Epoch {
		t.Errorf("the subscription went from %d@%s to %d@%s, want the next position", first.Seq, first.Epoch, second.Seq, second.Epoch)
	}
	if id := whoami(alice); id != aliceID {
		t.Errorf("alice's connection changed: %s, then %s", aliceID, id)
	}

	// A broken file: refused, the running rules stay.
	write("rules: [\n")
	p.Signal(t, syscall.SIGHUP)
	p.WaitLog(t, `"msg":"reload refused: the running configuration stays"`, 1)
	if _, err := alice.Subscribe(ctx, "sports.weekend", func(client.Event) {}); err != nil {
		t.Errorf("sports.weekend after a broken reload: %v", err)
	}
	if _, err := alice.Subscribe(ctx, "news.weekend", func(client.Event) {}); !refused(err) {
		t.Errorf("news.weekend after a broken reload: %v, want -32001", err)
	}

	// A rotated key, the log level, and a setting that needs a restart.
	badUpgrade(t, ctx, p.Addr(t, "hub listening"), signJWT(t, "alice", nil))
	newKey := []byte("the rotated HMAC secret, 32 bytes or more")
	testkit.WriteFile(t, keyFile, newKey)
	write(rules("sports.>") + "max-batch: 7\nlog-level: debug\n")
	p.Signal(t, syscall.SIGHUP)
	p.WaitLog(t, `"msg":"configuration reloaded"`, 2)
	p.WaitLog(t, `"msg":"reload: these settings need a restart and keep their running values","settings":["max-batch"]`, 1)
	if _, err := client.Dial(ctx, url, &client.Options{Token: signJWT(t, "bob", nil), MaxAttempts: -1}); err == nil {
		t.Error("a token signed with the old key connected after the rotation")
	}
	rotated := testkit.HS256(t, newKey, "bob", time.Hour, nil)
	if id := whoami(dial(rotated)); id == "" {
		t.Error("bob's rotated token: no peer id")
	}
	if id := whoami(alice); id != aliceID {
		t.Errorf("alice's connection changed with the rotation: %s, then %s", aliceID, id)
	}
	badUpgrade(t, ctx, p.Addr(t, "hub listening"), rotated) // logged at debug only
	p.WaitLog(t, `"level":"debug","ts"`, 1)

	log := p.Stop(t) // SIGTERM: a graceful drain, status 0
	if !strings.Contains(log, `"msg":"hub stopped"`) {
		t.Errorf("no graceful stop:\n%s", log)
	}
	if n := strings.Count(log, `"msg":"websocket upgrade failed"`); n != 1 {
		t.Errorf("%d upgrade failures logged, want 1: the one after -log-level debug", n)
	}
}

// badUpgrade sends a WebSocket upgrade with token and without a key, which
// the hub refuses after authentication, logging it at debug.
func badUpgrade(t *testing.T, ctx context.Context, addr, token string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/rpc", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("an upgrade without a key: %d, want 400", resp.StatusCode)
	}
}

// TestReloadCertificate: SIGHUP reads a renewed certificate; connections
// made after it get the new one.
func TestReloadCertificate(t *testing.T) {
	old, renewed := hubtest.NewCert(t), hubtest.NewCert(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	install := func(c *hubtest.Cert) {
		t.Helper()
		for from, to := range map[string]string{c.CertFile: certFile, c.KeyFile: keyFile} {
			data, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, to, data)
		}
	}
	install(old)
	p := startProc(t, "-demo", "-tls-cert", certFile, "-tls-key", keyFile)
	addr := p.Addr(t, "hub listening")
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	trusts := func(c *hubtest.Cert) bool {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Roots}}}
		defer hc.CloseIdleConnections()
		status, _, err := postAdd(ctx, hc, "https://"+addr+"/rpc")
		return err == nil && status == 200
	}
	if !trusts(old) || trusts(renewed) {
		t.Fatal("before the reload, the hub does not serve the old certificate")
	}
	install(renewed)
	p.Signal(t, syscall.SIGHUP)
	p.WaitLog(t, `"msg":"configuration reloaded"`, 1)
	if !trusts(renewed) || trusts(old) {
		t.Error("after the reload, the hub does not serve the renewed certificate")
	}
	// A key that does not match: refused, the renewed certificate stays.
	testkit.WriteFile(t, keyFile, mustRead(t, old.KeyFile))
	p.Signal(t, syscall.SIGHUP)
	p.WaitLog(t, `"msg":"reload refused: the running configuration stays"`, 1)
	if !trusts(renewed) {
		t.Error("a refused reload changed the certificate")
	}
	p.Stop(t)
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReloadRefusesModeChanges: a reload that would turn authentication,
// JSON Web Tokens or TLS on or off is refused, and the running state
// stays; one that keeps them reloads.
func TestReloadRefusesModeChanges(t *testing.T) {
	key := writeKey(t)
	tokens, _ := writeTokens(t, 1)
	cert := hubtest.NewCert(t)
	for _, tt := range []struct {
		name, from, to, want string
	}{
		{"authentication off", "jwt-key: " + key, "demo: true", "turning authentication on or off needs a restart"},
		{"authentication on", "demo: true", "token-file: " + tokens, "turning authentication on or off needs a restart"},
		{"JWTs on", "token-file: " + tokens, "token-file: " + tokens + "\njwt-key: " + key, "turning JSON Web Tokens on or off needs a restart"},
		{"TLS on", "demo: true", "tls-cert: " + cert.CertFile + "\ntls-key: " + cert.KeyFile, "turning TLS on or off needs a restart"},
		{"keys kept", "jwt-key: " + key, "jwt-key: " + key + "\ntoken-file: " + tokens, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "hub.yaml", tt.from+"\n")
			args := []string{"-config", file}
			c, err := parseFlags(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			log := zap.NewNop()
			lv, err := newLive(t.Context(), c, args, zap.NewAtomicLevel(), log)
			if err != nil {
				t.Fatal(err)
			}
			defer lv.close()
			before := lv.cur.Load()
			testkit.WriteFile(t, file, []byte(tt.to+"\n"))
			err = lv.reload(t.Context(), log)
			if tt.want == "" {
				if err != nil || lv.cur.Load() == before {
					t.Errorf("reload: %v, state replaced: %v", err, lv.cur.Load() != before)
				}
				return
			}
			if err == nil || err.Error() != tt.want || lv.cur.Load() != before {
				t.Errorf("reload: %v, want %q and the running state kept", err, tt.want)
			}
		})
	}
}

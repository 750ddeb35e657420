package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

// TestTokenFile: a subscribe whose JSON Web Token expires reads the
// renewed one from -token-file and goes on receiving events on the same
// connection, where a -token alone is closed at its expiry.
func TestTokenFile(t *testing.T) {
	key := []byte("a test secret of at least thirty-two bytes")
	j, err := server.NewJWT(t.Context(), &server.JWTOptions{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.Start(t, &hubtest.Options{Server: server.Options{Authenticate: j.Authenticate, Reauthenticate: j.Verify}})
	sign := func(exp time.Time) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "exp": exp.Unix()}).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		testkit.WriteFile(t, file, []byte(tok+"\n"))
	}
	soon := time.Now().Add(3 * time.Second)
	write(sign(soon))
	cmd, stdout, lines := start(t, "subscribe", "-token-file", file, "-n", "1", h.WS(), "news")
	waitLine(t, lines, "subscribed to news")
	write(sign(time.Now().Add(time.Hour))) // renewed, as a sidecar would
	testkit.WaitFor(t, "the first token to expire", func() bool { return time.Now().After(soon.Add(time.Second)) })
	rpc(t, "", "publish", "-token", sign(time.Now().Add(time.Minute)), h.WS(), "news", `"after"`).check(t, 0, published(h, 1, 1))
	if code := exited(t, cmd, lines); code != 0 {
		t.Fatalf("subscribe exited %d", code)
	}
	if !strings.Contains(stdout.String(), `"after"`) {
		t.Fatalf("stdout %q", stdout)
	}

	r := rpc(t, "", "call", "-token", "x", "-token-file", file, h.WS(), "rpc.ping")
	if r.code != exitUsage || !strings.Contains(r.stderr, "give one") {
		t.Fatalf("-token and -token-file: exit %d, %q", r.code, r.stderr)
	}
	rpc(t, "", "call", "-token-file", file, h.HTTP(), "add", "1", "2").check(t, 0, "3\n")
}

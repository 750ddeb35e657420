package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// deployed writes the key file and a copy of the example config that
// names it by its full path, as an operator's deployment would, and
// returns the config's path and the directory.
func deployed(t *testing.T) (config, dir string) {
	t.Helper()
	dir = t.TempDir()
	keyFile := testkit.WriteFile(t, filepath.Join(dir, "hub.key"), secret)
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "jwt-key: hub.key\n", "jwt-key: "+keyFile+"\n", 1)
	if !strings.Contains(text, keyFile) {
		t.Fatal("the example config has no jwt-key: hub.key line")
	}
	config = filepath.Join(dir, "hub.yaml")
	testkit.WriteFile(t, config, []byte(text))
	return config, dir
}

// post sends one JSON-RPC request over POST with token (none if "") and
// returns the HTTP status.
func post(t *testing.T, h *hubproc.Hub, token, body string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	status, _ := testkit.Post(t, ctx, h.URL()+"/rpc", token, body)
	return status
}

const add = `{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1}`

// TestDemoGrants: a demo hub without rules, with JSON Web Tokens: a token
// granted only add calls add, and nothing else of the demo's.
func TestDemoGrants(t *testing.T) {
	keyFile := testkit.WriteFile(t, filepath.Join(t.TempDir(), "hub.key"), secret)
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-jwt-key", keyFile}})
	granted := token(t, "alice", time.Hour, jwt.MapClaims{"switchboard": map[string]any{"call": []string{"add"}}})
	plain := token(t, "bob", time.Hour, nil)
	for _, tt := range []struct{ tok, method, want string }{
		{granted, "add", `"result":5`},
		{granted, "subtract", `"code":-32001`},
		{granted, "echo", `"code":-32001`},
		{plain, "subtract", `"result":-1`},
		{plain, "echo", `"result":[2,3]`},
	} {
		reply := testclient.Post(t, t.Context(), h.URL(), tt.tok, `{"jsonrpc":"2.0","method":"`+tt.method+`","params":[2,3],"id":1}`)
		if !strings.Contains(reply, tt.want) {
			t.Errorf("%s by %.10s...: %s, want %s", tt.method, tt.tok, reply, tt.want)
		}
	}
}

// TestEmptyVariables: the example config deployed with environment
// variables that are empty, as a template writes them when its own are
// unset, and one misspelt: the file's key and audience still hold, and
// the log names each variable it ignored.
func TestEmptyVariables(t *testing.T) {
	config, _ := deployed(t)
	h := hubproc.Start(t, &hubproc.Options{
		Args: []string{"-config", config},
		Env: []string{"SWITCHBOARD_JWT_KEY=", "SWITCHBOARD_JWT_AUDIENCE=", "SWITCHBOARD_TOKEN_FILE=",
			"SWITCHBOARD_JWT_ISSUR=https://login.example"},
	})
	otherService := func() string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "aud": "billing", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}()
	for _, tt := range []struct {
		name, tok string
		want      int
	}{
		{"no token", "", 401},
		{"a token for another service", otherService, 401},
		{"a token for the hub", token(t, "alice", time.Hour, nil), 200},
	} {
		if got := post(t, h, tt.tok, add); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"msg":"environment variable ignored","name":"SWITCHBOARD_JWT_KEY","reason":"empty: counts as unset"`,
		`"name":"SWITCHBOARD_JWT_AUDIENCE","reason":"empty: counts as unset"`,
		`"name":"SWITCHBOARD_JWT_ISSUR","reason":"names no setting of the hub (did you mean SWITCHBOARD_JWT_ISSUER?)"`,
	} {
		if !strings.Contains(h.Log(), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}

// TestNoWayToAuthenticate: a hub told anonymous: false that has no key,
// JWKS or token file exits at once (status 2), saying why, and so does
// check-config; it does not run open.
func TestNoWayToAuthenticate(t *testing.T) {
	config, dir := deployed(t)
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, "jwt-key:") {
			kept = append(kept, line)
		}
	}
	keyless := testkit.WriteFile(t, filepath.Join(dir, "keyless.yaml"), []byte(strings.Join(kept, "")))
	bin, err := hubproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-addr", "127.0.0.1:0", "-config", keyless},
		{"check-config", keyless},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "SWITCHBOARD_JWT_KEY=")
		out, err := cmd.CombinedOutput()
		cancel()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 ||
			!strings.Contains(string(out), "hub: anonymous is false, but none of -token-file, -jwt-key and -jwks is set") {
			t.Errorf("hub %q: %v, want exit status 2 and why\n%s", args, err, out)
		}
	}
}

// TestMetricsOnlyForTheOperator: the example config has no metrics-addr,
// so /metrics is on the hub's address: a token of the token file reads
// it, no user's JWT does, a backend's included; without a token file, no
// JWT reads it.
func TestMetricsOnlyForTheOperator(t *testing.T) {
	config, dir := deployed(t)
	tokens := filepath.Join(dir, "tokens")
	const operator = "the-operator's-token-for-prometheus-0123456789"
	testkit.WriteFile(t, tokens, []byte(operator+"\n"))
	alice := "Bearer " + token(t, "alice", time.Hour, nil)
	backend := "Bearer " + token(t, "orders", time.Hour, jwt.MapClaims{"role": "backend"})
	for _, tt := range []struct {
		name string
		args []string
		want map[string]int
	}{
		{"token file", []string{"-config", config, "-token-file", tokens},
			map[string]int{"": 401, alice: 401, backend: 401, "Bearer " + operator: 200}},
		{"JWTs only", []string{"-config", config},
			map[string]int{"": 401, alice: 403, backend: 403}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := hubproc.Start(t, &hubproc.Options{Args: tt.args})
			for auth, want := range tt.want {
				if got, _ := get(t, h.URL()+"/metrics", auth); got != want {
					t.Errorf("/metrics with %.20q: %d, want %d", auth, got, want)
				}
			}
			// The backend's token still does what the rules give it.
			if got := post(t, h, strings.TrimPrefix(backend, "Bearer "), add); got != 200 {
				t.Errorf("add by the backend: %d", got)
			}
		})
	}
}

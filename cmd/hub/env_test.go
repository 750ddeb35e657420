package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestEmptyVariablesAreUnset: an empty SWITCHBOARD_ variable, as a
// template writes one whose own variable is unset, changes nothing: the
// file's audience and key hold, and the address is not every interface.
func TestEmptyVariablesAreUnset(t *testing.T) {
	key := writeKey(t)
	file := writeFile(t, "hub.yaml", "addr: 127.0.0.1:9001\njwt-key: "+key+"\njwt-audience: switchboard\nanonymous: false\n")
	for _, name := range []string{"SWITCHBOARD_ADDR", "SWITCHBOARD_JWT_KEY", "SWITCHBOARD_JWT_AUDIENCE", "SWITCHBOARD_TOKEN_FILE", "SWITCHBOARD_ANONYMOUS"} {
		t.Setenv(name, "")
	}
	t.Setenv("SWITCHBOARD_JWKS", " ")
	c, err := parseFlags([]string{"-config", file}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9001" || c.identity.jwtKey != key || c.identity.audience != "switchboard" || c.identity.jwks != "" {
		t.Errorf("addr %q jwt-key %q jwt-audience %q jwks %q: the empty variables changed them", c.addr, c.identity.jwtKey, c.identity.audience, c.identity.jwks)
	}
	var names []string
	for _, v := range c.identity.file.ignored {
		names = append(names, v.name)
		if v.reason != "empty: counts as unset" {
			t.Errorf("%s: %s", v.name, v.reason)
		}
	}
	if got := strings.Join(names, " "); got != "SWITCHBOARD_ADDR SWITCHBOARD_ANONYMOUS SWITCHBOARD_JWKS SWITCHBOARD_JWT_AUDIENCE SWITCHBOARD_JWT_KEY SWITCHBOARD_TOKEN_FILE" {
		t.Errorf("ignored: %s", got)
	}

	// Without a file, an empty address is the default, not every interface.
	c, err = parseFlags(nil, io.Discard)
	if err != nil || c.addr != "127.0.0.1:8080" {
		t.Errorf("SWITCHBOARD_ADDR empty: addr %q, %v", c.addr, err)
	}
	// An empty value in the file is unset too.
	c, err = parseFlags([]string{"-config", writeFile(t, "empty.yaml", "addr:\nlog-level: \"\"\n")}, io.Discard)
	if err != nil || c.addr != "127.0.0.1:8080" || c.logLevel != "info" {
		t.Errorf("empty values in the file: addr %q log-level %q, %v", c.addr, c.logLevel, err)
	}
	// Only the command line says "empty" on purpose, and an empty address
	// is refused there.
	if _, err := parseFlags([]string{"-addr", ""}, io.Discard); err == nil || !strings.Contains(err.Error(), "-addr is empty") {
		t.Errorf("-addr '': %v", err)
	}
}

// TestUnknownVariables: a SWITCHBOARD_ variable that names no flag is
// reported, with the one it most likely meant, in the log at start and by
// check-config.
func TestUnknownVariables(t *testing.T) {
	t.Setenv("SWITCHBOARD_JWT_AUDEINCE", "switchboard")
	t.Setenv("SWITCHBOARD_NOTHING_LIKE_IT", "1")
	t.Setenv("SWITCHBOARD_LOG_LEVEL", "info") // known: not reported
	want := []string{
		`SWITCHBOARD_JWT_AUDEINCE ignored: names no setting of the hub (did you mean SWITCHBOARD_JWT_AUDIENCE?)`,
		`SWITCHBOARD_NOTHING_LIKE_IT ignored: names no setting of the hub`,
	}
	var stderr bytes.Buffer
	if err := checkConfig([]string{writeFile(t, "hub.yaml", "demo: true\n")}, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), "hub: warning: "+w+"\n") {
			t.Errorf("check-config's stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "SWITCHBOARD_LOG_LEVEL") {
		t.Errorf("a known variable reported:\n%s", stderr.String())
	}

	log := logOf(t, "-demo")
	for _, name := range []string{"SWITCHBOARD_JWT_AUDEINCE", "SWITCHBOARD_NOTHING_LIKE_IT"} {
		if !strings.Contains(log, `"msg":"environment variable ignored","name":"`+name+`"`) {
			t.Errorf("the log does not report %s:\n%s", name, log)
		}
	}
}

// TestAnonymousFalseNeedsAWay: a hub told anonymous: false with no way to
// authenticate anyone refuses to start, and check-config says so; one
// that is told nothing of the kind runs open, as before.
func TestAnonymousFalseNeedsAWay(t *testing.T) {
	key := writeKey(t)
	tokens, _ := writeTokens(t, 1)
	refused := writeFile(t, "refused.yaml", "demo: true\nanonymous: false\n")
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		ok   bool
	}{
		{"file, nothing else", []string{"-config", refused}, nil, false},
		{"file, the key's variable empty", []string{"-config", refused}, map[string]string{"SWITCHBOARD_JWT_KEY": "", "SWITCHBOARD_TOKEN_FILE": ""}, false},
		{"variable", nil, map[string]string{"SWITCHBOARD_ANONYMOUS": "false"}, false},
		{"flag, the key cleared", []string{"-anonymous=false", "-jwt-key", ""}, nil, false},
		{"file and a key", []string{"-config", refused, "-jwt-key", key}, nil, true},
		{"file and a token file", []string{"-config", refused}, map[string]string{"SWITCHBOARD_TOKEN_FILE": tokens}, true},
		{"not said", []string{"-demo"}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := parseFlags(tt.args, io.Discard)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok: %v", err, tt.ok)
			}
			if !tt.ok && !strings.Contains(err.Error(), "anonymous is false, but none of -token-file, -jwt-key and -jwks is set") {
				t.Errorf("err = %v", err)
			}
		})
	}
	if err := checkConfig([]string{refused}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "no peer could authenticate") {
		t.Errorf("check-config: %v", err)
	}
	if err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-config", refused}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "no peer could authenticate") {
		t.Errorf("run: %v", err)
	}
}

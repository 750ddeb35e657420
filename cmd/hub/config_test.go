package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// writeFile writes content to name in a temporary directory and returns
// its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	return testkit.WriteFile(t, filepath.Join(t.TempDir(), name), []byte(content))
}

// TestConfigPrecedence: file < environment < command line, for flags of
// every kind, including ones registered by other files.
func TestConfigPrecedence(t *testing.T) {
	file := writeFile(t, "hub.yaml", `
addr: 127.0.0.1:9001
max-batch: 11
log-level: warn
compression: true
origins: [a.example, b.example]
shutdown-timeout: 3s
rate: 2.5
`)
	t.Setenv("SWITCHBOARD_MAX_BATCH", "22")
	t.Setenv("SWITCHBOARD_LOG_LEVEL", "error")
	c, err := parseFlags([]string{"-config", file, "-log-level", "debug"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9001" || !c.compression || c.origins != "a.example,b.example" || c.shutdownTimeout != 3*time.Second || c.limits.rate != 2.5 {
		t.Errorf("from the file: addr %q compression %v origins %q shutdown %v rate %v", c.addr, c.compression, c.origins, c.shutdownTimeout, c.limits.rate)
	}
	if c.maxBatch != 22 {
		t.Errorf("max-batch = %d, want 22 from the environment", c.maxBatch)
	}
	if c.logLevel != "debug" {
		t.Errorf("log-level = %q, want debug from the command line", c.logLevel)
	}
	if c.maxInFlight == 0 {
		t.Error("a flag in none of them lost its default")
	}
}

// TestConfigCoversEveryFlag: each flag of the hub is a key of the config
// file, without a list kept by hand.
func TestConfigCoversEveryFlag(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	c.flags.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			b.WriteString(f.Name + ": " + f.DefValue + "\n")
		}
	})
	if _, _, err := parseConfig([]byte(b.String()), c.flags); err != nil {
		t.Errorf("the defaults as a config file: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"unknown key", "addr: x\nmax-bach: 3\n", `:2: unknown key "max-bach" (did you mean "max-batch"?)`},
		{"far off key", "nothing-like-it: 1\n", `:1: unknown key "nothing-like-it"`},
		{"config in config", "config: other.yaml\n", `unknown key "config"`},
		{"bad value", "max-batch: lots\n", `:1: max-batch: "lots" is not a whole number: want digits only, such as 1000`},
		{"mapping", "addr:\n  host: x\n", `addr: want a value or a list`},
		{"twice", "addr: a\naddr: b\n", `:2: key "addr" again (first on line 1)`},
		{"not a mapping", "- a\n- b\n", `the config is a mapping`},
		{"yaml", "addr: [\n", `yaml`},
		{"rule key", "rules:\n  - allow: [publish]\n    to: [a]\n    whom: anyone\n", `:4: unknown key "whom" in a rule`},
		{"rule action", "rules:\n  - allow: [pubish]\n    to: [a]\n    who: anyone\n", `:2: unknown action "pubish"`},
		{"rules not a list", "rules: all\n", `rules is a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags([]string{"-config", writeFile(t, "hub.yaml", tt.content)}, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	t.Setenv("SWITCHBOARD_MAX_BATCH", "many")
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_MAX_BATCH") {
		t.Errorf("a bad environment variable: %v", err)
	}
}

func TestConfigJSON(t *testing.T) {
	file := writeFile(t, "hub.json", `{"addr": "127.0.0.1:9002", "demo": true, "rules": [{"allow": ["publish"], "to": [">"], "who": "anyone"}]}`)
	c, err := parseFlags([]string{"-config", file}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9002" || !c.demo || len(c.identity.file.rules) != 1 {
		t.Errorf("addr %q demo %v rules %v", c.addr, c.demo, c.identity.file.rules)
	}
}

// TestExampleConfig loads docs/hub.example.yaml as check-config does.
func TestExampleConfig(t *testing.T) {
	example, err := filepath.Abs("../../docs/hub.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	testkit.WriteFile(t, "hub.key", []byte("an HMAC secret of more than 32 bytes"))
	var out bytes.Buffer
	if err := checkConfig([]string{example}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"jwt-key: hub.key\n", "demo: true\n", "to:\n      - user.{user}.>\n", "who: role=backend\n", "max-batch: 1000\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out.String())
		}
	}
	// A typo in one key: refused, naming it.
	data, _ := os.ReadFile(example)
	typo := writeFile(t, "typo.yaml", strings.Replace(string(data), "jwt-audience:", "jwt-audeince:", 1))
	err = checkConfig([]string{typo}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `unknown key "jwt-audeince" (did you mean "jwt-audience"?)`) {
		t.Errorf("typo: %v", err)
	}
}

func TestCheckConfigRedacts(t *testing.T) {
	file := writeFile(t, "hub.yaml", "nats: nats://hub:s3cret@127.0.0.1:4222,nats://127.0.0.1:4223\n")
	var out bytes.Buffer
	if err := checkConfig([]string{file}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "s3cret") || !strings.Contains(out.String(), "nats://hub:REDACTED@127.0.0.1:4222,nats://127.0.0.1:4223") {
		t.Errorf("output:\n%s", out.String())
	}
	bad := writeFile(t, "hub.yaml", "jwt-key: /nonexistent/key\n")
	if err := checkConfig([]string{bad}, io.Discard, io.Discard); err == nil {
		t.Error("a missing key file passed")
	}
	if err := checkConfig(nil, io.Discard, io.Discard); err == nil {
		t.Error("no file passed")
	}
}

// TestRunWithConfig starts a hub with only -config and checks that the
// file's rules and key are in force.
func TestRunWithConfig(t *testing.T) {
	dir := t.TempDir()
	key := testkit.WriteFile(t, filepath.Join(dir, "hub.key"), []byte("an HMAC secret of more than 32 bytes"))
	file := writeFile(t, "hub.yaml", "jwt-key: "+key+"\nanonymous: true\nrules:\n  - allow: [subscribe]\n    to: [news.*]\n    who: anyone\n")
	url, _ := start(t, "-config", file)
	resp, body := httpDo(t, "POST", url+"/rpc", "application/json", `{"jsonrpc":"2.0","method":"rpc.publish","params":["news.x",1],"id":1}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "-32001") {
		t.Errorf("anonymous publish: %d %s", resp.StatusCode, body)
	}
	resp, _ = httpDo(t, "GET", url+"/metrics", "", "")
	if resp.StatusCode != 401 {
		t.Errorf("anonymous /metrics: %d", resp.StatusCode)
	}
}

// TestConfigBounds: a config file is bounded in size, in rules, and in
// what its aliases expand to, the same for the hub and check-config, which
// load it the same way; at the bounds, both take it.
func TestConfigBounds(t *testing.T) {
	// aliased returns a file of n rules, each an alias of one list of
	// 975 patterns: 180 KB for n = 2,150, which would make 10 million
	// pairs of an action and a pattern.
	aliased := func(n int, actions string) string {
		var b strings.Builder
		b.WriteString("rules:\n  - {allow: [subscribe], to: &big [")
		for i := range 975 {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "t%d", i)
		}
		b.WriteString("], who: anyone}\n")
		for range n {
			b.WriteString("  - {allow: [" + actions + "], to: *big, who: anyone}\n")
		}
		return b.String()
	}
	var many strings.Builder
	many.WriteString("rules:\n")
	for i := range maxRules + 1 {
		fmt.Fprintf(&many, "  - {allow: [call], to: [m%d], who: anyone}\n", i)
	}
	for _, tt := range []struct{ name, content, want string }{
		{"size", "# " + strings.Repeat("x", maxConfigBytes) + "\n", "more than 1048576 bytes (1 MiB), the most a config file may hold"},
		{"rules", many.String(), fmt.Sprintf("%d rules, more than the %d a config file may hold", maxRules+1, maxRules)},
		{"aliases", aliased(2150, "subscribe, publish, provide, call, address"), ":23: the rules so far make more than 100000 pairs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "hub.yaml", tt.content)
			if err := checkConfig([]string{file}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("check-config: %v, want %q", err, tt.want)
			}
			if err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-config", file}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("hub: %v, want %q", err, tt.want)
			}
		})
	}
	// 102 aliases of 975 patterns: 99,450 pairs, within the bound.
	file := writeFile(t, "hub.yaml", aliased(101, "subscribe"))
	var out bytes.Buffer
	if err := checkConfig([]string{file}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "      - t974\n"); n != 102 {
		t.Errorf("check-config printed %d rules with the aliased list, want 102", n)
	}
	url, _ := start(t, "-config", file)
	if resp, _ := httpDo(t, "GET", url+"/healthz", "", ""); resp.StatusCode != 200 {
		t.Errorf("the hub at the bound: /healthz %d", resp.StatusCode)
	}
}

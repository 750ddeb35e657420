package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigRefusesWhatTheHubRefuses: check-config refuses what the
// hub refuses at start, with the same error, and each error names the
// file, the line and the key, and the form wanted.
func TestCheckConfigRefusesWhatTheHubRefuses(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	for _, tt := range []struct{ name, content, want string }{
		{"missing TLS certificate", "demo: true\ntls-cert: " + missing + "\ntls-key: " + missing + "\n",
			":2: tls-cert: open " + missing + ": no such file or directory"},
		{"TLS key alone", "tls-key: " + missing + "\n", ":1: tls-key: set without tls-cert: want both or neither"},
		{"missing NATS credentials", "nats: nats://127.0.0.1:4222\nnats-creds: " + missing + "\n",
			":2: nats-creds: open " + missing + ": no such file or directory"},
		{"port out of range", "addr: 127.0.0.1:99999\n", `:1: addr: "127.0.0.1:99999": port "99999": want a number from 0 to 65535`},
		{"no port", "demo: true\naddr: 127.0.0.1\n", `:2: addr: "127.0.0.1": want host:port, such as 127.0.0.1:8080 or :8080`},
		{"metrics address", "metrics-addr: localhost:http-alt-nope\n", `:1: metrics-addr: "localhost:http-alt-nope": port "http-alt-nope"`},
		{"log level", "demo: true\nlog-level: verbose\n", `:2: log-level: "verbose" is no log level: want debug, info, warn or error`},
		{"log format", "log-format: text\n", `:1: log-format: "text" is no log format: want auto, json or console`},
		{"boolean", "demo: yes\n", `:1: demo: "yes" is not a boolean: want true or false`},
		{"size with a unit", "max-message: 1MiB\n", `:1: max-message: "1MiB" is not a whole number: want digits only, such as 1048576 (no units, no exponent)`},
		{"exponent", "\nmax-conns: 1e4\n", `:2: max-conns: "1e4" is not a whole number: want digits only, such as 10000`},
		{"duration", "body-timeout: 10\n", `:1: body-timeout: "10" is not a duration: want a number and a unit, such as 10s, 1m30s or 500ms`},
		{"token file", "token-file: " + missing + "\n", ":1: token-file: open " + missing},
		{"JWKS URL", "jwks: login.example/keys\n", `:1: jwks: "login.example/keys" is no URL: want https://host/path`},
		{"profiles", "pprof: true\n", ":1: pprof: needs metrics-addr"},
		{"JetStream alone", "demo: true\nnats-jetstream: true\n", ":2: nats-jetstream: needs nats"},
		{"NATS TLS key alone", "nats: embedded\nnats-tls-key: " + missing + "\n", ":2: nats-tls-key: set alone: want nats-tls-cert and nats-tls-key together"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "hub.yaml", tt.content)
			checked := checkConfig([]string{file}, io.Discard, io.Discard)
			if checked == nil || !strings.HasPrefix(checked.Error(), file+":") || !strings.Contains(checked.Error(), tt.want) {
				t.Fatalf("check-config: %v\nwant %s%s", checked, file, tt.want)
			}
			started := run(t.Context(), []string{"-config", file}, io.Discard, nil)
			if started == nil || started.Error() != checked.Error() {
				t.Errorf("the hub at start: %v\ncheck-config: %v", started, checked)
			}
		})
	}
}

// TestConfigErrorsNameTheVariable: a value from the environment is
// named by its variable, one from the command line by its flag.
func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Setenv("SWITCHBOARD_LOG_LEVEL", "verbose")
	file := writeFile(t, "hub.yaml", "demo: true\n")
	err := checkConfig([]string{file}, io.Discard, io.Discard)
	if err == nil || err.Error() != `SWITCHBOARD_LOG_LEVEL: "verbose" is no log level: want debug, info, warn or error` {
		t.Errorf("from the environment: %v", err)
	}
	t.Setenv("SWITCHBOARD_LOG_LEVEL", "")
	t.Setenv("SWITCHBOARD_MAX_BATCH", "lots")
	err = checkConfig([]string{file}, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), `SWITCHBOARD_MAX_BATCH: "lots" is not a whole number`) {
		t.Errorf("from the environment: %v", err)
	}
	os.Unsetenv("SWITCHBOARD_MAX_BATCH")
	err = checkConfig([]string{file, "-addr", "127.0.0.1:70000"}, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), `-addr: "127.0.0.1:70000"`) {
		t.Errorf("from the command line: %v", err)
	}
}

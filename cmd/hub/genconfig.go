package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// genConfigHead is the part of hub genconfig's file that is set: the
// settings of docs/hub.example.yaml for a hub in production, without the
// demo. Every other flag follows it, commented out at its default.
const genConfigHead = `# A Switchboard hub's configuration: hub -config hub.yaml
#
# Every command-line flag is a key of the same name (hub -h lists them all).
# SWITCHBOARD_<NAME> environment variables (SWITCHBOARD_LOG_LEVEL=debug)
# override this file, and flags override both. A key the hub does not know
# is an error that names it and its line. Check a file before deploying it:
#
#   hub check-config hub.yaml
#
# prints the configuration the hub would run with, secrets redacted, and
# exits non-zero on any problem. The file is YAML; JSON works too.
# Written by hub genconfig (hub %s).

addr: 127.0.0.1:8080

# The host names clients use to reach the hub (the Host header); others
# get 403. Set it for a hub reachable beyond loopback.
# hosts: [hub.example.com]

# Identity: JSON Web Tokens signed by the login system with this HMAC
# secret (the file's raw bytes, at least 32 of them; a PEM public key or a
# JWKS document work too, or jwks: https://login.example/.well-known/jwks.json).
# The token's "sub" is the peer's user; it must carry "exp". Paths are
# relative to the directory the hub runs in. Try it with
#   hub gentoken -config hub.yaml -sub alice
jwt-key: hub.key
jwt-audience: switchboard
# Static tokens still work beside JWTs (their user is token-N):
# token-file: tokens.txt

# Peers without a token are refused (401) unless this is true; then they
# get what the rules allow "anyone".
anonymous: false

log-level: info
log-format: json
shutdown-timeout: 10s

# Who may do what, for tokens without a "switchboard" grants claim (a token
# with one gets exactly its grants). Each rule: the actions it allows
# (subscribe, with history and presence; publish; provide; call;
# address, for rpc.call to chosen peers), the patterns they apply to
# ("*" one word, ">" the rest, "{user}" the peer's own user), and who:
# anyone, authenticated, or claim=value. Nothing else is allowed.
rules:
  # Each user reads their own topics: alice subscribes to user.alice.inbox.
  - allow: [subscribe]
    to: ["user.{user}.>"]
    who: authenticated
  # Backends (a token claim "role": "backend") publish anywhere and
  # address any peer.
  - allow: [publish, subscribe, address, call]
    to: [">"]
    who: role=backend

# Every other setting, at its default.
`

// genConfigSet are the keys genConfigHead sets (or shows, commented).
var genConfigSet = []string{"addr", "hosts", "jwt-key", "jwt-audience", "token-file", "anonymous", "log-level", "log-format", "shutdown-timeout"}

// genConfig is "hub genconfig": an annotated config file on stdout.
func genConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: hub genconfig > hub.yaml")
		return fmt.Errorf("genconfig takes no arguments: %q", args)
	}
	c, err := parseFlags([]string{"-config", ""}, io.Discard)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, genConfigHead, hubVersion())
	c.flags.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" || slices.Contains(genConfigSet, f.Name) {
			return
		}
		_, usage := flag.UnquoteUsage(f)
		b.WriteString("\n")
		for _, line := range wrap(usage, 74) {
			b.WriteString("# " + line + "\n")
		}
		fmt.Fprintf(&b, "# %s: %s\n", f.Name, yamlValue(f.DefValue))
	})
	_, err = io.WriteString(stdout, b.String())
	return err
}

// yamlValue writes a flag's default as a YAML scalar: quoted when it is
// empty or YAML would read it otherwise.
func yamlValue(v string) string {
	if v == "" || strings.ContainsAny(v, ":#{}[],&*!|>'\"%@`") || strings.TrimSpace(v) != v {
		return fmt.Sprintf("%q", v)
	}
	return v
}

// wrap breaks text into lines of at most width (longer words stay whole).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

package main

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestEmbeddedNATS: -nats embedded runs NATS in the process and joins
// it; the node's name is in /metrics, linked.
func TestEmbeddedNATS(t *testing.T) {
	url, _ := start(t, "-nats", "embedded", "-nats-listen", "127.0.0.1:0", "-nats-jetstream", "-node", "n1")
	_, body := rawRequest(t, strings.TrimPrefix(url, "http://"), "/metrics", "")
	if !strings.Contains(body, `switchboard_cluster_connected{node="n1"} 1`) {
		t.Fatalf("/metrics without the cluster link of n1:\n%s", grepLines(body, "cluster"))
	}
	if status, body := rawRequest(t, strings.TrimPrefix(url, "http://"), "/readyz", ""); status != 200 || body != "ready\n" {
		t.Fatalf("/readyz: %d %q, want 200 ready", status, body)
	}
}

// A JetStream node that cannot reach NATS says so.
func TestNATSUnreachable(t *testing.T) {
	addr := hubtest.DeadAddr(t)
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-nats", "nats://" + addr, "-nats-jetstream", "-nats-timeout", "500ms"}, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "NATS unreachable") {
		t.Fatalf("run: %v, want NATS unreachable", err)
	}
}

// A NATS server that requires TLS with a client certificate and an NKey:
// the hub joins it with -nats-tls-* and -nats-nkey, and not without.
func TestNATSWithTLSAndNKey(t *testing.T) {
	ns := hubtest.StartSecureNATS(t)
	tlsFlags, seedFile := ns.TLSFlags, ns.SeedFile
	base := []string{"-addr", "127.0.0.1:0", "-nats", ns.URL, "-nats-jetstream", "-nats-timeout", "1s"}
	for _, args := range [][]string{
		append(slices.Clone(base), "-nats-nkey", seedFile),                          // no TLS
		append(slices.Clone(base), tlsFlags...),                                     // no NKey
		append(append(slices.Clone(base), tlsFlags[:2]...), "-nats-nkey", seedFile), // no client certificate
	} {
		if err := run(t.Context(), args, io.Discard, nil); err == nil {
			t.Errorf("hub %q joined", args)
		}
	}
	url, _ := start(t, append([]string{"-nats", ns.URL, "-nats-jetstream", "-node", "n1", "-nats-nkey", seedFile}, tlsFlags...)...)
	if status, body := rawRequest(t, strings.TrimPrefix(url, "http://"), "/readyz", ""); status != 200 {
		t.Fatalf("/readyz: %d %q, want 200", status, body)
	}
}

func TestClusterFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nats-jetstream"},
		{"-nats", "embedded", "-node", "a.b", "-nats-listen", "127.0.0.1:0"},
		{"-nats", "embedded", "-nats-listen", "nowhere"},
	} {
		if err := run(t.Context(), args, io.Discard, nil); err == nil {
			t.Errorf("hub %q started", args)
		}
	}
}

func grepLines(s, word string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// A NATS server in operator mode (JWT accounts): the hub joins it with a
// credentials file, -nats-creds, and not without.
func TestNATSWithCreds(t *testing.T) {
	operator, _ := nkeys.CreateOperator()
	opub, _ := operator.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	sys, _ := nkeys.CreateAccount()
	syspub, _ := sys.PublicKey()
	account, _ := nkeys.CreateAccount()
	apub, _ := account.PublicKey()
	resolver := &natsserver.MemAccResolver{}
	for pub, js := range map[string]bool{syspub: false, apub: true} {
		ac := jwt.NewAccountClaims(pub)
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := ac.Encode(operator)
		if err != nil {
			t.Fatal(err)
		}
		if err := resolver.Store(pub, token); err != nil {
			t.Fatal(err)
		}
	}
	user, _ := nkeys.CreateUser()
	upub, _ := user.PublicKey()
	ujwt, err := jwt.NewUserClaims(upub).Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := testkit.WriteFile(t, filepath.Join(t.TempDir(), "user.creds"), creds)
	ns := hubtest.StartNATS(t, &natsserver.Options{
		JetStream:        true,
		TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: resolver, SystemAccount: syspub,
	})
	if err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-nats", ns.ClientURL(), "-nats-jetstream", "-nats-timeout", "1s"}, io.Discard, nil); err == nil {
		t.Error("hub joined without credentials")
	}
	url, _ := start(t, "-nats", ns.ClientURL(), "-nats-jetstream", "-node", "n1", "-nats-creds", credsFile)
	if status, body := rawRequest(t, strings.TrimPrefix(url, "http://"), "/readyz", ""); status != 200 {
		t.Fatalf("/readyz: %d %q, want 200", status, body)
	}
}

// Without JetStream a node may start while NATS is unreachable: it does
// not say it joined the cluster (it warns that it has not), and /readyz
// says why it is not ready.
func TestJoinedOnlyOnceLinked(t *testing.T) {
	natsAddr := hubtest.DeadAddr(t)
	var log testkit.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-nats", "nats://" + natsAddr, "-node", "n1"}, &log, func(a net.Addr) { addr <- a })
	}()
	defer func() { cancel(); <-done }()
	var a net.Addr
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("hub did not start")
	}
	if s := log.String(); strings.Contains(s, "joined cluster") || !strings.Contains(s, "cluster not joined yet") {
		t.Fatalf("log of a node that could not reach NATS:\n%s", s)
	}
	if status, body := rawRequest(t, a.String(), "/readyz", ""); status != 503 || body != "NATS link down\n" {
		t.Fatalf("/readyz: %d %q, want 503 NATS link down", status, body)
	}
}

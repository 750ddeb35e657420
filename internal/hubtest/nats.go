package hubtest

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// SecureNATS is a NATS server, with JetStream, that requires TLS with a
// client certificate and an NKey.
type SecureNATS struct {
	URL      string
	Cert     *Cert  // the server's certificate, its CA and a client's
	SeedFile string // the user's NKey seed, for -nats-nkey
	// TLSFlags are the hub's flags for the certificate: -nats-tls-ca,
	// -nats-tls-cert and -nats-tls-key, in that order.
	TLSFlags []string
}

// StartNATS starts a NATS server with opts on a free port of 127.0.0.1,
// quiet, its JetStream store (if any, and opts names none) in a temporary
// directory, and shuts it down when the test ends. It fails the test
// unless the server is ready for connections within [testkit.Wait].
func StartNATS(t testing.TB, opts *natsserver.Options) *natsserver.Server {
	t.Helper()
	o := *opts
	o.Host, o.Port, o.NoSigs, o.NoLog = "127.0.0.1", natsserver.RANDOM_PORT, true, true
	if o.JetStream && o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	ns, err := natsserver.NewServer(&o)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(testkit.Wait) {
		t.Fatal("NATS not ready")
	}
	return ns
}

// StartSecureNATS starts a SecureNATS on 127.0.0.1, shut down when the
// test ends.
func StartSecureNATS(t testing.TB) *SecureNATS {
	t.Helper()
	cert := NewCert(t)
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := StartNATS(t, &natsserver.Options{
		JetStream: true, TLS: true, TLSVerify: true, TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert.TLS}, ClientCAs: cert.Roots,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		},
		Nkeys: []*natsserver.NkeyUser{{Nkey: pub}},
	})
	return &SecureNATS{
		URL: ns.ClientURL(), Cert: cert, SeedFile: seedFile,
		TLSFlags: []string{"-nats-tls-ca", cert.CertFile, "-nats-tls-cert", cert.CertFile, "-nats-tls-key", cert.KeyFile},
	}
}

// DeleteStream deletes the cluster's JetStream stream (SWITCHBOARD) on
// the NATS server at url, as a NATS server that lost its store would
// have it; the nodes create it again, empty, at their next check.
func DeleteStream(t testing.TB, url string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, "SWITCHBOARD"); err != nil {
		t.Fatal(err)
	}
}

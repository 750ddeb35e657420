package cluster_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// Defect: there were no flags for NATS's TLS or credentials. Against a
// NATS server that requires TLS with a client certificate and an NKey,
// two nodes given -nats-tls-* and -nats-nkey join it, and events cross.
func TestNATSWithTLSAndNKey(t *testing.T) {
	cert := hubtest.NewCert(t)
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
	ns, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
		TLS: true, TLSVerify: true, TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert.TLS}, ClientCAs: cert.Roots,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		},
		Nkeys: []*natsserver.NkeyUser{{Nkey: pub}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready within 10s")
	}
	hubs := make([]*hubproc.Hub, 2)
	for i := range hubs {
		hubs[i] = hubproc.Start(t, &hubproc.Options{Args: []string{
			"-demo", "-node", nodeName(i), "-nats", ns.ClientURL(), "-nats-jetstream",
			"-nats-nkey", seedFile, "-nats-tls-ca", cert.CertFile, "-nats-tls-cert", cert.CertFile, "-nats-tls-key", cert.KeyFile,
		}})
	}
	_, ch := subscribe(t, dial(t, hubs[1]), "tls.x", client.Position{}, 10)
	publish(t, dial(t, hubs[0]), "tls.x", "over TLS")
	if r := testkit.RecvSlow(t, ch, "an event"); r.data != `"over TLS"` {
		t.Fatalf("got %+v", r)
	}
}

package cluster_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// Defect: there were no flags for NATS's TLS or credentials. Against a
// NATS server that requires TLS with a client certificate and an NKey,
// two nodes given -nats-tls-* and -nats-nkey join it, and events cross.
func TestNATSWithTLSAndNKey(t *testing.T) {
	ns := hubtest.StartSecureNATS(t)
	hubs := make([]*hubproc.Hub, 2)
	for i := range hubs {
		hubs[i] = hubproc.Start(t, &hubproc.Options{Args: append([]string{
			"-demo", "-node", nodeName(i), "-nats", ns.URL, "-nats-jetstream", "-nats-nkey", ns.SeedFile,
		}, ns.TLSFlags...)})
	}
	_, ch := subscribe(t, dial(t, hubs[1]), "tls.x", client.Position{}, 10)
	publish(t, dial(t, hubs[0]), "tls.x", "over TLS")
	if r := testkit.RecvSlow(t, ch, "an event"); r.data != `"over TLS"` {
		t.Fatalf("got %+v", r)
	}
}

package natsbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/brokertest"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
)

// cluster returns how brokertest starts the nodes of a new cluster: each
// one on a NATS server of its own, started in this process.
func cluster(jetStream bool) func(t *testing.T) brokertest.StartNode {
	return func(t *testing.T) brokertest.StartNode {
		url := startNATS(t)
		return func(t *testing.T, name string, o *hub.Options) (*hub.Hub, hub.Broker) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			b, err := natsbroker.Connect(ctx, &natsbroker.Options{URLs: url, Node: name, JetStream: jetStream, Heartbeat: heartbeat})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			o.Broker = b.HubBroker()
			h := hub.New(o)
			if err := b.Start(ctx); err != nil {
				t.Fatal(err)
			}
			return h, o.Broker
		}
	}
}

func TestConformance(t *testing.T) {
	brokertest.Run(t, cluster(false))
}

func TestConformanceJetStream(t *testing.T) {
	brokertest.Run(t, cluster(true))
}

package membroker_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/brokertest"
	"github.com/switchboard-rpc/switchboard/hub/membroker"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cluster returns how brokertest starts the nodes of a new cluster.
func cluster(o *membroker.Options) func(t *testing.T) brokertest.StartNode {
	return func(*testing.T) brokertest.StartNode {
		c := membroker.New(o)
		return func(t *testing.T, name string, ho *hub.Options) (*hub.Hub, hub.Broker) {
			b := c.Node(name)
			t.Cleanup(func() { _ = b.Close() })
			ho.Broker = b.HubBroker()
			return hub.New(ho), ho.Broker
		}
	}
}

func TestConformance(t *testing.T) {
	brokertest.Run(t, cluster(nil))
}

func TestConformanceSequenced(t *testing.T) {
	brokertest.Run(t, cluster(&membroker.Options{Sequenced: true}))
}

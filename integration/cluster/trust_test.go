package cluster_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// published is what rpc.publish answered.
type published struct {
	Delivered int
	Seq       uint64
	Epoch     string
}

// publishAt publishes and returns the event's position, or the error.
func publishAt(t *testing.T, c *client.Client, topic string, data any) (published, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var res published
	err := c.Call(ctx, "rpc.publish", map[string]any{"topic": topic, "data": data}, &res)
	return res, err
}

// checkReplaced publishes on pub with a subscriber on sub, replaces the
// stream under them, and publishes again: no publish is answered with a
// position of the old epoch once the stream is replaced; the subscriber
// is told it missed events, then gets every event acknowledged since,
// at the position and epoch the publisher was given; the node that
// noticed logs it at error level.
func checkReplaced(t *testing.T, pub, sub *hubproc.Hub, replace func()) {
	sc := dial(t, sub)
	_, ch := subscribe(t, sc, "rs.x", client.Position{}, 1000)
	pc := dial(t, pub)
	var old string
	for i := range 3 {
		res, err := publishAt(t, pc, "rs.x", i)
		if err != nil {
			t.Fatal(err)
		}
		if r := testkit.RecvSlow(t, ch, "an event"); r.seq != res.Seq || r.epoch != res.Epoch {
			t.Fatalf("event %+v, publish answered %+v", r, res)
		}
		old = res.Epoch
	}

	replace()

	const after = 20
	var acked []published
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; len(acked) < after; i++ {
		res, err := publishAt(t, pc, "rs.x", "new-"+strconv.Itoa(i))
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("publishing still fails: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // a retry, not a wait for an event
			continue
		}
		if res.Epoch == old {
			t.Fatalf("publish answered %+v: a position of the stream that is gone", res)
		}
		acked = append(acked, res)
	}
	// The subscriber was told, then gets each acknowledged event at its
	// position (and maybe events of failed publishes that reached the
	// new stream: they said they might have).
	if r := testkit.RecvSlow(t, ch, "an event"); !r.missed {
		t.Fatalf("first after the replacement: %+v, want missed", r)
	}
	for _, want := range acked {
		for {
			r := testkit.RecvSlow(t, ch, "an event")
			if r.missed || r.epoch != want.Epoch || r.seq > want.Seq {
				t.Fatalf("got %+v, want the event at %d of %s", r, want.Seq, want.Epoch)
			}
			if r.seq == want.Seq {
				break
			}
		}
	}
	if !strings.Contains(sub.Log(), "cluster stream replaced") {
		t.Fatalf("the subscriber's node did not log the replaced stream:\n%s", sub.Log())
	}
}

// Defect: the stream deleted and created again under three running nodes
// went on under the old epoch, with reused positions: publishes were
// acknowledged and their events dropped or mislabelled, silently.
func TestStreamReplaced(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3, "-nats-jetstream")
	checkReplaced(t, hubs[1], hubs[2], func() { hubtest.DeleteStream(t, ns.URL()) })
	m := hubs[2].Metrics()
	if v := m[`switchboard_cluster_stream_resets_total{node="n3"}`]; v != 1 {
		t.Fatalf("n3 counted %v stream resets, want 1", v)
	}
}

// Defect: hub1 runs the NATS server embedded; killed and started again
// without its store, it creates the stream anew under the running nodes,
// which went on with the old one as above.
func TestEmbeddedNATSRestartedWithoutStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "nats")
	ln := freePort(t)
	hub1 := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-node", "hub1", "-nats", "embedded", "-nats-listen", ln, "-nats-store", store, "-nats-jetstream"}})
	var others []*hubproc.Hub
	for _, name := range []string{"hub2", "hub3"} {
		others = append(others, hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-node", name, "-nats", "nats://" + ln, "-nats-jetstream"}}))
	}
	checkReplaced(t, others[0], others[1], func() {
		hub1.Kill()
		if err := os.RemoveAll(store); err != nil {
			t.Fatal(err)
		}
		hub1.Restart()
	})
}

// freePort returns a free address for a listener that may be started
// again on it (see hubproc.FreeAddr).
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := hubproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// readyz returns the node's /readyz status and text.
func readyz(t *testing.T, h *hubproc.Hub) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady waits until /readyz answers want.
func waitReady(t *testing.T, h *hubproc.Hub, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := readyz(t, h)
		if status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %q, want %d", status, body, want)
		}
		time.Sleep(20 * time.Millisecond) // polling an HTTP endpoint
	}
}

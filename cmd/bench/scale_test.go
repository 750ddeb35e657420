package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScale runs the scale command small against real hub processes: 100
// peers on one hub, then 100 over two hubs joined over NATS with
// JetStream, from two swarm processes on 127.0.0.2 and 127.0.0.3, with a
// restart of the second hub; every event must reach every peer once.
func TestScale(t *testing.T) {
	dir := t.TempDir()
	hubBin := buildHub(t, dir)
	out := filepath.Join(dir, "scale.json")
	err := scaleCmd(t.Context(), []string{"-hub", hubBin, "-peers", "100", "-nodes", "2", "-cluster-peers", "100", "-swarms", "2",
		"-idle", "500ms", "-settle", "200ms", "-returned", "200ms", "-events", "3", "-dialers", "8", "-json", out})
	if err != nil {
		t.Fatal(err)
	}
	r, b := readScale(t, out)
	s, c := r.Single, r.Cluster
	if s == nil || c == nil {
		t.Fatalf("a part is missing:\n%s", b)
	}
	// An idle peer holds its reader's goroutine (its writer ends with its
	// queue): about one, give or take the hub's own that come and go.
	if s.Peers != 100 || s.ConnectSeconds <= 0 || s.RSSPerPeer <= 0 || s.GoroutinesPerPeer < 0.9 || s.GoroutinesPerPeer > 5 {
		t.Errorf("single: %+v", s)
	}
	// Once the peers left, the hub holds none of their goroutines.
	if l := s.Left; l.GoroutinesBefore <= 0 || l.Goroutines > l.GoroutinesBefore || l.HeapInuse <= 0 {
		t.Errorf("once the peers left: %+v", l)
	}
	for name, f := range map[string]fanoutResult{"single": s.Fanout, "cluster": c.Fanout} {
		if f.Deliveries != 3*100 || f.Missing != 0 || f.Dups != 0 || f.P50 <= 0 || f.P99 < f.P50 || f.DeliveriesPerSec <= 0 ||
			f.CPUAboveIdle < 0 || f.CPUAboveIdle > f.CPUPerDelivery { // CPU time in ticks of 10 ms: 0 in so short a run
			t.Errorf("%s fan-out: %+v", name, f)
		}
	}
	sum := 0
	for _, n := range c.PeersPerNode {
		sum += n
	}
	if c.Peers != 100 || sum != 100 || len(c.RSSPerPeer) != 2 {
		t.Errorf("cluster: %+v", c)
	}
	if rs := c.Restart; rs.Node != 2 || rs.Peers != 50 || rs.Reconnects < rs.Peers || rs.Events == 0 || rs.Missing != 0 || rs.Dups != 0 || rs.Seconds <= 0 || rs.StoppedAfter <= 0 || rs.BackAfter < rs.StoppedAfter {
		t.Errorf("restart: %+v", rs)
	}
	// The first hub keeps its own peers, and has room for the second's:
	// a peer that found its hub down went there rather than wait. How
	// many did depends on how fast the second hub came back (a peer's
	// first try comes 50 to 100 ms after the drop, and a hub may be back
	// sooner), so only those refused are sure to have moved.
	pn, refused := c.Restart.PeersPerNode, c.Restart.DialErrors["refused"]
	if len(pn) != 2 || pn[0]+pn[1] != 100 || pn[0] < 50 || refused > 0 && pn[0] == 50 {
		t.Errorf("peers per hub after the restart: %v (%d dials refused)", pn, refused)
	}

	page := filepath.Join(dir, "scale.md")
	chart := filepath.Join(dir, "img", "scale.svg")
	if err := scaleReportCmd([]string{"-o", page, "-chart", chart, "-note", "nothing else", out}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## One hub at the file descriptor limit", "100 peers over 2 hubs", "a projection on paper",
		"Centrifugo", "nf_conntrack_max", "nothing else", "(img/scale.svg)", "heap freed but kept by Go", "above what the idle peers cost"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("%q missing from the page:\n%s", want, md)
		}
	}
	if !bytes.Contains(svg, []byte("cluster hub 2")) || !bytes.Contains(svg, []byte("Centrifugo, tuned")) {
		t.Errorf("chart:\n%s", svg)
	}
}

func TestHistogram(t *testing.T) {
	h := histogram{}
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	o := histogram{}
	o.add(time.Second)
	h.merge(o)
	if h.count() != 101 {
		t.Errorf("count %d, want 101", h.count())
	}
	// Within a bucket's 5% of the exact figures: 51 ms and 100 ms.
	for _, c := range []struct{ q, want float64 }{{0.5, 51e3}, {0.99, 100e3}, {1, 1e6}} {
		if got := h.quantile(c.q); got < c.want/1.06 || got > c.want*1.06 {
			t.Errorf("quantile(%v) = %.0f µs, want about %.0f", c.q, got, c.want)
		}
	}
}

func TestScanFrames(t *testing.T) {
	ev := []byte(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"scale","data":{"t":123},"seq":42,"epoch":"e1"}}`)
	if n, ok := intAfter(ev, `"seq":`); !ok || n != 42 {
		t.Errorf("seq = %d, %v", n, ok)
	}
	if s, ok := stringAfter(ev, `"epoch":"`); !ok || s != "e1" {
		t.Errorf("epoch = %q, %v", s, ok)
	}
	if _, ok := intAfter([]byte(`{"seq":"x"}`), `"seq":`); ok {
		t.Error("a seq without digits read")
	}
	if !strings.Contains(string(ev), "rpc.event") {
		t.Fatal("bad fixture")
	}
}

// TestScaleClusterFails runs scale with hubs that start alone but not in a
// cluster: the results still hold the single hub's figures, and the page
// says what failed, as soon as the node's process ended.
func TestScaleClusterFails(t *testing.T) {
	dir := t.TempDir()
	hubBin := buildHub(t, dir)
	wrapper := filepath.Join(dir, "hub-alone")
	script := "#!/bin/sh\ncase \"$*\" in *-nats*) echo 'no cluster here' >&2; exit 3;; esac\nexec " + hubBin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "scale.json")
	start := time.Now()
	err := scaleCmd(t.Context(), []string{"-hub", wrapper, "-peers", "20", "-nodes", "2", "-cluster-peers", "20",
		"-idle", "200ms", "-settle", "100ms", "-returned", "100ms", "-events", "1", "-dialers", "4", "-json", out})
	if err == nil || !strings.Contains(err.Error(), "the process ended before it answered") {
		t.Fatalf("scale: %v, want the cluster's node ended", err)
	}
	if d := time.Since(start); d > readyWait {
		t.Errorf("scale took %v: it waited for a process that had ended", d)
	}
	r, b := readScale(t, out)
	if r.Single == nil || r.Single.Peers != 20 || r.Cluster != nil || !strings.Contains(r.ClusterFailed, "cluster: ") {
		t.Fatalf("results:\n%s", b)
	}
	page := filepath.Join(dir, "scale.md")
	if err := scaleReportCmd([]string{"-o", page, "-chart", filepath.Join(dir, "scale.svg"), out}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## One hub at the file descriptor limit", "The cluster part of this run failed", "the process ended before it answered"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("%q missing from the page:\n%s", want, md)
		}
	}
}

// TestHubFor checks the order in which a swarm's peer tries the hubs: its
// own first, then each of the others once, then around again; and the
// peers of one hub start on the others evenly, rather than all on one.
func TestHubFor(t *testing.T) {
	for _, hubs := range []int{1, 2, 5} {
		const peers = 100
		next := make(map[[2]int]int) // own hub, hub of the second try: peers
		for p := range peers {
			own := p % hubs
			seen := make(map[int]bool)
			for a := range 3 * hubs {
				h := hubFor(p, hubs, a)
				switch {
				case h < 0 || h >= hubs:
					t.Fatalf("hubs %d, peer %d, try %d: hub %d", hubs, p, a, h)
				case a%hubs == 0 && h != own:
					t.Errorf("hubs %d, peer %d, try %d: hub %d, want its own, %d", hubs, p, a, h, own)
				case a < hubs && seen[h]:
					t.Errorf("hubs %d, peer %d: hub %d tried twice in a round", hubs, p, h)
				case a >= hubs && h != hubFor(p, hubs, a-hubs):
					t.Errorf("hubs %d, peer %d, try %d: not the order of the round before", hubs, p, a)
				}
				seen[h] = true
			}
			if hubs > 1 {
				next[[2]int{own, hubFor(p, hubs, 1)}]++
			}
		}
		for own := range hubs {
			for other := range hubs {
				if want := peers / hubs / max(hubs-1, 1); other != own && next[[2]int{own, other}] != want {
					t.Errorf("hubs %d: %d peers of hub %d try hub %d second, want %d", hubs, next[[2]int{own, other}], own, other, want)
				}
			}
		}
	}
}

// buildHub builds the hub into dir and returns the binary's path.
func buildHub(t *testing.T, dir string) string {
	t.Helper()
	hubBin := filepath.Join(dir, "hub")
	if out, err := exec.Command("go", "build", "-o", hubBin, "github.com/switchboard-rpc/switchboard/cmd/hub").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return hubBin
}

// readScale reads the results scale wrote to path, and their text.
func readScale(t *testing.T, path string) (scaleResult, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r scaleResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r, b
}

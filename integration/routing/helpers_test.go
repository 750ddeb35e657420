package routing_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/netcut"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	hubproc.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "routing: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startHub starts a demo hub whose collector runs often (GOGC=20), so
// that its heap in use follows what it holds.
func startHub(t *testing.T, args ...string) *hubproc.Hub {
	t.Helper()
	return hubproc.Start(t, &hubproc.Options{
		Args: append([]string{"-demo", "-log-level", "warn"}, args...),
		Env:  []string{"GOGC=20"},
	})
}

// proxy puts a TCP proxy in front of the hub, closed when the test ends.
func proxy(t *testing.T, h *hubproc.Hub) *netcut.Proxy {
	t.Helper()
	p, err := netcut.New(h.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// connect dials url with a client that reconnects quickly, closed when
// the test ends. Every change of its state goes to the returned channel
// (buffered; changes beyond its room are not reported).
func connect(t *testing.T, url string, opts *client.Options) (*client.Client, <-chan client.State) {
	t.Helper()
	states := make(chan client.State, 64)
	o := client.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	if opts != nil {
		o = *opts
	}
	o.OnState = func(s client.State, _ error) {
		select {
		case states <- s:
		default:
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, &o)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, states
}

func wsURL(addr string) string { return "ws://" + addr + "/rpc" }

// metrics reads the hub's metrics; labelled series keep their labels in
// the name.
func metrics(t *testing.T, h *hubproc.Hub) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m
}

// waitMetrics polls the hub's metrics until ok accepts them, for up to
// 30 s, and returns them.
func waitMetrics(t *testing.T, h *hubproc.Hub, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := metrics(t, h)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub metrics: still not %s after 30s: connections %v, subscriptions %v, goroutines %v, heap %.1f MiB",
				what, m["switchboard_connections"], m["switchboard_subscriptions"],
				m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]/(1<<20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// baseline is what an idle hub holds.
type baseline struct {
	goroutines, heap float64
}

// idle waits until the hub has no connections, then takes its baseline.
func idle(t *testing.T, h *hubproc.Hub) baseline {
	t.Helper()
	m := waitMetrics(t, h, "idle", func(m map[string]float64) bool {
		return m["switchboard_connections"] == 0
	})
	return baseline{goroutines: m["go_goroutines"], heap: m["go_memstats_heap_inuse_bytes"]}
}

// rpcCommand returns the path of the rpc command, built once.
func rpcCommand(t *testing.T) string {
	t.Helper()
	bin, err := hubproc.Command("rpc")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// dialWS opens a raw WebSocket to url.
func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// send writes one text message.
func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("write %s: %v", msg, err)
	}
}

// receive reads one message, for up to d.
func receive(t *testing.T, c *websocket.Conn, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// message is the part of a message the tests look at.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t *testing.T, s string) message {
	t.Helper()
	var m message
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("message %s: %v", s, err)
	}
	return m
}

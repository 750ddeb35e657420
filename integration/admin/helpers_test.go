// Package admin_test checks the admin API (docs/operations.md) against
// hub processes, alone and in a cluster joined over a NATS server that
// the test runs: who may call it, its listings over 10,000 peers, a kick
// across nodes with its revocation, unsubscribe and broadcast, and the
// rpc admin command.
package admin_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

func TestMain(m *testing.M) { hubproc.Main(m) }

var jwtSecret = []byte("the admin tests' HMAC secret, 32 bytes or more")

// opToken is the operator's token, of the hub's -token-file.
const opToken = "operator-secret-token"

// startHub starts a hub that takes JWTs signed with jwtSecret, whose
// rules let any authenticated peer subscribe to anything and "role=ops"
// call the admin API, and whose admin listener takes opToken; joined to
// the NATS server at natsURL as node when natsURL is not "".
func startHub(t *testing.T, natsURL, node string, args ...string) *hubproc.Hub {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "hub.key")
	tokens := filepath.Join(dir, "tokens")
	config := filepath.Join(dir, "hub.yaml")
	for name, data := range map[string]string{
		key:    string(jwtSecret),
		tokens: opToken + "\n",
		config: `rules:
  - allow: [subscribe, publish]
    to: [">"]
    who: authenticated
  - allow: [admin]
    to: ["admin.*"]
    who: role=ops
`,
	} {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := append([]string{"-config", config, "-jwt-key", key, "-token-file", tokens, "-log-level", "warn"}, args...)
	if natsURL != "" {
		a = append(a, "-nats", natsURL, "-node", node)
	}
	return hubproc.Start(t, &hubproc.Options{Args: a, Admin: true})
}

// jwtFor signs a token for sub with the extra claims, valid for an hour.
func jwtFor(t testing.TB, sub string, extra jwt.MapClaims) string {
	return testkit.HS256(t, jwtSecret, sub, time.Hour, extra)
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// errHTTP is the error of a POST refused before JSON-RPC.
type errHTTP struct{ status int }

func (e errHTTP) Error() string { return "HTTP " + strconv.Itoa(e.status) }

// call posts one JSON-RPC call to base/rpc with token (none when "") and
// decodes its result into result: an *rpcError for an error reply, an
// errHTTP for a refusal.
func call(t testing.TB, base, token, method string, params, result any) error {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, b := testkit.Post(t, ctx, base+"/rpc", token, string(body))
	if status != http.StatusOK {
		return errHTTP{status}
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	if r.Error != nil {
		return r.Error
	}
	if result != nil {
		if err := json.Unmarshal(r.Result, result); err != nil {
			t.Fatalf("%s: %v: %s", method, err, r.Result)
		}
	}
	return nil
}

// mustCall is call that fails the test on an error.
func mustCall(t testing.TB, base, token, method string, params, result any) {
	t.Helper()
	if err := call(t, base, token, method, params, result); err != nil {
		t.Fatalf("%s on %s: %v", method, base, err)
	}
}

// codeOf returns the JSON-RPC error code of err, 0 for none.
func codeOf(err error) int {
	var e *rpcError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// rawPeer is a WebSocket opened by hand, without a goroutine: thousands
// of them cost the test nothing but their sockets. It writes masked text
// frames and reads unmasked ones, as a client does.
type rawPeer struct {
	c  net.Conn
	br *bufio.Reader
}

// dialRaw opens a WebSocket to the hub at addr with token.
func dialRaw(addr, token string) (*rawPeer, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	var key [16]byte
	_, _ = rand.Read(key[:])
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	_, err = fmt.Fprintf(c, "GET /rpc HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
		addr, base64.StdEncoding.EncodeToString(key[:]), token)
	if err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, errHTTP{resp.StatusCode}
	}
	_ = c.SetDeadline(time.Time{})
	return &rawPeer{c: c, br: br}, nil
}

// roundTrip writes one message and reads the next one.
func (p *rawPeer) roundTrip(msg string) (string, error) {
	_ = p.c.SetDeadline(time.Now().Add(30 * time.Second))
	defer p.c.SetDeadline(time.Time{})
	if err := p.write(msg); err != nil {
		return "", err
	}
	return p.read()
}

// next reads the next message, failing the test after testkit.Wait.
func (p *rawPeer) next(t testing.TB) string {
	t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(testkit.Wait))
	defer p.c.SetReadDeadline(time.Time{})
	msg, err := p.read()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return msg
}

// write writes one text message.
func (p *rawPeer) write(msg string) error {
	frame := []byte{0x81}
	switch n := len(msg); {
	case n < 126:
		frame = append(frame, 0x80|byte(n))
	default:
		frame = append(frame, 0x80|126, byte(n>>8), byte(n))
	}
	frame = append(frame, 0, 0, 0, 0) // a zero mask leaves the payload as it is
	frame = append(frame, msg...)
	_, err := p.c.Write(frame)
	return err
}

// read reads one text message.
func (p *rawPeer) read() (string, error) {
	var h [2]byte
	if _, err := io.ReadFull(p.br, h[:]); err != nil {
		return "", err
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(p.br, ext[:]); err != nil {
			return "", err
		}
		n = int(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(p.br, ext[:]); err != nil {
			return "", err
		}
		n = int(binary.BigEndian.Uint64(ext[:]))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(p.br, b); err != nil {
		return "", err
	}
	if h[0]&0x0f != 1 {
		return "", fmt.Errorf("frame of opcode %d: %q", h[0]&0x0f, b)
	}
	return string(b), nil
}

func (p *rawPeer) close() { p.c.Close() }

// natsServer is a NATS server run by the test.
type natsServer struct{ s *natsserver.Server }

func startNATS(t *testing.T) *natsServer {
	t.Helper()
	return &natsServer{hubtest.StartNATS(t, &natsserver.Options{})}
}

func (n *natsServer) URL() string {
	return "nats://" + n.s.Addr().String()
}

// startCluster starts count hubs named n1, n2... joined over ns, and
// waits until each node's admin.info lists them all.
func startCluster(t *testing.T, ns *natsServer, count int, args ...string) []*hubproc.Hub {
	t.Helper()
	hubs := make([]*hubproc.Hub, count)
	for i := range hubs {
		hubs[i] = startHub(t, ns.URL(), "n"+strconv.Itoa(i+1), args...)
	}
	for _, h := range hubs {
		waitNodes(t, h, count)
	}
	return hubs
}

// info is the result of admin.info.
type info struct {
	Version string `json:"version"`
	Node    string `json:"node"`
	Nodes   []struct {
		Node  string `json:"node"`
		Peers int    `json:"peers"`
	} `json:"nodes"`
}

// waitNodes waits until admin.info on h lists n nodes.
func waitNodes(t *testing.T, h *hubproc.Hub, n int) info {
	t.Helper()
	var in info
	testkit.WaitFor(t, fmt.Sprintf("admin.info on %s listing %d nodes", h.Addr(), n), func() bool {
		in = info{}
		mustCall(t, h.AdminURL(), opToken, "admin.info", map[string]any{}, &in)
		return len(in.Nodes) == n
	})
	return in
}

// peer is one entry of admin.peers.
type peerDetail struct {
	ID       string   `json:"id"`
	User     string   `json:"user"`
	Remote   string   `json:"remote"`
	Node     string   `json:"node"`
	Topics   []string `json:"topics"`
	Methods  []string `json:"methods"`
	InFlight int      `json:"in_flight"`
	Queued   int64    `json:"queued_bytes"`
}

type peerPage struct {
	Peers      []peerDetail `json:"peers"`
	Next       string       `json:"next"`
	Unanswered []string     `json:"unanswered"`
}

// listAll walks every page of admin.peers with params on base, and
// returns the peers and how long each page took. A page that names nodes
// that did not answer in time (a loaded machine) is asked again, as an
// operator would, until a deadline.
func listAll(t *testing.T, base string, params map[string]any) ([]peerDetail, []time.Duration) {
	t.Helper()
	var all []peerDetail
	var took []time.Duration
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	deadline := time.Now().Add(time.Minute)
	for range 1000 {
		var page peerPage
		start := time.Now()
		mustCall(t, base, opToken, "admin.peers", p, &page)
		took = append(took, time.Since(start))
		if len(page.Unanswered) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("admin.peers: nodes %v still do not answer", page.Unanswered)
			}
			t.Logf("admin.peers: nodes %v did not answer in time; asking the page again", page.Unanswered)
			continue
		}
		all = append(all, page.Peers...)
		if page.Next == "" {
			return all, took
		}
		p["cursor"] = page.Next
	}
	t.Fatal("admin.peers: more than 1000 pages")
	return nil, nil
}

func sortedUnique(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return false
		}
	}
	return true
}

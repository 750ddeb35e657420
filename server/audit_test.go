package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// auditServer is a server whose tokens are "tok-alice" (alice) and whose
// hub refuses every publish and any subscription under "secret.", with
// the audit of both logged at level into the returned observer.
func auditServer(t *testing.T, level zapcore.Level, opts *server.Options) (*testServer, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(level)
	log := zap.New(core)
	audit := server.NewAudit(log)
	if opts == nil {
		opts = &server.Options{}
	}
	opts.Logger, opts.Audit = log, audit
	opts.Authenticate = server.TokenAuth(map[string]string{"tok-alice": "alice"})
	opts.Hub = hub.New(&hub.Options{
		Policy: func(_ context.Context, a hub.Action, target string) error {
			if a == hub.Publish || strings.HasPrefix(target, "secret.") {
				return errors.New("not for you")
			}
			return nil
		},
		OnRefused: audit.HubRefused,
	})
	return newTestServer(t, opts), logs
}

// refusals returns the audit's "refused" lines of kind.
func refusals(logs *observer.ObservedLogs, kind string) []observer.LoggedEntry {
	return logs.FilterMessage("refused").FilterField(zap.String("kind", kind)).All()
}

// Every refusal is logged once, with who, what and why: authentication
// at Info, the rules and the limits at Debug.
func TestAuditRefusals(t *testing.T) {
	ts, logs := auditServer(t, zapcore.DebugLevel, &server.Options{Conn: peer.Options{MaxMessage: 1 << 10}})

	// Authentication: no token, a wrong one.
	if status, _ := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, nil); status != 401 {
		t.Fatalf("POST without a token: %d", status)
	}
	if _, resp, err := websocket.Dial(t.Context(), ts.wsURL()+"?token=wrong", nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("WebSocket with a wrong token: %v", err)
	}
	auth := refusals(logs, "auth")
	if len(auth) != 2 {
		t.Fatalf("%d authentication refusals logged, want 2: %v", len(auth), auth)
	}
	for i, want := range []string{"POST", "connect"} {
		e, f := auth[i], auth[i].ContextMap()
		if e.Level != zapcore.InfoLevel || f["action"] != want || f["target"] != "/rpc" || f["status"] != int64(401) ||
			f["remote"] == "" || f["error"] == nil {
			t.Errorf("authentication refusal %d: %v %v", i, e.Level, f)
		}
		if strings.Contains(e.Message+toString(f), "wrong") {
			t.Errorf("the token is in the log: %v", f)
		}
	}

	// The rules, over a WebSocket: the line names alice and her peer.
	ws := ts.dialRaw(t, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer tok-alice"}}})
	ws.SetReadLimit(1 << 20)
	roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["secret.plans"],"id":1}`)
	roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news"],"id":2}`) // allowed: no line
	roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"news","data":1},"id":3}`)
	rules := refusals(logs, "rules")
	if len(rules) != 2 {
		t.Fatalf("%d rule refusals logged, want 2: %v", len(rules), rules)
	}
	connected := logs.FilterMessage("peer connected").All()
	if len(connected) != 1 || connected[0].ContextMap()["identity"] != "alice" {
		t.Fatalf("peer connected: %v", connected)
	}
	peerID := connected[0].ContextMap()["peer"]
	for i, want := range [][2]string{{"subscribe", "secret.plans"}, {"publish", "news"}} {
		e, f := rules[i], rules[i].ContextMap()
		if e.Level != zapcore.DebugLevel || f["action"] != want[0] || f["target"] != want[1] || f["identity"] != "alice" ||
			f["peer"] != peerID || f["remote"] == "" || f["reason"] != "policy" {
			t.Errorf("rule refusal %d: %v %v", i, e.Level, f)
		}
	}

	// A limit: a message over MaxMessage closes the connection with 1009.
	write(t, ws, `{"jsonrpc":"2.0","method":"echo","params":"`+strings.Repeat("x", 2<<10)+`","id":4}`)
	if _, _, err := ws.Read(t.Context()); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("read after a message too big: %v", err)
	}
	testkit.WaitFor(t, "peer disconnected logged", func() bool { return logs.FilterMessage("peer disconnected").Len() == 1 })
	limits := refusals(logs, "limit")
	if len(limits) != 1 {
		t.Fatalf("%d limit refusals logged, want 1: %v", len(limits), limits)
	}
	if f := limits[0].ContextMap(); limits[0].Level != zapcore.DebugLevel || f["reason"] != "message_size" || f["identity"] != "alice" || f["peer"] != peerID {
		t.Errorf("limit refusal: %v", f)
	}
	if n := ts.srv.Stats().Limited["message_size"]; n != 1 {
		t.Errorf("Stats().Limited[message_size] = %d, want 1", n)
	}
	if f := logs.FilterMessage("peer disconnected").All()[0].ContextMap(); f["identity"] != "alice" || f["peer"] != peerID {
		t.Errorf("peer disconnected does not name the user: %v", f)
	}

	// The Origin check, a limit too.
	post(t, ts.URL, "application/json", `{}`, http.Header{"Origin": {"https://evil.example"}})
	limits = refusals(logs, "limit")
	if len(limits) != 2 || limits[1].ContextMap()["reason"] != "origin" || limits[1].ContextMap()["origin"] != "https://evil.example" {
		t.Errorf("origin refusal: %v", limits)
	}
}

func toString(f map[string]any) string {
	var b strings.Builder
	for k, v := range f {
		b.WriteString(k)
		if s, ok := v.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// At Info, only authentication refusals are logged; a POST's access log
// line is Debug's.
func TestAuditLevels(t *testing.T) {
	ts, logs := auditServer(t, zapcore.InfoLevel, nil)
	bearer := http.Header{"Authorization": {"Bearer tok-alice"}}
	post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"x","data":1},"id":1}`, bearer)
	post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, nil)
	if n := len(refusals(logs, "rules")); n != 0 {
		t.Errorf("%d rule refusals logged at Info", n)
	}
	if n := len(refusals(logs, "auth")); n != 1 {
		t.Errorf("%d authentication refusals logged, want 1", n)
	}
	if n := logs.FilterMessage("post").Len(); n != 0 {
		t.Errorf("%d access log lines at Info", n)
	}
}

// Each POST has an access log line at Debug: the methods, the status, the
// time it took and who sent it.
func TestAccessLog(t *testing.T) {
	ts, logs := auditServer(t, zapcore.DebugLevel, nil)
	bearer := http.Header{"Authorization": {"Bearer tok-alice"}}
	post(t, ts.URL, "application/json", `[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1},{"jsonrpc":"2.0","method":"echo","params":"x","id":2}]`, bearer)
	post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2]}`, bearer)
	post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, nil)
	post(t, ts.URL, "text/plain", `{}`, bearer)
	lines := logs.FilterMessage("post").All()
	if len(lines) != 4 {
		t.Fatalf("%d access log lines, want 4: %v", len(lines), lines)
	}
	want := []struct {
		methods  string
		status   int64
		identity any
	}{{"[add echo]", 200, "alice"}, {"[add]", 204, "alice"}, {"[]", 401, nil}, {"[]", 415, nil}}
	for i, w := range want {
		f := lines[i].ContextMap()
		if got := toList(f["methods"]); got != w.methods || f["status"] != w.status || f["identity"] != w.identity || f["duration"] == nil || f["remote"] == "" {
			t.Errorf("access log line %d: %v, want %v", i, f, w)
		}
	}
}

func toList(v any) string {
	l, _ := v.([]any)
	var s []string
	for _, x := range l {
		s = append(s, x.(string))
	}
	return "[" + strings.Join(s, " ") + "]"
}

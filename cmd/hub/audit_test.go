package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestAuditTrail: the hub's log says who was refused what by the rules,
// at debug, in the same trail as the authentication refusals.
func TestAuditTrail(t *testing.T) {
	tokens, toks := writeTokens(t, 1)
	p := startProc(t, "-token-file", tokens, "-log-level", "debug")
	url := "http://" + p.Addr(t, "hub listening") + "/rpc"
	post := func(body string, header ...string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The default policy: no peer publishes.
	post(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"news","data":1},"id":1}`, "Authorization", "Bearer "+toks[0])
	post(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)
	p.WaitLog(t, `"msg":"refused","kind":"rules","reason":"policy","identity":"token-`, 1)
	p.WaitLog(t, `"action":"publish","target":"news"`, 1)
	p.WaitLog(t, `"msg":"refused","kind":"auth"`, 1)
	p.WaitLog(t, `"msg":"post","methods":["rpc.publish"],"status":200`, 1)
	log := p.Stop(t)
	if strings.Contains(log, toks[0]) {
		t.Errorf("the log holds the token:\n%s", log)
	}
}

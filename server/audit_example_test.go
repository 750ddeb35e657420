package server_test

import (
	"net/http/httptest"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
)

// One audit trail for a server and its hub: the server's refusals
// (authentication, limits) and the hub's Policy's go through the same
// Audit, and so share its rate limit. Here a POST without a token.
func ExampleNewAudit() {
	log := zap.NewExample(zap.IncreaseLevel(zap.InfoLevel)) // JSON without timestamps
	audit := server.NewAudit(log)
	srv := server.New(&server.Options{
		Hub:          hub.New(&hub.Options{OnRefused: audit.HubRefused}),
		Authenticate: server.TokenAuth(map[string]string{"s3cret": "backend"}),
		Logger:       log,
		Audit:        audit,
	})

	req := httptest.NewRequest("POST", "/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`))
	req.Header.Set("Content-Type", "application/json")
	srv.ServeHTTP(httptest.NewRecorder(), req)
	// Output:
	// {"level":"info","msg":"refused","kind":"auth","reason":"auth","remote":"192.0.2.1:1234","action":"POST","target":"/rpc","error":"server: unauthorized: no token","status":401}
}

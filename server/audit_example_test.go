package server_test

import (
	"fmt"
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

// The Audit keeps the last refusals, whatever the log leaves out: the
// admin API lists them (admin.refusals), newest first.
func ExampleAudit_Refusals() {
	audit := server.NewAudit(nil) // logs nowhere, keeps them still
	srv := server.New(&server.Options{
		Authenticate: server.TokenAuth(map[string]string{"s3cret": "backend"}),
		Audit:        audit,
	})
	for _, token := range []string{"", "wrong"} {
		req := httptest.NewRequest("POST", "/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		srv.ServeHTTP(httptest.NewRecorder(), req)
	}
	for _, r := range audit.Refusals(10) {
		fmt.Println(r.Kind, r.Action, r.Target, r.Status, r.Error)
	}
	// Output:
	// auth POST /rpc 401 server: unauthorized: unknown token
	// auth POST /rpc 401 server: unauthorized: no token
}

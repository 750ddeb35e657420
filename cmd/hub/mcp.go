package main

import (
	"context"

	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/mcp"
	"go.uber.org/zap"
)

// mountMCP serves the Model Context Protocol at /mcp when on (-mcp, or
// -demo), each session running at most maxInFlight calls at once (as a
// connection), and returns what ends its sessions on shutdown and what
// tells it that the rules were reloaded.
func mountMCP(on bool, srv *server.Server, maxInFlight int, log *zap.Logger) (shutdown func(context.Context) error, reloaded func()) {
	if !on {
		return func(context.Context) error { return nil }, func() {}
	}
	m := mcp.New(srv, &mcp.Options{MaxInFlight: maxInFlight, Logger: log})
	srv.Handle("/mcp", m)
	return m.Shutdown, m.ToolsChanged
}

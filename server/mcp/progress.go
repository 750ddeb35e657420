package mcp

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxProgressQueued caps the progress notes waiting to be sent for one
// call: beyond it, notes are dropped (the count goes on), so that a client
// slow to read cannot make the hub hold a provider's notes without bound.
const maxProgressQueued = 64

// progress passes a provider's rpc.progress notes for one tool call on to
// its MCP client as notifications/progress. note runs on the reader of
// the provider's connection, so it never waits: a goroutine sends.
type progress struct {
	ctx   context.Context
	ss    *sdk.ServerSession
	token any

	mu    sync.Mutex
	count int
	queue chan *sdk.ProgressNotificationParams
	done  chan struct{}
}

// newProgress returns the progress of a call whose request has token.
// A call without one has none: its provider's notes go nowhere.
func newProgress(ctx context.Context, ss *sdk.ServerSession, token any) *progress {
	p := &progress{ctx: ctx, ss: ss, token: token,
		queue: make(chan *sdk.ProgressNotificationParams, maxProgressQueued), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for n := range p.queue {
			_ = p.ss.NotifyProgress(p.ctx, n)
		}
	}()
	return p
}

// note takes the data of one rpc.progress note.
func (p *progress) note(data json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count < 0 {
		return // closed
	}
	p.count++
	n := &sdk.ProgressNotificationParams{ProgressToken: p.token}
	var d struct {
		Progress *float64 `json:"progress"`
		Total    *float64 `json:"total"`
		Message  *string  `json:"message"`
	}
	if len(data) > 0 && data[0] == '{' && json.Unmarshal(data, &d) == nil && d.Progress != nil {
		n.Progress = *d.Progress
		if d.Total != nil {
			n.Total = *d.Total
		}
		if d.Message != nil {
			n.Message = *d.Message
		}
	} else {
		n.Progress = float64(p.count)
		n.Message = string(data)
	}
	select {
	case p.queue <- n:
	default: // the client reads too slowly: dropped
	}
}

// close sends the notes taken and stops taking more.
func (p *progress) close() {
	p.mu.Lock()
	p.count = -1
	close(p.queue)
	p.mu.Unlock()
	<-p.done
}

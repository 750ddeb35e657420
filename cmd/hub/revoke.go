package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"go.uber.org/zap"
)

// A reload that narrows the rules ends what they no longer allow: each
// connected peer's subscriptions and provided methods are asked about
// again (hub.Peer.Reauthorize), as when a peer replaces its token with
// rpc.auth, and the peer is told with rpc.revoked.

const (
	// reauthWorkers caps the peers reauthorized at once after a reload.
	reauthWorkers = 8
	// reauthTimeout bounds the reauthorization of all the peers: telling
	// a peer too slow to read its rpc.revoked in that time is given up
	// (what it may no longer do has ended all the same).
	reauthTimeout = 10 * time.Second
)

// reauthorizeAll reauthorizes every peer connected to h by the policy of
// the moment, and logs what ended in one line.
func reauthorizeAll(ctx context.Context, h *hub.Hub, log *zap.Logger) {
	peers := h.Peers()
	ctx, cancel := context.WithTimeout(ctx, reauthTimeout)
	defer cancel()
	var affected, topics, methods, unreached atomic.Int64
	sem := make(chan struct{}, reauthWorkers)
	var wg sync.WaitGroup
	for _, p := range peers {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := p.Reauthorize(hub.WithIdentity(ctx, p.Identity()))
			if err != nil {
				unreached.Add(1) // closing, or too slow to be told
			}
			if !r.Empty() {
				affected.Add(1)
				topics.Add(int64(len(r.Topics)))
				methods.Add(int64(len(r.Methods)))
			}
		})
	}
	wg.Wait()
	fields := []zap.Field{zap.Int("peers", len(peers)), zap.Int64("peers_affected", affected.Load()),
		zap.Int64("subscriptions", topics.Load()), zap.Int64("methods", methods.Load())}
	if n := unreached.Load(); n > 0 {
		fields = append(fields, zap.Int64("not_told", n))
	}
	log.Info("reload: ended what the new rules refuse", fields...)
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// This file holds the cluster part's restart of a node, and the publish
// that it and the fan-outs use.

// restartNode stops node i with SIGTERM and starts it again, while pub
// publishes an event every so often; it waits until the node's peers have
// reconnected (to it or to another node) and every peer holds every event.
func restartNode(ctx context.Context, s *servers, i int, argvs [][]string, health, urls []string, ss swarms, pub *control, published int, every time.Duration) (restartResult, error) {
	r := restartResult{Node: i + 1, PublishEvery: every.Seconds()}
	conns, err := metric(ctx, metricsURL(urls[i]), "switchboard_connections")
	if err != nil {
		return r, err
	}
	r.Peers = int(conns)
	// Peers that lost their connection under load before have reconnected
	// too: only the reconnections from now on count.
	before, err := ss.wait(0, 0)
	if err != nil {
		return r, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pubErr error
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		// A refused publish is tried again, with the same number, at
		// the next tick, as a publisher would; the last one even after
		// stop, for up to a minute, since the stream may hold it.
		stopped, retrying := stop, false
		var giveUp <-chan time.Time
		for {
			select {
			case <-stopped:
				if !retrying {
					return
				}
				stopped, giveUp = nil, time.After(time.Minute)
				continue
			case <-giveUp:
				pubErr = fmt.Errorf("event %d refused for a minute after the last reconnection: %s", published+r.Events+1, r.RefusedReply)
				return
			case <-tick.C:
			}
			err := publish(pub, published+r.Events+1)
			var refused *refusedError
			if retrying = errors.As(err, &refused); retrying {
				r.Refused++
				r.RefusedReply = cmp.Or(r.RefusedReply, refused.reply)
				continue
			}
			if pubErr = err; pubErr != nil {
				return
			}
			r.Events++
			if giveUp != nil { // stopped
				return
			}
		}
	})
	stopPublishing := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopPublishing()

	start := time.Now()
	s.procs[i].stop(time.Minute)
	r.StoppedAfter = time.Since(start).Seconds()
	logf("cluster: node%d stopped in %.1f s", i+1, r.StoppedAfter)
	again := &servers{}
	if err := again.launch(ctx, argvs[i:i+1], health[i:i+1], readyWait); err != nil {
		return r, fmt.Errorf("node%d restarted: %w", i+1, err)
	}
	s.procs[i] = again.procs[0]
	r.BackAfter = time.Since(start).Seconds()
	logf("cluster: node%d back after %.1f s", i+1, r.BackAfter)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rep, err := ss.wait(0, 0)
		if err != nil {
			return r, err
		}
		r.Reconnects = rep.Reconnects - before.Reconnects
		r.PeersPerNode, r.OtherError = rep.PeersPerHub, rep.OtherError
		r.DialErrors = make(map[string]int64)
		for k, n := range rep.DialErrors {
			if n -= before.DialErrors[k]; n > 0 {
				r.DialErrors[k] = n
			}
		}
		if r.Reconnects >= r.Peers {
			r.Seconds = time.Unix(0, rep.LastReconnect).Sub(start).Seconds()
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d peers reconnected after 3 minutes", r.Reconnects, r.Peers)
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * every) // an event or two after every peer is back
	stopPublishing()
	if pubErr != nil {
		return r, pubErr
	}
	rep, err := ss.wait(published+r.Events, time.Minute)
	if err != nil {
		return r, err
	}
	r.Missing, r.Dups, r.Again = rep.Missing, rep.Dups, rep.Again
	if rep.Complete != rep.Peers {
		return r, fmt.Errorf("after the restart, %d of %d peers hold all %d events (%d missing, %d twice)", rep.Complete, rep.Peers, published+r.Events, rep.Missing, rep.Dups)
	}
	return r, nil
}

// publish publishes event k (its send time in it) through pub, and
// waits for the hub to accept it.
func publish(pub *control, k int) error {
	req := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"scale","data":{"t":%d,"n":%d}},"id":%d}`, time.Now().UnixNano(), k, k)
	reply, err := pub.call(req, time.Minute)
	if err != nil {
		return fmt.Errorf("publishing event %d: %w", k, err)
	}
	if bytes.Contains(reply, []byte(`"error":`)) {
		return &refusedError{k: k, reply: string(reply)}
	}
	return nil
}

// refusedError is a publish the hub answered with an error: it says the
// event was not accepted, though it may be in the stream all the same
// (a stream's acknowledgement that came too late).
type refusedError struct {
	k     int
	reply string
}

func (e *refusedError) Error() string { return fmt.Sprintf("publishing event %d: %s", e.k, e.reply) }

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The addressed scenarios measure rpc.call (a call of a chosen peer)
// against what it is compared with, each leg in the same run:
//
//   - addressed: sequential rpc.call to one peer, against sequential
//     calls of the hub's own echo on the same hub (seq). The addressed
//     call crosses the hub twice: target >= 0.5.
//   - addressed-fwd: the same rpc.call, against a call forwarded to a
//     peer that provides its method (routing): no slower, within 10%.
//   - addressed-topic: sequential rpc.call to a topic of l.addressees
//     peers, each answered once every peer has, against sequential
//     publishes to them, each done once every peer has the event:
//     within 3x.
//   - addressed-relay: the same rpc.call, against the floor's relay
//     (floor.go), which passes the same frames between two connections
//     and does nothing else: how far the hub trails a bare server
//     making the same crossings. No target.
//   - relay-floor: the floor's relay against the floor's echo, both on
//     the floor server: what the machine allows an addressed call
//     against a direct one, with nothing of the hub. No target.
//
// The peers answering are raw connections: each reads a request and
// writes its reply, the request's id and [1].

// answerer serves c until it closes: it answers each request with the
// request's id and [1], and calls event (if not nil) for each rpc.event.
func answerer(c *conn, event func()) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	for {
		msg, err := c.read()
		if err != nil {
			return
		}
		m.ID, m.Method = nil, ""
		if json.Unmarshal(msg, &m) != nil {
			continue
		}
		switch {
		case m.Method == "rpc.event":
			if event != nil {
				event()
			}
		case m.Method != "" && m.ID != nil:
			reply := append(append([]byte(`{"jsonrpc":"2.0","id":`), m.ID...), `,"result":[1]}`...)
			if c.ws.Write(context.Background(), websocket.MessageText, reply) != nil {
				return
			}
		}
	}
}

// whoami returns the peer id the hub gave c.
func whoami(c *conn) (string, error) {
	msg, err := c.roundTrip([]byte(`{"jsonrpc":"2.0","method":"rpc.whoami","id":1}`))
	if err != nil {
		return "", err
	}
	var r struct{ Result struct{ ID string } }
	if err := json.Unmarshal(msg, &r); err != nil || r.Result.ID == "" {
		return "", fmt.Errorf("rpc.whoami answered %s", msg)
	}
	return r.Result.ID, nil
}

// servedCalls makes sequential calls of req on a new connection while
// target (its first frame, if any, answered) answers the calls the hub
// passes on to it. req is made from target's peer id.
func servedCalls(ctx context.Context, l *load, u string, first []byte, req func(id string) []byte) (figure, error) {
	target, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	if first != nil {
		if _, err := target.roundTrip(first); err != nil {
			target.close()
			return figure{}, err
		}
	}
	id, err := whoami(target)
	if err != nil {
		target.close()
		return figure{}, err
	}
	var wg sync.WaitGroup
	wg.Go(func() { answerer(target, nil) })
	defer func() { target.close(); wg.Wait() }()
	return answeredCalls(ctx, l, u, req(id))
}

// answeredCalls makes sequential calls of frame on a new connection to
// u, each answered with valid JSON.
func answeredCalls(ctx context.Context, l *load, u string, frame []byte) (figure, error) {
	caller, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer caller.close()
	return sequential(l, func() error {
		msg, err := caller.roundTrip(frame)
		if err == nil && !json.Valid(msg) {
			err = fmt.Errorf("invalid reply %s", msg)
		}
		return err
	})
}

// addressedFrame is an rpc.call of echo on the peer id.
func addressedFrame(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":` + strconv.Quote(id) + `,"method":"echo","params":[1]},"id":1}`)
}

// addressedScenario: sequential rpc.call to one peer.
func addressedScenario(ctx context.Context, l *load, u string) (figure, error) {
	return servedCalls(ctx, l, u, nil, addressedFrame)
}

// relayScenario: the addressed scenario's frames, sent through the
// relay of the floor at u: the caller's rpc.call reaches the target as it
// is, and answerer answers it with its id and [1], as it answers the
// call the hub passes on.
func relayScenario(ctx context.Context, l *load, u string) (figure, error) {
	base, err := url.Parse(u)
	if err != nil {
		return figure{}, err
	}
	at := func(path string) string {
		v := *base
		v.Path = path
		return v.String()
	}
	target, err := dial(ctx, at("/relay-target"))
	if err != nil {
		return figure{}, err
	}
	if msg, err := target.read(); err != nil || !bytes.Equal(msg, relayReady) {
		target.close()
		return figure{}, fmt.Errorf("relay target: %s, %v; want %s", msg, err, relayReady)
	}
	var wg sync.WaitGroup
	wg.Go(func() { answerer(target, nil) })
	defer func() { target.close(); wg.Wait() }()
	return answeredCalls(ctx, l, at("/relay"), addressedFrame("target"))
}

// forwardedScenario: sequential calls of a method a peer provides.
func forwardedScenario(ctx context.Context, l *load, u string) (figure, error) {
	return servedCalls(ctx, l, u, []byte(`{"jsonrpc":"2.0","method":"rpc.provide","params":{"methods":["bench.echo"]},"id":1}`), func(string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"bench.echo","params":[1],"id":1}`)
	})
}

// addressees opens l.addressees connections subscribed to bench.addressed,
// each served by answerer with event; stop closes them and waits.
func addressees(ctx context.Context, l *load, u string, event func()) (stop func(), err error) {
	var wg sync.WaitGroup
	conns, err := dialEach(ctx, l, u, l.addressees,
		[]byte(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["bench.addressed"],"id":1}`),
		func(_ int, c *conn) { wg.Go(func() { answerer(c, event) }) })
	if err != nil {
		wg.Wait()
		return nil, err
	}
	return func() { closeAll(conns); wg.Wait() }, nil
}

// addressedTopicScenario: sequential rpc.call to every peer of a topic;
// the figure is calls per second, each answered by all of them.
func addressedTopicScenario(ctx context.Context, l *load, u string) (figure, error) {
	stop, err := addressees(ctx, l, u, nil)
	if err != nil {
		return figure{}, err
	}
	defer stop()
	caller, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer caller.close()
	req := []byte(`{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"bench.addressed","method":"echo","params":[1]},"id":1}`)
	var r struct {
		Result struct{ Results []json.RawMessage }
	}
	return sequential(l, func() error {
		msg, err := caller.roundTrip(req)
		if err != nil {
			return err
		}
		r.Result.Results = r.Result.Results[:0]
		if err := json.Unmarshal(msg, &r); err != nil || len(r.Result.Results) != l.addressees {
			return fmt.Errorf("rpc.call to the topic: %d results of %d: %.200s", len(r.Result.Results), l.addressees, msg)
		}
		return nil
	})
}

// topicPublishScenario: sequential publishes to the same peers; the
// figure is publishes per second, each received by all of them.
func topicPublishScenario(ctx context.Context, l *load, u string) (figure, error) {
	var got atomic.Int64
	all := make(chan struct{}, 1)
	n := int64(l.addressees)
	stop, err := addressees(ctx, l, u, func() {
		if got.Add(1)%n == 0 {
			all <- struct{}{}
		}
	})
	if err != nil {
		return figure{}, err
	}
	defer stop()
	pub, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer pub.close()
	req := []byte(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"bench.addressed","data":[1]},"id":1}`)
	return sequential(l, func() error {
		if _, err := pub.roundTrip(req); err != nil {
			return err
		}
		select {
		case <-all:
			return nil
		case <-time.After(30 * time.Second):
			return fmt.Errorf("an event missing after 30s: %d of %d delivered", got.Load()%n, n)
		}
	})
}

package main

// This file holds the fanout scenario: events to many subscribers, and
// the time each took to reach them.

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// fanoutScenario subscribes l.subscribers connections to one topic, then
// publishes l.events events, back to back, each carrying the time it was
// sent, and waits until every subscriber has every event. The figure is
// deliveries per second from the first publish to the last delivery; the
// percentiles are of the delivery latency.
func fanoutScenario(ctx context.Context, l *load, u string) (figure, error) {
	if pid, ok := l.pids[u]; ok {
		return meteredFanout(ctx, l, u, pid)
	}
	f, _, err := fanout(ctx, l, u, u, nil)
	return f, err
}

// fanout is fanoutScenario with the publisher connected to pubURL and the
// subscribers to subURL. With meter, it also returns how much meter grew
// from the first publish to the last delivery.
func fanout(ctx context.Context, l *load, pubURL, subURL string, meter func(context.Context) (float64, error)) (_ figure, metered float64, _ error) {
	// Each subscriber reads from the moment it has subscribed, not once
	// all have: opening 10,000 connections can take longer than the hub's
	// ping interval and timeout together, and a subscriber that does not
	// read does not answer pings.
	lats := make([][]time.Duration, l.subscribers)
	last := make([]time.Time, l.subscribers)
	errs := make([]error, l.subscribers)
	var wg sync.WaitGroup
	subs, err := dialEach(ctx, l, subURL, l.subscribers,
		[]byte(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["bench.fanout"],"id":1}`),
		func(i int, s *conn) {
			lats[i] = make([]time.Duration, 0, l.events)
			wg.Go(func() {
				for len(lats[i]) < l.events {
					msg, err := s.read()
					if err != nil {
						errs[i] = err
						return
					}
					now := time.Now()
					if t, ok := sentAt(msg); ok {
						lats[i] = append(lats[i], now.Sub(time.Unix(0, t)))
						last[i] = now
					}
				}
			})
		})
	if err != nil {
		wg.Wait() // dialEach closed the connections: the readers end
		return figure{}, 0, err
	}
	defer func() { closeAll(subs); wg.Wait() }() // closing ends the readers
	pub, err := dial(ctx, pubURL)
	if err != nil {
		return figure{}, 0, err
	}
	defer pub.close()

	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()

	var before float64
	if meter != nil {
		if before, err = meter(ctx); err != nil {
			return figure{}, 0, err
		}
	}
	start := time.Now()
	for i := range l.events {
		req := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"bench.fanout","data":{"t":%d}},"id":%d}`,
			time.Now().UnixNano(), i+1)
		if _, err := pub.roundTrip(req); err != nil {
			return figure{}, 0, err
		}
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		closeAll(subs) // ends the readers
		<-all
		return figure{}, 0, fmt.Errorf("events missing after 60s")
	}
	var end time.Time
	var lat []time.Duration
	for i := range subs {
		if len(lats[i]) < l.events {
			return figure{}, 0, fmt.Errorf("subscriber %d got %d of %d events: %v", i, len(lats[i]), l.events, errs[i])
		}
		if last[i].After(end) {
			end = last[i]
		}
		lat = append(lat, lats[i]...)
	}
	if meter != nil {
		after, err := meter(ctx)
		if err != nil {
			return figure{}, 0, err
		}
		metered = after - before
	}
	return rate(len(subs)*l.events, end.Sub(start), lat), metered, nil
}

// sentAt finds the publish time in an event frame: `"t":` and digits.
func sentAt(msg []byte) (int64, bool) {
	i := bytes.Index(msg, []byte(`"t":`))
	if i < 0 {
		return 0, false
	}
	var n int64
	j := i + 4
	for ; j < len(msg) && msg[j] >= '0' && msg[j] <= '9'; j++ {
		n = n*10 + int64(msg[j]-'0')
	}
	return n, j > i+4
}

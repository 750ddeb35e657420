package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// "bench swarm" is one process of the scale command's load: it holds many
// peers, each on a WebSocket of its own from one loopback source address
// (a process holds as many as its file descriptor limit allows, and a
// source address as many as its ephemeral ports), and takes orders, one a
// line, on stdin, answering each with one JSON line on stdout:
//
//	subscribe    every peer subscribes to the topic
//	wait N S     wait up to S seconds for every peer to hold N events
//	close        close every peer, answer, and exit
//
// It answers "connected" once all its peers are. A peer whose connection
// ends reconnects, to its own hub if it takes it, else to another (see
// hubFor), and resumes its subscription from the last position it
// processed.

// swarmReport is a swarm's answer to "wait": how many peers hold exactly
// the events wanted, how many events came twice or out of order, the
// reconnections so far, and the latencies of the deliveries since the
// last report, as a histogram, with the time of the last delivery.
type swarmReport struct {
	Peers         int       `json:"peers"`
	Complete      int       `json:"complete"`
	Missing       int       `json:"missing"` // events not (yet) held, over all peers
	Dups          int       `json:"dups"`
	Again         int       `json:"again"` // an event number again, at a new position
	Reconnects    int       `json:"reconnects"`
	LastReconnect int64     `json:"lastReconnect,omitempty"` // Unix ns
	LastDelivery  int64     `json:"lastDelivery,omitempty"`  // Unix ns
	Deliveries    int       `json:"deliveries"`
	Hist          histogram `json:"hist"`
	// PeersPerHub counts the peers connected to each hub of the list
	// (or reconnecting, for the one they were last on).
	PeersPerHub []int `json:"peersPerHub"`
	// DialErrors counts the failed dials of reconnecting peers by kind
	// (refused, full, timeout, other); OtherError is the first "other".
	DialErrors map[string]int64 `json:"dialErrors,omitempty"`
	OtherError string           `json:"otherError,omitempty"`
	Err        string           `json:"error,omitempty"`
}

type swarm struct {
	urls    []string
	topic   string
	dialer  websocket.DialOptions
	closing atomic.Bool
	peers   []*swarmPeer
	subbed  atomic.Int64
	retries atomic.Int64 // dials tried again while connecting
	// subscribing says the peers were told to subscribe.
	subscribing atomic.Bool
	// dialErrs counts the failed dials of reconnecting peers by kind;
	// otherErr is the first of kind dialOther.
	dialErrs [dialKinds]atomic.Int64
	otherErr atomic.Pointer[error]
}

// swarmPeer is one peer. The reader goroutine alone touches epoch and
// seq; mu guards what reports read, and conn, which the reader replaces
// when it reconnects and closeAll closes.
type swarmPeer struct {
	index int // in the swarm: which hubs it tries (hubFor)
	epoch string
	seq   int64
	n     int64 // the publisher's number of the last event

	mu            sync.Mutex
	conn          *conn
	hub           int // the index of conn's hub
	events, dups  int
	again         int
	reconnects    int
	lastReconnect time.Time
	lastDelivery  time.Time
	lats          []time.Duration // since the last report
}

func swarmCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("swarm", flag.ContinueOnError)
	n := fs.Int("n", 100, "peers")
	urls := fs.String("urls", "", "comma-separated hub `URLs`: peer i connects to the (i mod len)th, its own")
	src := fs.String("src", "", "loopback source `address` of its connections (default: any)")
	topic := fs.String("topic", "scale", "the `topic` subscribe subscribes to")
	dialers := fs.Int("dialers", 64, "connections opened at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s := &swarm{urls: strings.Split(*urls, ","), topic: *topic}
	if *src != "" {
		s.dialer.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: sourceDialer(*src).DialContext}}
	}
	start := time.Now()
	if err := s.connect(ctx, *n, *dialers); err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(map[string]any{"connected": *n, "seconds": time.Since(start).Seconds(), "retries": s.retries.Load()}); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, p := range s.peers {
		wg.Go(func() { s.serve(ctx, p) })
	}
	defer wg.Wait()
	defer s.closeAll()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 1 && f[0] == "subscribe":
			err := s.subscribeAll(ctx)
			if err := out.Encode(map[string]any{"subscribed": s.subbed.Load(), "error": errText(err)}); err != nil {
				return err
			}
		case len(f) == 3 && f[0] == "wait":
			want, _ := strconv.Atoi(f[1])
			secs, _ := strconv.ParseFloat(f[2], 64)
			if err := out.Encode(s.wait(ctx, want, time.Duration(secs*float64(time.Second)))); err != nil {
				return err
			}
		case len(f) == 1 && f[0] == "close":
			s.closeAll()
			wg.Wait()
			return out.Encode(map[string]int{"closed": len(s.peers)})
		default:
			return fmt.Errorf("swarm: unknown order %q", in.Text())
		}
	}
	return in.Err()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// connect opens n connections, dialers at a time, each with one rpc.ping
// answered, so that the hub has set it up fully.
func (s *swarm) connect(ctx context.Context, n, dialers int) error {
	s.peers = make([]*swarmPeer, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, dialers)
	ping := []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)
	for d := range dialers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || errs[d] != nil || ctx.Err() != nil {
					return
				}
				// A hub that stalls for a while (a collection, a loaded
				// machine) delays the peers; only one that keeps failing
				// ends the run.
				var c *conn
				var err error
				for try := range 5 {
					if try > 0 {
						s.retries.Add(1)
						time.Sleep(time.Second)
					}
					if c, _, err = s.dial(ctx, hubFor(i, len(s.urls), 0)); err == nil {
						if _, err = c.roundTrip(ping); err != nil {
							c.ws.CloseNow()
						}
					}
					if err == nil || ctx.Err() != nil {
						break
					}
				}
				if err != nil {
					errs[d] = fmt.Errorf("peer %d: %w", i, err)
					return
				}
				s.peers[i] = &swarmPeer{index: i, conn: c, hub: hubFor(i, len(s.urls), 0)}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.closeAll()
		return err
	}
	return ctx.Err()
}

func (s *swarm) subscribeFrame(p *swarmPeer) []byte {
	if p.epoch == "" {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"topic":%q},"id":1}`, s.topic)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"topic":%q,"since":{"epoch":%q,"seq":%d}},"id":1}`, s.topic, p.epoch, p.seq)
}

// subscribeAll sends every peer's subscription; the readers take the
// replies. It returns once all are answered, or after a minute.
func (s *swarm) subscribeAll(ctx context.Context) error {
	s.subscribing.Store(true) // from now on, a peer that reconnects subscribes
	for _, p := range s.peers {
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		// A peer whose connection has just ended subscribes when it
		// reconnects.
		_ = c.ws.Write(ctx, websocket.MessageText, s.subscribeFrame(p))
	}
	deadline := time.Now().Add(time.Minute)
	for s.subbed.Load() < int64(len(s.peers)) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d subscribed after a minute", s.subbed.Load(), len(s.peers))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// serve reads p's frames until the swarm closes, reconnecting p when its
// connection ends.
func (s *swarm) serve(ctx context.Context, p *swarmPeer) {
	for {
		p.mu.Lock()
		c := p.conn
		p.mu.Unlock()
		s.read(p, c) // until the connection ends: closed, or a hub went away
		if s.closing.Load() || ctx.Err() != nil {
			return
		}
		c.ws.CloseNow()
		if !s.reconnect(ctx, p) {
			return
		}
	}
}

// read handles p's frames: events are counted, and the first
// subscription's reply gives the position to resume from.
func (s *swarm) read(p *swarmPeer, c *conn) {
	for {
		msg, err := c.read()
		if err != nil {
			return
		}
		now := time.Now()
		if !bytes.Contains(msg, []byte(`"rpc.event"`)) {
			if p.epoch == "" && bytes.Contains(msg, []byte(`"epoch"`)) { // the subscription
				p.epoch, _ = stringAfter(msg, `"epoch":"`)
				p.seq, _ = intAfter(msg, `"seq":`)
				s.subbed.Add(1)
			}
			continue
		}
		seq, ok := intAfter(msg, `"seq":`)
		t, _ := sentAt(msg)
		n, _ := intAfter(msg, `"n":`)
		p.mu.Lock()
		switch {
		case !ok || seq <= p.seq:
			p.dups++
		case n != 0 && n <= p.n:
			p.seq = seq
			p.again++
		default:
			p.seq, p.n = seq, n
			p.events++
			p.lats = append(p.lats, now.Sub(time.Unix(0, t)))
			p.lastDelivery = now
		}
		p.mu.Unlock()
	}
}

// wait waits until every peer holds want events, or for d, and reports.
func (s *swarm) wait(ctx context.Context, want int, d time.Duration) swarmReport {
	deadline := time.Now().Add(d)
	for {
		r := s.report(want)
		if r.Complete == r.Peers || time.Now().After(deadline) || ctx.Err() != nil {
			s.resetLatencies()
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *swarm) report(want int) swarmReport {
	r := swarmReport{Peers: len(s.peers), Hist: histogram{}, PeersPerHub: make([]int, len(s.urls))}
	for k := range dialKinds {
		if n := s.dialErrs[k].Load(); n > 0 {
			if r.DialErrors == nil {
				r.DialErrors = make(map[string]int64)
			}
			r.DialErrors[dialKindNames[k]] = n
		}
	}
	if err := s.otherErr.Load(); err != nil {
		r.OtherError = (*err).Error()
	}
	for _, p := range s.peers {
		p.mu.Lock()
		r.PeersPerHub[p.hub]++
		if p.events == want {
			r.Complete++
		}
		r.Missing += max(0, want-p.events)
		r.Dups += p.dups
		r.Again += p.again
		r.Reconnects += p.reconnects
		r.LastReconnect = max(r.LastReconnect, unixNano(p.lastReconnect))
		r.LastDelivery = max(r.LastDelivery, unixNano(p.lastDelivery))
		r.Deliveries += len(p.lats)
		for _, l := range p.lats {
			r.Hist.add(l)
		}
		p.mu.Unlock()
	}
	return r
}

func (s *swarm) resetLatencies() {
	for _, p := range s.peers {
		p.mu.Lock()
		p.lats = p.lats[:0]
		p.lastDelivery = time.Time{}
		p.mu.Unlock()
	}
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// closeAll closes every peer's connection; the readers end.
func (s *swarm) closeAll() {
	s.closing.Store(true)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, p := range s.peers {
		if p == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			p.mu.Lock()
			c := p.conn
			p.mu.Unlock()
			c.close()
		})
	}
	wg.Wait()
}

// intAfter reads the digits after the first key in msg.
func intAfter(msg []byte, key string) (int64, bool) {
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return 0, false
	}
	j := i + len(key)
	for j < len(msg) && msg[j] == ' ' {
		j++
	}
	var n int64
	k := j
	for ; k < len(msg) && msg[k] >= '0' && msg[k] <= '9'; k++ {
		n = n*10 + int64(msg[k]-'0')
	}
	return n, k > j
}

// stringAfter reads the string after the first key (ending in a quote)
// in msg, up to the next quote.
func stringAfter(msg []byte, key string) (string, bool) {
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := msg[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return string(rest[:j]), true
}

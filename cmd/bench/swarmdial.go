package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// How a swarm's peers dial their hubs, and come back when a connection
// ends.

// sourceDialer dials from the source address src with
// IP_BIND_ADDRESS_NO_PORT, so that the port is chosen at connect time for
// the whole 4-tuple, not at bind time for the address alone.
func sourceDialer(src string) *net.Dialer {
	return &net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				const ipBindAddressNoPort = 24 // linux/in.h
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
			})
			return errors.Join(err, serr)
		},
	}
}

// hubFor returns the index of the hub, of hubs, that peer tries on its
// attempt-th dial (from 0): its own hub (peer mod hubs) first, then each
// of the others once, then around again. The peers of one hub start on
// the others at different ones, in turn, so that when their hub goes
// away they spread over the others rather than all trying the next.
func hubFor(peer, hubs, attempt int) int {
	own := peer % hubs
	k := attempt % hubs
	if k == 0 {
		return own
	}
	first := (peer / hubs) % (hubs - 1) // of the others, the peer's first
	return (own + 1 + (first+k-1)%(hubs-1)) % hubs
}

// dial opens a connection to the hub i of the list. A hub that refuses
// the handshake with 503 (full, or shutting down) gives its Retry-After.
func (s *swarm) dial(ctx context.Context, i int) (*conn, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, s.urls[i], &s.dialer)
	if err != nil {
		var ra time.Duration
		if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
			ra = retryAfter(resp.Header.Get("Retry-After"))
		}
		return nil, ra, err
	}
	ws.SetReadLimit(-1)
	return &conn{ws: ws}, 0, nil
}

// retryAfter reads a Retry-After header's delay in seconds (the form the
// hub sends); 0 if there is none.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// The kinds of failed dials a swarm counts while reconnecting.
const (
	dialRefused = iota // nothing listens: the hub is down
	dialFull           // 503: the hub is at its connection limit
	dialTimeout
	dialOther
	dialKinds
)

var dialKindNames = [dialKinds]string{"refused", "full", "timeout", "other"}

func dialKind(err error, ra time.Duration) int {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return dialRefused
	case ra > 0 || strings.Contains(err.Error(), "503"):
		return dialFull
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return dialTimeout
	}
	return dialOther
}

// The reconnection pauses of the client package's defaults
// (client.Options.MinBackoff and MaxBackoff): a peer of the swarm comes
// back as a Switchboard client would.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// reconnect connects p again as the client package does: it tries the
// hubs in hubFor's order (its own first: a peer that lost its connection
// under load takes back its place rather than another hub's), pausing
// before each attempt for a backoff that starts at minBackoff and doubles
// up to maxBackoff, drawn between half and all of it (so that the peers
// of a hub that went away do not all come back at once), and for at
// least the Retry-After of a hub that refused it. It resumes the
// subscription on the new connection.
func (s *swarm) reconnect(ctx context.Context, p *swarmPeer) bool {
	delay, wait := minBackoff, time.Duration(0)
	for attempt := 0; ; attempt++ {
		wait = max(wait, delay/2+rand.N(delay/2+1))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		}
		if s.closing.Load() {
			return false
		}
		hub := hubFor(p.index, len(s.urls), attempt)
		c, ra, err := s.dial(ctx, hub)
		if err == nil && s.subscribing.Load() {
			if err = c.ws.Write(ctx, websocket.MessageText, s.subscribeFrame(p)); err != nil {
				c.ws.CloseNow()
			}
		}
		if err == nil {
			p.mu.Lock()
			defer p.mu.Unlock()
			if s.closing.Load() { // closeAll has closed the old one, or will
				c.ws.CloseNow()
				return false
			}
			p.conn = c
			p.hub = hub
			p.reconnects++
			p.lastReconnect = time.Now()
			return true
		}
		k := dialKind(err, ra)
		s.dialErrs[k].Add(1)
		if k == dialOther {
			s.otherErr.CompareAndSwap(nil, &err)
		}
		delay = min(2*delay, maxBackoff)
		wait = ra + rand.N(ra/2+1) // 0 without a Retry-After
	}
}

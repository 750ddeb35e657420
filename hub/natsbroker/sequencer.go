package natsbroker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
)

// This file publishes with JetStream: an event is appended to the stream,
// and a publish succeeds once the stream has stored it (stream.go reads
// it back and delivers it on every node).

// sequencer is a Broker with JetStream, as a hub.Sequencer.
type sequencer struct{ *Broker }

// Epoch implements hub.Sequencer: the stream's name and creation time.
func (s sequencer) Epoch() string { return *s.st.epoch.Load() }

// PublishWait bounds how long a publish waits for the stream to
// acknowledge the event (JetStream's own default, said here so that the
// docs can promise it).
const PublishWait = 5 * time.Second

// Errors of Sequence when the stream did not acknowledge the event: the
// link was down, so the event was not sent; or no acknowledgement came
// within PublishWait, so it was sent and may yet be stored, as with any
// request whose answer is lost (a link that stalls without closing).
var (
	errNotSent    = errors.New("NATS link down: the event was not sent")
	errUnanswered = fmt.Errorf("no acknowledgement from the stream within %v: the event was sent and may yet be stored", PublishWait)
)

// Sequence implements hub.Sequencer: it appends the event to the stream,
// and returns its position once the stream acknowledged it (stored it).
// NATS keeps nothing to send later (Options: no reconnect buffer): while
// the link is down, Sequence fails at once. A position this node has
// read already cannot be the new event's in the stream it reads: the
// stream was replaced. Then, as when the epoch changed while the event
// was appended, the publish fails rather than give a position that would
// mean another event, and the watcher checks the stream at once.
func (s sequencer) Sequence(ctx context.Context, topic string, data []byte) (uint64, string, error) {
	epoch := s.st.epoch.Load()
	read := s.st.read.Load()
	if !s.nc.IsConnected() {
		s.stats.unsent.Add(1)
		return 0, "", errNotSent
	}
	actx, cancel := context.WithTimeout(ctx, PublishWait)
	ack, err := s.js.Publish(actx, s.prefix+".js."+encodeTopic(topic), data)
	cancel()
	if err != nil {
		s.stats.unsent.Add(1)
		s.recheck()
		switch {
		case errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, nats.ErrConnectionClosed):
			err = errNotSent // the link went down since: nothing was written
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			err = errUnanswered
		}
		return 0, "", err
	}
	s.stats.sent.Add(1)
	if ack.Sequence <= read {
		s.st.stale.Store(true)
	}
	if ack.Sequence <= read || s.st.epoch.Load() != epoch {
		s.recheck()
		return 0, "", fmt.Errorf("stream %s replaced: the event is in a stream this node has yet to read", s.stream)
	}
	return ack.Sequence, *epoch, nil
}

// Forward implements hub.Broker; a hub never calls it on a Sequencer.
func (s sequencer) Forward(string, []byte) {}

var _ hub.Sequencer = sequencer{}

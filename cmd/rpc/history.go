package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/switchboard-rpc/switchboard/client"
)

// positionFlag is a stream position given as EPOCH:SEQ.
type positionFlag struct{ client.Position }

func (p positionFlag) String() string {
	if p.IsZero() {
		return ""
	}
	return p.Position.String()
}

func (p *positionFlag) Set(s string) error {
	epoch, seq, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || epoch == "" || err != nil {
		return usagef("want EPOCH:SEQ, as printed by subscribe and history, not %q", s)
	}
	p.Position = client.Position{Epoch: epoch, Seq: n}
	return nil
}

var historyCmd = &command{
	name:    "history",
	args:    "URL TOPIC",
	summary: "print the recent events of a topic or pattern the hub holds",
	help: `Prints {"epoch": ..., "seq": ..., "events": [...]}: the stream's epoch and
latest position, and the events the hub holds on topics matching TOPIC,
oldest first, each with its position ("seq"). With more held than -limit,
the newest. -since EPOCH:SEQ leaves out the events up to that position.

Examples:
  rpc history http://127.0.0.1:8080/rpc news.>
  rpc history -limit 1 ws://127.0.0.1:8080/rpc chat.room1 | jq '.events[0].data'
`,
	setup: func(o *cli) {
		o.fs.IntVar(&o.limit, "limit", 0, "at most `n` events (0: the hub's default, 100)")
		o.fs.Var(&o.since, "since", "only events after `EPOCH:SEQ`")
	},
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) != 2 {
			return usagef("want URL and TOPIC")
		}
		params := map[string]any{"topic": args[1]}
		if o.limit > 0 {
			params["limit"] = o.limit
		}
		if !o.since.IsZero() {
			params["since"] = o.since.Position
		}
		return o.callAndPrint(ctx, args[0], "rpc.history", params)
	},
}

var presenceCmd = &command{
	name:    "presence",
	args:    "URL TOPIC",
	summary: "print the peers an event on a topic would reach",
	help: `Prints {"peers": [{"id": ..., "user": ...}, ...]}: the peers subscribed to
a pattern matching TOPIC (which has no wildcards), with the name
authentication gave them, if any. The hub's policy decides who may ask.
"rpc subscribe -presence" prints them coming and going.

Examples:
  rpc presence http://127.0.0.1:8080/rpc chat.room1
`,
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) != 2 {
			return usagef("want URL and TOPIC")
		}
		return o.callAndPrint(ctx, args[0], "rpc.presence", map[string]string{"topic": args[1]})
	},
}

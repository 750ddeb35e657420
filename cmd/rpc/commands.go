package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"github.com/switchboard-rpc/switchboard/peer"
)

var callCmd = &command{
	name:    "call",
	args:    "URL METHOD [PARAMS...]",
	summary: "call a method and print its result",
	help: `PARAMS is either one JSON array or object, sent as is, or values sent by
position: each is read as JSON (1, 2.5, true, null, "text") and, when it
is not valid JSON, as a string. "-" reads a JSON array or object from stdin.

Examples:
  rpc call http://127.0.0.1:8080/rpc add 1 2
  rpc call http://127.0.0.1:8080/rpc subtract '{"minuend": 42, "subtrahend": 23}'
  rpc call ws://127.0.0.1:8080/rpc echo hello 42 true
  rpc call -progress ws://127.0.0.1:8080/rpc sleep '{"ms": 300}'
  jq -c .params request.json | rpc call http://127.0.0.1:8080/rpc echo -

Over a WebSocket, -serve METHOD=COMMAND answers the calls the server makes
back on the connection while the call runs, as the serve command does:
  rpc call -serve 'upper=tr a-z A-Z' ws://127.0.0.1:8080/rpc callback '{"method": "upper", "params": ["hi"]}'

-peer, -user and -topic call METHOD on peers connected to the hub rather
than on the hub (rpc.call): the one with that id ("rpc whoami" prints a
peer's own), or every peer of a user or of a topic. -peer prints the
peer's result; -user and -topic print one line per peer that answered,
{"peer": {...}, "result": ...} or {"peer": {...}, "error": {...}}, and
exit with status 1 when one answered an error. The hub answers in one
message of its size limit: the answers that did not fit are left out,
and stderr says how many. -timeout bounds the call at the hub too: a
peer that did not answer in time gets -32003.
  rpc call -peer 0b7c...e1 http://127.0.0.1:8080/rpc confirm '{"amount": 42}'
  rpc call -topic room.7 ws://127.0.0.1:8080/rpc draft
`,
	setup: func(o *cli) {
		o.fs.BoolVar(&o.progress, "progress", false, "print the call's rpc.progress notifications on stderr (ws:// only)")
		o.fs.Var(&o.serve, "serve", "answer the server's calls of METHOD with a shell `METHOD=COMMAND` (ws:// only, repeatable)")
		o.fs.StringVar(&o.shell, "shell", "sh", "the `shell` that runs -serve commands (with -c)")
		o.fs.StringVar(&o.to.Peer, "peer", "", "call METHOD on the peer with this `id` (rpc.call)")
		o.fs.StringVar(&o.to.User, "user", "", "call METHOD on every peer of this `user` (rpc.call)")
		o.fs.StringVar(&o.to.Topic, "topic", "", "call METHOD on every peer of this `topic` (rpc.call)")
	},
	run: func(ctx context.Context, o *cli, args []string) error {
		p, err := o.methodParams(args)
		if err != nil {
			return err
		}
		opts := o.options()
		if len(o.serve) > 0 {
			if !strings.HasPrefix(args[0], "ws://") && !strings.HasPrefix(args[0], "wss://") {
				return usagef("-serve needs a ws:// or wss:// URL")
			}
			mux, _, err := o.shellMux(o.serve)
			if err != nil {
				return err
			}
			opts.Router = mux
		}
		ctx, cancel := o.withTimeout(ctx)
		defer cancel()
		c, err := o.openWith(ctx, args[0], opts)
		if err != nil {
			return err
		}
		defer o.closeAndWait(c)
		if o.progress {
			ctx = peer.WithProgress(ctx, func(data json.RawMessage) {
				fmt.Fprintf(o.stderr, "progress: %s\n", data)
			})
		}
		if o.to != (client.Address{}) {
			return o.callPeers(ctx, c, args[1], p)
		}
		var res json.RawMessage
		if err := c.Call(ctx, args[1], p, &res); err != nil {
			return err
		}
		return o.printJSON(res)
	},
}

var notifyCmd = &command{
	name:    "notify",
	args:    "URL METHOD [PARAMS...]",
	summary: "send a notification (no result)",
	help: `PARAMS are given as for call. Nothing is printed: a notification gets no
answer, not even an error.

Examples:
  rpc notify http://127.0.0.1:8080/rpc notify_hello 7
  rpc notify ws://127.0.0.1:8080/rpc update 1 2 3 4 5
`,
	run: func(ctx context.Context, o *cli, args []string) error {
		p, err := o.methodParams(args)
		if err != nil {
			return err
		}
		return o.once(ctx, args[0], func(ctx context.Context, c caller) error {
			return c.Notify(ctx, args[1], p)
		})
	},
}

var batchCmd = &command{
	name:    "batch",
	args:    "URL < requests.json",
	summary: "send a batch read from stdin, print the responses",
	help: `Stdin holds a JSON array of requests: {"method": ..., "params": ...,
"id": ...}. An element with an "id" (null included) is a call, one without
is a notification; "jsonrpc" may be left out. The responses are printed as
a JSON array in the order of the calls, with your ids. If any call failed,
the exit status is 1.

Examples:
  echo '[{"method":"add","params":[1,2],"id":1},{"method":"notify_hello","params":[7]}]' |
    rpc batch http://127.0.0.1:8080/rpc
  rpc batch ws://127.0.0.1:8080/rpc < requests.json
`,
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) != 1 {
			return usagef("want URL")
		}
		in, err := io.ReadAll(o.stdin)
		if err != nil {
			return err
		}
		var reqs []struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			ID     json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(in, &reqs); err != nil {
			return usagef("stdin: want a JSON array of requests: %v", err)
		}
		if len(reqs) == 0 {
			return usagef("stdin: the batch is empty")
		}
		elems := make([]peer.BatchElem, len(reqs))
		results := make([]json.RawMessage, len(reqs))
		for i, r := range reqs {
			if r.Method == "" {
				return usagef("stdin: element %d has no method", i)
			}
			elems[i] = peer.BatchElem{Method: r.Method, Notify: r.ID == nil, Result: &results[i]}
			if r.Params != nil {
				elems[i].Params = r.Params
			}
		}
		err = o.once(ctx, args[0], func(ctx context.Context, c caller) error {
			return c.Batch(ctx, elems)
		})
		if err != nil {
			return err
		}
		type response struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result,omitempty"`
			Error   *peer.Error     `json:"error,omitempty"`
		}
		out := []response{}
		failed := 0
		for i, e := range elems {
			if e.Notify {
				continue
			}
			r := response{JSONRPC: "2.0", ID: reqs[i].ID}
			switch err := e.Err.(type) {
			case nil:
				r.Result = results[i]
			case *peer.Error:
				r.Error = err
				failed++
			default:
				return fmt.Errorf("element %d (%s): %w", i, e.Method, err)
			}
			out = append(out, r)
		}
		if err := o.printJSON(out); err != nil {
			return err
		}
		if failed > 0 {
			fmt.Fprintf(o.stderr, "rpc: %d of %d calls failed\n", failed, len(out))
			return errRPCFailed
		}
		return nil
	},
}

var subscribeCmd = &command{
	name:    "subscribe",
	args:    "URL TOPIC...",
	summary: "print the events of topics as JSON lines until interrupted",
	help: `Each event is printed on a line of its own: {"topic": ..., "data": ...,
"seq": ..., "epoch": ...}, seq being its position in the hub's stream.
TOPIC may use wildcards: "*" for one word, a final ">" for one or more.
The connection is repaired if it drops, and the subscriptions resume where
they were: the hub replays what was published meanwhile. Notices go to
stderr, among them where the subscriptions start (EPOCH:SEQ) and word of
events the hub no longer held. Needs a ws:// or wss:// URL.

-since EPOCH:SEQ starts after that position (the epoch and seq of the last
event seen, say) with what the hub still holds. -presence also prints the
peers joining and leaving the topics: {"presence": "join" or "leave",
"topic": ..., "peer": {"id": ..., "user": ...}}.

Examples:
  rpc subscribe ws://127.0.0.1:8080/rpc news.> chat.*
  rpc subscribe -n 1 ws://127.0.0.1:8080/rpc alerts | jq .data
  rpc subscribe -since 5f1c0a9e3b7d2c41:42 ws://127.0.0.1:8080/rpc news.>
`,
	setup: func(o *cli) {
		o.fs.IntVar(&o.count, "n", 0, "exit after `count` events (0: run until interrupted)")
		o.fs.Var(&o.since, "since", "start after `EPOCH:SEQ`, replaying what the hub holds")
		o.fs.BoolVar(&o.presence, "presence", false, "print the peers joining and leaving the topics")
	},
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) < 2 {
			return usagef("want URL and at least one TOPIC")
		}
		c, err := o.dialLasting(ctx, args[0], nil)
		if err != nil {
			return err
		}
		defer c.Close()

		var mu sync.Mutex
		n := 0
		enough := make(chan struct{})
		print := func(topic string) func(client.Event) {
			return func(ev client.Event) {
				mu.Lock()
				defer mu.Unlock()
				if ev.Missed {
					fmt.Fprintf(o.stderr, "rpc: events of %s were missed: the hub no longer held them\n", topic)
					return
				}
				if o.count > 0 && n >= o.count {
					return
				}
				line, _ := jsonx.Marshal(ev)
				fmt.Fprintf(o.stdout, "%s\n", line)
				n++
				if n == o.count {
					close(enough)
				}
			}
		}
		sopts := &client.SubscribeOptions{Since: o.since.Position}
		if o.presence {
			sopts.OnPresence = func(pc client.PresenceChange) {
				line, _ := jsonx.Marshal(struct {
					Presence string          `json:"presence"`
					Topic    string          `json:"topic"`
					Peer     client.PeerInfo `json:"peer"`
				}{map[bool]string{true: "join", false: "leave"}[pc.Join], pc.Topic, pc.Peer})
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(o.stdout, "%s\n", line)
			}
		}
		sctx, cancel := o.withTimeout(ctx)
		defer cancel()
		var from client.Position
		for _, topic := range args[1:] {
			s, err := c.SubscribeWith(sctx, topic, sopts, print(topic))
			if err != nil {
				return fmt.Errorf("subscribe %s: %w", topic, err)
			}
			if p := s.Position(); from.IsZero() || p.Seq < from.Seq {
				from = p
			}
		}
		switch {
		case !o.since.IsZero():
			fmt.Fprintf(o.stderr, "rpc: subscribed to %s, after %v\n", strings.Join(args[1:], ", "), o.since.Position)
		case from.Epoch != "":
			fmt.Fprintf(o.stderr, "rpc: subscribed to %s at %v\n", strings.Join(args[1:], ", "), from)
		default: // a server that gives no positions
			fmt.Fprintf(o.stderr, "rpc: subscribed to %s\n", strings.Join(args[1:], ", "))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-enough:
			return nil
		case <-c.Done():
			return c.Err()
		}
	},
}

// reportState returns an OnState callback that tells on stderr when the
// connection is lost and when it is back.
func (o *cli) reportState() func(client.State, error) {
	var prev client.State
	up := false // connected once already
	return func(s client.State, err error) {
		switch {
		case s == client.StateDisconnected && prev == client.StateConnected:
			var ce *peer.CloseError
			if errors.As(err, &ce) {
				err = ce // "closed with code 1001: going away" says it all
			}
			fmt.Fprintf(o.stderr, "rpc: connection lost: %s; reconnecting\n", redact.Text(err.Error()))
		case s == client.StateDisconnected:
			fmt.Fprintf(o.stderr, "rpc: reconnection failed: %s\n", redact.Text(err.Error()))
		case s == client.StateConnected && up:
			fmt.Fprintf(o.stderr, "rpc: reconnected\n")
		case s == client.StateConnected:
			up = true
		}
		prev = s
	}
}

// methodParams reads the PARAMS of URL METHOD [PARAMS...].
func (o *cli) methodParams(args []string) (any, error) {
	if len(args) < 2 {
		return nil, usagef("want URL and METHOD")
	}
	return o.params(args[2:])
}

// dialLasting dials for the commands that run until interrupted: the
// client serves router (nil: none), reconnects for as long as it takes
// and says so on stderr.
func (o *cli) dialLasting(ctx context.Context, arg string, router peer.Router) (*client.Client, error) {
	opts := o.options()
	opts.Router = router
	opts.MaxAttempts = 0
	opts.OnState = o.reportState()
	return o.dial(ctx, arg, opts)
}

// untilEnd waits for ctx to be done (nil) or c to end for good (its
// error).
func untilEnd(ctx context.Context, c *client.Client) error {
	select {
	case <-ctx.Done():
		return nil
	case <-c.Done():
		return c.Err()
	}
}

// dial opens a WebSocket client for the long-running commands.
func (o *cli) dial(ctx context.Context, arg string, opts *client.Options) (*client.Client, error) {
	url, others, err := o.urls(arg)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(url, "ws://") && !strings.HasPrefix(url, "wss://") {
		return nil, usagef("%s needs a ws:// or wss:// URL, not %q", o.cmd.name, url)
	}
	opts.URLs = others
	dctx, cancel := o.withTimeout(ctx)
	defer cancel()
	return client.Dial(dctx, url, opts)
}

var publishCmd = &command{
	name:    "publish",
	args:    "URL TOPIC DATA",
	summary: "publish data on a topic, print how many peers got it",
	help: `DATA is read as JSON, or taken as a string when it is not valid JSON;
"-" reads it from stdin. Prints {"delivered": N, "seq": S, "epoch": E}: the
peers reached, and the event's position in the hub's stream.

Examples:
  rpc publish http://127.0.0.1:8080/rpc news.sport '{"score": [2, 1]}'
  rpc publish ws://127.0.0.1:8080/rpc chat.room1 hello
  date | rpc publish http://127.0.0.1:8080/rpc clock -
`,
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) != 3 {
			return usagef("want URL, TOPIC and DATA")
		}
		data := parseValue(args[2])
		if args[2] == "-" {
			in, err := io.ReadAll(o.stdin)
			if err != nil {
				return err
			}
			data = parseValue(strings.TrimRight(string(in), "\n"))
		}
		return o.callAndPrint(ctx, args[0], "rpc.publish", map[string]any{"topic": args[1], "data": data})
	},
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
)

// This file holds what calls peers through the hub: rpc call -peer,
// -user and -topic (rpc.call), and rpc whoami.

var whoamiCmd = &command{
	name:    "whoami",
	args:    "URL",
	summary: "print the peer id and user the hub gives this connection",
	help: `Prints {"id": ..., "user": ..., "node": ...}: the id other peers address
this connection by (rpc call -peer), and the user and node, when there
are. Over HTTP POST each request is a caller of its own, with a new id.

Examples:
  rpc whoami ws://127.0.0.1:8080/rpc
`,
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) != 1 {
			return usagef("want URL")
		}
		return o.callAndPrint(ctx, args[0], "rpc.whoami", nil)
	},
}

// callPeers calls method on o.to through the hub and prints the answer:
// one peer's result, or a line per peer, and on stderr how many peers'
// answers the hub left out, if it did.
func (o *cli) callPeers(ctx context.Context, c caller, method string, params any) error {
	n := 0
	for _, s := range []string{o.to.Peer, o.to.User, o.to.Topic} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return usagef("-peer, -user and -topic: one at a time")
	}
	p := map[string]any{"method": method}
	if params != nil {
		p["params"] = params
	}
	if o.timeout > 0 {
		// The hub answers for the peers that did not in time, a little
		// before the command gives up.
		p["timeout"] = max(1, (o.timeout - o.timeout/20).Milliseconds())
	}
	switch {
	case o.to.Peer != "":
		p["peer"] = o.to.Peer
	case o.to.User != "":
		p["user"] = o.to.User
	default:
		p["topic"] = o.to.Topic
	}
	var res json.RawMessage
	if err := c.Call(ctx, "rpc.call", p, &res); err != nil {
		return err
	}
	if o.to.Peer != "" {
		return o.printJSON(res)
	}
	var all struct {
		Results   []json.RawMessage `json:"results"`
		Truncated bool              `json:"truncated"`
		Asked     int               `json:"asked"`
	}
	if err := json.Unmarshal(res, &all); err != nil {
		return fmt.Errorf("rpc.call answered %s: %w", res, err)
	}
	failed := false
	for _, r := range all.Results {
		var e struct {
			Error *json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(r, &e)
		failed = failed || e.Error != nil
		fmt.Fprintf(o.stdout, "%s\n", r)
	}
	if all.Truncated {
		// The lines printed are all there is: say so where a script
		// reading them looks for trouble.
		fmt.Fprintf(o.stderr, "rpc: %d of %d peers' answers left out: they did not fit in one message of the hub's\n",
			all.Asked-len(all.Results), all.Asked)
	}
	if failed {
		return errRPCFailed
	}
	return nil
}

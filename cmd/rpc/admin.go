package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// adminCmd calls the hub's admin API (docs/operations.md): admin.peers,
// admin.disconnect and the others, each a subcommand with its own flags.
var adminCmd = &command{
	name:    "admin",
	args:    "SUBCOMMAND [flags] URL [ARGS...]",
	summary: "call the hub's admin API: list peers, topics, providers, refusals; kick, unsubscribe, broadcast",
	help: `URL is the admin listener's endpoint (the hub's -metrics-addr, at /rpc,
with a token of its -token-file), or the hub's own for a token that holds
the admin grant. Flags may come before or after the subcommand.

Subcommands:
  peers [-user U] [-topic PATTERN] [-node N] [-limit N] [-all] URL
        the peers of the cluster, a page at a time ({"peers": [...], "next": CURSOR});
        -cursor CURSOR gives the next page, -all prints every page's peers, one per line
  topics [-limit N] [-all] URL [PATTERN]
        the topics held in the history and the patterns subscribed to that PATTERN covers
  providers URL [METHOD]
        the peers that provide METHOD, or every provider
  info URL
        the hub's version and uptime, and the nodes of the cluster with their load
  kick (-user U | -peer ID) [-code 4003] [-reason TEXT] [-revoke] URL
        close a peer, or every peer of a user, on every node; -revoke refuses the
        user's tokens issued before now until the hub restarts
  unsubscribe (-user U | -peer ID) URL PATTERN
        end the subscriptions that PATTERN covers; the peers are told (rpc.revoked)
  publish URL TOPIC DATA
        publish DATA (JSON, or else a string) on TOPIC, whatever the rules say
  broadcast URL DATA TOPIC...
        publish DATA on each TOPIC
  refusals [-limit N] [-all] URL
        the last refusals of the audit trail on every node, newest first (each node
        keeps its last 100): who was refused what, by which check; -all prints one per line

Examples:
  rpc admin peers -user alice -token $OPS http://127.0.0.1:9090/rpc
  rpc admin kick -user alice -code 4003 -reason "account closed" -revoke http://127.0.0.1:9090/rpc
  rpc admin broadcast http://127.0.0.1:9090/rpc '{"text": "maintenance at 10:00"}' news alerts
  rpc admin refusals -limit 20 -all http://127.0.0.1:9090/rpc
`,
	run: runAdmin,
}

// adminFlags are the flags of the admin subcommands.
type adminFlags struct {
	user, peer, topic, node, cursor, reason string
	limit, code                             int
	all, revoke                             bool
}

func runAdmin(ctx context.Context, o *cli, args []string) error {
	if len(args) == 0 {
		return usagef("want a SUBCOMMAND: peers, topics, providers, info, refusals, kick, unsubscribe, publish or broadcast")
	}
	sub := args[0]
	var f adminFlags
	fs := flag.NewFlagSet("rpc admin "+sub, flag.ContinueOnError)
	fs.SetOutput(o.stderr)
	o.fs.VisitAll(func(g *flag.Flag) { fs.Var(g.Value, g.Name, g.Usage) }) // -token and the others, after the subcommand too
	fs.StringVar(&f.user, "user", "", "the `user` whose peers to list, kick or unsubscribe")
	fs.StringVar(&f.peer, "peer", "", "the peer `id` to kick or unsubscribe")
	fs.StringVar(&f.topic, "topic", "", "peers: only those subscribed to a `pattern` overlapping this one")
	fs.StringVar(&f.node, "node", "", "peers: only those of this `node`")
	fs.StringVar(&f.cursor, "cursor", "", "peers, topics: the page after this `cursor` (the next of the page before)")
	fs.IntVar(&f.limit, "limit", 0, "peers, topics, refusals: at most `n` per page (default 100, at most 1000)")
	fs.BoolVar(&f.all, "all", false, "peers, topics, refusals: every page, one entry per line")
	fs.IntVar(&f.code, "code", 0, "kick: the close `code` (default 4003)")
	fs.StringVar(&f.reason, "reason", "", "kick: the close `reason`")
	fs.BoolVar(&f.revoke, "revoke", false, "kick: refuse the user's tokens issued before now, until the hub restarts")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("%v", err)
	}
	if o.token != "" && o.tokenFile != "" {
		return usagef("-token and -token-file: give one")
	}
	if err := o.loadCA(); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usagef("want the admin API's URL")
	}
	url, rest := rest[0], rest[1:]
	who := map[string]any{}
	if f.user != "" {
		who["user"] = f.user
	}
	if f.peer != "" {
		who["peer"] = f.peer
	}
	switch sub {
	case "peers":
		if len(rest) != 0 {
			return usagef("peers takes no argument after the URL")
		}
		p := map[string]any{"user": f.user, "topic": f.topic, "node": f.node, "cursor": f.cursor, "limit": f.limit}
		return o.adminList(ctx, url, "admin.peers", "peers", p, f.all)
	case "topics":
		if len(rest) > 1 {
			return usagef("topics takes at most a PATTERN after the URL")
		}
		p := map[string]any{"cursor": f.cursor, "limit": f.limit}
		if len(rest) == 1 {
			p["pattern"] = rest[0]
		}
		return o.adminList(ctx, url, "admin.topics", "topics", p, f.all)
	case "providers":
		if len(rest) > 1 {
			return usagef("providers takes at most a METHOD after the URL")
		}
		p := map[string]any{}
		if len(rest) == 1 {
			p["method"] = rest[0]
		}
		return o.callAndPrint(ctx, url, "admin.providers", p)
	case "info":
		return o.callAndPrint(ctx, url, "admin.info", map[string]any{})
	case "refusals":
		if len(rest) != 0 {
			return usagef("refusals takes no argument after the URL")
		}
		return o.adminList(ctx, url, "admin.refusals", "refusals", map[string]any{"limit": f.limit}, f.all)
	case "kick":
		if len(who) == 0 || len(rest) != 0 {
			return usagef("kick takes -user or -peer, and nothing after the URL")
		}
		if f.code != 0 {
			who["code"] = f.code
		}
		if f.reason != "" {
			who["reason"] = f.reason
		}
		if f.revoke {
			who["revoke"] = true
		}
		return o.callAndPrint(ctx, url, "admin.disconnect", who)
	case "unsubscribe":
		if len(who) == 0 || len(rest) != 1 {
			return usagef("unsubscribe takes -user or -peer, and a PATTERN after the URL")
		}
		who["topic"] = rest[0]
		return o.callAndPrint(ctx, url, "admin.unsubscribe", who)
	case "publish":
		if len(rest) != 2 {
			return usagef("publish takes TOPIC and DATA after the URL")
		}
		return o.callAndPrint(ctx, url, "admin.publish", map[string]any{"topic": rest[0], "data": jsonOrString(rest[1])})
	case "broadcast":
		if len(rest) < 2 {
			return usagef("broadcast takes DATA and one TOPIC or more after the URL")
		}
		return o.callAndPrint(ctx, url, "admin.broadcast", map[string]any{"data": jsonOrString(rest[0]), "topics": rest[1:]})
	}
	return usagef("unknown subcommand %q: want peers, topics, providers, info, refusals, kick, unsubscribe, publish or broadcast", sub)
}

// jsonOrString reads s as JSON, or else as a string.
func jsonOrString(s string) any {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return s
}

// adminList calls a listing (admin.peers, admin.topics) and prints its
// page, or with all, every page's entries (field key), one per line; then
// it fails if some nodes did not answer a page, their part missing.
func (o *cli) adminList(ctx context.Context, url, method, key string, params map[string]any, all bool) error {
	for k, v := range params {
		if v == "" || v == 0 {
			delete(params, k)
		}
	}
	if !all {
		return o.callAndPrint(ctx, url, method, params)
	}
	silent := map[string]bool{}
	for {
		res, err := o.callOnce(ctx, url, method, params)
		if err != nil {
			return err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res, &page); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var unanswered []string
		_ = json.Unmarshal(page["unanswered"], &unanswered)
		for _, n := range unanswered {
			silent[n] = true
		}
		var entries []json.RawMessage
		if err := json.Unmarshal(page[key], &entries); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		for _, e := range entries {
			if err := o.printJSON(e); err != nil {
				return err
			}
		}
		var next string
		if raw, ok := page["next"]; ok {
			_ = json.Unmarshal(raw, &next)
		}
		if strings.TrimSpace(next) == "" || len(entries) == 0 {
			break
		}
		params["cursor"] = next
	}
	if len(silent) > 0 {
		return fmt.Errorf("%s: nodes %v did not answer in time: their part is missing", method, slices.Sorted(maps.Keys(silent)))
	}
	return nil
}

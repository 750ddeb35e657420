package main

import (
	"context"
	"fmt"
	"strings"
)

var provideCmd = &command{
	name:    "provide",
	args:    "URL METHOD=COMMAND...",
	summary: "serve METHOD to the hub's other peers by running a shell command",
	help: `Tells the hub that this process provides METHOD (rpc.provide): the hub then
forwards every other peer's calls of METHOD here, and each runs COMMAND as
serve runs it (params on stdin and in $RPC_PARAMS, the method's name in
$RPC_METHOD; what it prints is the result; a non-zero exit status answers
-32000 with its stderr; a cancelled call kills it). METHOD may be a pattern
of dot-separated words, "*" standing for one word and a final ">" for one
or more: $RPC_METHOD then tells which method was called. provide runs until
interrupted, and reconnects and provides again when the connection drops.
Needs a ws:// or wss:// URL, and a hub whose policy lets this peer provide
(any peer may with hub -demo or hub -allow-provide).

-describe and -params describe a METHOD in rpc.discover, which the hub
relays: through the hub's MCP endpoint it is a tool with that description
and input schema.

Examples:
  rpc provide ws://127.0.0.1:8080/rpc text.upper='tr a-z A-Z'
  rpc provide ws://127.0.0.1:8080/rpc 'host.*=echo "$RPC_METHOD on $(hostname)"'
  rpc provide -describe 'text.upper=Upper-cases text' \
    -params 'text.upper={"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}' \
    ws://127.0.0.1:8080/rpc text.upper='jq -r .text | tr a-z A-Z'
`,
	setup: func(o *cli) {
		o.fs.StringVar(&o.shell, "shell", "sh", "the `shell` that runs the commands (with -c)")
		describeFlags(o)
	},
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) < 2 {
			return usagef("want URL and at least one METHOD=COMMAND")
		}
		names, commands, err := parseSpecs(args[1:])
		if err != nil {
			return err
		}
		docs, err := o.descriptions(names)
		if err != nil {
			return err
		}
		c, err := o.dialLasting(ctx, args[0], nil)
		if err != nil {
			return err
		}
		defer o.closeAndWait(c)
		pctx, cancel := o.withTimeout(ctx)
		defer cancel()
		for i, name := range names {
			if _, err := c.ProvideDescribed(pctx, name, o.shellHandler(commands[i]), docs[name]); err != nil {
				return fmt.Errorf("provide %s: %w", name, err)
			}
		}
		fmt.Fprintf(o.stderr, "rpc: providing %s\n", strings.Join(names, ", "))
		return untilEnd(ctx, c)
	},
}

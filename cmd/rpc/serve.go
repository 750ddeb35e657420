package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/peer"
)

var serveCmd = &command{
	name:    "serve",
	args:    "URL METHOD=COMMAND...",
	summary: "answer the hub's calls of METHOD by running a shell command",
	help: `Each call of METHOD runs COMMAND with "sh -c": the call's params (JSON) are
on its stdin and in $RPC_PARAMS, the method's name in $RPC_METHOD. What it
prints is the result, read as JSON, or else as a string (without the final
newline). A command that exits with a non-zero status answers error -32000
with its stderr (or its exit status) as the message; a cancelled call kills
it. serve runs until interrupted and reconnects when the connection drops.
Needs a ws:// or wss:// URL. It prints its peer id, which other peers
call it by (rpc call -peer). -describe and -params describe a METHOD in
its answer to rpc.discover.

Examples:
  rpc serve ws://127.0.0.1:8080/rpc upper='tr a-z A-Z' uptime='uptime -p'
  rpc serve -subscribe room.7 ws://127.0.0.1:8080/rpc 'draft=echo my draft'
  rpc serve -shell bash ws://hub.example/rpc 'disk=df -h / | tail -1'
`,
	setup: func(o *cli) {
		o.fs.StringVar(&o.shell, "shell", "sh", "the `shell` that runs the commands (with -c)")
		o.fs.Var(&o.present, "subscribe", "subscribe to `topic` too, to be among its peers for rpc call -topic (repeatable; the events are not printed)")
		describeFlags(o)
	},
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) < 2 {
			return usagef("want URL and at least one METHOD=COMMAND")
		}
		mux, names, err := o.shellMux(args[1:])
		if err != nil {
			return err
		}
		docs, err := o.descriptions(names)
		if err != nil {
			return err
		}
		c, err := o.dialLasting(ctx, args[0], describedRouter{mux, docs})
		if err != nil {
			return err
		}
		defer o.closeAndWait(c)
		// A round trip, so that "serving" means the hub has taken the
		// connection in and can call it.
		pctx, cancel := o.withTimeout(ctx)
		defer cancel()
		if err := c.Call(pctx, "rpc.ping", nil, nil); err != nil {
			return err
		}
		for _, topic := range o.present {
			if _, err := c.Subscribe(pctx, topic, func(client.Event) {}); err != nil {
				return err
			}
		}
		// A hub says which peer this is, for the others to address it
		// (rpc call -peer); another server may not know rpc.whoami.
		var me struct{ ID string }
		if err := c.Call(pctx, "rpc.whoami", nil, &me); err == nil && me.ID != "" {
			fmt.Fprintf(o.stderr, "rpc: serving %s as peer %s\n", strings.Join(names, ", "), me.ID)
		} else {
			fmt.Fprintf(o.stderr, "rpc: serving %s\n", strings.Join(names, ", "))
		}
		return untilEnd(ctx, c)
	},
}

// shellMux serves each METHOD=COMMAND of specs with a shellHandler.
func (o *cli) shellMux(specs []string) (*peer.Mux, []string, error) {
	names, commands, err := parseSpecs(specs)
	if err != nil {
		return nil, nil, err
	}
	mux := peer.NewMux()
	for i, name := range names {
		mux.HandleFunc(name, o.shellHandler(commands[i]))
	}
	return mux, names, nil
}

// parseSpecs splits METHOD=COMMAND arguments.
func parseSpecs(specs []string) (names, commands []string, err error) {
	for _, a := range specs {
		name, command, ok := strings.Cut(a, "=")
		if !ok || name == "" || command == "" {
			return nil, nil, usagef("%q: want METHOD=COMMAND", a)
		}
		if strings.HasPrefix(name, "rpc.") {
			return nil, nil, usagef("%q: names starting with rpc. are reserved", name)
		}
		if slices.Contains(names, name) {
			return nil, nil, usagef("%q: method %s given twice", a, name)
		}
		names = append(names, name)
		commands = append(commands, command)
	}
	return names, commands, nil
}

// shellHandler answers a call by running command.
func (o *cli) shellHandler(command string) peer.HandlerFunc {
	return func(ctx context.Context, req *peer.Request) (any, error) {
		o.running.Add(1)
		defer o.running.Done()
		params := string(req.Params)
		if params == "" {
			params = "null"
		}
		cmd := exec.CommandContext(ctx, o.shell, "-c", command)
		cmd.Env = append(os.Environ(), "RPC_METHOD="+req.Method, "RPC_PARAMS="+params)
		cmd.Stdin = strings.NewReader(params)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = time.Second
		ownGroup(cmd)
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			msg := strings.TrimSpace(stderr.String())
			var ee *exec.ExitError
			if msg == "" && errors.As(err, &ee) {
				msg = ee.String()
			} else if msg == "" {
				msg = err.Error()
			}
			return nil, peer.Errorf(peer.CodeApplication, "%s", msg)
		}
		return parseValue(strings.TrimSuffix(stdout.String(), "\n")), nil
	}
}

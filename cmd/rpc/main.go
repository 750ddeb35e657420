// Command rpc is a command-line client for a Switchboard hub, or any
// JSON-RPC 2.0 server: it calls methods, sends notifications and batches,
// subscribes to topics, publishes, describes a server's methods, and can
// answer the hub's calls, or serve methods to the hub's other peers, with a
// shell command.
//
// Usage:
//
//	rpc COMMAND [flags] URL ARGS...
//
// URLs starting with http:// or https:// are used with HTTP POST, one
// request per command; ws:// and wss:// open a WebSocket. Run "rpc help"
// or "rpc COMMAND -h" for the commands, their flags and examples.
//
// Exit status: 0 on success, 1 when the server answered with a JSON-RPC
// error, 2 for a usage error, 3 when the connection failed or was lost,
// 4 when the -timeout passed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses, documented in the package comment and in -h.
const (
	exitOK       = 0
	exitRPCError = 1 // the server answered with a JSON-RPC error
	exitUsage    = 2 // bad command line or input
	exitConn     = 3 // could not connect, or the connection failed
	exitTimeout  = 4 // -timeout passed
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// env holds the process's streams, so that tests can replace them.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

type command struct {
	name, args, summary string
	help                string       // more text and examples, after the flags
	setup               func(o *cli) // adds the command's own flags
	run                 func(ctx context.Context, o *cli, args []string) error
}

var commands []*command

func init() {
	commands = []*command{
		callCmd, notifyCmd, batchCmd, subscribeCmd, publishCmd, historyCmd, presenceCmd, whoamiCmd, discoverCmd, genTSCmd, genPyCmd, serveCmd, provideCmd, adminCmd,
	}
}

const usageText = `rpc is a command-line client for Switchboard hubs and other JSON-RPC 2.0 servers.

Usage:

	rpc COMMAND [flags] URL ARGS...

Commands:
%s
URLs: http:// and https:// send one HTTP POST per command; ws:// and wss://
open a WebSocket (needed for subscribe, serve and provide).

Output: results are printed as indented JSON on a terminal and as compact
JSON otherwise (-pretty and -compact choose). JSON-RPC errors go to stderr.

Exit status: 0 success, 1 JSON-RPC error from the server, 2 usage error,
3 connection failed or lost, 4 timed out.

Run "rpc COMMAND -h" for a command's flags and examples.
`

func usage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, usageText, b.String())
}

// run runs one command line and returns the exit status.
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			for _, c := range commands {
				if c.name == args[1] {
					o := newCLI(c, e)
					o.fs.SetOutput(e.stdout) // asked for: not an error
					o.fs.Usage()
					return exitOK
				}
			}
		}
		usage(e.stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		o := newCLI(c, e)
		if err := o.fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if o.token != "" && o.tokenFile != "" {
			return o.exit(usagef("-token and -token-file: give one"))
		}
		if err := o.loadCA(); err != nil {
			return o.exit(err)
		}
		return o.exit(c.run(ctx, o, o.fs.Args()))
	}
	fmt.Fprintf(e.stderr, "rpc: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

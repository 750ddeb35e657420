package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
)

// The hub's subcommands beside running it: what a deployer reaches for
// (docs/deploy.md). Each is "hub NAME [args]".

// tools are the subcommands, by name; args are a subcommand's arguments,
// after its name.
var tools = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"check-config": func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		return checkConfig(args, stdout, stderr)
	},
	"genconfig":  genConfig,
	"gentoken":   genToken,
	"checktoken": checkToken,
	"version":    runVersion,
}

// toolUsage is what hub -h says of each subcommand, in its order.
var toolUsage = [][2]string{
	{"check-config", "FILE [flags]: check a config file and print the configuration it makes, secrets redacted"},
	{"genconfig", "print an annotated config file to start from"},
	{"gentoken", "[flags]: mint a JSON Web Token with the configured key, for trying things out (-h: its flags)"},
	{"checktoken", "[flags] TOKEN: say whether the hub with these flags (-config FILE) accepts a token, and why"},
	{"version", "print the hub's version"},
}

// subcommand returns the run function of "hub NAME args..." when args[0]
// names a subcommand: main runs it instead of the hub.
func subcommand(args []string) (func(context.Context, []string, io.Writer, func(net.Addr)) error, bool) {
	if len(args) == 0 {
		return nil, false
	}
	t, ok := tools[args[0]]
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, args []string, stderr io.Writer, _ func(net.Addr)) error {
		return t(ctx, args[1:], os.Stdout, stderr)
	}, true
}

// usage is hub -h: the subcommands, then the flags.
func usage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: hub [flags]        run the hub\n       hub COMMAND [args]\n\nCommands:\n")
		for _, u := range toolUsage {
			fmt.Fprintf(w, "  %-13s %s\n", u[0], u[1])
		}
		fmt.Fprintf(w, "\nFlags (each also a config file key and a SWITCHBOARD_<NAME> variable):\n")
		fs.PrintDefaults()
	}
}

// version is the hub's version, stamped at build time:
//
//	go build -ldflags "-X main.version=v1.2.0" ./cmd/hub
//
// Unstamped, it comes from the module's build info (go install ...@v1.2.0)
// or the commit the binary was built from.
var version string

// hubVersion returns the version, never "".
func hubVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: hub version")
		return fmt.Errorf("version takes no arguments: %q", args)
	}
	_, err := fmt.Fprintf(stdout, "hub %s (%s, %s/%s)\n", hubVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

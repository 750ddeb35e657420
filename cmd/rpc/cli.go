package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"github.com/switchboard-rpc/switchboard/peer"
)

// cli holds one command's flags and streams.
type cli struct {
	*env
	cmd *command
	fs  *flag.FlagSet

	token     string
	tokenFile string
	headers   headerFlag
	more      urlsFlag // -url: more URLs of the same cluster
	timeout   time.Duration
	insecure  bool
	ca        string         // -ca: a PEM file of the CAs to trust
	roots     *x509.CertPool // loaded from ca or $RPC_CA
	pretty    bool
	compact   bool

	// Flags of some commands only.
	progress bool           // call: print rpc.progress on stderr
	count    int            // subscribe: exit after this many events
	since    positionFlag   // subscribe, history: after this position
	presence bool           // subscribe: print presence changes
	limit    int            // history: at most this many events
	rawJSON  bool           // discover: print the OpenRPC document
	shell    string         // serve, call: the shell that runs commands
	serve    specFlag       // call: METHOD=COMMAND the hub may call back
	to       client.Address // call: the peers to call the method on
	present  listFlag       // serve: topics to subscribe to
	describe listFlag       // serve, provide: METHOD=TEXT
	schemas  listFlag       // serve, provide: METHOD=SCHEMA (-params)

	running sync.WaitGroup // the shell commands running (shellHandler)
}

// closeAndWait closes c, which cancels the calls being served, and waits
// until their commands have ended: rpc leaves none running behind.
func (o *cli) closeAndWait(c interface{ Close() error }) {
	_ = c.Close()
	o.running.Wait()
}

// listFlag collects the values of a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

type headerFlag []string

func (h *headerFlag) String() string { return strings.Join(*h, ", ") }
func (h *headerFlag) Set(s string) error {
	if !strings.Contains(s, ":") {
		return errors.New(`want "Name: value"`)
	}
	*h = append(*h, s)
	return nil
}

// specFlag collects METHOD=COMMAND values.
type specFlag []string

func (f *specFlag) String() string { return strings.Join(*f, ", ") }
func (f *specFlag) Set(s string) error {
	if !strings.Contains(s, "=") {
		return errors.New("want METHOD=COMMAND")
	}
	*f = append(*f, s)
	return nil
}

func newCLI(c *command, e *env) *cli {
	o := &cli{env: e, cmd: c}
	fs := flag.NewFlagSet("rpc "+c.name, flag.ContinueOnError)
	o.fs = fs
	fs.SetOutput(e.stderr)
	fs.StringVar(&o.token, "token", "", "bearer `token` sent as Authorization (default $RPC_TOKEN)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the bearer token from `file` before each connection, and again before it expires (a JSON Web Token's exp), so that a long-running command outlives its token while something else renews the file")
	fs.Var(&o.headers, "H", "extra HTTP `header` \"Name: value\" (repeatable)")
	fs.Var(&o.more, "url", "another `URL` of the same cluster of hubs, tried when the first does not answer or goes away (repeatable, or comma-separated; also in URL itself); ws:// and wss:// only")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this `duration` (connecting, and waiting for results)")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify TLS certificates (wss://, https://)")
	fs.StringVar(&o.ca, "ca", "", "trust the CA certificates of this PEM `file`, instead of the system's (default $RPC_CA)")
	fs.BoolVar(&o.pretty, "pretty", false, "indent JSON output even when not on a terminal")
	fs.BoolVar(&o.compact, "compact", false, "compact JSON output even on a terminal")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: rpc %s [flags] %s\n\n%s\n\nFlags:\n", c.name, c.args, c.summary)
		fs.PrintDefaults()
		fmt.Fprintf(w, "\n%s", c.help)
		fmt.Fprintf(w, "\nExit status: 0 success, 1 JSON-RPC error, 2 usage error,\n3 connection failed or lost, 4 timed out.\n")
	}
	if c.setup != nil {
		c.setup(o)
	}
	return o
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errRPCFailed means JSON-RPC errors were already reported: exit status 1.
var errRPCFailed = errors.New("some calls failed")

// exit reports err on stderr and returns the exit status for it.
func (o *cli) exit(err error) int {
	var ue *usageError
	var pe *peer.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(o.stderr, "rpc %s: %s\nRun 'rpc %s -h' for usage.\n", o.cmd.name, redact.Text(ue.msg), o.cmd.name)
		return exitUsage
	case errors.Is(err, errRPCFailed):
		return exitRPCError
	case errors.As(err, &pe):
		o.printError(pe)
		var se *client.StatusError
		if errors.As(err, &se) {
			fmt.Fprintf(o.stderr, "rpc: the server answered HTTP %s\n", se.Status)
		}
		return exitRPCError
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(o.stderr, "rpc: timed out after %v: %s\n", o.timeout, redact.Text(err.Error()))
		return exitTimeout
	case errors.Is(err, context.Canceled):
		return exitOK // interrupted
	}
	fmt.Fprintf(o.stderr, "rpc: %s\n", redact.Text(err.Error()))
	return exitConn
}

// printError writes a JSON-RPC error to stderr: code, message, data.
func (o *cli) printError(e *peer.Error) {
	fmt.Fprintf(o.stderr, "rpc: error %d: %s\n", e.Code, e.Message)
	if len(e.Data) > 0 {
		fmt.Fprintf(o.stderr, "data: %s\n", e.Data)
	}
}

// isTerminal reports whether stdout is a terminal.
func (o *cli) isTerminal() bool {
	f, ok := o.stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printJSON writes v (raw JSON or a value) on stdout, indented on a
// terminal and compact otherwise.
func (o *cli) printJSON(v any) error {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = jsonx.Marshal(v); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	pretty := o.pretty || (o.isTerminal() && !o.compact)
	var err error
	if pretty {
		err = json.Indent(&buf, raw, "", "  ")
	} else {
		err = json.Compact(&buf, raw)
	}
	if err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	buf.WriteByte('\n')
	_, err = o.stdout.Write(buf.Bytes())
	return err
}

func (o *cli) options() *client.Options {
	token := o.token
	if token == "" {
		token = os.Getenv("RPC_TOKEN")
	}
	opts := &client.Options{
		Token:       token,
		TokenFunc:   o.readTokenFile(),
		Header:      http.Header{},
		CallTimeout: -1, // ctx carries -timeout
		DialTimeout: o.timeout,
		MaxAttempts: -1, // one-shot commands do not reconnect
	}
	for _, h := range o.headers {
		k, v, _ := strings.Cut(h, ":")
		opts.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if o.roots != nil {
		opts.TLSConfig = &tls.Config{RootCAs: o.roots}
	}
	if o.insecure {
		opts.TLSConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return opts
}

// readTokenFile returns a client.Options.TokenFunc that reads -token-file,
// or nil without it.
func (o *cli) readTokenFile() func(context.Context) (string, error) {
	if o.tokenFile == "" {
		return nil
	}
	path := o.tokenFile
	return func(context.Context) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty", path)
		}
		return tok, nil
	}
}

// caller is what the one-shot commands need from either kind of client.
type caller interface {
	Call(ctx context.Context, method string, params, result any) error
	Notify(ctx context.Context, method string, params any) error
	Batch(ctx context.Context, elems []peer.BatchElem) error
	Close() error
}

// open returns a client for url: HTTP POST or WebSocket by its scheme.
func (o *cli) open(ctx context.Context, url string) (caller, error) {
	return o.openWith(ctx, url, o.options())
}

func (o *cli) openWith(ctx context.Context, arg string, opts *client.Options) (caller, error) {
	url, others, err := o.urls(arg)
	if err != nil {
		return nil, err
	}
	opts.URLs = others
	switch {
	case strings.HasPrefix(url, "http://"), strings.HasPrefix(url, "https://"):
		if opts.TokenFunc != nil { // one request: the token once
			if opts.Token, err = opts.TokenFunc(ctx); err != nil {
				return nil, err
			}
		}
		return client.NewHTTP(url, &client.HTTPOptions{
			Token:       opts.Token,
			Header:      opts.Header,
			TLSConfig:   opts.TLSConfig,
			HTTPClient:  opts.HTTPClient,
			CallTimeout: opts.CallTimeout,
			MaxMessage:  opts.Conn.MaxMessage,
		}), nil
	case strings.HasPrefix(url, "ws://"), strings.HasPrefix(url, "wss://"):
		return client.Dial(ctx, url, opts)
	}
	return nil, usagef("URL %q: want http://, https://, ws:// or wss://", url)
}

// withTimeout bounds a one-shot command by -timeout.
func (o *cli) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.timeout > 0 {
		return context.WithTimeout(ctx, o.timeout)
	}
	return ctx, func() {}
}

// parseValue reads a command-line value as JSON, or else as a string.
func parseValue(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := jsonx.Marshal(s)
	return b
}

// params returns the params for the arguments after METHOD, nil for none.
// A single "-" reads them from stdin, which must hold a JSON array or
// object.
func (o *cli) params(args []string) (any, error) {
	switch {
	case len(args) == 0:
		return nil, nil
	case len(args) == 1 && args[0] == "-":
		in, err := io.ReadAll(o.stdin)
		if err != nil {
			return nil, err
		}
		t := bytes.TrimSpace(in)
		if len(t) == 0 || (t[0] != '[' && t[0] != '{') || !json.Valid(t) {
			return nil, usagef("stdin: want params as a JSON array or object")
		}
		return json.RawMessage(t), nil
	}
	return parseParams(args), nil
}

// parseParams turns the arguments after METHOD into params: one JSON array
// or object is sent as is; otherwise each argument is a positional value,
// parsed as JSON when it is valid JSON (1, true, null, "x") and taken as a
// string otherwise.
func parseParams(args []string) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	if len(args) == 1 {
		t := strings.TrimSpace(args[0])
		if t != "" && (t[0] == '[' || t[0] == '{') && json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
	}
	vals := make([]json.RawMessage, len(args))
	for i, a := range args {
		vals[i] = parseValue(a)
	}
	b, _ := jsonx.Marshal(vals)
	return b
}

// callOnce connects to url, over POST or a WebSocket, makes one call
// within -timeout, and returns its result.
func (o *cli) callOnce(ctx context.Context, url, method string, params any) (json.RawMessage, error) {
	var res json.RawMessage
	err := o.once(ctx, url, func(ctx context.Context, c caller) error {
		return c.Call(ctx, method, params, &res)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// once connects to url (open) and runs fn with the client, all within
// -timeout; the client is closed when fn returns.
func (o *cli) once(ctx context.Context, url string, fn func(context.Context, caller) error) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	c, err := o.open(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// callAndPrint makes one call (callOnce) and prints its result.
func (o *cli) callAndPrint(ctx context.Context, url, method string, params any) error {
	res, err := o.callOnce(ctx, url, method, params)
	if err != nil {
		return err
	}
	return o.printJSON(res)
}

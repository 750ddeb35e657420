package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// The floor is what any WebSocket server must do at least: read a frame,
// write a frame. It parses nothing: it answers every frame with the same
// reply. It also does the least a pub/sub server must do, the way the
// coder/websocket chat example does: a connection whose frame mentions
// rpc.subscribe becomes a subscriber with a bounded queue and a writer
// goroutine, and a frame mentioning rpc.publish is queued, as it is, to
// every subscriber. The hub is measured against it.
//
// For the addressed scenarios, it is also the least a server passing
// calls between two peers must do (see relay).

var floorReply = []byte(`{"jsonrpc":"2.0","result":1,"id":1}`)

// floorQueue bounds each subscriber's queue, as the hub's MaxQueue does.
const floorQueue = 1024

func floorCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen on `host:port`")
	var w floorWork
	fs.DurationVar(&w.spin, "spin", 0, "spin this `long` on every frame before answering")
	fs.IntVar(&w.allocs, "allocs", 0, "allocate this `many` objects of 64 bytes on every frame")
	fs.BoolVar(&w.rpc, "rpc", false, "answer as the simplest JSON-RPC server would: decode each frame with encoding/json, and encode a reply with its params as the result")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return listenAndServe(ctx, "floor", *addr, newFloor(w))
}

// listenAndServe serves h on addr until ctx ends, saying where on stderr.
func listenAndServe(ctx context.Context, name, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s listening on ws://%s/\n", name, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type floor struct {
	work  floorWork
	mu    sync.Mutex
	subs  map[*floorSub]struct{}
	relay relay
}

// floorWork is work the floor can be told to do on every frame, to see
// what the ratios make of it: none by default. Spinning costs the CPU
// time alone; allocating costs little CPU but brings the collector; rpc
// is what a server written in a few lines with encoding/json does.
type floorWork struct {
	spin   time.Duration
	allocs int
	rpc    bool
}

// reply does the work on frame and returns the reply to send.
func (w *floorWork) reply(frame []byte) []byte {
	if w.allocs > 0 {
		keep := make([][]byte, w.allocs)
		for i := range keep {
			keep[i] = make([]byte, 64)
		}
	}
	if w.spin > 0 { // no clock read otherwise: the floor stays bare
		for t := time.Now(); time.Since(t) < w.spin; {
		}
	}
	if !w.rpc {
		return floorReply
	}
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		ID     json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(frame, &req); err != nil {
		return floorReply
	}
	reply, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		ID      json.RawMessage `json:"id"`
	}{"2.0", req.Params, req.ID})
	if err != nil {
		return floorReply
	}
	return reply
}

type floorSub struct {
	c  *websocket.Conn
	ch chan []byte
}

func newFloor(work floorWork) http.Handler {
	f := &floor{work: work, subs: map[*floorSub]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "process_resident_memory_bytes %d\n", residentMemory())
	})
	mux.HandleFunc("/relay", func(w http.ResponseWriter, r *http.Request) { f.relay.serve(w, r, false) })
	mux.HandleFunc("/relay-target", func(w http.ResponseWriter, r *http.Request) { f.relay.serve(w, r, true) })
	mux.HandleFunc("/", f.serveWS)
	return mux
}

// acceptFloor takes a WebSocket in as the floor does: from any origin,
// frames up to 1 MiB. It returns nil when the handshake failed.
func acceptFloor(w http.ResponseWriter, r *http.Request) *websocket.Conn {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil
	}
	c.SetReadLimit(1 << 20)
	return c
}

func (f *floor) serveWS(w http.ResponseWriter, r *http.Request) {
	c := acceptFloor(w, r)
	if c == nil {
		return
	}
	defer c.CloseNow()
	ctx := context.Background()
	var sub *floorSub
	defer func() {
		if sub != nil {
			f.mu.Lock()
			delete(f.subs, sub)
			f.mu.Unlock()
			close(sub.ch)
		}
	}()
	var buf []byte
	for {
		var err error
		if buf, err = readMessage(ctx, c, buf[:0]); err != nil {
			return
		}
		switch {
		case sub == nil && bytes.Contains(buf, []byte(`"rpc.subscribe"`)):
			sub = &floorSub{c: c, ch: make(chan []byte, floorQueue)}
			go sub.write()
			f.mu.Lock()
			f.subs[sub] = struct{}{}
			f.mu.Unlock()
		case bytes.Contains(buf, []byte(`"rpc.publish"`)):
			f.publish(bytes.Clone(buf))
		}
		reply := f.work.reply(buf)
		if err := c.Write(ctx, websocket.MessageText, reply); err != nil {
			return
		}
	}
}

func (f *floor) publish(msg []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		select {
		case s.ch <- msg:
		default:
			go s.c.Close(websocket.StatusPolicyViolation, "too slow")
		}
	}
}

func (s *floorSub) write() {
	for msg := range s.ch {
		if err := s.c.Write(context.Background(), websocket.MessageText, msg); err != nil {
			return
		}
	}
}

// relay passes frames between two peers, the way the hub passes an
// addressed call and its answer, with nothing else: a connection to
// /relay-target becomes the target, one to /relay the caller; each frame
// the caller sends is written, as it is, to the target, and each frame the
// target sends to the caller, by the reader of the connection it came
// from. It parses nothing. One target and one caller at a time: a new one
// takes the place of the last. The target is told it is in place by a
// first frame, relayReady; a caller's frame while there is no target
// closes the caller (there is nobody to answer it); a target's frame while
// there is no caller is dropped (its caller is gone).
type relay struct {
	target, caller atomic.Pointer[websocket.Conn]
}

var relayReady = []byte(`{"jsonrpc":"2.0","method":"relay.ready"}`)

func (rl *relay) serve(w http.ResponseWriter, r *http.Request, isTarget bool) {
	c := acceptFloor(w, r)
	if c == nil {
		return
	}
	defer c.CloseNow()
	ctx := context.Background()
	self, other := &rl.caller, &rl.target
	if isTarget {
		self, other = &rl.target, &rl.caller
	}
	self.Store(c)
	defer self.CompareAndSwap(c, nil)
	if isTarget {
		if err := c.Write(ctx, websocket.MessageText, relayReady); err != nil {
			return
		}
	}
	var buf []byte
	for {
		var err error
		if buf, err = readMessage(ctx, c, buf[:0]); err != nil {
			return
		}
		to := other.Load()
		switch {
		case to == nil && !isTarget:
			c.Close(websocket.StatusTryAgainLater, "no relay target")
			return
		case to != nil:
			_ = to.Write(ctx, websocket.MessageText, buf) // an error closes to, whose reader ends
		}
	}
}

// readMessage reads c's next message into buf, reusing its room.
func readMessage(ctx context.Context, c *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := c.Reader(ctx)
	if err != nil {
		return buf, err
	}
	return readAll(r, buf)
}

// readAll appends what r holds to buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// residentMemory returns this process's resident set size in bytes.
func residentMemory() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(fields[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}

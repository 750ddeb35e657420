// Command bench measures a JSON-RPC 2.0 hub over real WebSockets, side by
// side with a floor: a minimal WebSocket server that does no JSON-RPC work
// at all. Every figure is shown as a ratio to the floor's, measured in the
// same run, so that a noisy machine still gives comparable numbers.
//
// Usage:
//
//	bench floor [-addr 127.0.0.1:8090]
//	bench peer [-addr 127.0.0.1:8091]
//	bench run [flags] HUB_URL [FLOOR_URL]
//	bench seqmode [flags] -pids HUB,FLOOR HUB_URL FLOOR_URL
//	bench soak [flags] HUB_URL
//	bench report [flags] RESULTS.jsonl
//	bench scale [flags]
//	bench scalereport [flags] SCALE.json
//
// "floor" serves the floor: it answers every frame with a fixed reply,
// relays rpc.publish frames to the connections that sent rpc.subscribe,
// and reports its resident memory on /metrics, as the hub does.
//
// "peer" serves the peer package alone, with an echo method and nothing
// of the hub around it: run's seq, pipe, conns and batch scenarios against
// it, beside the floor, tell the peer package's cost from the hub's.
//
// "run" drives the scenarios against the hub and, when given, the floor,
// alternately, several times (-reps, 5 by default), and prints the median
// of each with its ratio and the lowest and highest per-run ratio: seq
// (sequential calls on one connection), pipe (64 calls in flight on one
// connection), conns (100 connections calling), batch (batches of 100
// requests), fanout (events to 10,000 subscribers), idle (memory per idle
// connection), client (the Go client's sequential calls, against this
// program's raw ones to the same hub) and neighbor (sequential calls beside
// a client with 1,600 calls in flight, against the same calls alone),
// beside (the same, with the heavy client in a process of its own, against
// the hub and the floor), and cluster (fanout across two hubs joined over
// NATS, publisher on one and subscribers on the other, against both on one:
// the CPU time of the two hub processes per delivered event; -start starts
// the two, -cluster A,B names running ones), and the addressed ones
// (rpc.call to a chosen peer against a direct call and a forwarded one, and
// to the 1,000 peers of a topic against a publish to them). It prints a
// table, and one JSON object per result with -json. For servers whose
// process it knows (-start, or -pids), it also reads from /proc what each
// operation cost the server: CPU time, context switches and read and write
// system calls, hub against floor (cpu.go). With -start and -profiles DIR,
// it also writes the hub's CPU and allocation profiles of each leg into DIR
// (pprof.go).
//
// "seqmode" measures seq per placement mode (seqmode.go): the load
// generator and the servers pinned to one CPU, then to two, then free,
// each free run tagged with the placement observed, hub and floor
// alternating run by run, with the machine's load beside each run.
//
// "soak" runs a mixed load (calls, notifications, fan-out) for a while and
// prints, every interval, what was published and delivered, the p99 call
// latency, and the hub's memory and goroutines; it fails if a delivery is
// missing at the end.
//
// "scale" measures peers by the ten thousand (scale.go): one hub holding
// as many as a process may, and a cluster of hubs over NATS holding up to
// 100,000 from several "swarm" processes, with a restart of one node;
// "scalereport" writes docs/scale.md from its results.
//
// "report" turns the JSON results of run (and the output of go test
// -bench) into a Markdown page and an SVG chart of the ratios.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  bench floor [-addr 127.0.0.1:8090]         serve the floor
  bench peer [-addr 127.0.0.1:8091]          serve the peer package alone (echo)
  bench run [flags] HUB_URL [FLOOR_URL]      measure the hub (and the floor)
  bench seqmode [flags] -start HUB_BINARY    sequential calls per placement mode
  bench soak [flags] HUB_URL                 mixed load for a while
  bench report [flags] RESULTS.jsonl         write docs from run's -json output
  bench scale [flags]                        peers by the ten thousand: one hub, a cluster
  bench scalereport [flags] SCALE.json       write docs/scale.md from scale's -json output
Run "bench COMMAND -h" for a command's flags.`

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch args[0] {
	case "floor":
		return floorCmd(ctx, args[1:])
	case "peer":
		return peerCmd(ctx, args[1:])
	case "run":
		return runCmd(ctx, args[1:])
	case "seqmode":
		return seqModeCmd(ctx, args[1:])
	case "soak":
		return soakCmd(ctx, args[1:])
	case "heavy": // the beside scenario's child process
		return heavyCmd(ctx, args[1:])
	case "scale":
		return scaleCmd(ctx, args[1:])
	case "scalereport":
		return scaleReportCmd(args[1:])
	case "swarm": // the scale command's child process
		return swarmCmd(ctx, args[1:])
	case "report":
		return reportCmd(args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Println(usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

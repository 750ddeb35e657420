package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// With -profiles DIR, bench run starts the hub with Go's profiles on a
// port of their own and writes, for each leg of each run that goes to the
// hub, the hub's CPU profile and its allocations while the leg ran:
//
//	DIR/mcp-hub-0.cpu.pprof            the mcp scenario's own leg, first run
//	DIR/mcp-floor-0.cpu.pprof          its baseline (the forwarded POST)
//	DIR/mcp-hub-0.allocs.pprof         the hub's allocations at the leg's end
//	DIR/mcp-hub-0.allocs-before.pprof  and at its start
//
// The allocations since the hub started are counted: what the leg alone
// allocated is the difference,
//
//	go tool pprof -sample_index=alloc_space -diff_base DIR/mcp-hub-0.allocs-before.pprof DIR/mcp-hub-0.allocs.pprof
//
// The CPU profile lasts the leg's -duration, from its start (its warm-up
// included). Profiling costs the hub a few percent of CPU.

// profiled returns run, recording the hub's profiles while it runs when
// -profiles is set and its URL is the started hub's.
func (l *load) profiled(scenario, leg string, rep int, run func(context.Context, *load, string) (figure, error)) func(context.Context, *load, string) (figure, error) {
	if l.profiles == "" {
		return run
	}
	return func(ctx context.Context, l *load, u string) (figure, error) {
		murl, ok := l.metrics[u]
		if !ok {
			return run(ctx, l, u)
		}
		base := strings.TrimSuffix(murl, "/metrics") + "/debug/pprof/"
		name := filepath.Join(l.profiles, fmt.Sprintf("%s-%s-%d", scenario, leg, rep))
		before, err := getProfile(ctx, base+"allocs")
		if err != nil {
			return figure{}, err
		}
		// A CPU profile lasts whole seconds.
		secs := max(1, int(math.Round(l.duration.Seconds())))
		cpu := make(chan error, 1)
		go func() {
			b, err := getProfile(ctx, fmt.Sprintf("%sprofile?seconds=%d", base, secs))
			if err == nil {
				err = os.WriteFile(name+".cpu.pprof", b, 0o644)
			}
			cpu <- err
		}()
		f, err := run(ctx, l, u)
		if err != nil {
			<-cpu
			return f, err
		}
		after, err := getProfile(ctx, base+"allocs")
		if err == nil {
			err = os.WriteFile(name+".allocs-before.pprof", before, 0o644)
		}
		if err == nil {
			err = os.WriteFile(name+".allocs.pprof", after, 0o644)
		}
		if cerr := <-cpu; err == nil {
			err = cerr
		}
		return f, err
	}
}

// profileClient fetches profiles: a CPU profile takes its seconds.
var profileClient = &http.Client{Timeout: time.Minute, Transport: closingTransport}

func getProfile(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := profileClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

package prom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file holds the metrics of the requests served:
// switchboard_calls_total and switchboard_call_duration_seconds.
//
// They are counted here rather than with the client library's CounterVec
// and HistogramVec, and turned into Prometheus metrics at each scrape: a
// request served then costs a map lookup and two atomic additions, where
// the library's counter and histogram cost five, one a compare-and-swap
// loop on a float, and a conversion of the latency to seconds. The
// server observes every request of a batch, so that is paid a hundred
// times for a batch of a hundred.

var (
	descCalls = prometheus.NewDesc("switchboard_calls_total",
		`Requests served (calls and notifications), by method ("" for an unknown method) and outcome.`,
		[]string{"method", "outcome"}, nil)
	descLatency = prometheus.NewDesc("switchboard_call_duration_seconds",
		"Time handlers took, by method.", []string{"method"}, nil)
)

// latencyBounds are the upper bounds of the latency buckets, in seconds
// as exported and in nanoseconds as counted.
var (
	latencyBounds = [...]float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30}
	latencyNanos  = func() [len(latencyBounds)]int64 {
		var b [len(latencyBounds)]int64
		for i, s := range latencyBounds {
			b[i] = int64(s * float64(time.Second))
		}
		return b
	}()
)

// calls counts requests by method. It is a prometheus.Collector.
type calls struct {
	// methods holds each method's counts, copied on write, once per
	// method: a request served costs a map lookup, not a lock.
	methods atomic.Pointer[map[string]*methodCalls]
	mu      sync.Mutex // serializes writers of methods
}

// methodCalls are the counts of one method. A request is counted once,
// in the bucket of its latency among those of its outcome, ok or failed:
// the count of each outcome and the histogram are sums of these, and so
// never go down from one scrape to the next. Failed requests are also
// counted by outcome; they are the rare ones.
type methodCalls struct {
	ok, failed [len(latencyBounds) + 1]atomic.Uint64
	nanos      atomic.Int64 // the latencies' sum
	outcomes   [len(outcomes)]atomic.Uint64
}

func (c *calls) observe(method string, code peer.Code, elapsed time.Duration) {
	mc := c.method(method)
	i := 0
	for i < len(latencyNanos) && int64(elapsed) > latencyNanos[i] {
		i++
	}
	if code == 0 {
		mc.ok[i].Add(1)
	} else {
		mc.outcomes[outcome(code)].Add(1)
		mc.failed[i].Add(1)
	}
	mc.nanos.Add(int64(elapsed))
}

// method returns the counts of method, adding them on its first request.
func (c *calls) method(method string) *methodCalls {
	if p := c.methods.Load(); p != nil {
		if mc, ok := (*p)[method]; ok {
			return mc
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[string]*methodCalls
	if p := c.methods.Load(); p != nil {
		old = *p
	}
	if mc, ok := old[method]; ok {
		return mc
	}
	mc := new(methodCalls)
	next := make(map[string]*methodCalls, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[method] = mc
	c.methods.Store(&next)
	return mc
}

// total returns the requests counted, over every method and outcome.
func (c *calls) total() uint64 {
	p := c.methods.Load()
	if p == nil {
		return 0
	}
	var n uint64
	for _, mc := range *p {
		for i := range mc.ok {
			n += mc.ok[i].Load() + mc.failed[i].Load()
		}
	}
	return n
}

func (c *calls) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCalls
	ch <- descLatency
}

// Collect exports each method's counts: a count for "ok" (for a method
// the router serves, even when zero) and one for each outcome that
// occurred, and the latency histogram of a method the router serves
// (not of "", the unknown methods).
func (c *calls) Collect(ch chan<- prometheus.Metric) {
	p := c.methods.Load()
	if p == nil {
		return
	}
	for method, mc := range *p {
		var ok, count uint64
		buckets := make(map[float64]uint64, len(latencyBounds))
		for i := range mc.ok {
			n, f := mc.ok[i].Load(), mc.failed[i].Load()
			ok += n
			count += n + f
			if i < len(latencyBounds) {
				buckets[latencyBounds[i]] = count
			}
		}
		if method != "" || ok > 0 {
			ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(ok), method, outcomes[0])
		}
		for i := 1; i < len(outcomes); i++ {
			if n := mc.outcomes[i].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(n), method, outcomes[i])
			}
		}
		if method != "" {
			sum := time.Duration(mc.nanos.Load()).Seconds()
			ch <- prometheus.MustNewConstHistogram(descLatency, count, sum, buckets, method)
		}
	}
}

// outcomes are the values of the outcome label; outcome gives the index
// of a reply's code. Codes an application chose itself are lumped
// together to bound the label's values.
var outcomes = [...]string{
	"ok", "parse_error", "invalid_request", "method_not_found", "invalid_params",
	"internal_error", "application_error", "unauthorized", "cancelled", "timeout",
	"overloaded", "shutting_down", "server_error", "other_error",
}

func outcome(code peer.Code) int {
	switch code {
	case 0:
		return 0
	case peer.CodeParseError:
		return 1
	case peer.CodeInvalidRequest:
		return 2
	case peer.CodeMethodNotFound:
		return 3
	case peer.CodeInvalidParams:
		return 4
	case peer.CodeInternalError:
		return 5
	case peer.CodeApplication:
		return 6
	case peer.CodeUnauthorized:
		return 7
	case peer.CodeCancelled:
		return 8
	case peer.CodeTimeout:
		return 9
	case peer.CodeOverloaded:
		return 10
	case peer.CodeShuttingDown:
		return 11
	}
	if code >= -32768 && code <= -32000 {
		return 12
	}
	return 13
}

package main

import (
	"math"
	"slices"
	"time"
)

// histogram counts latencies in buckets 5% wide, keyed by bucket number:
// small enough to send from each swarm process, merged by the scale
// command into one set of percentiles.
type histogram map[int]int

const histBase = 1.05

func (h histogram) add(d time.Duration) {
	us := max(float64(d.Nanoseconds())/1e3, 1)
	h[int(math.Log(us)/math.Log(histBase))]++
}

func (h histogram) merge(o histogram) {
	for k, n := range o {
		h[k] += n
	}
}

func (h histogram) count() int {
	n := 0
	for _, c := range h {
		n += c
	}
	return n
}

// quantile returns the latency below which a fraction q of the counts
// lie, in µs: the middle of its bucket.
func (h histogram) quantile(q float64) float64 {
	keys := make([]int, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rank := int(math.Ceil(q * float64(h.count())))
	seen := 0
	for _, k := range keys {
		seen += h[k]
		if seen >= max(rank, 1) {
			return math.Pow(histBase, float64(k)+0.5)
		}
	}
	return 0
}

package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// --histogram: each benchmark records the latency of every op under its
// operation type (db_bench's OperationType), and prints one histogram per
// type that has ops, as db_bench does:
//
//	Microseconds per read:
//	Count: 1000 Average: 2.3140  StdDev: 1.07
//	Min: 1  Median: 2.1010  Max: 31
//	Percentiles: P50: 2.10 P75: 2.61 P99: 6.02 P99.9: 14.20 P99.99: 31.00
//	------------------------------------------------------
//	[       0,       1 ]       12   1.200%   1.200%
//	(       1,       2 ]      450  45.000%  46.200% #########
//	...
//
// The text is RocksDB's HistogramImpl::ToString, buckets included (its
// HistogramBucketMapper's limits in microseconds). Latencies are measured in
// nanoseconds: the percentiles come from those, not interpolated within the
// buckets as RocksDB does, and Min and Max are whole microseconds, rounded
// down, as RocksDB's integer microseconds are.

// benchOp is the operation type an op's latency is recorded under; a
// benchmark names its type in benchSpec.op, readrandomwriterandom switches
// per op (benchThread.setOp).
type benchOp int

const (
	opOthers benchOp = iota // db_bench's kOthers: flush, compact and the like
	opRead
	opWrite
	opDelete
	opSeek
	opUpdate
	numBenchOps
)

// benchOpNames are db_bench's names of the operation types.
var benchOpNames = [numBenchOps]string{
	opOthers: "op",
	opRead:   "read",
	opWrite:  "write",
	opDelete: "delete",
	opSeek:   "seek",
	opUpdate: "update",
}

// benchOpOrder is the order of the histograms in the output: db_bench's
// OperationType order, kOthers last.
var benchOpOrder = [numBenchOps]benchOp{opRead, opWrite, opDelete, opSeek, opUpdate, opOthers}

// setOp makes op the type under which finished records latencies; it does
// nothing without --histogram or --report.
func (t *benchThread) setOp(op benchOp) {
	if !t.runner.cfg.histogram && t.runner.cfg.report == "" {
		return
	}
	if t.hists[op] == nil {
		t.hists[op] = newLatencyHistogram()
	}
	t.hist = t.hists[op]
}

// histogramText renders r's histograms as db_bench's --histogram does.
func (r *benchResult) histogramText() string {
	var b strings.Builder
	for _, op := range benchOpOrder {
		if h := r.hists[op]; h != nil {
			fmt.Fprintf(&b, "Microseconds per %s:\n%s\n", benchOpNames[op], dbBenchHistogram(h))
		}
	}
	return b.String()
}

// dbBenchBucketLimits are the upper bounds, in microseconds, of RocksDB's
// histogram buckets (HistogramBucketMapper): 1, 2, then each 1.5 times the
// last, kept to two significant digits (3, 4, 6, 10, 15, 22, 34, 51, 76,
// 110, 170, ...). Bucket i holds the values in (limit[i-1], limit[i]].
var dbBenchBucketLimits = func() []int64 {
	limits := []int64{1, 2}
	// v grows unrounded; RocksDB stops at the largest uint64, values here
	// are int64.
	for v := 2.0 * 1.5; v < math.MaxInt64; v *= 1.5 {
		l, pow := int64(v), int64(1)
		for l/10 > 10 {
			l /= 10
			pow *= 10
		}
		limits = append(limits, l*pow)
	}
	return limits
}()

// dbBenchBucket returns the bucket of a latency of ns nanoseconds: the
// first whose limit is at least the latency in microseconds, or the last.
func dbBenchBucket(ns int64) int {
	us := (ns + 999) / 1000 // ns <= limit*1000 without overflow
	i := sort.Search(len(dbBenchBucketLimits), func(i int) bool { return dbBenchBucketLimits[i] >= us })
	return min(i, len(dbBenchBucketLimits)-1)
}

// dbBenchHistogram renders h (nanoseconds) as RocksDB's
// HistogramImpl::ToString renders a histogram of microseconds.
func dbBenchHistogram(h *hdrhistogram.Histogram) string {
	n := h.TotalCount()
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	pct := func(q float64) float64 { return us(h.ValueAtQuantile(q)) }
	var b strings.Builder
	fmt.Fprintf(&b, "Count: %d Average: %.4f  StdDev: %.2f\n", n, h.Mean()/1e3, h.StdDev()/1e3)
	var minUS, maxUS int64
	if n > 0 {
		minUS, maxUS = h.Min()/1000, h.Max()/1000
	}
	fmt.Fprintf(&b, "Min: %d  Median: %.4f  Max: %d\n", minUS, pct(50), maxUS)
	fmt.Fprintf(&b, "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
		pct(50), pct(75), pct(99), pct(99.9), pct(99.99))
	b.WriteString("------------------------------------------------------\n")
	if n == 0 {
		return b.String()
	}
	counts := make([]int64, len(dbBenchBucketLimits))
	for _, bar := range h.Distribution() {
		if bar.Count > 0 {
			counts[dbBenchBucket(bar.From)] += bar.Count
		}
	}
	mult := 100.0 / float64(n)
	var cumulative int64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		cumulative += c
		open, left := '(', int64(0)
		if i == 0 {
			open = '['
		} else {
			left = dbBenchBucketLimits[i-1]
		}
		// 20 marks for 100%; the space before them stays when there are none.
		marks := int(mult*float64(c)/5 + 0.5)
		fmt.Fprintf(&b, "%c %7d, %7d ] %8d %7.3f%% %7.3f%% %s\n",
			open, left, dbBenchBucketLimits[i], c, mult*float64(c), mult*float64(cumulative), strings.Repeat("#", marks))
	}
	return b.String()
}

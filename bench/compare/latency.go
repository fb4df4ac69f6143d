package main

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// opTimer records the latency of each operation of one goroutine. It reads
// the clock once per operation: an operation's latency runs from the end
// of the one before (or from start), as db_bench's FinishedOps measures.
type opTimer struct {
	hist *hdrhistogram.Histogram
	last time.Time
	// origin is when the first operation started; perSec[i] counts the
	// operations that ended in second i after it (the --report
	// throughput over time, without a goroutine or a shared counter).
	origin time.Time
	perSec []int64
}

// newOpTimer returns a timer whose first operation starts now; it tracks
// latencies from 1 ns to an hour at 3 significant digits.
func newOpTimer() *opTimer {
	now := time.Now()
	return &opTimer{hist: hdrhistogram.New(1, int64(time.Hour), 3), last: now, origin: now}
}

// done ends one operation and starts the next.
func (t *opTimer) done() {
	now := time.Now()
	d := now.Sub(t.last).Nanoseconds()
	_ = t.hist.RecordValue(min(max(d, 1), t.hist.HighestTrackableValue()))
	t.last = now
	sec := int(now.Sub(t.origin) / time.Second)
	for len(t.perSec) <= sec {
		t.perSec = append(t.perSec, 0)
	}
	t.perSec[sec]++
}

// restart starts the next operation now, leaving out the time since the
// last done (work that is not an operation).
// Before the first operation, it also moves the origin of the per-second
// counts.
func (t *opTimer) restart() {
	t.last = time.Now()
	if t.hist.TotalCount() == 0 {
		t.origin = t.last
	}
}

// setLatency puts the latency percentiles of the timers' operations into r,
// and their throughput per second (r.throughput; r.elapsed must be set).
func setLatency(r *result, timers ...*opTimer) {
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	var perSec []int64
	for _, t := range timers {
		h.Merge(t.hist)
		for i, n := range t.perSec {
			for len(perSec) <= i {
				perSec = append(perSec, 0)
			}
			perSec[i] += n
		}
	}
	if h.TotalCount() == 0 {
		return
	}
	r.p50 = time.Duration(h.ValueAtQuantile(50))
	r.p90 = time.Duration(h.ValueAtQuantile(90))
	r.p99 = time.Duration(h.ValueAtQuantile(99))
	r.p999 = time.Duration(h.ValueAtQuantile(99.9))
	r.max = time.Duration(h.Max())
	r.throughput = throughputPoints(perSec, r.elapsed)
}

// throughputPoint is the ops per second of the interval ending at Sec
// seconds after a workload's start.
type throughputPoint struct {
	Sec       float64 `json:"sec"`
	OpsPerSec float64 `json:"ops_per_sec"`
}

// throughputPoints turns per-second counts into rates: whole seconds, then
// the last, partial one over what is left of elapsed (left out when it is a
// sliver, whose rate is noise, unless it is the only one).
func throughputPoints(perSec []int64, elapsed time.Duration) []throughputPoint {
	var pts []throughputPoint
	for i, n := range perSec {
		end := float64(i + 1)
		dur := 1.0
		if i == len(perSec)-1 {
			end = math.Max(elapsed.Seconds(), float64(i))
			dur = end - float64(i)
			if dur < 0.1 && len(perSec) > 1 {
				break
			}
			if dur <= 0 {
				dur, end = 1, float64(i+1)
			}
		}
		pts = append(pts, throughputPoint{Sec: end, OpsPerSec: float64(n) / dur})
	}
	return pts
}

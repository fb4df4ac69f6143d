package main

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// opTimer records the latency of each operation of one goroutine. It reads
// the clock once per operation: an operation's latency runs from the end
// of the one before (or from start), as db_bench's FinishedOps measures.
type opTimer struct {
	hist *hdrhistogram.Histogram
	last time.Time
}

// newOpTimer returns a timer whose first operation starts now; it tracks
// latencies from 1 ns to an hour at 3 significant digits.
func newOpTimer() *opTimer {
	return &opTimer{hist: hdrhistogram.New(1, int64(time.Hour), 3), last: time.Now()}
}

// done ends one operation and starts the next.
func (t *opTimer) done() {
	now := time.Now()
	d := now.Sub(t.last).Nanoseconds()
	_ = t.hist.RecordValue(min(max(d, 1), t.hist.HighestTrackableValue()))
	t.last = now
}

// restart starts the next operation now, leaving out the time since the
// last done (work that is not an operation).
func (t *opTimer) restart() { t.last = time.Now() }

// setLatency puts the p50 and p99 of the timers' operations into r.
func setLatency(r *result, timers ...*opTimer) {
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	for _, t := range timers {
		h.Merge(t.hist)
	}
	if h.TotalCount() == 0 {
		return
	}
	r.p50 = time.Duration(h.ValueAtQuantile(50))
	r.p99 = time.Duration(h.ValueAtQuantile(99))
}

package shale

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// newTestRateLimiter returns a limiter on a clock that moves only by
// Advance: 1000 bytes per second in refills of 100 bytes every 100 ms.
func newTestRateLimiter(opts ...RateLimiterOption) (*RateLimiter, *fakeClock) {
	c := newFakeClock(0)
	r := NewGenericRateLimiter(1000, append([]RateLimiterOption{rateLimiterClock(c)}, opts...)...)
	return r, c
}

// requestAsync makes a request in its own goroutine; the channel is closed
// when it returns.
func requestAsync(r *RateLimiter, bytes int64, pri IOPriority) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Request(bytes, pri)
	}()
	return done
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRateLimiterRefills(t *testing.T) {
	r, c := newTestRateLimiter()
	if q := r.SingleBurstBytes(); q != 100 {
		t.Fatalf("quantum %d, want 100 (1000 B/s, 100 ms)", q)
	}
	// The first request refills: the bucket holds one quantum.
	r.Request(60, IOPriorityLow)
	r.Request(40, IOPriorityLow)
	done := requestAsync(r, 30, IOPriorityLow)
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	if got := r.TotalBytesThrough(IOPriorityTotal); got != 100 {
		t.Fatalf("%d bytes through before the refill, want 100", got)
	}
	// Just short of the refill nothing moves.
	c.Advance(99 * time.Millisecond)
	assertRateWaiters(t, r, IOPriorityLow, 1)
	c.Advance(time.Millisecond)
	<-done
	// 70 bytes are left of the refill: a request up to that passes at once.
	r.Request(70, IOPriorityLow)
	if got, want := r.TotalBytesThrough(IOPriorityLow), int64(200); got != want {
		t.Fatalf("%d bytes through, want %d", got, want)
	}
	if got := r.TotalRequests(IOPriorityLow); got != 4 {
		t.Fatalf("%d requests, want 4", got)
	}

	// Idle for a long time, the bucket still holds one quantum (no burst
	// of ten seconds' worth): 150 bytes wait for a second refill.
	c.Advance(10 * time.Second)
	done = requestAsync(r, 150, IOPriorityLow)
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	if got := r.TotalBytesThrough(IOPriorityLow); got != 300 {
		t.Fatalf("%d bytes through after an idle refill, want 300", got)
	}
	c.Advance(100 * time.Millisecond)
	<-done
	if got := r.TotalBytesThrough(IOPriorityLow); got != 350 {
		t.Fatalf("%d bytes through, want 350", got)
	}
}

func TestRateLimiterSplitsLargeRequests(t *testing.T) {
	r, c := newTestRateLimiter()
	done := requestAsync(r, 350, IOPriorityHigh)
	// 100 at once, then one quantum per refill: 100, 100, 50.
	for i := range 3 {
		waitForRateWaiters(t, r, IOPriorityHigh, 1)
		if isDone(done) {
			t.Fatalf("a 350-byte request returned after %d refills", i)
		}
		if got, want := r.TotalBytesThrough(IOPriorityHigh), int64(100*(i+1)); got != want {
			t.Fatalf("after %d refills: %d bytes through, want %d", i, got, want)
		}
		c.Advance(100 * time.Millisecond)
	}
	<-done
	if got := r.TotalBytesThrough(IOPriorityHigh); got != 350 {
		t.Fatalf("%d bytes through, want 350", got)
	}
	// The request went in pieces of at most one quantum.
	if got := r.TotalRequests(IOPriorityHigh); got != 4 {
		t.Fatalf("%d requests, want 4 (350 bytes in quanta of 100)", got)
	}
	if got := r.TotalRequests(IOPriorityLow); got != 0 {
		t.Fatalf("%d low-priority requests, want 0", got)
	}
}

// TestRateLimiterServesHighPriorityFirst: when requests of both priorities
// wait, a refill serves the high-priority ones first, except every
// fairness-th refill, which serves the low-priority ones first.
func TestRateLimiterServesHighPriorityFirst(t *testing.T) {
	for _, fairness := range []int{10, 2} {
		t.Run(fmt.Sprintf("fairness=%d", fairness), func(t *testing.T) {
			r, c := newTestRateLimiter(RateLimiterFairness(fairness))
			r.Request(100, IOPriorityLow) // refill 1 (served in turn) empties the bucket
			low := requestAsync(r, 100, IOPriorityLow)
			waitForRateWaiters(t, r, IOPriorityLow, 1)
			high := requestAsync(r, 100, IOPriorityHigh)
			waitForRateWaiters(t, r, IOPriorityHigh, 1)
			// Refill 2: one quantum, enough for one of them.
			c.Advance(100 * time.Millisecond)
			first, second := high, low
			firstPri, secondPri := IOPriorityHigh, IOPriorityLow
			if fairness == 2 {
				first, second = low, high
				firstPri, secondPri = IOPriorityLow, IOPriorityHigh
			}
			assertRateWaiters(t, r, firstPri, 0)
			assertRateWaiters(t, r, secondPri, 1)
			<-first
			if isDone(second) {
				t.Fatalf("the %s-priority request was served with the %s one from one quantum", secondPri, firstPri)
			}
			c.Advance(100 * time.Millisecond)
			<-second
			if h, l := r.TotalBytesThrough(IOPriorityHigh), r.TotalBytesThrough(IOPriorityLow); h != 100 || l != 200 {
				t.Fatalf("bytes through: high %d, low %d; want 100, 200", h, l)
			}
		})
	}
}

// TestRateLimiterStarvesLowWhileHighWaits: with high-priority requests
// always waiting, low-priority ones get only the fairness turns.
func TestRateLimiterStarvesLowWhileHighWaits(t *testing.T) {
	r, c := newTestRateLimiter(RateLimiterFairness(3))
	r.Request(100, IOPriorityHigh) // refill 1
	low := requestAsync(r, 100, IOPriorityLow)
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	high := requestAsync(r, 200, IOPriorityHigh) // two quanta: refills 2 and 4
	waitForRateWaiters(t, r, IOPriorityHigh, 1)
	c.Advance(100 * time.Millisecond) // refill 2: high
	assertRateWaiters(t, r, IOPriorityLow, 1)
	waitForRateWaiters(t, r, IOPriorityHigh, 1)
	if isDone(low) || r.TotalBytesThrough(IOPriorityLow) != 0 {
		t.Fatal("refill 2 served low priority while high waited")
	}
	c.Advance(100 * time.Millisecond) // refill 3: the low priority's turn
	assertRateWaiters(t, r, IOPriorityLow, 0)
	assertRateWaiters(t, r, IOPriorityHigh, 1)
	<-low
	if isDone(high) {
		t.Fatal("refill 3 served both")
	}
	c.Advance(100 * time.Millisecond) // refill 4: high
	<-high
}

func TestRateLimiterSetBytesPerSecond(t *testing.T) {
	r, c := newTestRateLimiter()
	r.Request(100, IOPriorityLow)
	if err := r.SetBytesPerSecond(5000); err != nil {
		t.Fatal(err)
	}
	if r.BytesPerSecond() != 5000 || r.SingleBurstBytes() != 500 {
		t.Fatalf("rate %d, quantum %d; want 5000, 500", r.BytesPerSecond(), r.SingleBurstBytes())
	}
	// The next refill brings the new quantum, and requests split by it.
	done := requestAsync(r, 1000, IOPriorityLow)
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	c.Advance(100 * time.Millisecond)
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	if got := r.TotalBytesThrough(IOPriorityLow); got != 600 {
		t.Fatalf("%d bytes through after a refill at the new rate, want 600", got)
	}
	c.Advance(100 * time.Millisecond)
	<-done
	if got := r.TotalRequests(IOPriorityLow); got != 3 {
		t.Fatalf("%d requests, want 3 (100, then 1000 in quanta of 500)", got)
	}
	for _, bad := range []int64{0, -1} {
		if err := r.SetBytesPerSecond(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("SetBytesPerSecond(%d): %v, want ErrInvalidArgument", bad, err)
		}
	}
	if r.BytesPerSecond() != 5000 {
		t.Fatalf("a refused SetBytesPerSecond changed the rate to %d", r.BytesPerSecond())
	}
}

func TestRateLimiterRefillPeriod(t *testing.T) {
	r, c := newTestRateLimiter(RateLimiterRefillPeriod(time.Second))
	if q := r.SingleBurstBytes(); q != 1000 {
		t.Fatalf("quantum %d, want 1000 (1000 B/s, 1 s)", q)
	}
	r.Request(1000, IOPriorityLow)
	done := requestAsync(r, 1, IOPriorityLow)
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	c.Advance(999 * time.Millisecond)
	assertRateWaiters(t, r, IOPriorityLow, 1)
	c.Advance(time.Millisecond)
	<-done
}

func TestRateLimiterCancelledWait(t *testing.T) {
	r, _ := newTestRateLimiter()
	r.Request(100, IOPriorityLow)
	cancel := make(chan struct{})
	errc := make(chan error)
	go func() { errc <- r.request(100, IOPriorityLow, cancel) }()
	waitForRateWaiters(t, r, IOPriorityLow, 1)
	close(cancel)
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("cancelled request: %v, want ErrClosed", err)
	}
	waitForRateWaiters(t, r, IOPriorityLow, 0)
}

func TestRateLimiterOptionValidation(t *testing.T) {
	o := testOptions(vfs.NewMem())
	o.RateLimiter = NewGenericRateLimiter(0)
	if _, err := Open("/db", o); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open with a zero-rate limiter: %v, want ErrInvalidArgument", err)
	}
}

// TestRateLimiterCountsTableWrites: every byte flushes and compactions
// write to tables goes through the limiter, flushes at high priority and
// compactions at low; WAL and MANIFEST bytes do not.
func TestRateLimiterCountsTableWrites(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) { testRateLimiterCountsTableWrites(t, direct, nil) })
	}
	// Blob files written by flushes (high priority), and with separation
	// from L1 on by compactions (low priority), count as their tables do.
	for _, level := range []int{0, 1} {
		t.Run(fmt.Sprintf("blob-files-from-L%d", level), func(t *testing.T) {
			testRateLimiterCountsTableWrites(t, false, func(o *Options) {
				setBlobTestOptions(o)
				o.BlobFileStartingLevel = level
			})
		})
	}
}

func testRateLimiterCountsTableWrites(t *testing.T, direct bool, set func(*Options)) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.UseDirectIOForFlushAndCompaction = direct
	if set != nil {
		set(o)
	}
	rl := NewGenericRateLimiter(1 << 40) // never waits
	o.RateLimiter = rl
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 100)
	for i := range 3000 {
		// Overlapping L0 files, so that compactions merge them.
		if err := d.Put(fmt.Appendf(nil, "key%05d", (i*7919)%1000), val, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	m := d.Metrics()
	if o.EnableBlobFiles && m.Blob.Files == 0 {
		t.Fatal("blob files on, but none is live")
	}
	if m.Flush.BytesWritten == 0 || m.Compact.BytesWritten == 0 {
		t.Fatalf("the workload wrote %d bytes by flushes, %d by compactions; want both", m.Flush.BytesWritten, m.Compact.BytesWritten)
	}
	if got := uint64(rl.TotalBytesThrough(IOPriorityHigh)); got != m.Flush.BytesWritten {
		t.Errorf("high-priority bytes %d, flushes wrote %d", got, m.Flush.BytesWritten)
	}
	if got := uint64(rl.TotalBytesThrough(IOPriorityLow)); got != m.Compact.BytesWritten {
		t.Errorf("low-priority bytes %d, compactions wrote %d", got, m.Compact.BytesWritten)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseDuringStarvedCompaction: a compaction waiting for tokens that
// never come does not keep Close from returning, and its CompactRange
// returns ErrClosed without putting the DB in the error state.
func TestCloseDuringStarvedCompaction(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	h := &recordingHandler{level: slog.LevelError}
	o.Logger = slog.New(h)
	o.DisableAutoCompactions = true
	// The clock never moves: one refill (of 100 MiB) only.
	rl := NewGenericRateLimiter(1<<30, rateLimiterClock(newFakeClock(0)))
	o.RateLimiter = rl
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := range 50 {
			if err := d.Put(fmt.Appendf(nil, "key%03d", i), fmt.Appendf(nil, "v%d", round), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	drainRateLimiter(rl)
	compacted := make(chan error, 1)
	go func() { compacted <- d.CompactRange(nil, nil) }()
	waitForRateWaiters(t, rl, IOPriorityLow, 1)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-compacted; !errors.Is(err, ErrClosed) {
		t.Fatalf("CompactRange during Close: %v, want ErrClosed", err)
	}
	if h.saw("background error") {
		t.Fatal("the stopped compaction set a background error")
	}
	// The data is all there, in the two L0 tables (reopened without
	// automatic compactions, which would otherwise merge them at once).
	ro := testOptions(fs)
	ro.DisableAutoCompactions = true
	d, err = Open("/db", ro)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Get([]byte("key007"), nil); err != nil || string(v) != "v1" {
		t.Fatalf("Get after reopen: %q, %v", v, err)
	}
	if n := d.Metrics().Levels[0].NumFiles; n != 2 {
		t.Fatalf("%d L0 tables after reopen, want 2", n)
	}
}

// BenchmarkRateLimiterRequest measures a request the bucket can grant at
// once: the cost every table write pays under a limit it stays within.
func BenchmarkRateLimiterRequest(b *testing.B) {
	r := NewGenericRateLimiter(1 << 50)
	b.ReportAllocs()
	for b.Loop() {
		r.Request(256<<10, IOPriorityLow)
	}
}

// TestCloseDuringStarvedFlush: a flush waiting for tokens that never come
// does not keep Close from returning; its memtable stays in the WAL, so
// its writes are there after reopening.
func TestCloseDuringStarvedFlush(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	h := &recordingHandler{level: slog.LevelError}
	o.Logger = slog.New(h)
	rl := NewGenericRateLimiter(1<<30, rateLimiterClock(newFakeClock(0)))
	o.RateLimiter = rl
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	drainRateLimiter(rl)
	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- d.Flush() }()
	waitForRateWaiters(t, rl, IOPriorityHigh, 1)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-flushed; !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush during Close: %v, want ErrClosed", err)
	}
	if h.saw("background error") {
		t.Fatal("the stopped flush set a background error")
	}
	d, err = Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "v" {
		t.Fatalf("Get after reopen: %q, %v", v, err)
	}
}

// TestRateLimiterHugeRateQuantum: a rate near MaxInt64 gives a quantum that
// large too, not one overflowed to a byte per refill period.
func TestRateLimiterHugeRateQuantum(t *testing.T) {
	for _, p := range []time.Duration{time.Second, 2 * time.Second} {
		r := NewGenericRateLimiter(math.MaxInt64, RateLimiterRefillPeriod(p))
		if q := r.SingleBurstBytes(); q < 1<<40 {
			t.Errorf("rate MaxInt64, period %v: quantum %d bytes", p, q)
		}
	}
	r := NewGenericRateLimiter(1<<30, RateLimiterRefillPeriod(time.Second))
	if err := r.SetBytesPerSecond(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if q := r.SingleBurstBytes(); q < 1<<40 {
		t.Errorf("SetBytesPerSecond(MaxInt64), period 1s: quantum %d bytes", q)
	}
}

// TestCloseWithWriterStalledBehindStarvedFlush: Close returns while a
// writer is stalled on the memtable limit behind a flush the rate limiter
// starves; the stalled writer fails with ErrClosed.
func TestCloseWithWriterStalledBehindStarvedFlush(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.MaxWriteBufferNumber = 2
	o.DisableAutoCompactions = true
	rl := NewGenericRateLimiter(1<<30, rateLimiterClock(newFakeClock(0)))
	o.RateLimiter = rl
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	drainRateLimiter(rl)
	val := make([]byte, 1<<10)
	writeErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := d.Put([]byte{byte(i >> 8), byte(i)}, val, nil); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	waitForRateWaiters(t, rl, IOPriorityHigh, 1) // the first flush is starved
	// Wait until the writer is stalled (a second memtable full).
	for {
		d.mu.Lock()
		stalled := len(d.mu.mem.queue) >= 1 && d.mu.mem.mutable.ApproximateMemoryUsage() >= o.WriteBufferSize
		d.mu.Unlock()
		if stalled {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close returned %v", err)
	case <-time.After(3 * time.Second):
		t.Fatal("Close hangs: a writer stalled on the memtable limit waits for a flush the rate limiter starves, and bgCancel is closed only after the writers leave")
	}
	if err := <-writeErr; !errors.Is(err, ErrClosed) {
		t.Errorf("stalled writer: %v, want ErrClosed", err)
	}
}

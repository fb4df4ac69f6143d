package shale

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// IOPriority orders the requests waiting in a RateLimiter (RocksDB's
// Env::IOPriority): flushes ask at IOPriorityHigh, compactions at IOPriorityLow.
type IOPriority int

const (
	// IOPriorityLow is the priority of compaction writes.
	IOPriorityLow IOPriority = iota
	// IOPriorityHigh is the priority of flush writes.
	IOPriorityHigh
	// IOPriorityTotal makes TotalBytesThrough and TotalRequests sum over
	// the priorities (RocksDB's IO_TOTAL); it is not a priority to request at.
	IOPriorityTotal
)

// String names the priority: low, high or total.
func (p IOPriority) String() string {
	switch p {
	case IOPriorityLow:
		return "low"
	case IOPriorityHigh:
		return "high"
	case IOPriorityTotal:
		return "total"
	}
	return fmt.Sprintf("IOPriority(%d)", int(p))
}

// Defaults of NewGenericRateLimiter, as RocksDB's.
const (
	defaultRefillPeriod = 100 * time.Millisecond
	defaultFairness     = 10
)

// RateLimiter is a token bucket that bounds the bytes per second written
// through it (RocksDB's GenericRateLimiter). Options.RateLimiter passes the
// table writes of flushes and compactions through one; a RateLimiter may be
// shared by several DBs, and all its methods are safe for concurrent use.
//
// Every refill period the bucket gains the period's share of the rate (the
// quantum, SingleBurstBytes), holding at most about two quanta, so an idle
// limiter allows no large burst. A request takes what is in the bucket and
// waits for the rest; waiting requests are served at each refill, high
// priority first, except that every fairness-th refill serves low priority
// first so that compactions are not starved by a stream of flushes (RocksDB
// draws that turn at random with chance 1/fairness; a fixed turn gives the
// same share and can be tested). A request larger than the quantum is split
// into quantum-sized requests that queue one after another, so one large
// write cannot hold the bucket for long against others of its priority.
type RateLimiter struct {
	clock        Clock
	refillPeriod time.Duration
	fairness     uint64

	mu          sync.Mutex
	bytesPerSec int64
	quantum     int64
	// available is the bucket. It is 0 whenever a request waits: a refill
	// hands out all it can, and a new request takes what is left first.
	available  int64
	nextRefill time.Time
	refills    uint64
	queues     [2][]*rateRequest // by priority
	// timer, armed while requests wait, refills at nextRefill.
	timer        ClockTimer
	bytesThrough [2]int64
	requests     [2]int64
}

// rateRequest is a request (of at most one quantum) waiting for tokens.
type rateRequest struct {
	remaining int64
	granted   chan struct{} // closed when remaining reaches 0
}

// RateLimiterOption changes a default of NewGenericRateLimiter.
type RateLimiterOption func(*RateLimiter)

// RateLimiterRefillPeriod sets how often the bucket is refilled (RocksDB's
// refill_period_us). Default 100 ms; a shorter period means smaller bursts.
func RateLimiterRefillPeriod(d time.Duration) RateLimiterOption {
	return func(r *RateLimiter) {
		if d > 0 {
			r.refillPeriod = d
		}
	}
}

// RateLimiterFairness sets how often low-priority requests are served before
// high-priority ones: at every n-th refill (RocksDB's fairness). Default 10.
func RateLimiterFairness(n int) RateLimiterOption {
	return func(r *RateLimiter) {
		if n > 0 {
			r.fairness = uint64(n)
		}
	}
}

// rateLimiterClock makes the limiter tell time by c (tests).
func rateLimiterClock(c Clock) RateLimiterOption {
	return func(r *RateLimiter) { r.clock = c }
}

// NewGenericRateLimiter returns a RateLimiter that lets bytesPerSec bytes
// through per second (RocksDB's NewGenericRateLimiter). bytesPerSec must be
// positive: Open refuses a limiter without a rate.
func NewGenericRateLimiter(bytesPerSec int64, opts ...RateLimiterOption) *RateLimiter {
	r := &RateLimiter{clock: SystemClock, refillPeriod: defaultRefillPeriod, fairness: defaultFairness}
	for _, o := range opts {
		o(r)
	}
	r.bytesPerSec = bytesPerSec
	r.quantum = r.quantumFor(bytesPerSec)
	// The first request refills the bucket.
	r.nextRefill = r.clock.Now()
	return r
}

// maxQuantum bounds a refill, so that the bucket (under two quanta) never
// overflows however high the rate.
const maxQuantum = math.MaxInt64 / 4

// quantumFor is the refill of one period at rate bytesPerSec (at least 1,
// at most maxQuantum).
func (r *RateLimiter) quantumFor(bytesPerSec int64) int64 {
	if bytesPerSec <= 0 {
		return 0
	}
	period := int64(r.refillPeriod)
	var q int64
	if bytesPerSec <= math.MaxInt64/period {
		q = bytesPerSec * period / int64(time.Second)
	} else if f := float64(bytesPerSec) * r.refillPeriod.Seconds(); f < maxQuantum {
		q = int64(f)
	} else {
		q = maxQuantum
	}
	q = min(q, maxQuantum)
	return max(q, 1)
}

// SetBytesPerSecond changes the rate, from the next refill on (RocksDB's
// SetBytesPerSecond). It fails, changing nothing, unless bytesPerSec > 0.
func (r *RateLimiter) SetBytesPerSecond(bytesPerSec int64) error {
	if bytesPerSec <= 0 {
		return base.InvalidArgumentf("shale: RateLimiter.SetBytesPerSecond needs a positive rate, got %d", bytesPerSec)
	}
	r.mu.Lock()
	r.bytesPerSec = bytesPerSec
	r.quantum = r.quantumFor(bytesPerSec)
	r.mu.Unlock()
	return nil
}

// BytesPerSecond returns the rate.
func (r *RateLimiter) BytesPerSecond() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytesPerSec
}

// SingleBurstBytes returns the quantum: what one refill adds, and the
// largest piece a request is split into (RocksDB's GetSingleBurstBytes).
func (r *RateLimiter) SingleBurstBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.quantum
}

// TotalBytesThrough returns the bytes granted at priority pri since the
// limiter was made (IOPriorityTotal: at every priority).
func (r *RateLimiter) TotalBytesThrough(pri IOPriority) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pri == IOPriorityTotal {
		return r.bytesThrough[0] + r.bytesThrough[1]
	}
	return r.bytesThrough[priIndex(pri)]
}

// TotalRequests counts the requests made at priority pri (IOPriorityTotal:
// at every priority); a request split into n pieces counts n, as in RocksDB,
// whose callers split them.
func (r *RateLimiter) TotalRequests(pri IOPriority) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pri == IOPriorityTotal {
		return r.requests[0] + r.requests[1]
	}
	return r.requests[priIndex(pri)]
}

// priIndex maps a priority to its queue: anything but high is low.
func priIndex(pri IOPriority) int {
	if pri == IOPriorityHigh {
		return 1
	}
	return 0
}

// Request blocks until bytes bytes may be written at priority pri.
func (r *RateLimiter) Request(bytes int64, pri IOPriority) {
	_ = r.request(bytes, pri, nil)
}

// errRateLimitCancelled is what a table write returns when its DB began
// closing while it waited for tokens.
var errRateLimitCancelled = fmt.Errorf("shale: a table write waiting for Options.RateLimiter was stopped by Close: %w", ErrClosed)

// request is Request, giving up with errRateLimitCancelled once cancel is
// closed (a nil cancel never is). Tokens granted to a request that gives up
// are not returned: they were the caller's turn.
func (r *RateLimiter) request(bytes int64, pri IOPriority, cancel <-chan struct{}) error {
	p := priIndex(pri)
	for bytes > 0 {
		r.mu.Lock()
		if r.quantum <= 0 {
			// No rate (refused by Open; possible only outside a DB).
			r.requests[p]++
			r.bytesThrough[p] += bytes
			r.mu.Unlock()
			return nil
		}
		chunk := min(bytes, r.quantum)
		bytes -= chunk
		r.requests[p]++
		now := r.clock.Now()
		if r.available < chunk && !now.Before(r.nextRefill) {
			// Idle past a refill: waiting requests are served first.
			r.refillLocked(now)
		}
		n := min(r.available, chunk)
		r.available -= n
		r.bytesThrough[p] += n
		chunk -= n
		if chunk == 0 {
			r.mu.Unlock()
			continue
		}
		req := &rateRequest{remaining: chunk, granted: make(chan struct{})}
		r.queues[p] = append(r.queues[p], req)
		r.armLocked(now)
		r.mu.Unlock()
		select {
		case <-req.granted:
		case <-cancel:
			r.mu.Lock()
			if i := slices.Index(r.queues[p], req); i >= 0 {
				r.queues[p] = slices.Delete(r.queues[p], i, i+1)
			}
			r.mu.Unlock()
			return errRateLimitCancelled
		}
	}
	return nil
}

// refillLocked adds a quantum to the bucket (unless it holds one already)
// and hands the tokens to the waiting requests in priority order.
func (r *RateLimiter) refillLocked(now time.Time) {
	r.nextRefill = now.Add(r.refillPeriod)
	if r.available < r.quantum {
		r.available += r.quantum
	}
	r.refills++
	order := [2]int{1, 0}
	if r.refills%r.fairness == 0 {
		order = [2]int{0, 1}
	}
	for _, p := range order {
		q := r.queues[p]
		for len(q) > 0 && r.available > 0 {
			req := q[0]
			n := min(req.remaining, r.available)
			req.remaining -= n
			r.available -= n
			r.bytesThrough[p] += n
			if req.remaining > 0 {
				break // the bucket is empty; the rest waits for the next refill
			}
			close(req.granted)
			q[0] = nil
			q = q[1:]
		}
		r.queues[p] = q
	}
}

func (r *RateLimiter) waitingLocked() int { return len(r.queues[0]) + len(r.queues[1]) }

// armLocked makes sure a timer will refill at nextRefill.
func (r *RateLimiter) armLocked(now time.Time) {
	if r.timer == nil {
		r.timer = r.clock.AfterFunc(r.nextRefill.Sub(now), r.onTimer)
	}
}

func (r *RateLimiter) onTimer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	now := r.clock.Now()
	if !now.Before(r.nextRefill) {
		r.refillLocked(now)
	}
	if r.waitingLocked() > 0 {
		r.armLocked(now)
	}
}

// rateLimitedFile is a table file whose writes first take tokens from a
// RateLimiter (Options.RateLimiter).
type rateLimitedFile struct {
	vfs.File
	limiter *RateLimiter
	pri     IOPriority
	cancel  <-chan struct{}
}

func (f *rateLimitedFile) Write(p []byte) (int, error) {
	if err := f.limiter.request(int64(len(p)), f.pri, f.cancel); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// Alignment reports the wrapped file's, as a wrapping file must (vfs.Aligner).
func (f *rateLimitedFile) Alignment() int { return vfs.Alignment(f.File) }

package latencyfs

import (
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/vfs"
)

// Options configure New. The zero value adds no delay.
type Options struct {
	// ReadLatency is the fixed part of every read's delay: the access time
	// of the simulated device (e.g. 500µs for remote flash).
	ReadLatency time.Duration
	// ReadJitter spreads each read's latency uniformly over
	// [ReadLatency-ReadJitter, ReadLatency+ReadJitter] (never below zero).
	ReadJitter time.Duration
	// ReadBandwidth, in bytes per second, is the transfer rate the device's
	// reads share; 0 means unlimited.
	ReadBandwidth int64
	// WriteLatency delays every Write by this much; 0 (the default) lets
	// writes, syncs and metadata operations through undelayed.
	WriteLatency time.Duration
	// Seed drives the jitter, so that a run can be repeated exactly.
	Seed uint64
}

// Stats counts the delays an FS applied.
type Stats struct {
	// ReadsDelayed is the number of reads given a nonzero delay.
	ReadsDelayed uint64
	// TotalDelay is the sum of those reads' simulated delays (from
	// submission to deadline), whether or not they overlapped.
	TotalDelay time.Duration
}

// FS wraps a vfs.FS and delays the reads of its files as a slow or remote
// device would: each read costs a latency, which concurrent reads pay in
// parallel, plus its transfer time at ReadBandwidth, which concurrent reads
// share. It stands in for remote flash in benchmarks of the async read
// path. Safe for concurrent use.
type FS struct {
	vfs.FS
	o Options

	// now and sleep are the clock; tests replace them to compute deadlines
	// without waiting.
	now   func() time.Time
	sleep func(time.Duration)

	mu struct {
		sync.Mutex
		rng *rand.Rand
		// busyUntil is when the simulated device finishes the transfers
		// already reserved; a new transfer starts no earlier.
		busyUntil time.Time
		// credit is what the transfers reserved so far were rounded up by,
		// in byte-nanoseconds per second (below ReadBandwidth): each
		// transfer is rounded up to whole nanoseconds, less this credit,
		// so N transfers of S bytes take ceil(N*S/ReadBandwidth): never
		// less than the rate allows, and under a nanosecond more.
		credit int64
	}
	readsDelayed atomic.Uint64
	delayNanos   atomic.Int64
	// readLatency is o.ReadLatency, or what SetReadLatency set since.
	readLatency atomic.Int64
}

// New returns an FS over fs that delays reads as o says.
func New(fs vfs.FS, o Options) *FS {
	l := &FS{FS: fs, o: o, now: time.Now, sleep: defaultSleep}
	l.mu.rng = rand.New(rand.NewPCG(o.Seed, o.Seed^0x1a7e9c1))
	l.readLatency.Store(int64(o.ReadLatency))
	return l
}

// SetReadLatency changes ReadLatency for the reads issued from now on
// (Options then reports the new value): a test opens a database fast,
// then makes its device slow.
func (l *FS) SetReadLatency(d time.Duration) { l.readLatency.Store(int64(d)) }

// Options returns the options the FS was made with.
func (l *FS) Options() Options {
	o := l.o
	o.ReadLatency = time.Duration(l.readLatency.Load())
	return o
}

// Stats returns the delays applied so far.
func (l *FS) Stats() Stats {
	return Stats{
		ReadsDelayed: l.readsDelayed.Load(),
		TotalDelay:   time.Duration(l.delayNanos.Load()),
	}
}

// readDeadline reserves the simulated device for a read of n bytes issued
// now and returns when that read completes: its transfer is queued behind
// the transfers already reserved (the "busy until" clock advances by
// n/ReadBandwidth), and its latency runs in parallel with every other
// read's, after its transfer.
func (l *FS) readDeadline(n int) time.Time {
	now := l.now()
	lat := time.Duration(l.readLatency.Load())
	if lat <= 0 && l.o.ReadJitter <= 0 && l.o.ReadBandwidth <= 0 {
		return now
	}
	end := now
	l.mu.Lock()
	if l.o.ReadJitter > 0 {
		// Uniform in [-jitter, +jitter].
		lat += time.Duration(l.mu.rng.Int64N(2*int64(l.o.ReadJitter)+1)) - l.o.ReadJitter
	}
	if l.o.ReadBandwidth > 0 && n > 0 {
		start := now
		if l.mu.busyUntil.After(start) {
			start = l.mu.busyUntil
		}
		bw := l.o.ReadBandwidth
		need := int64(n)*int64(time.Second) - l.mu.credit
		ns := (need + bw - 1) / bw
		l.mu.credit = ns*bw - need
		end = start.Add(time.Duration(ns))
		l.mu.busyUntil = end
	}
	l.mu.Unlock()
	deadline := end.Add(max(lat, 0))
	if d := deadline.Sub(now); d > 0 {
		l.readsDelayed.Add(1)
		l.delayNanos.Add(int64(d))
	}
	return deadline
}

// sleepUntil waits until t on the FS's clock.
func (l *FS) sleepUntil(t time.Time) {
	if d := t.Sub(l.now()); d > 0 {
		l.sleep(d)
	}
}

func (l *FS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &latencyFile{File: f, fs: l}, nil
}

// Create implements vfs.FS; the file's reads are delayed.
func (l *FS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return l.wrap(l.FS.Create(name, opts...))
}

// Open implements vfs.FS; the file's reads are delayed.
func (l *FS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return l.wrap(l.FS.Open(name, opts...))
}

// OpenReadWrite implements vfs.FS; the file's reads are delayed.
func (l *FS) OpenReadWrite(name string) (vfs.File, error) {
	return l.wrap(l.FS.OpenReadWrite(name))
}

// latencyFile delays its reads (and, with WriteLatency, its writes) by its
// FS's model. The AsyncReader that WrapAsyncReader returns reads the
// wrapped file natively and applies the same delay itself.
type latencyFile struct {
	vfs.File
	fs *FS
}

// ReadAt reads from the wrapped file, then sleeps until the read's
// simulated completion.
func (f *latencyFile) ReadAt(p []byte, off int64) (int, error) {
	deadline := f.fs.readDeadline(len(p))
	n, err := f.File.ReadAt(p, off)
	f.fs.sleepUntil(deadline)
	return n, err
}

// ReadAtDeadline implements vfs.DeadlineReaderAt, as a device with a
// timeout would: a read whose simulated completion falls after deadline
// (not zero) waits only until the deadline and returns an error wrapping
// vfs.ErrDeadlineExceeded, without its bytes.
func (f *latencyFile) ReadAtDeadline(p []byte, off int64, deadline time.Time) (int, error) {
	done := f.fs.readDeadline(len(p))
	if deadline.IsZero() || !deadline.Before(done) {
		n, err := f.File.ReadAt(p, off)
		f.fs.sleepUntil(done)
		return n, err
	}
	f.fs.sleepUntil(deadline)
	return 0, vfs.TimeoutError("read", f, off)
}

// Write sleeps WriteLatency (if set), then writes.
func (f *latencyFile) Write(p []byte) (int, error) {
	if d := f.fs.o.WriteLatency; d > 0 {
		f.fs.sleep(d)
	}
	return f.File.Write(p)
}

// WriteZeros implements vfs.ZeroWriter, delayed as a write.
func (f *latencyFile) WriteZeros(off, n int64) error {
	if d := f.fs.o.WriteLatency; d > 0 {
		f.fs.sleep(d)
	}
	return vfs.WriteZeros(f.File, off, n)
}

// Alignment implements vfs.Aligner: the wrapped file's direct-IO alignment.
func (f *latencyFile) Alignment() int { return vfs.Alignment(f.File) }

// Link implements vfs.Linker, undelayed like every metadata operation: it
// links through the wrapped FS, or returns an error wrapping
// vfs.ErrLinkUnsupported when that FS cannot link.
func (l *FS) Link(oldname, newname string) error {
	if lk, ok := l.FS.(vfs.Linker); ok {
		return lk.Link(oldname, newname)
	}
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: vfs.ErrLinkUnsupported}
}

var _ vfs.Linker = (*FS)(nil)

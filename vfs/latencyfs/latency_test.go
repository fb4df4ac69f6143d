package latencyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// fakeClock is a clock that moves only when slept on, so deadlines and
// delays can be checked exactly.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	slept  []time.Duration
	sleeps int
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.sleeps++
	c.t = c.t.Add(d)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFakeLatencyFS(fs vfs.FS, o Options) (*FS, *fakeClock) {
	l := New(fs, o)
	c := &fakeClock{t: time.Unix(1000, 0)}
	l.now, l.sleep = c.now, c.sleep
	return l, c
}

func writeFixture(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLatencyFSDataIdentical reads random ranges through the latency FS and
// the inner FS and compares bytes, counts and errors.
func TestLatencyFSDataIdentical(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := vfs.NewMem()
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	writeFixture(t, mem, "/f", data)
	lfs, clock := newFakeLatencyFS(mem, Options{ReadLatency: 300 * time.Microsecond, ReadJitter: 100 * time.Microsecond, Seed: seed})
	lf, err := lfs.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := mem.Open("/f")
	for i := 0; i < 500; i++ {
		off := rng.Int64N(int64(len(data)) + 100)
		n := rng.IntN(5000)
		a, b := make([]byte, n), make([]byte, n)
		na, ea := lf.ReadAt(a, off)
		nb, eb := inner.ReadAt(b, off)
		if na != nb || !errors.Is(ea, eb) && !(ea == nil && eb == nil) || !bytes.Equal(a[:na], b[:nb]) {
			t.Fatalf("read %d (off %d, len %d): latency FS gave (%d, %v), inner (%d, %v)", i, off, n, na, ea, nb, eb)
		}
	}
	if clock.sleeps != 500 {
		t.Fatalf("%d sleeps for 500 reads", clock.sleeps)
	}
	var total time.Duration
	for _, d := range clock.slept {
		if d < 200*time.Microsecond || d > 400*time.Microsecond {
			t.Fatalf("slept %v, outside 300µs±100µs", d)
		}
		total += d
	}
	if s := lfs.Stats(); s.ReadsDelayed != 500 || s.TotalDelay != total {
		t.Fatalf("stats %+v, want 500 reads and %v", s, total)
	}
}

// TestLatencyFSDeadlines checks the device model: transfers queue behind one
// another at the bandwidth, latencies overlap.
func TestLatencyFSDeadlines(t *testing.T) {
	const lat = 500 * time.Microsecond
	lfs, clock := newFakeLatencyFS(vfs.NewMem(), Options{ReadLatency: lat, ReadBandwidth: 1_000_000}) // 1 byte/µs
	t0 := clock.now()
	// Four reads of 1000 bytes issued at once: each transfer takes 1ms, so
	// they finish transferring at 1, 2, 3, 4 ms and complete 500µs later.
	for i := 1; i <= 4; i++ {
		got := lfs.readDeadline(1000).Sub(t0)
		if want := time.Duration(i)*time.Millisecond + lat; got != want {
			t.Fatalf("read %d: deadline +%v, want +%v", i, got, want)
		}
	}
	// Issued while the device is still busy (at +2ms), a read queues
	// behind the reserved transfers (which end at +4ms).
	clock.advance(2 * time.Millisecond)
	if got, want := lfs.readDeadline(500).Sub(t0), 4500*time.Microsecond+lat; got != want {
		t.Fatalf("queued read: deadline +%v, want +%v", got, want)
	}
	// Once the device is idle, a read pays only its own transfer and
	// latency.
	clock.advance(10 * time.Millisecond)
	if got, want := lfs.readDeadline(2000).Sub(clock.now()), 2*time.Millisecond+lat; got != want {
		t.Fatalf("idle read: delay %v, want %v", got, want)
	}

	// Without a bandwidth cap, concurrent reads each pay one latency.
	lfs, clock = newFakeLatencyFS(vfs.NewMem(), Options{ReadLatency: lat})
	t0 = clock.now()
	for i := 0; i < 64; i++ {
		if got := lfs.readDeadline(4096).Sub(t0); got != lat {
			t.Fatalf("read %d: deadline +%v, want +%v", i, got, lat)
		}
	}
	if s := lfs.Stats(); s.ReadsDelayed != 64 || s.TotalDelay != 64*lat {
		t.Fatalf("stats %+v", s)
	}

	// The zero options delay nothing.
	lfs, clock = newFakeLatencyFS(vfs.NewMem(), Options{})
	if got := lfs.readDeadline(1 << 20); !got.Equal(clock.now()) {
		t.Fatalf("zero options: deadline %v after now", got.Sub(clock.now()))
	}
	if s := lfs.Stats(); s.ReadsDelayed != 0 {
		t.Fatalf("zero options counted %d delayed reads", s.ReadsDelayed)
	}
}

// TestLatencyFSConcurrentReads runs concurrent reads under a bandwidth cap
// on the fake clock: whatever the interleaving, the deadlines handed out
// are the distinct multiples of the transfer time, plus the latency. The
// reads are the file's ReadAts on the portable reader's goroutines, or
// those of WrapAsyncReader's reader, which reserves the deadlines itself.
func TestLatencyFSConcurrentReads(t *testing.T) {
	const lat = 100 * time.Microsecond
	mem := vfs.NewMem()
	writeFixture(t, mem, "/f", make([]byte, 1<<16))
	for _, wrapped := range []bool{false, true} {
		lfs := New(mem, Options{ReadLatency: lat, ReadBandwidth: 1_000_000_000}) // 1 byte/ns
		t0 := time.Unix(5000, 0)
		lfs.now = func() time.Time { return t0 } // time stands still
		var mu sync.Mutex
		seen := map[time.Duration]bool{}
		lfs.sleep = func(d time.Duration) {
			mu.Lock()
			seen[d] = true
			mu.Unlock()
		}
		f, err := lfs.Open("/f")
		if err != nil {
			t.Fatal(err)
		}
		r := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true, QueueDepth: 16})
		if wrapped {
			r = lfs.WrapAsyncReader(r)
		}
		reqs := make([]vfs.ReadRequest, 32)
		for i := range reqs {
			reqs[i] = vfs.ReadRequest{File: f, Off: int64(i) * 1024, Buf: make([]byte, 1024)}
		}
		if err := r.MultiRead(reqs); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 32 {
			t.Fatalf("wrapped %v: %d distinct delays for 32 reads", wrapped, len(seen))
		}
		for i := 1; i <= 32; i++ {
			if d := time.Duration(i)*1024 + lat; !seen[d] {
				t.Fatalf("wrapped %v: no read completed at +%v", wrapped, d)
			}
		}
	}
}

// TestLatencyFSJitterSeeded checks the jitter is reproducible from the seed,
// spread over its whole range, and different for another seed.
func TestLatencyFSJitterSeeded(t *testing.T) {
	o := Options{ReadLatency: time.Millisecond, ReadJitter: 200 * time.Microsecond, Seed: 99}
	delays := func(o Options) []time.Duration {
		lfs, clock := newFakeLatencyFS(vfs.NewMem(), o)
		out := make([]time.Duration, 2000)
		for i := range out {
			out[i] = lfs.readDeadline(4096).Sub(clock.now())
		}
		return out
	}
	a, b := delays(o), delays(o)
	o.Seed = 100
	c := delays(o)
	same := 0
	var lo, hi, sum time.Duration = time.Hour, 0, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("delay %d differs with the same seed: %v vs %v", i, a[i], b[i])
		}
		if a[i] == c[i] {
			same++
		}
		lo, hi, sum = min(lo, a[i]), max(hi, a[i]), sum+a[i]
	}
	if same > 20 {
		t.Fatalf("%d of %d delays equal under another seed", same, len(a))
	}
	if lo < 800*time.Microsecond || hi > 1200*time.Microsecond {
		t.Fatalf("delays span [%v, %v], outside 1ms±200µs", lo, hi)
	}
	if lo > 820*time.Microsecond || hi < 1180*time.Microsecond {
		t.Fatalf("delays span only [%v, %v] of 1ms±200µs", lo, hi)
	}
	if mean := sum / time.Duration(len(a)); mean < 980*time.Microsecond || mean > 1020*time.Microsecond {
		t.Fatalf("mean delay %v, want about 1ms", mean)
	}
	// Jitter larger than the latency never makes a negative delay.
	lfs, clock := newFakeLatencyFS(vfs.NewMem(), Options{ReadLatency: 10 * time.Microsecond, ReadJitter: time.Millisecond, Seed: 3})
	for i := 0; i < 1000; i++ {
		if d := lfs.readDeadline(1).Sub(clock.now()); d < 0 {
			t.Fatalf("negative delay %v", d)
		}
	}
}

// TestLatencyFSWritesPassThrough checks writes, syncs and metadata are not
// delayed unless WriteLatency asks, and that Create'd files delay reads.
func TestLatencyFSWritesPassThrough(t *testing.T) {
	mem := vfs.NewMem()
	lfs, clock := newFakeLatencyFS(mem, Options{ReadLatency: time.Millisecond})
	f, err := lfs.Create("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := lfs.Rename("/w", "/v"); err != nil {
		t.Fatal(err)
	}
	if _, err := lfs.Stat("/v"); err != nil {
		t.Fatal(err)
	}
	if clock.sleeps != 0 {
		t.Fatalf("writes and metadata slept %d times", clock.sleeps)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 0); n != 5 || err != nil || string(buf) != "hello" {
		t.Fatalf("read back %q %d %v", buf, n, err)
	}
	if clock.sleeps != 1 || clock.slept[0] != time.Millisecond {
		t.Fatalf("read of a created file: sleeps %v", clock.slept)
	}
	// A read past the end still pays the latency and returns io.EOF.
	if _, err := f.ReadAt(buf, 100); err != io.EOF {
		t.Fatalf("read past end: %v", err)
	}
	lfs, clock = newFakeLatencyFS(mem, Options{WriteLatency: 250 * time.Microsecond})
	g, err := lfs.OpenReadWrite("/v")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	if clock.sleeps != 1 || clock.slept[0] != 250*time.Microsecond {
		t.Fatalf("WriteLatency: sleeps %v", clock.slept)
	}
	if sz, _ := g.Size(); sz != 6 {
		t.Fatalf("size %d after append, want 6", sz)
	}
	if vfs.Alignment(g) != 1 {
		t.Fatalf("alignment of a MemFS file through the latency FS: %d", vfs.Alignment(g))
	}
}

// TestLatencyFSReadAllocs checks the wrapper adds no allocation per read.
func TestLatencyFSReadAllocs(t *testing.T) {
	mem := vfs.NewMem()
	writeFixture(t, mem, "/f", make([]byte, 8192))
	lfs, _ := newFakeLatencyFS(mem, Options{ReadLatency: time.Microsecond, ReadJitter: time.Microsecond / 2, ReadBandwidth: 1 << 30})
	lf, _ := lfs.Open("/f")
	inner, _ := mem.Open("/f")
	buf := make([]byte, 4096)
	base := testing.AllocsPerRun(100, func() { inner.ReadAt(buf, 100) })
	got := testing.AllocsPerRun(100, func() { lf.ReadAt(buf, 100) })
	if got > base {
		t.Fatalf("latency FS read: %v allocs, inner read %v", got, base)
	}
}

// BenchmarkLatencyFSSleep measures how close real sleeps come to the
// simulated latency: overshoot-µs is the mean time past the deadline at
// which ReadAt returns, for one reader and for 64 concurrent readers.
func BenchmarkLatencyFSSleep(b *testing.B) {
	mem := vfs.NewMem()
	f, _ := mem.Create("/f")
	f.Write(make([]byte, 4096))
	for _, conc := range []int{1, 64} {
		for _, lat := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond} {
			b.Run(fmt.Sprintf("readers=%d/latency=%v", conc, lat), func(b *testing.B) {
				lfs := New(mem, Options{ReadLatency: lat})
				lf, _ := lfs.Open("/f")
				var mu sync.Mutex
				var over time.Duration
				for b.Loop() {
					var wg sync.WaitGroup
					start := time.Now()
					for range conc {
						wg.Go(func() {
							var buf [4096]byte
							lf.ReadAt(buf[:], 0)
							d := time.Since(start) - lat
							mu.Lock()
							over += d
							mu.Unlock()
						})
					}
					wg.Wait()
				}
				b.ReportMetric(float64(over.Nanoseconds())/1e3/float64(b.N*conc), "overshoot-µs")
			})
		}
	}
}

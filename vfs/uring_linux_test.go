package vfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// platformAsyncTestReaders adds the io_uring reader, with and without SQ
// polling, to the shared AsyncReader tests.
func platformAsyncTestReaders() []asyncTestReader {
	return []asyncTestReader{
		{name: "io_uring", make: func(t *testing.T, o AsyncOptions) AsyncReader { return newTestURing(t, o) }},
		{name: "io_uring-sqpoll", make: func(t *testing.T, o AsyncOptions) AsyncReader {
			o.SQPoll = true
			return newTestURing(t, o)
		}},
	}
}

// newTestURing makes an io_uring reader or skips the test with the reason
// the kernel gave.
func newTestURing(t *testing.T, o AsyncOptions) *uringReader {
	t.Helper()
	if o.QueueDepth == 0 {
		o.QueueDepth = 128
	}
	r, err := newURingReader(o)
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	return r
}

func TestURingLayouts(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_params", unsafe.Sizeof(uringParams{}), 120},
		{"io_uring_sqe", unsafe.Sizeof(uringSQE{}), 64},
		{"io_uring_cqe", unsafe.Sizeof(uringCQE{}), 16},
		{"io_uring_sqe.user_data offset", unsafe.Offsetof(uringSQE{}.userData), 32},
		{"io_uring_params.sq_off offset", unsafe.Offsetof(uringParams{}.sqOff), 40},
		{"io_uring_params.cq_off offset", unsafe.Offsetof(uringParams{}.cqOff), 80},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestURingDefaultKind checks that NewAsyncReader picks io_uring when the
// kernel offers it.
func TestURingDefaultKind(t *testing.T) {
	newTestURing(t, AsyncOptions{}).Close() // skips if unavailable
	var logged []string
	r := NewAsyncReader(AsyncOptions{Logf: func(f string, args ...any) { logged = append(logged, f) }})
	defer r.Close()
	if r.Kind() != "io_uring" || len(logged) != 0 {
		t.Fatalf("Kind %q, logged %q; want io_uring and no log", r.Kind(), logged)
	}
}

// writeTestFile writes size random bytes to a new file and opens it.
func writeTestFile(t testing.TB, size int, seed uint64) (File, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	name := filepath.Join(testDir(t), "data")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// TestURingStats checks that a batch that fits the ring costs one
// io_uring_enter carrying one SQE per read.
func TestURingStats(t *testing.T) {
	r := newTestURing(t, AsyncOptions{QueueDepth: 64})
	defer r.Close()
	f, data := writeTestFile(t, 1<<20, 1)
	reqs := make([]ReadRequest, 64)
	for i := range reqs {
		reqs[i] = ReadRequest{File: f, Off: int64(i) * 4096 * 3, Buf: make([]byte, 4096)}
	}
	if err := r.MultiRead(reqs); err != nil {
		t.Fatal(err)
	}
	if err := checkAll(1, []asyncTestFile{{f, data}}, reqs); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	want := AsyncStats{Reads: 64, BytesRead: 64 * 4096, Batches: 1, Enters: 1, SQEs: 64}
	if st != want {
		t.Fatalf("Stats %+v, want %+v", st, want)
	}
}

// TestURingSmallQueueDepth sends batches of 100 through a ring of 4 from
// several goroutines: Submit must wait for free slots, never overflow the
// completion queue, and never deadlock.
func TestURingSmallQueueDepth(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	files := makeAsyncTestFiles(t, rng)
	for _, sqpoll := range []bool{false, true} {
		r := newTestURing(t, AsyncOptions{QueueDepth: 4, SQPoll: sqpoll})
		var wg sync.WaitGroup
		errc := make(chan error, 4)
		for g := range 4 {
			grng := rand.New(rand.NewPCG(seed, uint64(g)+20))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					reqs := randomRequests(grng, files, 100)
					r.Submit(reqs).Wait()
					if err := checkAll(seed, files, reqs); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if n := r.ring.overflowed(); n != 0 {
			t.Fatalf("sqpoll %v: %d CQ overflows", sqpoll, n)
		}
		r.slotMu.Lock()
		hw := r.maxInflight
		r.slotMu.Unlock()
		if hw > 4 || hw == 0 {
			t.Fatalf("sqpoll %v: %d reads in flight at most, want 1..4", sqpoll, hw)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestURingContinuation caps each SQE at 1000 bytes, so that every longer
// read continues in further SQEs as a short read does.
func TestURingContinuation(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	files := makeAsyncTestFiles(t, rng)
	r := newTestURing(t, AsyncOptions{QueueDepth: 8})
	defer r.Close()
	r.maxSQELen = 1000
	for range 10 {
		reqs := randomRequests(rng, files, 50)
		r.Submit(reqs).Wait()
		if err := checkAll(seed, files, reqs); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.SQEs <= st.Reads/2 {
		t.Fatalf("Stats %+v: expected continuation SQEs", st)
	}
}

// TestURingAllocs checks that Submit+Wait+Release of 64 reads does not
// allocate once warm.
func TestURingAllocs(t *testing.T) {
	r := newTestURing(t, AsyncOptions{QueueDepth: 64})
	defer r.Close()
	f, _ := writeTestFile(t, 1<<20, 2)
	reqs := make([]ReadRequest, 64)
	for i := range reqs {
		reqs[i] = ReadRequest{File: f, Off: int64(i) * 8192, Buf: make([]byte, 4096)}
	}
	allocs := testing.AllocsPerRun(50, func() {
		if err := r.MultiRead(reqs); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per batch of 64, want at most 1", allocs)
	}
}

// evictRange drops [off, off+n) of an OS file from the page cache
// (posix_fadvise DONTNEED; the pages must be clean) and reports whether it
// could.
func evictRange(f File, off, n int64) bool {
	of, ok := f.(*osFile)
	return ok && unix.Fadvise(int(of.fd()), off, n, unix.FADV_DONTNEED) == nil
}

// TestURingDirectWriterBufferedTail reads, through the ring, a DirectIO file
// being written whose last bytes are still in its write buffer: every
// aligned read must see what the file's ReadAt sees (the buffered bytes),
// not the file on disk, which lacks them or holds the zero padding of an
// earlier flush.
func TestURingDirectWriterBufferedTail(t *testing.T) {
	r := newTestURing(t, AsyncOptions{QueueDepth: 8})
	defer r.Close()
	name := filepath.Join(testDir(t), "direct")
	f, err := Default.Create(name, DirectIO)
	if errors.Is(err, ErrDirectIOUnsupported) {
		t.Skipf("no direct IO here: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	align := Alignment(f)
	data := make([]byte, 3*align+100)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	// Write and flush a first part, then append more without flushing: the
	// block of the flushed tail is on disk padded with zeros, and what
	// follows exists only in memory.
	if _, err := f.Write(data[:align+10]); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[align+10:]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ off, n int }{{0, align}, {align, align}, {0, 4 * align}, {2 * align, 2 * align}} {
		buf := AlignedBuffer(c.n, align)
		want := make([]byte, c.n)
		wantN, wantErr := f.ReadAt(want, int64(c.off))
		if err := r.MultiRead([]ReadRequest{{File: f, Off: int64(c.off), Buf: buf}}); !sameError(err, wantErr) {
			t.Fatalf("read off %d len %d through the ring: err %v, ReadAt gives %v", c.off, c.n, err, wantErr)
		}
		if !bytes.Equal(buf[:wantN], want[:wantN]) {
			t.Fatalf("read off %d len %d through the ring: bytes differ from ReadAt's (the write buffer was not seen)", c.off, c.n)
		}
	}
}

// TestURingSQPollNeedsNonfixed: before Linux 5.11 an SQ polling ring reads
// only registered files, so a ring without IORING_FEAT_SQPOLL_NONFIXED must
// be refused when SQ polling is asked for (NewAsyncReader then falls back to
// a ring without it), and accepted otherwise.
func TestURingSQPollNeedsNonfixed(t *testing.T) {
	old := uringParams{features: ioringFeatSingleMmap}
	if err := checkFeatures(&old, true); err == nil {
		t.Fatal("an SQ polling ring without IORING_FEAT_SQPOLL_NONFIXED was accepted")
	}
	if err := checkFeatures(&old, false); err != nil {
		t.Fatalf("a ring without SQ polling was refused: %v", err)
	}
	recent := uringParams{features: ioringFeatSingleMmap | ioringFeatSQPollNonfixed}
	if err := checkFeatures(&recent, true); err != nil {
		t.Fatalf("an SQ polling ring with IORING_FEAT_SQPOLL_NONFIXED was refused: %v", err)
	}
}

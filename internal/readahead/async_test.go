package readahead

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

func newPortable(t *testing.T) vfs.AsyncReader {
	r := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	t.Cleanup(func() { r.Close() })
	return r
}

// withSplit runs f with SplitWindow off and on.
func withSplit(t *testing.T, f func(t *testing.T)) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			old := SplitWindow
			SplitWindow = split
			defer func() { SplitWindow = old }()
			f(t)
		})
	}
}

// TestAsyncPrefetchesNextWindow checks the double buffer on a sequential
// scan with explicit readahead: the first read fills the window and submits
// the prefetch of the window right after it; every later block is served
// from a window (none is left to the caller); the file sees one read per
// window, never a byte twice, and no read reaches past the limit.
func TestAsyncPrefetchesNextWindow(t *testing.T) {
	withSplit(t, func(t *testing.T) {
		f := newFakeFile(2<<20, 1)
		const size, block, limit = 64 << 10, 4096, 1<<20 + 1000
		var s State
		s.Init(f, Config{Size: size, Limit: limit, Reader: newPortable(t), Async: true})
		defer s.Release()
		if !read(t, &s, f, 0, block) {
			t.Fatal("first block not served")
		}
		if c := s.Counters(); c.AsyncReads != 1 {
			t.Fatalf("after the first read: %d prefetches submitted, want 1", c.AsyncReads)
		}
		win := int64(size + block)
		if SplitWindow {
			win = size/2 + block
		}
		s.drain()
		rs := f.takeReads()
		sortReads(rs)
		if len(rs) != 2 || rs[0].off != 0 || int64(rs[0].n) != win || rs[1].off != win {
			t.Fatalf("reads after the first block: %v; want [0, %d) and the prefetch from %d", rs, win, win)
		}
		nBlocks := 1
		for off := int64(block); off+block <= limit; off += block {
			if !read(t, &s, f, off, block) {
				t.Fatalf("block at %d left to the caller", off)
			}
			nBlocks++
		}
		s.drain()
		rs = append(rs, f.takeReads()...)
		sortReads(rs)
		end := int64(0)
		for _, r := range rs {
			if r.off != end {
				t.Fatalf("read %v does not start where the previous ended (%d): %v", r, end, rs)
			}
			end = r.off + int64(r.n)
		}
		if end != limit {
			t.Fatalf("reads end at %d, want the limit %d", end, limit)
		}
		c := s.Counters()
		if c.Hits != uint64(nBlocks) {
			t.Fatalf("hits %d, want %d", c.Hits, nBlocks)
		}
		if c.Reads != uint64(len(rs)) || c.AsyncReads != uint64(len(rs)-1) {
			t.Fatalf("counters %+v; the file saw %d reads, all but the first prefetches", c, len(rs))
		}
	})
}

// TestAsyncAutoGrowth checks that automatic readahead in async mode starts
// at the second sequential read, with the first automatic window, and that
// each prefetch reads the next, doubled, window (halved with SplitWindow).
func TestAsyncAutoGrowth(t *testing.T) {
	withSplit(t, func(t *testing.T) {
		f := newFakeFile(4<<20, 1)
		const block = 1024
		var s State
		s.Init(f, Config{MaxAuto: 64 << 10, Limit: 4 << 20, Reader: newPortable(t), Async: true})
		defer s.Release()
		if read(t, &s, f, 0, block) {
			t.Fatal("served the first read")
		}
		var sizes []int
		for off := int64(block); off < 1<<20; off += block {
			if !read(t, &s, f, off, block) {
				t.Fatalf("block at %d left to the caller", off)
			}
		}
		s.drain()
		rs := f.takeReads()
		sortReads(rs)
		for _, r := range rs {
			sizes = append(sizes, r.n)
		}
		want := []int{block + 8<<10, 16 << 10, 32 << 10, 64 << 10, 64 << 10}
		if SplitWindow {
			want = []int{block + 4<<10, 8 << 10, 16 << 10, 32 << 10, 32 << 10}
		}
		if len(sizes) < len(want) || fmt.Sprint(sizes[:len(want)]) != fmt.Sprint(want) {
			t.Fatalf("window sizes %v, want them to start %v", sizes, want)
		}
	})
}

// TestAsyncRandomized runs random scans with jumps, cached blocks and
// random block sizes through the double buffer, buffered and direct
// (including a MemFS file opened with DirectIO), automatic and explicit,
// and checks every served byte against the file, that no read passes the
// limit rounded up to the alignment, that every read is aligned, and the
// counters.
func TestAsyncRandomized(t *testing.T) {
	withSplit(t, func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		reader := newPortable(t)
		for trial := 0; trial < 40; trial++ {
			align := []int{1, 512, 4096}[rng.IntN(3)]
			var f *fakeFile
			if rng.IntN(3) == 0 {
				f = newMemDirectFile(t, 3<<20)
				align = 512
			} else {
				f = newFakeFile(3<<20, align)
			}
			limit := int64(1<<20 + rng.IntN(1<<20))
			offs, lens := blocks(rng, limit)
			cfg := Config{MaxAuto: int64(8<<10) << rng.IntN(7), Limit: limit, Alignment: align, Reader: reader, Async: true}
			if rng.IntN(3) == 0 {
				cfg.Size = int64(1 + rng.IntN(600<<10))
			}
			var s State
			s.Init(f, cfg)
			var fileBytes uint64
			for scan := 0; scan < 6; scan++ {
				for i := rng.IntN(len(offs)); i < len(offs) && rng.IntN(300) != 0; i++ {
					switch rng.IntN(20) {
					case 0:
						s.NoteCached(offs[i], lens[i])
						continue
					case 1:
						i += rng.IntN(20) // skip ahead
						if i >= len(offs) {
							continue
						}
					}
					read(t, &s, f, offs[i], lens[i])
				}
				if rng.IntN(2) == 0 {
					s.drain()
				}
				for _, r := range f.takeReads() {
					fileBytes += uint64(min(int64(r.n), int64(len(f.data))-r.off))
					if r.off+int64(r.n) > vfs.AlignUp(limit, align) {
						t.Fatalf("trial %d: read [%d, %d) passes the limit %d (align %d)", trial, r.off, r.off+int64(r.n), limit, align)
					}
					if r.off%int64(align) != 0 || r.n%align != 0 {
						t.Fatalf("trial %d: unaligned read %v (align %d)", trial, r, align)
					}
				}
			}
			c := s.Release()
			for _, r := range f.takeReads() { // reads Release waited for
				fileBytes += uint64(min(int64(r.n), int64(len(f.data))-r.off))
			}
			if c.BytesIssued != fileBytes || c.BytesRead != fileBytes {
				t.Fatalf("trial %d: issued %d, read %d, the file returned %d", trial, c.BytesIssued, c.BytesRead, fileBytes)
			}
			if c.BytesUsed > c.BytesIssued {
				t.Fatalf("trial %d: used %d > issued %d", trial, c.BytesUsed, c.BytesIssued)
			}
		}
	})
}

// memDirectFile is a fakeFile whose bytes come from a MemFS file opened
// with DirectIO (alignment 512), read through the fakeFile's recording and
// alignment check.
func newMemDirectFile(t *testing.T, size int) *fakeFile {
	fs := vfs.NewMem()
	src := newFakeFile(size, 1)
	w, err := fs.Create("t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(src.data); err != nil {
		t.Fatal(err)
	}
	w.Close()
	mf, err := fs.Open("t", vfs.DirectIO)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	if a := vfs.Alignment(mf); a != 512 {
		t.Fatalf("MemFS direct file alignment %d, want 512", a)
	}
	got := make([]byte, size)
	if n, err := mf.ReadAt(got, 0); n != size || err != nil || !bytes.Equal(got, src.data) {
		t.Fatalf("MemFS file read back %d bytes, %v", n, err)
	}
	return &fakeFile{data: got, align: 512}
}

// flakyFile fails the first read at each offset in failAt once.
type flakyFile struct {
	*fakeFile
	mu     sync.Mutex
	failAt map[int64]bool
}

func (f *flakyFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	fail := f.failAt[off]
	delete(f.failAt, off)
	f.mu.Unlock()
	if fail {
		return 0, fmt.Errorf("injected prefetch failure at %d", off)
	}
	return f.fakeFile.ReadAt(p, off)
}

// TestAsyncFailedPrefetchFallsBack checks that a prefetch that fails does
// not fail the read of a block in it: the block is left to the caller
// (Read returns nil, nil), and the scan goes on with windows again.
func TestAsyncFailedPrefetchFallsBack(t *testing.T) {
	withSplit(t, func(t *testing.T) {
		const size, block = 64 << 10, 4096
		win := int64(size + block)
		if SplitWindow {
			win = size/2 + block
		}
		f := &flakyFile{fakeFile: newFakeFile(1<<20, 1), failAt: map[int64]bool{win: true}}
		var s State
		s.Init(f, Config{Size: size, Limit: 1 << 20, Reader: newPortable(t), Async: true})
		defer s.Release()
		left := 0
		for off := int64(0); off+block <= 1<<20; off += block {
			b, err := s.Read(off, block)
			if err != nil {
				t.Fatalf("Read(%d): %v; a failed prefetch must not fail the read", off, err)
			}
			if b == nil {
				if off != win {
					t.Fatalf("block at %d left to the caller; only the one at %d should be", off, win)
				}
				left++
				continue
			}
			if !bytes.Equal(b, f.data[off:off+block]) {
				t.Fatalf("Read(%d): wrong bytes", off)
			}
		}
		if left != 1 {
			t.Fatalf("%d blocks left to the caller, want 1 (the failed prefetch's first)", left)
		}
	})
}

// gateFile blocks every read at or after gateOff until gate is closed, and
// counts reads that have not returned.
type gateFile struct {
	*fakeFile
	gateOff int64
	gate    chan struct{}
	pending atomic.Int32
}

func (g *gateFile) ReadAt(p []byte, off int64) (int, error) {
	g.pending.Add(1)
	defer g.pending.Add(-1)
	if off >= g.gateOff {
		<-g.gate
	}
	return g.fakeFile.ReadAt(p, off)
}

// TestAsyncReleaseWaits checks that Release (and Init) return only after
// the prefetch in flight has completed, so its memory can be reused.
func TestAsyncReleaseWaits(t *testing.T) {
	for _, op := range []string{"Release", "Init"} {
		t.Run(op, func(t *testing.T) {
			g := &gateFile{fakeFile: newFakeFile(1<<20, 1), gateOff: 1, gate: make(chan struct{})}
			var s State
			s.Init(g, Config{Size: 64 << 10, Limit: 1 << 20, Reader: newPortable(t), Async: true})
			if !read(t, &s, g.fakeFile, 0, 4096) {
				t.Fatal("first block not served")
			}
			if c := s.Counters(); c.AsyncReads != 1 {
				t.Fatalf("%d prefetches submitted, want 1", c.AsyncReads)
			}
			go func() {
				time.Sleep(10 * time.Millisecond)
				close(g.gate)
			}()
			if op == "Release" {
				c := s.Release()
				if c.Reads != 2 {
					t.Fatalf("Release counted %d reads, want 2 (it waits for the prefetch)", c.Reads)
				}
			} else {
				s.Init(g, Config{})
				s.Release()
			}
			if n := g.pending.Load(); n != 0 {
				t.Fatalf("%s returned with %d reads still in flight", op, n)
			}
		})
	}
}

// TestAsyncServingDoesNotAllocate checks that a scan through the double
// buffer allocates nothing per block once its buffers exist.
func TestAsyncServingDoesNotAllocate(t *testing.T) {
	f := newFakeFile(8<<20, 1)
	f.reads = make([]readCall, 0, 16)
	var s State
	s.Init(f, Config{Size: 64 << 10, Limit: 8 << 20, Reader: newPortable(t), Async: true})
	defer s.Release()
	off := int64(0)
	step := func() {
		if off+4096 > 8<<20 {
			off = 0
		}
		if b, err := s.Read(off, 4096); b == nil || err != nil {
			t.Fatalf("Read(%d): %v, served %v", off, err, b != nil)
		}
		off += 4096
		f.mu.Lock()
		f.reads = f.reads[:0]
		f.mu.Unlock()
	}
	for range 64 {
		step()
	}
	// Submitting a batch may allocate (a goroutine per request on the
	// portable reader); blocks served from a window must not.
	allocs := testing.AllocsPerRun(200, step)
	if allocs > 1 {
		t.Fatalf("%.2f allocations per block", allocs)
	}
}

// TestAsyncNoPrefetchBackward checks that reads moving backward with an
// explicit Size fill windows as in the synchronous mode but never start a
// background prefetch of the bytes after the window, which a backward scan
// never reads (and each next fill would wait for).
func TestAsyncNoPrefetchBackward(t *testing.T) {
	const block = 1024
	var bytesRead [2]int
	for i, async := range []bool{false, true} {
		f := newFakeFile(1<<20, 1)
		var s State
		s.Init(f, Config{Size: 16 << 10, Limit: 1 << 20, Reader: newPortable(t), Async: async})
		for off := int64(1<<20 - block); off >= 0; off -= 4 * block {
			read(t, &s, f, off, block)
		}
		c := s.Release()
		if c.AsyncReads != 0 {
			t.Fatalf("async %v: %d background prefetches on a backward scan", async, c.AsyncReads)
		}
		for _, r := range f.takeReads() {
			bytesRead[i] += r.n
		}
	}
	if bytesRead[1] != bytesRead[0] {
		t.Fatalf("backward scan read %d bytes with Async, %d without", bytesRead[1], bytesRead[0])
	}
}

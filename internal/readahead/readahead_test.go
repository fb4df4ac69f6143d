package readahead

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// fakeFile is a read-only vfs.File over data that records every read and,
// with align > 1, fails reads that a direct-IO file would refuse.
type fakeFile struct {
	vfs.File // nil: only ReadAt is used
	data     []byte
	align    int

	mu       sync.Mutex
	reads    []readCall
	inflight int
	maxIn    int
	// rendezvous, when > 0, makes each ReadAt wait (up to a few seconds)
	// until that many reads are in flight at once.
	rendezvous int
}

type readCall struct {
	off int64
	n   int
}

func newFakeFile(size, align int) *fakeFile {
	f := &fakeFile{data: make([]byte, size), align: align}
	for i := range f.data {
		f.data[i] = byte(i*131 + i>>8)
	}
	return f
}

func (f *fakeFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	f.reads = append(f.reads, readCall{off, len(p)})
	f.inflight++
	f.maxIn = max(f.maxIn, f.inflight)
	if f.rendezvous > 0 {
		deadline := time.Now().Add(5 * time.Second)
		for f.inflight < f.rendezvous && f.maxIn < f.rendezvous && time.Now().Before(deadline) {
			f.mu.Unlock()
			time.Sleep(time.Millisecond)
			f.mu.Lock()
		}
	}
	f.inflight--
	f.mu.Unlock()
	if !vfs.IsAligned(p, off, f.align) {
		return 0, fmt.Errorf("unaligned read: off %d len %d", off, len(p))
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *fakeFile) takeReads() []readCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reads
	f.reads = nil
	return r
}

// read asks s for [off, off+n) and checks what it serves against the file.
func read(t *testing.T, s *State, f *fakeFile, off int64, n int) bool {
	t.Helper()
	b, err := s.Read(off, n)
	if err != nil {
		t.Fatalf("Read(%d, %d): %v", off, n, err)
	}
	if b == nil {
		return false
	}
	if !bytes.Equal(b, f.data[off:off+int64(n)]) {
		t.Fatalf("Read(%d, %d) served the wrong bytes", off, n)
	}
	return true
}

func TestAutomaticStartsAtThirdReadAndDoubles(t *testing.T) {
	const blk = 4096
	f := newFakeFile(4<<20, 1)
	var s State
	s.Init(f, Config{MaxAuto: 64 << 10, Limit: int64(len(f.data))})
	defer s.Release()
	for i := 0; i < 2; i++ {
		if read(t, &s, f, int64(i*blk), blk) {
			t.Fatalf("read %d was served: readahead must wait for the third sequential read", i+1)
		}
	}
	if r := f.takeReads(); len(r) != 0 {
		t.Fatalf("the first two reads caused IO in the State: %v", r)
	}
	// Expected windows: the block plus 8, 16, 32, 64, 64 KiB.
	off := int64(2 * blk)
	var issued uint64
	for _, ra := range []int64{8 << 10, 16 << 10, 32 << 10, 64 << 10, 64 << 10} {
		if !read(t, &s, f, off, blk) {
			t.Fatalf("read at %d not served", off)
		}
		want := []readCall{{off, int(blk + ra)}}
		if got := f.takeReads(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("window at %d: reads %v, want %v", off, got, want)
		}
		issued += uint64(blk + ra)
		// The rest of the window serves the next blocks without IO.
		for o := off + blk; o < off+blk+ra; o += blk {
			if !read(t, &s, f, o, blk) {
				t.Fatalf("read at %d inside the window not served", o)
			}
		}
		if r := f.takeReads(); len(r) != 0 {
			t.Fatalf("reads inside the window caused IO: %v", r)
		}
		off += blk + ra
	}
	c := s.Counters()
	if c.BytesIssued != issued || c.BytesUsed != issued || c.Reads != 5 || c.BytesRead != issued {
		t.Fatalf("counters %+v, want %d issued and used in 5 reads", c, issued)
	}
}

func TestSeekResets(t *testing.T) {
	const blk = 4096
	f := newFakeFile(1<<20, 1)
	var s State
	s.Init(f, Config{MaxAuto: 256 << 10, Limit: int64(len(f.data))})
	defer s.Release()
	for i := 0; i < 8; i++ { // grows the readahead past 8 KiB
		read(t, &s, f, int64(i*blk), blk)
	}
	f.takeReads()
	base := int64(100 * blk) // far outside the window: not sequential
	for i := 0; i < 2; i++ {
		if read(t, &s, f, base+int64(i*blk), blk) {
			t.Fatalf("read %d after a seek served: the run must restart", i+1)
		}
	}
	if !read(t, &s, f, base+2*blk, blk) {
		t.Fatalf("third read after a seek not served")
	}
	if got, want := fmt.Sprint(f.takeReads()), fmt.Sprint([]readCall{{base + 2*blk, blk + InitialAutoSize}}); got != want {
		t.Fatalf("window after a seek: %s, want %s (back to 8 KiB)", got, want)
	}
}

func TestCachedBlocksDoNotCount(t *testing.T) {
	const blk = 4096
	f := newFakeFile(1<<20, 1)
	var s State
	s.Init(f, Config{MaxAuto: 256 << 10, Limit: int64(len(f.data))})
	defer s.Release()
	read(t, &s, f, 0, blk)
	s.NoteCached(blk, blk) // continues the run without counting
	if read(t, &s, f, 2*blk, blk) {
		t.Fatalf("served at the second counted read: a cached block was counted")
	}
	if !read(t, &s, f, 3*blk, blk) {
		t.Fatalf("a cached block broke the sequential run")
	}
	f.takeReads()
	// A cached block elsewhere is a seek: the run restarts.
	s.NoteCached(100*blk, blk)
	if read(t, &s, f, 101*blk, blk) || read(t, &s, f, 102*blk, blk) {
		t.Fatalf("served right after a non-sequential cached block")
	}
	if !read(t, &s, f, 103*blk, blk) {
		t.Fatalf("third read after the cached seek not served")
	}
}

func TestExplicitFromFirstRead(t *testing.T) {
	f := newFakeFile(1<<20, 1)
	var s State
	s.Init(f, Config{Size: 100 << 10, MaxAuto: -1, Limit: int64(len(f.data))})
	defer s.Release()
	if !read(t, &s, f, 5000, 3000) {
		t.Fatalf("explicit readahead did not serve the first read")
	}
	if got, want := fmt.Sprint(f.takeReads()), fmt.Sprint([]readCall{{5000, 3000 + 100<<10}}); got != want {
		t.Fatalf("explicit window %s, want %s", got, want)
	}
	// A seek refills with the same size: explicit mode does not grow.
	if !read(t, &s, f, 600000, 1000) {
		t.Fatalf("explicit readahead did not serve after a seek")
	}
	if got, want := fmt.Sprint(f.takeReads()), fmt.Sprint([]readCall{{600000, 1000 + 100<<10}}); got != want {
		t.Fatalf("explicit window after seek %s, want %s", got, want)
	}
}

func TestOffServesNothing(t *testing.T) {
	f := newFakeFile(1<<20, 1)
	var s State
	s.Init(f, Config{MaxAuto: -1, Limit: int64(len(f.data))})
	for i := 0; i < 10; i++ {
		if read(t, &s, f, int64(i*4096), 4096) {
			t.Fatalf("readahead off served read %d", i)
		}
	}
	if r := f.takeReads(); len(r) != 0 {
		t.Fatalf("readahead off did IO: %v", r)
	}
}

// blocks cuts [0, limit) into blocks of random sizes, as a table's data
// blocks (with trailers) lie back to back.
func blocks(rng *rand.Rand, limit int64) (offs []int64, lens []int) {
	for off := int64(0); off < limit; {
		n := int(min(int64(500+rng.IntN(9000)), limit-off))
		offs = append(offs, off)
		lens = append(lens, n)
		off += int64(n)
	}
	return offs, lens
}

// TestRandomized runs scans from random blocks over randomly sized blocks,
// buffered and direct, automatic and explicit, and checks every served
// byte, that no read passes the limit (rounded up to the alignment), that
// every read is aligned, that a scan reads no byte twice, and that used <=
// issued with issued equal to the bytes the file returned.
func TestRandomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for trial := 0; trial < 60; trial++ {
		align := []int{1, 512, 4096}[rng.IntN(3)]
		f := newFakeFile(3<<20, align)
		limit := int64(1<<20 + rng.IntN(1<<20))
		offs, lens := blocks(rng, limit)
		cfg := Config{MaxAuto: int64(8<<10) << rng.IntN(6), Limit: limit, Alignment: align}
		if rng.IntN(3) == 0 {
			cfg.Size = int64(1 + rng.IntN(600<<10))
		}
		var reader vfs.AsyncReader
		if rng.IntN(2) == 0 {
			reader = vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
			cfg.Reader = reader
		}
		var s State
		s.Init(f, cfg)
		var fileBytes uint64
		for scan := 0; scan < 4; scan++ {
			i := rng.IntN(len(offs))
			f.takeReads()
			var readEnd int64 = -1
			for ; i < len(offs) && rng.IntN(200) != 0; i++ {
				if rng.IntN(10) == 0 {
					s.NoteCached(offs[i], lens[i])
					continue
				}
				read(t, &s, f, offs[i], lens[i])
			}
			s.drain() // parts of the last window may still be in flight
			rs := f.takeReads()
			for _, r := range rs {
				fileBytes += uint64(min(int64(r.n), int64(len(f.data))-r.off))
				if r.off+int64(r.n) > vfs.AlignUp(limit, align) {
					t.Fatalf("trial %d: read [%d, %d) passes the limit %d (align %d)", trial, r.off, r.off+int64(r.n), limit, align)
				}
				if r.off%int64(align) != 0 || r.n%align != 0 {
					t.Fatalf("trial %d: unaligned read %v (align %d)", trial, r, align)
				}
			}
			// Within one forward scan the windows never overlap.
			sortReads(rs)
			for _, r := range rs {
				if r.off < readEnd {
					t.Fatalf("trial %d: read %v overlaps an earlier one ending at %d", trial, r, readEnd)
				}
				readEnd = r.off + int64(r.n)
			}
		}
		c := s.Counters()
		if c.BytesIssued != fileBytes || c.BytesRead != fileBytes {
			t.Fatalf("trial %d: issued %d, read %d, the file returned %d", trial, c.BytesIssued, c.BytesRead, fileBytes)
		}
		if c.BytesUsed > c.BytesIssued {
			t.Fatalf("trial %d: used %d > issued %d", trial, c.BytesUsed, c.BytesIssued)
		}
		s.Release()
		if reader != nil {
			reader.Close()
		}
	}
}

func sortReads(rs []readCall) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].off < rs[j-1].off; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func TestWasteExact(t *testing.T) {
	const blk = 4096
	f := newFakeFile(1<<20, 1)
	var s State
	s.Init(f, Config{MaxAuto: 256 << 10, Limit: 40 * blk})
	defer s.Release()
	// Blocks 0..1 by the caller; block 2 fills [2b, 5b); block 5 fills
	// [5b, 10b); block 10 fills [10b, 19b); stop after block 12.
	for i := 0; i <= 12; i++ {
		read(t, &s, f, int64(i*blk), blk)
	}
	c := s.Counters()
	issued := uint64((3 + 5 + 9) * blk)
	used := uint64((12 - 2 + 1) * blk)
	if c.BytesIssued != issued || c.BytesUsed != used {
		t.Fatalf("issued %d used %d, want %d and %d (waste %d)", c.BytesIssued, c.BytesUsed, issued, used, issued-used)
	}
	// Reading a served block again (a Prev) serves it but counts nothing.
	read(t, &s, f, 11*blk, blk)
	if c2 := s.TakeCounters(); c2.BytesUsed != used {
		t.Fatalf("re-reading a block counted it twice: used %d, want %d", c2.BytesUsed, used)
	}
	if c3 := s.Counters(); c3 != (Counters{}) {
		t.Fatalf("TakeCounters did not zero the counters: %+v", c3)
	}
}

func TestLimit(t *testing.T) {
	f := newFakeFile(1<<20, 1)
	var s State
	const limit = 50000
	s.Init(f, Config{Size: 1 << 20, Limit: limit})
	defer s.Release()
	if !read(t, &s, f, 40000, 2000) {
		t.Fatal("not served")
	}
	if got, want := fmt.Sprint(f.takeReads()), fmt.Sprint([]readCall{{40000, limit - 40000}}); got != want {
		t.Fatalf("window %s, want %s: it must stop at the limit", got, want)
	}
	// A block past the limit is still served (the window covers the block).
	if !read(t, &s, f, limit, 1000) {
		t.Fatal("block at the limit not served")
	}
	if got, want := fmt.Sprint(f.takeReads()), fmt.Sprint([]readCall{{limit, 1000}}); got != want {
		t.Fatalf("window %s, want %s", got, want)
	}
}

func TestDirectAlignedAndSplit(t *testing.T) {
	f := newFakeFile(4<<20, 512)
	f.rendezvous = 2
	reader := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer reader.Close()
	var s State
	s.Init(f, Config{Size: 1 << 20, Limit: 3 << 20, Alignment: 512, Reader: reader})
	defer s.Release()
	if !read(t, &s, f, 1000, 3000) {
		t.Fatal("not served")
	}
	s.drain() // Read waited only for the first part
	rs := f.takeReads()
	sortReads(rs)
	if len(rs) != MaxParts {
		t.Fatalf("a 1 MiB direct window was read as %d requests, want %d: %v", len(rs), MaxParts, rs)
	}
	next := int64(512) // 1000 rounded down
	for _, r := range rs {
		if r.off != next || r.n < MinPartSize || r.off%512 != 0 || r.n%512 != 0 {
			t.Fatalf("parts %v: not contiguous aligned parts of >= 64 KiB from 512", rs)
		}
		next = r.off + int64(r.n)
	}
	if want := vfs.AlignUp(1000+3000+1<<20, 512); next != want {
		t.Fatalf("window ends at %d, want %d", next, want)
	}
	if f.maxIn < 2 {
		t.Fatalf("parts were not read concurrently (max %d in flight)", f.maxIn)
	}
	if st := reader.Stats(); st.Batches != 1 || st.Reads != MaxParts {
		t.Fatalf("reader stats %+v, want one batch of %d", st, MaxParts)
	}
	if c := s.Counters(); c.Reads != MaxParts || c.BytesIssued != uint64(next-512) || c.BytesUsed != 3000 {
		t.Fatalf("counters %+v", c)
	}
}

func TestDirectStraddlingBlockKeepsTail(t *testing.T) {
	f := newFakeFile(1<<20, 512)
	var s State
	// Explicit 4000 bytes: the window [0, vfs.AlignUp(1000+4000)) = [0, 5120)
	// ends inside the block [4000, 6000).
	s.Init(f, Config{Size: 4000, Limit: 1 << 20, Alignment: 512})
	defer s.Release()
	read(t, &s, f, 0, 1000)
	read(t, &s, f, 1000, 3000)
	f.takeReads()
	if !read(t, &s, f, 4000, 2000) {
		t.Fatal("straddling block not served")
	}
	// The new window starts at 3584 (4000 rounded down); [3584, 5120) is
	// kept from the old window, so only [5120, vfs.AlignUp(10000)) is read.
	if got, want := fmt.Sprint(f.takeReads()), fmt.Sprint([]readCall{{5120, 10240 - 5120}}); got != want {
		t.Fatalf("refill read %s, want %s", got, want)
	}
}

func TestEOFShortWindow(t *testing.T) {
	f := newFakeFile(10000, 512)
	var s State
	s.Init(f, Config{Size: 64 << 10, Limit: 1 << 20, Alignment: 512})
	defer s.Release()
	if !read(t, &s, f, 9000, 1000) {
		t.Fatal("block ending at EOF not served")
	}
	// A block beyond the end of the file is left to the caller.
	if b, err := s.Read(9500, 1000); b != nil || err != nil {
		t.Fatalf("Read past EOF = %d bytes, %v; want nil, nil", len(b), err)
	}
}

type errFile struct{ fakeFile }

func (f *errFile) ReadAt(p []byte, off int64) (int, error) { return 0, fmt.Errorf("disk on fire") }

func TestReadErrorReturned(t *testing.T) {
	f := &errFile{}
	var s State
	s.Init(f, Config{Size: 64 << 10, Limit: 1 << 20})
	defer s.Release()
	if _, err := s.Read(0, 100); err == nil {
		t.Fatal("a failed window read returned no error")
	}
}

func TestServingDoesNotAllocate(t *testing.T) {
	f := newFakeFile(8<<20, 1)
	var s State
	s.Init(f, Config{MaxAuto: 256 << 10, Limit: int64(len(f.data))})
	defer s.Release()
	off := int64(0)
	// Warm up: the buffer reaches its largest size.
	for ; off < 2<<20; off += 4096 {
		read(t, &s, f, off, 4096)
	}
	f.reads = make([]readCall, 0, 16)
	if n := testing.AllocsPerRun(500, func() {
		if _, err := s.Read(off, 4096); err != nil {
			t.Fatal(err)
		}
		off += 4096
		f.reads = f.reads[:0]
	}); n != 0 {
		t.Fatalf("reading through the window allocates %v times per block", n)
	}
}

// gatedFile holds reads at or past gateOff until gate is closed, and fails
// reads that touch [failOff, failOff+failLen).
type gatedFile struct {
	*fakeFile
	gateOff int64
	gate    chan struct{}
	failOff int64
	failLen int64
}

var errPart = fmt.Errorf("injected part failure")

func (g *gatedFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= g.gateOff {
		<-g.gate
	}
	if off < g.failOff+g.failLen && off+int64(len(p)) > g.failOff {
		return 0, errPart
	}
	return g.fakeFile.ReadAt(p, off)
}

// TestDirectWindowServesFirstPartEarly checks that a split direct window
// serves a block as soon as the part holding it is read, while later parts
// are still in flight, and that a block of a later part waits for it.
func TestDirectWindowServesFirstPartEarly(t *testing.T) {
	g := &gatedFile{fakeFile: newFakeFile(4<<20, 512), gateOff: 256 << 10, gate: make(chan struct{})}
	reader := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer reader.Close()
	var s State
	s.Init(g, Config{Size: 1 << 20, Limit: 3 << 20, Alignment: 512, Reader: reader})
	defer s.Release()
	served := make(chan []byte, 1)
	go func() {
		b, err := s.Read(0, 4096)
		if err != nil {
			t.Errorf("Read: %v", err)
		}
		served <- b
	}()
	select {
	case b := <-served:
		if !bytes.Equal(b, g.data[:4096]) {
			t.Fatal("first block: wrong bytes")
		}
	case <-time.After(20 * time.Second):
		close(g.gate)
		t.Fatal("the first block waited for parts after it")
	}
	if s.bufs[s.cur].inflight == nil {
		t.Fatal("no part left in flight: the window was read whole before serving")
	}
	close(g.gate)
	// A block in the last part waits for it and is served from the window.
	off := int64(900 << 10)
	if b, err := s.Read(off, 4096); err != nil || !bytes.Equal(b, g.data[off:off+4096]) {
		t.Fatalf("block in the last part: err %v, served %v", err, b != nil)
	}
	if c := s.Counters(); c.Reads != MaxParts || c.BytesIssued != uint64(1<<20+4096) {
		t.Fatalf("counters %+v: want %d reads of %d bytes", c, MaxParts, 1<<20+4096)
	}
}

// TestDirectWindowFailedPart checks that a failed part costs only the blocks
// in it: blocks before it are served from the window, and a block in it is
// left to the caller (whose own read reports the error), not failed by the
// prefetch.
func TestDirectWindowFailedPart(t *testing.T) {
	// The window of 4 KiB + 1 MiB splits into parts of 257 KiB; fail the third.
	const partLen = (1<<20 + 4096) / MaxParts
	g := &gatedFile{fakeFile: newFakeFile(4<<20, 512), gateOff: 1 << 40, failOff: 2 * partLen, failLen: partLen}
	reader := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer reader.Close()
	var s State
	s.Init(g, Config{Size: 1 << 20, Limit: 3 << 20, Alignment: 512, Reader: reader})
	defer s.Release()
	for off := int64(0); off+4096 <= 2*partLen; off += 64 << 10 {
		b, err := s.Read(off, 4096)
		if err != nil || !bytes.Equal(b, g.data[off:off+4096]) {
			t.Fatalf("block at %d before the failed part: err %v, served %v", off, err, b != nil)
		}
	}
	if b, err := s.Read(2*partLen+8192, 4096); b != nil || err != nil {
		t.Fatalf("block in the failed part: err %v, served %v; want it left to the caller", err, b != nil)
	}
	// Blocks after the failed range are read ahead again.
	off := int64(3*partLen + 8192)
	if b, err := s.Read(off, 4096); err != nil || !bytes.Equal(b, g.data[off:off+4096]) {
		t.Fatalf("block after the failed part: err %v, served %v", err, b != nil)
	}
}

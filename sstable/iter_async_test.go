package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/mergeiter"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

func portableReader(t testing.TB) vfs.AsyncReader {
	r := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	t.Cleanup(func() { r.Close() })
	return r
}

// iterState is what an iterator shows after a positioning call.
func iterState(it base.InternalIterator, ok bool) string {
	if !ok {
		return fmt.Sprintf("invalid err=%v", it.Error())
	}
	return fmt.Sprintf("%s=%q", it.Key(), it.Value())
}

// randomUserKey returns a key in the alphabet of randomEntries.
func randomUserKey(rng *rand.Rand) []byte {
	b := make([]byte, 1+rng.IntN(6))
	for i := range b {
		b[i] = "abcdz\xff"[rng.IntN(6)]
	}
	return b
}

// TestAsyncIterMatchesSync runs random sequences of positioning calls
// (with and without the prepare phase, sometimes preparing another key)
// on two iterators over the same table, one with IterOptions.Async and one
// without, with random bounds, readahead settings, caches and direct IO,
// and checks that they show the same entries and that the async one
// really read through the AsyncReader.
func TestAsyncIterMatchesSync(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	async := portableReader(t)
	var asyncReads uint64
	for trial := 0; trial < 30; trial++ {
		data, _ := readaheadTable(t, rng, []Compression{NoCompression, SnappyCompression}[rng.IntN(2)])
		var c *cache.Cache
		if rng.IntN(2) == 0 {
			c = cache.New(int64(rng.IntN(64 << 10)))
		}
		var f vfs.File = &bytesFile{data}
		if rng.IntN(2) == 0 {
			f = &alignedFile{bytesFile: bytesFile{data}, align: 512, noRecord: true}
		}
		var stats ReadStats
		r, err := NewReader(f, ReaderOptions{Cache: c, AsyncReader: async, Stats: &stats,
			MaxAutoReadaheadSize: int64(16<<10) << rng.IntN(4)})
		if err != nil {
			t.Fatal(err)
		}
		o := IterOptions{FillCache: rng.IntN(2) == 0}
		switch rng.IntN(3) {
		case 0:
			o.ReadaheadSize = int64(1 + rng.IntN(64<<10))
		case 1:
			o.ReadaheadSize = -1
		}
		if rng.IntN(2) == 0 {
			o.Lower = randomUserKey(rng)
		}
		if rng.IntN(2) == 0 {
			o.Upper = randomUserKey(rng)
		}
		sync := r.NewIter(o)
		o.Async = true
		var itStats ReadStats
		o.Stats = &itStats
		var group *ReadGroup
		if rng.IntN(2) == 0 {
			group = NewReadGroup(async)
			o.Group = group
		}
		asy := r.NewIter(o)
		prep := asy.(base.SeekPreparer)
		var trace []string
		for op := 0; op < 300; op++ {
			var name string
			var a, b bool
			switch k := rng.IntN(10); {
			case k < 3:
				key := randomUserKey(rng)
				name = fmt.Sprintf("SeekGE(%q)", key)
				switch rng.IntN(4) {
				case 0: // no prepare
				case 1:
					prep.PrepareSeekGE(randomUserKey(rng)) // a read the seek may not use
				default:
					prep.PrepareSeekGE(key)
				}
				if rng.IntN(2) == 0 {
					group.Submit() // else the seek's wait submits
				}
				a, b = sync.SeekGE(key), asy.SeekGE(key)
			case k == 3:
				key := randomUserKey(rng)
				name = fmt.Sprintf("SeekLT(%q)", key)
				switch rng.IntN(4) {
				case 0:
					prep.PrepareSeekGE(key) // another seek's read: dropped or used
				case 1:
					prep.PrepareSeekLT(randomUserKey(rng)) // a read the seek may not use
				case 2:
					prep.PrepareSeekLT(key)
				}
				if rng.IntN(2) == 0 {
					group.Submit()
				}
				a, b = sync.SeekLT(key), asy.SeekLT(key)
			case k == 4:
				name = "First"
				if rng.IntN(2) == 0 {
					prep.PrepareFirst()
				}
				a, b = sync.First(), asy.First()
			case k == 5:
				name = "Last"
				if rng.IntN(2) == 0 {
					prep.PrepareLast()
				}
				a, b = sync.Last(), asy.Last()
			case k < 8:
				name = "Next"
				for n := rng.IntN(40); n >= 0 && a == b; n-- {
					a, b = sync.Next(), asy.Next()
					if iterState(sync, a) != iterState(asy, b) {
						break
					}
				}
			default:
				name = "Prev"
				a, b = sync.Prev(), asy.Prev()
			}
			trace = append(trace, name)
			if sa, sb := iterState(sync, a), iterState(asy, b); sa != sb {
				t.Fatalf("trial %d, after %v:\nsync:  %s\nasync: %s", trial, trace, sa, sb)
			}
		}
		if rng.IntN(2) == 0 {
			prep.PrepareSeekGE(randomUserKey(rng)) // left pending at Close
		}
		if err := sync.Close(); err != nil {
			t.Fatal(err)
		}
		if err := asy.Close(); err != nil {
			t.Fatal(err)
		}
		group.Close()
		asyncReads += itStats.AsyncReads.Load()
		if got, want := itStats.AsyncReads.Load(), stats.AsyncReads.Load(); got != want {
			t.Fatalf("trial %d: iterator counted %d async reads, the reader %d (only it read async)", trial, got, want)
		}
		r.Close()
	}
	if asyncReads == 0 {
		t.Fatal("no async read in any trial: the test does not exercise the async path")
	}
}

// sharedRendezvous makes several files count their reads in flight together.
// Once armed, each read waits until want reads are in flight at once (or a
// generous deadline passes); maxIn is the most reads seen in flight.
type sharedRendezvous struct {
	mu       sync.Mutex
	armed    bool
	inflight int
	maxIn    int
	want     int
}

func (rv *sharedRendezvous) arm(on bool) {
	rv.mu.Lock()
	rv.armed, rv.maxIn = on, 0
	rv.mu.Unlock()
}

func (rv *sharedRendezvous) max() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.maxIn
}

type rvFile struct {
	bytesFile
	rv *sharedRendezvous
}

func (f *rvFile) ReadAt(p []byte, off int64) (int, error) {
	rv := f.rv
	rv.mu.Lock()
	if rv.armed {
		rv.inflight++
		rv.maxIn = max(rv.maxIn, rv.inflight)
		deadline := time.Now().Add(10 * time.Second)
		for rv.maxIn < rv.want && time.Now().Before(deadline) {
			rv.mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			rv.mu.Lock()
		}
		rv.inflight--
	}
	rv.mu.Unlock()
	return f.bytesFile.ReadAt(p, off)
}

// TestTwoPhaseSeekOverlapsTables checks that a two-phase seek over an
// L0-like set of overlapping tables submits the block reads of every table
// as one batch before any of them waits: the AsyncReader sees one batch
// with one read per table, all of them in flight at once, and the merged
// results are those of plain seeks.
func TestTwoPhaseSeekOverlapsTables(t *testing.T) {
	rng, _ := newRand(t)
	const n = 6
	async := portableReader(t)
	rv := &sharedRendezvous{want: n}
	var readers []*Reader
	var all []kv
	for i := 0; i < n; i++ {
		data, entries := readaheadTable(t, rng, SnappyCompression)
		for j := range entries {
			entries[j].key = base.MakeInternalKey(entries[j].key.UserKey, base.SeqNum(i*10000+j), entries[j].key.Kind())
		}
		all = append(all, entries...)
		f := &rvFile{bytesFile: bytesFile{data}, rv: rv}
		r, err := NewReader(f, ReaderOptions{AsyncReader: async})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		readers = append(readers, r)
	}
	group := NewReadGroup(async)
	defer group.Close()
	mk := func(async bool) *mergeiter.Iter {
		var its []base.InternalIterator
		o := IterOptions{Async: async, ReadaheadSize: -1}
		if async {
			o.Group = group
		}
		for _, r := range readers {
			its = append(its, r.NewIter(o))
		}
		m := mergeiter.New(bytes.Compare, its...)
		if async {
			m.SetTwoPhase(true, group.Submit)
		}
		return m
	}
	plain, twoPhase := mk(false), mk(true)
	defer plain.Close()
	defer twoPhase.Close()
	// A seek to the start needs a block of every table, none loaded yet.
	rv.arm(true)
	before := async.Stats()
	twoPhase.SeekGE(nil)
	after := async.Stats()
	if b, reads, in := after.Batches-before.Batches, after.Reads-before.Reads, rv.max(); b != 1 || reads != n || in != n {
		t.Fatalf("seek to the start: %d batches of %d reads, %d in flight at once; want 1 batch of %d", b, reads, in, n)
	}
	rv.arm(false)
	// So does Last (a fresh iterator: the first blocks are loaded), and
	// SeekLT.
	twoPhaseRev := mk(true)
	defer twoPhaseRev.Close()
	rv.arm(true)
	before = async.Stats()
	twoPhaseRev.Last()
	after = async.Stats()
	if b, reads, in := after.Batches-before.Batches, after.Reads-before.Reads, rv.max(); b != 1 || reads != n || in != n {
		t.Fatalf("Last: %d batches of %d reads, %d in flight at once; want 1 batch of %d", b, reads, in, n)
	}
	rv.arm(false)
	for seek := 0; seek < 50; seek++ {
		key := randomUserKey(rng)
		got := iterState(twoPhaseRev, twoPhaseRev.SeekLT(key))
		if want := iterState(plain, plain.SeekLT(key)); got != want {
			t.Fatalf("SeekLT %q: two-phase %s, plain %s", key, got, want)
		}
		for step := rng.IntN(20); step > 0; step-- {
			if a, b := iterState(twoPhaseRev, twoPhaseRev.Prev()), iterState(plain, plain.Prev()); a != b {
				t.Fatalf("after SeekLT %q: two-phase %s, plain %s", key, a, b)
			}
		}
	}
	// Random seeks through the merge give the plain seek's results.
	for seek := 0; seek < 50; seek++ {
		key := randomUserKey(rng)
		got := iterState(twoPhase, twoPhase.SeekGE(key))
		if want := iterState(plain, plain.SeekGE(key)); got != want {
			t.Fatalf("seek %q: two-phase %s, plain %s", key, got, want)
		}
		for step := rng.IntN(20); step > 0; step-- {
			if a, b := iterState(twoPhase, twoPhase.Next()), iterState(plain, plain.Next()); a != b {
				t.Fatalf("after seek %q: two-phase %s, plain %s", key, a, b)
			}
		}
	}
}

// TestAsyncIterReadErrors injects read errors into a table on an errorfs.FS
// and checks that async iterators (two-phase seeks and double-buffered
// readahead) report them as errors and never show a wrong entry: every
// entry shown is the one a sync iterator over a healthy reader shows.
func TestAsyncIterReadErrors(t *testing.T) {
	rng, seed := newRand(t)
	data, _ := readaheadTable(t, rng, SnappyCompression)
	mem := vfs.NewMem()
	w, err := mem.Create("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	ffs := errorfs.New(mem, seed)
	async := portableReader(t)
	open := func(fs vfs.FS) *Reader {
		f, err := fs.Open("t.sst")
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(f, ReaderOptions{AsyncReader: async})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	healthy, faulty := open(mem), open(ffs)
	defer healthy.Close()
	defer faulty.Close()
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: "t.sst", Probability: 0.2})
	errs := 0
	for trial := 0; trial < 200; trial++ {
		o := IterOptions{Async: true, ReadaheadSize: []int64{0, 8 << 10, -1}[rng.IntN(3)]}
		ref, it := healthy.NewIter(IterOptions{}), faulty.NewIter(o)
		key := randomUserKey(rng)
		it.(base.SeekPreparer).PrepareSeekGE(key)
		a, b := ref.SeekGE(key), it.SeekGE(key)
		for step := 0; ; step++ {
			if !b {
				if it.Error() == nil && a {
					t.Fatalf("trial %d step %d: async iterator stopped without an error at %s", trial, step, iterState(ref, a))
				}
				if it.Error() != nil {
					if !errors.Is(it.Error(), errorfs.ErrInjected) {
						t.Fatalf("trial %d: unexpected error %v", trial, it.Error())
					}
					errs++
				}
				break
			}
			if sa, sb := iterState(ref, a), iterState(it, b); sa != sb {
				t.Fatalf("trial %d step %d: async shows %s, the healthy table %s", trial, step, sb, sa)
			}
			if step > 200 {
				break
			}
			a, b = ref.Next(), it.Next()
		}
		ref.Close()
		it.Close()
	}
	if errs == 0 {
		t.Fatal("no injected error surfaced: the test does not test errors")
	}
}

// TestAsyncIterStats checks the per-iterator counts: a full scan of a table
// without a cache counts, in IterOptions.Stats, every block as read, the
// blocks served by prefetch as hits, and the same numbers the Reader's
// shared stats got.
func TestAsyncIterStats(t *testing.T) {
	rng, _ := newRand(t)
	data, entries := readaheadTable(t, rng, NoCompression)
	for _, async := range []bool{false, true} {
		var shared, own ReadStats
		r, err := NewReader(&bytesFile{data}, ReaderOptions{AsyncReader: portableReader(t), Stats: &shared})
		if err != nil {
			t.Fatal(err)
		}
		sharedBefore := shared.BlockReads.Load()
		it := r.NewIter(IterOptions{Async: async, Stats: &own})
		got := readAll(t, it)
		it.Close()
		if len(got) != len(entries) {
			t.Fatalf("async=%v: scan returned %d entries, want %d", async, len(got), len(entries))
		}
		nBlocks := uint64(len(r.ix.items))
		if b := own.BlockReads.Load(); b != nBlocks || shared.BlockReads.Load()-sharedBefore != nBlocks {
			t.Fatalf("async=%v: iterator counted %d block reads, reader %d; the table has %d blocks", async, b, shared.BlockReads.Load()-sharedBefore, nBlocks)
		}
		if h := own.PrefetchHits.Load(); h == 0 || h >= nBlocks {
			t.Fatalf("async=%v: %d prefetch hits of %d blocks; want all but the first few", async, h, nBlocks)
		}
		if async && own.AsyncReads.Load() == 0 {
			t.Fatalf("async scan submitted no background prefetch")
		}
		if !async && own.AsyncReads.Load() != 0 {
			t.Fatalf("sync scan counted %d async reads", own.AsyncReads.Load())
		}
		if o, s := own.BytesRead.Load(), shared.BytesRead.Load(); o == 0 || o > s {
			t.Fatalf("async=%v: iterator read %d bytes, the reader %d", async, o, s)
		}
		r.Close()
	}
}

// TestReadGroupDroppedRead checks iterators sharing a ReadGroup when one
// prepares after the group's batch went out without the other waiting:
// the group drains the old batch and drops its results, and the first
// iterator's seek reads its block by itself and is still right.
func TestReadGroupDroppedRead(t *testing.T) {
	rng, _ := newRand(t)
	data, _ := readaheadTable(t, rng, SnappyCompression)
	async := portableReader(t)
	r, err := NewReader(&bytesFile{data}, ReaderOptions{AsyncReader: async})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	group := NewReadGroup(async)
	defer group.Close()
	o := IterOptions{Async: true, Group: group, ReadaheadSize: -1}
	var own ReadStats
	o.Stats = &own
	a := r.NewIter(o)
	o.Stats = nil
	b := r.NewIter(o)
	ref := r.NewIter(IterOptions{})
	defer a.Close()
	defer b.Close()
	defer ref.Close()
	for i := 0; i < 20; i++ {
		ka, kb := randomUserKey(rng), randomUserKey(rng)
		a.(base.SeekPreparer).PrepareSeekGE(ka)
		group.Submit()
		b.(base.SeekPreparer).PrepareSeekGE(kb) // drains a's read and drops it
		group.Submit()
		if got, want := iterState(a, a.SeekGE(ka)), iterState(ref, ref.SeekGE(ka)); got != want {
			t.Fatalf("seek %q after its read was dropped: %s, want %s", ka, got, want)
		}
		if got, want := iterState(b, b.SeekGE(kb)), iterState(ref, ref.SeekGE(kb)); got != want {
			t.Fatalf("seek %q: %s, want %s", kb, got, want)
		}
	}
	if own.AsyncReads.Load() == 0 {
		t.Fatal("no read was prepared")
	}
}

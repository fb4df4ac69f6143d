package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/readahead"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// asyncDBTarget is a dbTarget whose iterators use ReadOptions.AsyncIO; it
// adds their counts to perf.
type asyncDBTarget struct {
	*dbTarget
	perf *PerfContext
}

func (d asyncDBTarget) newIter(snap int, lower, upper []byte, mode iterMode) kvIterator {
	ro := &ReadOptions{LowerBound: lower, UpperBound: upper, ReadaheadSize: d.cfg.readaheadSize,
		AsyncIO: true, PerfContext: d.perf, PrefixSameAsStart: mode.prefixSameAsStart, TotalOrderSeek: mode.totalOrderSeek}
	if snap != 0 {
		ro.Snapshot = d.snaps[snap]
	}
	return d.db.NewIterator(ro)
}

// TestAsyncIteratorModel runs random operations (writes, deletes, range
// deletions, snapshots, flushes, CompactRange, reopens) on a DB with small
// write buffers and a small block cache, and runs every generated iterator
// (random bounds, snapshot, seeks and steps in both directions) three ways:
// on the DB without AsyncIO, on the DB with it, and on the model. All
// three must show the same entries. On a latencyfs.FS the async reads really
// are in flight while the iterator goes on.
func TestAsyncIteratorModel(t *testing.T) {
	for _, c := range []struct {
		name    string
		latency time.Duration
		ops     int
	}{
		{"mem", 0, bySize(4000, 1500, 20000)},
		{"latency-50us", 50 * time.Microsecond, bySize(1500, 500, 8000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
				runAsyncModel(t, seed, c.ops, c.latency)
			})
		})
	}
}

func runAsyncModel(t *testing.T, seed uint64, ops int, latency time.Duration) {
	gen := newOpGenerator(seed, modelKeys)
	rng := rand.New(rand.NewPCG(seed, 5))
	var fs vfs.FS = vfs.NewMem()
	if latency > 0 {
		fs = latencyfs.New(fs, latencyfs.Options{ReadLatency: latency, Seed: seed})
	}
	opts := testOptions(fs)
	opts.BlockCacheSize = int64(rng.IntN(3)) * 16 << 10 // 0 (default), 16 or 32 KiB
	if opts.BlockCacheSize == 0 {
		opts.BlockCacheSize = -1 // no cache: every block is read
	}
	cfg := dbRunConfig{}
	if rng.IntN(3) == 0 {
		cfg.readaheadSize = int64(2<<10) << rng.IntN(4)
	}
	// MemFS direct-IO files report an alignment of 512: the aligned read
	// paths (pending reads, windows) run too.
	opts.UseDirectReads = rng.IntN(2) == 0
	t.Logf("block cache %d, readahead %d, direct reads %v", opts.BlockCacheSize, cfg.readaheadSize, opts.UseDirectReads)
	d, err := openDBTarget("/db", opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.close() }()
	var perf PerfContext
	ad := asyncDBTarget{dbTarget: d, perf: &perf}
	m := newModelTarget()
	var got, gotAsync, want []string
	iters := 0
	for i := 0; i < ops; i++ {
		op := gen.next()
		got = runOp(d, op, i, got[:0])
		want = runOp(m, op, i, want[:0])
		if op.kind == opIter {
			iters++
			gotAsync = runOp(ad, op, i, gotAsync[:0])
			if j := firstDifference(gotAsync, got); j >= 0 {
				t.Fatalf("op %d (%s): AsyncIO and sync iterators differ\nasync: %s\n sync: %s\n   %s", i, op, lineAt(gotAsync, j), lineAt(got, j), lineDiff(lineAt(gotAsync, j), lineAt(got, j)))
			}
		}
		if j := firstDifference(got, want); j >= 0 {
			t.Fatalf("op %d (%s): the DB and the model differ\n   db: %s\nmodel: %s\n   %s", i, op, lineAt(got, j), lineAt(want, j), lineDiff(lineAt(got, j), lineAt(want, j)))
		}
	}
	// Full scans at the end, both ways, at the latest state and at every
	// snapshot.
	for _, async := range []bool{false, true} {
		checkAll(t, d.db, &ReadOptions{AsyncIO: async, PerfContext: &perf}, m.cur)
		for id, s := range d.snaps {
			checkAll(t, d.db, &ReadOptions{Snapshot: s, AsyncIO: async}, m.snaps[id])
		}
	}
	t.Logf("%d iterators; async counts %+v", iters, perf)
	if perf.AsyncReads == 0 {
		t.Fatalf("the async iterators submitted no async read: the test does not exercise them (%+v)", perf)
	}
	d.countWork()
	if d.flushes == 0 || d.compactions == 0 {
		t.Fatalf("test did not exercise flushes (%d) and compactions (%d)", d.flushes, d.compactions)
	}
}

// TestAsyncIteratorReadErrors injects read errors into the tables of a DB
// and checks that iterators with AsyncIO (two-phase seeks, prefetches)
// either show exactly the model's entries or stop with the injected error:
// never a wrong entry, never a hang.
func TestAsyncIteratorReadErrors(t *testing.T) {
	seed := modelSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	ffs := errorfs.New(vfs.NewMem(), seed)
	o := readaheadOptions(ffs)
	o.BlockCacheSize = -1
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := fillReadaheadDB(t, db, rng, 12000)
	keys := m.sortedKeys(nil, nil)
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: ".sst", Probability: 0.02})
	failed, clean := 0, 0
	for trial := 0; trial < 200; trial++ {
		start := rng.IntN(len(keys))
		it := db.NewIterator(&ReadOptions{AsyncIO: true, ReadaheadSize: []int64{0, 16 << 10}[rng.IntN(2)]})
		n := 0
		for ok := it.Seek([]byte(keys[start])); ok && n < 2000; ok = it.Next() {
			if j := start + n; j >= len(keys) || string(it.Key()) != keys[j] || string(it.Value()) != m[keys[j]] {
				t.Fatalf("trial %d: entry %d after the seek is %q, want %q", trial, n, it.Key(), keys[min(j, len(keys)-1)])
			}
			n++
		}
		err := it.Close()
		switch {
		case err != nil && !errors.Is(err, errorfs.ErrInjected):
			t.Fatalf("trial %d: unexpected error %v", trial, err)
		case err != nil:
			failed++
		case n < 2000 && start+n != len(keys):
			t.Fatalf("trial %d: iterator stopped after %d entries without an error", trial, n)
		default:
			clean++
		}
	}
	if failed == 0 || clean == 0 {
		t.Fatalf("%d iterators failed, %d did not: the test needs both", failed, clean)
	}
}

// TestIteratorStatsAndPerfContext checks Iterator.Stats and
// ReadOptions.PerfContext: a full scan without a block cache counts the
// blocks it read, the async reads it submitted (only with AsyncIO) and
// the blocks served from readahead; Close adds exactly the iterator's
// counts to the PerfContext.
func TestIteratorStatsAndPerfContext(t *testing.T) {
	fs := vfs.NewMem()
	o := readaheadOptions(fs)
	o.BlockCacheSize = -1
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	m := fillReadaheadDB(t, db, rng, 12000)
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			perf := PerfContext{BlockReads: 1000} // Close adds to what is there
			it := db.NewIterator(&ReadOptions{AsyncIO: async, PerfContext: &perf})
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if n != len(m) {
				t.Fatalf("scan saw %d keys, want %d", n, len(m))
			}
			st := it.Stats()
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if st.BlockReads == 0 || st.BlockReadBytes == 0 || st.PrefetchHits == 0 || st.PrefetchHits > st.BlockReads {
				t.Fatalf("stats after a full scan: %+v", st)
			}
			if async != (st.AsyncReads > 0) {
				t.Fatalf("async=%v: %d async reads", async, st.AsyncReads)
			}
			if perf.BlockReads != 1000+st.BlockReads || perf.PrefetchHits < st.PrefetchHits || perf.AsyncReads < st.AsyncReads {
				t.Fatalf("PerfContext %+v after Close; the iterator's stats were %+v", perf, st)
			}
		})
	}
}

// BenchmarkScanAsync measures long scans (a Seek to a random key, then
// Nexts over about 1 MiB) of a multi-table DB (several L0 tables and three
// levels) on a latencyfs.FS of 500µs per read, standing in for remote flash,
// with AsyncIO off and on; on with each buffer reading a full window
// (default) and with the window split between the two buffers (RocksDB's
// layout, readahead.SplitWindow). Run briefly:
//
//	go test -run XXX -bench ScanAsync -benchtime 20x
func BenchmarkScanAsync(b *testing.B) {
	mem := vfs.NewMem()
	o := &Options{CreateIfMissing: true, FS: mem, BlockCacheSize: 256 << 10, DisableAutoCompactions: true,
		WriteBufferSize: 4 << 20, TargetFileSizeBase: 2 << 20, NumLevels: 4}
	db, err := Open("/db", o)
	if err != nil {
		b.Fatal(err)
	}
	const nKeys = 48 << 10
	val := make([]byte, 512)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			for j := range val {
				val[j] = byte(i*7 + j)
			}
			if err := db.Put([]byte(fmt.Sprintf("key%028d", i)), val, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	// Older data pushed down, newer data in L0: every key range spans
	// tables of several levels.
	put(0, nKeys)
	if err := db.CompactRange(nil, nil); err != nil {
		b.Fatal(err)
	}
	for f := 0; f < 4; f++ {
		put(f, nKeys/2) // overwrite a stripe per flush
		if f == 1 {
			if err := db.CompactRange(nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Logf("shape:\n%s", db.Metrics())
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	lfs := latencyfs.New(mem, latencyfs.Options{ReadLatency: 500 * time.Microsecond})
	for _, c := range []struct {
		name  string
		async bool
		split bool
	}{
		{"async=off", false, false},
		{"async=on-full", true, false},
		{"async=on-split", true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			old := readahead.SplitWindow
			readahead.SplitWindow = c.split
			defer func() { readahead.SplitWindow = old }()
			o := &Options{FS: lfs, BlockCacheSize: 256 << 10, DisableAutoCompactions: true, NumLevels: 4}
			db, err := Open("/db", o)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			rng := rand.New(rand.NewPCG(7, 7))
			var bytes int64
			var perf PerfContext
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := db.NewIterator(&ReadOptions{AsyncIO: c.async, PerfContext: &perf})
				start := rng.IntN(nKeys - 2048)
				n := 0
				for ok := it.Seek([]byte(fmt.Sprintf("key%028d", start))); ok && n < 2048; ok = it.Next() {
					bytes += int64(len(it.Key()) + len(it.Value()))
					n++
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.SetBytes(bytes / int64(b.N))
			b.ReportMetric(float64(perf.BlockReads)/float64(b.N), "blocks/op")
			b.ReportMetric(float64(perf.PrefetchHits)/float64(b.N), "prefetched/op")
			b.ReportMetric(float64(perf.AsyncReads)/float64(b.N), "async/op")
		})
	}
}

// BenchmarkSeekCachedAsync measures the cost side of AsyncIO: seeks (and a
// few Nexts) over a multi-table DB whose blocks are all in the block cache,
// with AsyncIO off and on. Run briefly:
//
//	go test -run XXX -bench SeekCachedAsync -benchtime 20000x
func BenchmarkSeekCachedAsync(b *testing.B) {
	o := &Options{CreateIfMissing: true, FS: vfs.NewMem(), BlockCacheSize: 64 << 20, DisableAutoCompactions: true,
		WriteBufferSize: 1 << 20}
	db, err := Open("/db", o)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const nKeys = 20000
	val := make([]byte, 100)
	for i := 0; i < nKeys; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%012d", i*7%nKeys)), val, nil); err != nil {
			b.Fatal(err)
		}
		if i%5000 == 4999 {
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Warm the cache.
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	it.Close()
	for _, async := range []bool{false, true} {
		b.Run(fmt.Sprintf("async=%v", async), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 3))
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key%012d", rng.IntN(nKeys)))
			}
			it := db.NewIterator(&ReadOptions{AsyncIO: async})
			defer it.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ok := it.Seek(keys[i%len(keys)])
				for n := 0; ok && n < 10; n++ {
					ok = it.Next()
				}
			}
			b.StopTimer()
			if st := it.Stats(); st.BlockReads != 0 {
				b.Fatalf("blocks read from files: %+v", st)
			}
		})
	}
}

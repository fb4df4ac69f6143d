package shale

import (
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// TestAsyncIteratorFaultsAllOps injects read errors into the tables of a
// multi-level DB and runs random positioning calls in both directions
// (Seek, SeekForPrev, First, Last, Next, Prev) on AsyncIO iterators with
// random bounds: every call either shows exactly the model's entry, or
// reports exhaustion exactly when the model is exhausted, or fails with
// the injected error of a read made during that call. Never a wrong
// entry, a silent stop, a stale error or a hang.
func TestAsyncIteratorFaultsAllOps(t *testing.T) {
	seed := modelSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	ffs := errorfs.New(vfs.NewMem(), seed)
	o := readaheadOptions(ffs)
	o.TargetFileSizeBase = 64 << 10
	o.BlockCacheSize = []int64{-1, 16 << 10}[rng.IntN(2)]
	o.UseDirectReads = rng.IntN(2) == 0
	// No background compaction: its reads would inject faults too, and a
	// table open it fails is shared with an iterator's open of that table.
	o.DisableAutoCompactions = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := fillReadaheadDB(t, db, rng, 8000)
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	// Some tables in L0 over the compacted levels.
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("key%07d", rng.IntN(9000))
		v := fmt.Sprintf("%s-new%d", k, i)
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
		if i%1000 == 999 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: ".sst", Probability: 0.01})
	randKey := func() string { return fmt.Sprintf("key%07d", rng.IntN(9500)) }
	failed, valid := 0, 0
	for trial := 0; trial < 60; trial++ {
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower = []byte(randKey())
		}
		if rng.IntN(2) == 0 {
			upper = []byte(randKey())
		}
		keys := m.sortedKeys(lower, upper)
		it := db.NewIterator(&ReadOptions{AsyncIO: true, LowerBound: lower, UpperBound: upper,
			ReadaheadSize: []int64{0, 16 << 10}[rng.IntN(2)]})
		if err := it.Err(); err != nil {
			// A table open failed: the iterator only reports that.
			if !errors.Is(err, errorfs.ErrInjected) || it.Seek(nil) || !errors.Is(it.Err(), errorfs.ErrInjected) {
				t.Fatalf("trial %d: NewIterator: %v", trial, err)
			}
			it.Close()
			failed++
			continue
		}
		pos := -1 // index in keys; -1 unpositioned (or after an error)
		var trace []string
		for op := 0; op < 200; op++ {
			var ok bool
			var want int // the model's position, -1 exhausted
			injected := ffs.Injected()
			switch k := rng.IntN(10); {
			case k < 2 || pos < 0 && k < 6:
				key := randKey()
				trace = append(trace, "Seek("+key+")")
				ok = it.Seek([]byte(key))
				want = sort.SearchStrings(keys, key)
			case k == 2:
				key := randKey()
				trace = append(trace, "SeekForPrev("+key+")")
				ok = it.SeekForPrev([]byte(key))
				want = sort.SearchStrings(keys, key)
				if want == len(keys) || keys[want] != key {
					want--
				}
			case k == 3:
				trace = append(trace, "First")
				ok, want = it.First(), 0
			case k == 4:
				trace = append(trace, "Last")
				ok, want = it.Last(), len(keys)-1
			case k < 8:
				if pos < 0 {
					continue
				}
				trace = append(trace, "Next")
				ok, want = it.Next(), pos+1
			default:
				if pos < 0 {
					continue
				}
				trace = append(trace, "Prev")
				ok, want = it.Prev(), pos-1
			}
			if want >= len(keys) {
				want = -1
			}
			if err := it.Err(); err != nil {
				if !errors.Is(err, errorfs.ErrInjected) {
					t.Fatalf("trial %d, %v: unexpected error %v", trial, trace, err)
				}
				if ok {
					t.Fatalf("trial %d, %v: valid at %q with error %v", trial, trace, it.Key(), err)
				}
				if ffs.Injected() == injected {
					t.Fatalf("trial %d, %v: failed with %v, but no read failed during the call (an old error again)", trial, trace, err)
				}
				failed++
				pos = -1
				continue
			}
			switch {
			case ok && want < 0:
				t.Fatalf("trial %d, %v: at %q, want exhausted", trial, trace, it.Key())
			case !ok && want >= 0:
				t.Fatalf("trial %d, %v: exhausted without an error, want %q", trial, trace, keys[want])
			case ok && (string(it.Key()) != keys[want] || string(it.Value()) != m[keys[want]]):
				t.Fatalf("trial %d, %v: at %q, want %q", trial, trace, it.Key(), keys[want])
			}
			if ok {
				valid++
				pos = want
			} else {
				pos = -1
			}
		}
		if err := it.Close(); err != nil && !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("trial %d: Close: %v", trial, err)
		}
	}
	t.Logf("%d positionings failed, %d valid", failed, valid)
	if failed == 0 || valid == 0 {
		t.Fatalf("%d failed, %d valid: the test needs both", failed, valid)
	}
}

// TestAsyncIteratorsOnDisk runs AsyncIO iterators on a DB on disk
// (io_uring where the kernel allows, buffered and with direct reads)
// without a block cache: several iterators at once, positioned in both
// directions with random bounds, each step compared with the model, and
// closed at random moments, often with prefetches and two-phase reads in
// flight, while new ones take their pooled table iterators and buffers.
// A buffer reused while the kernel still writes into it shows as a wrong
// entry or a checksum error.
func TestAsyncIteratorsOnDisk(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			seed := modelSeed(t)
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 13))
			o := readaheadOptions(vfs.Default)
			o.TargetFileSizeBase = 64 << 10
			o.BlockCacheSize = -1
			o.UseDirectReads = direct
			dir := testdir.New(t)
			db, err := Open(dir, o)
			if err != nil {
				if direct {
					t.Skipf("no direct IO here: %v", err)
				}
				t.Fatal(err)
			}
			defer db.Close()
			t.Logf("async reader: %s", db.Metrics().IO.AsyncReader)
			m := fillReadaheadDB(t, db, rng, 8000)
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2000; i++ {
				k := fmt.Sprintf("key%07d", rng.IntN(9000))
				v := fmt.Sprintf("%s-new%d", k, i)
				if err := db.Put([]byte(k), []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				m[k] = v
				if i%700 == 699 {
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			randKey := func() string { return fmt.Sprintf("key%07d", rng.IntN(9500)) }
			type live struct {
				it   *Iterator
				keys []string
				pos  int
			}
			open := func() *live {
				var lower, upper []byte
				if rng.IntN(3) == 0 {
					lower = []byte(randKey())
				}
				if rng.IntN(3) == 0 {
					upper = []byte(randKey())
				}
				it := db.NewIterator(&ReadOptions{AsyncIO: true, LowerBound: lower, UpperBound: upper,
					ReadaheadSize: []int64{0, 0, 16 << 10}[rng.IntN(3)]})
				return &live{it: it, keys: m.sortedKeys(lower, upper), pos: -1}
			}
			var its [4]*live
			for i := range its {
				its[i] = open()
			}
			var perf PerfContext
			for op := 0; op < bySize(3000, 800, 20000); op++ {
				l := its[rng.IntN(len(its))]
				var ok bool
				want := -1
				switch k := rng.IntN(12); {
				case k == 0:
					// Close, often with reads in flight, and open another.
					if err := l.it.Close(); err != nil {
						t.Fatalf("op %d: Close: %v", op, err)
					}
					perf.addReadStats(&l.it.stats)
					*l = *open()
					continue
				case k < 3 || l.pos < 0 && k < 6:
					key := randKey()
					ok, want = l.it.Seek([]byte(key)), sort.SearchStrings(l.keys, key)
				case k == 3:
					key := randKey()
					ok, want = l.it.SeekForPrev([]byte(key)), sort.SearchStrings(l.keys, key)
					if want == len(l.keys) || l.keys[want] != key {
						want--
					}
				case k == 4:
					ok, want = l.it.First(), 0
				case k == 5:
					ok, want = l.it.Last(), len(l.keys)-1
				case k < 10:
					if l.pos < 0 {
						continue
					}
					// A run of Nexts: the prefetches get going.
					want = l.pos
					ok = true
					for n := rng.IntN(200); n >= 0 && ok; n-- {
						ok, want = l.it.Next(), want+1
						if ok && (want >= len(l.keys) || string(l.it.Key()) != l.keys[want]) {
							break
						}
					}
				default:
					if l.pos < 0 {
						continue
					}
					ok, want = l.it.Prev(), l.pos-1
				}
				if want >= len(l.keys) {
					want = -1
				}
				if err := l.it.Err(); err != nil {
					t.Fatalf("op %d: %v", op, err)
				}
				switch {
				case ok != (want >= 0):
					t.Fatalf("op %d: valid=%v at %q, model position %d of %d", op, ok, l.it.Key(), want, len(l.keys))
				case ok && (string(l.it.Key()) != l.keys[want] || string(l.it.Value()) != m[l.keys[want]]):
					t.Fatalf("op %d: at %q=%.30q, want %q=%.30q", op, l.it.Key(), l.it.Value(), l.keys[want], m[l.keys[want]])
				}
				l.pos = want
			}
			for _, l := range its {
				if err := l.it.Close(); err != nil {
					t.Fatal(err)
				}
				perf.addReadStats(&l.it.stats)
			}
			t.Logf("counts %+v", perf)
			if perf.AsyncReads == 0 || perf.PrefetchHits == 0 {
				t.Fatalf("no async reads or prefetch hits: the test does not exercise them (%+v)", perf)
			}
		})
	}
}

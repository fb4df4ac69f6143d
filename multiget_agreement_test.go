package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// TestMultiGetConcurrentWrites runs MultiGets at snapshots while another
// goroutine writes, flushes and compacts: tables are opened by MultiGet
// while compactions make others obsolete. Each MultiGet must answer as
// looped Get at the same snapshot.
func TestMultiGetConcurrentWrites(t *testing.T) {
	for _, v := range []struct {
		name string
		opt  func(*Options)
	}{
		{"default", nil},
		{"nobloom-smallcache", func(o *Options) { o.BloomBitsPerKey = -1; o.BlockCacheSize = 8 << 10 }},
		{"nocache-direct", func(o *Options) { o.BlockCacheSize = -1; o.UseDirectReads = true }},
	} {
		t.Run(v.name, func(t *testing.T) {
			seed := modelSeed(t)
			t.Logf("seed %d (SHALE_SEED reruns)", seed)
			opts := testOptions(vfs.NewMem())
			opts.DisableDynamicLevelBytes = true // fill L1 first: data in several levels
			if v.opt != nil {
				v.opt(opts)
			}
			d, err := Open("db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			const nKeys = 800
			stop := make(chan struct{})
			var ops atomic.Int64 // writes done: readers go on until many
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 1))
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := testKey(rng.IntN(nKeys))
					var err error
					switch p := rng.IntN(100); {
					case p < 75:
						err = d.Put(k, []byte(fmt.Sprintf("%d:%s", i, bytes.Repeat([]byte{'v'}, rng.IntN(300)))), nil)
					case p < 85:
						err = d.Delete(k, nil)
					case p < 90:
						a := rng.IntN(nKeys)
						err = d.DeleteRange(testKey(a), testKey(a+1+rng.IntN(30)), nil)
					case p < 93:
						err = d.Flush()
					case p < 94:
						a := rng.IntN(nKeys)
						err = d.CompactRange(testKey(a), testKey(a+rng.IntN(300)))
					}
					if err != nil {
						t.Error(err)
						return
					}
					ops.Add(1)
				}
			}()
			var rwg sync.WaitGroup
			for r := 0; r < 2; r++ {
				rwg.Add(1)
				go func() {
					defer rwg.Done()
					rng := rand.New(rand.NewPCG(seed, uint64(r+2)))
					wantOps := int64(bySize(6000, 2000, 30000))
					for round := 0; (round < bySize(150, 40, 1000) || ops.Load() < wantOps) && round < 20000 && !t.Failed(); round++ {
						keys := make([][]byte, 1+rng.IntN(100))
						for i := range keys {
							keys[i] = testKey(rng.IntN(nKeys + 5))
						}
						snap := d.NewSnapshot()
						mode := multiGetModes[rng.IntN(len(multiGetModes))]
						ro := &ReadOptions{Snapshot: snap, AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO, SkipFillCache: rng.IntN(3) == 0}
						vals, errs := d.MultiGet(keys, ro)
						for i, k := range keys {
							want, werr := d.Get(k, &ReadOptions{Snapshot: snap})
							if !bytes.Equal(vals[i], want) || !errors.Is(errs[i], werr) && errs[i] != werr {
								t.Errorf("%s round %d: key %q: MultiGet %.20q %v, Get %.20q %v", mode.name, round, k, vals[i], errs[i], want, werr)
								break
							}
						}
						snap.Release()
					}
				}()
			}
			rwg.Wait()
			close(stop)
			wg.Wait()
			shape := (&mgDB{d: d}).shape()
			t.Logf("%d writes, files per level %v", ops.Load(), shape)
			if files := shape[0] + shape[1] + shape[len(shape)-1]; files == 0 {
				t.Fatal("no tables: MultiGet read only memtables")
			}
		})
	}
}

// TestMultiGetEdgeKeys: no keys, an empty key, nil and empty keys
// together, and keys equal to file boundaries, answered as Get does.
func TestMultiGetEdgeKeys(t *testing.T) {
	m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) { o.BlockCacheSize = 4 << 10 })
	d := m.d
	defer d.Close()
	if err := d.Put([]byte{}, []byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	keys = append(keys, nil, []byte{}, nil)
	rs := d.loadReadState()
	for _, files := range rs.version.Levels {
		for _, f := range files {
			s, l := f.Smallest.UserKey, f.Largest.UserKey
			keys = append(keys, append([]byte(nil), s...), append([]byte(nil), l...),
				append(append([]byte(nil), l...), 0), append([]byte(nil), s[:len(s)-min(len(s), 1)]...))
		}
	}
	rs.unref()
	for _, mode := range multiGetModes {
		ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
		vals, errs := d.MultiGet(nil, ro)
		if len(vals) != 0 || len(errs) != 0 {
			t.Fatalf("%s: no keys: %d values", mode.name, len(vals))
		}
		vals, errs = d.MultiGet(keys, ro)
		for i, k := range keys {
			want, werr := d.Get(k, nil)
			if !bytes.Equal(vals[i], want) || !errors.Is(errs[i], werr) && errs[i] != werr {
				t.Fatalf("%s: key %q: MultiGet %.20q %v, Get %.20q %v", mode.name, k, vals[i], errs[i], want, werr)
			}
		}
		if string(vals[0]) != "empty" {
			t.Fatalf("%s: empty key: %q %v", mode.name, vals[0], errs[0])
		}
	}
}

// TestMultiGetModelNoBloom is the model test without bloom filters and with
// tiny blocks: absent keys that fall between two blocks make lookups whose
// answer may start the next block, which another round reads.
func TestMultiGetModelNoBloom(t *testing.T) {
	for _, v := range []struct {
		name string
		opt  func(*Options)
	}{
		{"nocache", func(o *Options) { o.BlockCacheSize = -1 }},
		{"smallcache", func(o *Options) { o.BlockCacheSize = 8 << 10 }},
		{"direct", func(o *Options) { o.BlockCacheSize = 8 << 10; o.UseDirectReads = true }},
	} {
		t.Run(v.name, func(t *testing.T) {
			seed := modelSeed(t)
			t.Logf("seed %d (SHALE_SEED reruns)", seed)
			rng := rand.New(rand.NewPCG(seed, seed^0x5b))
			m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) {
				o.BloomBitsPerKey = -1
				o.BlockSize = 1 << 10
				v.opt(o)
			})
			defer m.d.Close()
			for i := 0; i < 3; i++ {
				m.writeRandom(t, rng, 300, false)
				m.check(t, rng, bySize(20, 5, 100))
				// Keys just after existing ones: absent, between entries.
				keys := make([][]byte, 0, 200)
				for len(keys) < cap(keys) {
					k := testKey(rng.IntN(m.nKeys))
					switch rng.IntN(3) {
					case 0:
						k = append(k, 0)
					case 1:
						k = append(k, 'z')
					}
					keys = append(keys, k)
				}
				for _, mode := range multiGetModes {
					vals, errs := m.d.MultiGet(keys, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO})
					for i, k := range keys {
						want, werr := m.d.Get(k, nil)
						if !bytes.Equal(vals[i], want) || !errors.Is(errs[i], werr) && errs[i] != werr {
							t.Fatalf("%s: key %q: MultiGet %.20q %v, Get %.20q %v", mode.name, k, vals[i], errs[i], want, werr)
						}
					}
				}
			}
		})
	}
}

// TestMultiGetCountsMatchStatistics: with the tables open, what one
// MultiGet adds to the DB's Statistics equals its PerfContext, in every
// mode, cached or not, with faults: nothing is counted twice or missed.
func TestMultiGetCountsMatchStatistics(t *testing.T) {
	for _, cacheSize := range []int64{-1, 16 << 10} {
		st := NewStatistics()
		ffs := errorfs.New(vfs.NewMem(), 9)
		m := buildLayeredDB(t, ffs, func(o *Options) { o.BlockCacheSize = cacheSize; o.Statistics = st })
		d := m.d
		rng := rand.New(rand.NewPCG(modelSeed(t), 7))
		var all [][]byte
		for i := 0; i < m.nKeys; i++ {
			all = append(all, testKey(i))
		}
		d.MultiGet(all, nil) // open every table
		tickers := []Ticker{TickerBlockReads, TickerBytesRead, TickerBlockCacheHits, TickerAsyncReads, TickerReadsCoalesced, TickerBloomChecks, TickerBloomUseful, TickerMultiGetKeysFound}
		for round := 0; round < 20; round++ {
			if round == 10 {
				ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: ".sst", Probability: 0.3})
			}
			keys := m.randomKeys(rng)
			for _, mode := range multiGetModes {
				before := make([]uint64, len(tickers))
				for i, tk := range tickers {
					before[i] = st.TickerCount(tk)
				}
				var pc PerfContext
				d.MultiGet(keys, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO, PerfContext: &pc})
				got := []uint64{pc.BlockReads, pc.BlockReadBytes, pc.BlockCacheHits, pc.AsyncReads, pc.ReadsCoalesced, pc.BloomChecks, pc.BloomUseful, pc.MultiGetKeysFound}
				for i, tk := range tickers {
					if delta := st.TickerCount(tk) - before[i]; delta != got[i] {
						t.Fatalf("cache %d, %s, round %d: %s grew by %d, PerfContext says %d (%+v)", cacheSize, mode.name, round, tk, delta, got[i], pc)
					}
				}
			}
		}
		ffs.ClearRules()
		d.Close()
	}
}

// TestGetCountsMatchStatistics: with the tables open, what one Get adds to
// the DB's Statistics equals its PerfContext, and its bloom probes are
// counted at all (Get counts them per call, not per probe in the readers).
func TestGetCountsMatchStatistics(t *testing.T) {
	st := NewStatistics()
	m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) { o.BlockCacheSize = 16 << 10; o.Statistics = st })
	d := m.d
	defer d.Close()
	for i := 0; i < m.nKeys; i++ {
		d.Get(testKey(i), nil) // open every table: opens read blocks no Get counts
	}
	rng := rand.New(rand.NewPCG(modelSeed(t), 8))
	tickers := []Ticker{TickerBlockReads, TickerBytesRead, TickerBlockCacheHits, TickerBloomChecks, TickerBloomUseful}
	var total PerfContext
	for round := 0; round < 200; round++ {
		key := testKey(rng.IntN(2 * m.nKeys))
		before := make([]uint64, len(tickers))
		for i, tk := range tickers {
			before[i] = st.TickerCount(tk)
		}
		var pc PerfContext
		if _, err := d.Get(key, &ReadOptions{PerfContext: &pc}); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		got := []uint64{pc.BlockReads, pc.BlockReadBytes, pc.BlockCacheHits, pc.BloomChecks, pc.BloomUseful}
		for i, tk := range tickers {
			if delta := st.TickerCount(tk) - before[i]; delta != got[i] {
				t.Fatalf("Get %q: %s grew by %d, PerfContext says %d (%+v)", key, tk, delta, got[i], pc)
			}
		}
		total.BloomChecks += pc.BloomChecks
		total.BloomUseful += pc.BloomUseful
	}
	if total.BloomChecks == 0 || total.BloomUseful == 0 {
		t.Fatalf("200 Gets over a layered DB counted %d bloom probes, %d useful", total.BloomChecks, total.BloomUseful)
	}
}

// TestMultiGetOpensRacingCompactions reopens a layered DB (no table open)
// and runs MultiGets from two goroutines while compactions run and replace
// the tables: MultiGets open tables together (openAll) while others are
// made obsolete and evicted. Every answer equals Get's at the same
// snapshot.
func TestMultiGetOpensRacingCompactions(t *testing.T) {
	mem := vfs.NewMem()
	m := buildLayeredDB(t, mem, func(o *Options) { o.BlockCacheSize = 32 << 10 })
	if err := m.d.Close(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < bySize(3, 1, 10); round++ {
		opts := testOptions(mem)
		opts.DisableDynamicLevelBytes = true
		opts.BlockCacheSize = 32 << 10
		d, err := Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				if err := d.CompactRange(testKey(i*400), testKey(i*400+500)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for r := 0; r < 2; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(r)))
				for i := 0; i < 20 && !t.Failed(); i++ {
					keys := make([][]byte, 1+rng.IntN(200))
					for j := range keys {
						keys[j] = testKey(rng.IntN(m.nKeys))
					}
					snap := d.NewSnapshot()
					mode := multiGetModes[rng.IntN(len(multiGetModes))]
					vals, errs := d.MultiGet(keys, &ReadOptions{Snapshot: snap, AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO})
					for j, k := range keys {
						want, werr := d.Get(k, &ReadOptions{Snapshot: snap})
						if !bytes.Equal(vals[j], want) || !errors.Is(errs[j], werr) && errs[j] != werr {
							t.Errorf("%s: key %q: MultiGet %.20q %v, Get %.20q %v", mode.name, k, vals[j], errs[j], want, werr)
							break
						}
					}
					snap.Release()
				}
			}()
		}
		wg.Wait()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMultiGetCorruptBlocks damages bytes in the data blocks of several
// tables (the tables still open): in every mode MultiGet fails exactly the
// keys that Get fails, with a corruption error, and answers the others as
// Get does, coalesced reads of a good and a damaged block included.
func TestMultiGetCorruptBlocks(t *testing.T) {
	mem := vfs.NewMem()
	m := buildLayeredDB(t, mem, func(o *Options) { o.BlockCacheSize = -1 })
	d := m.d
	seed := modelSeed(t)
	t.Logf("seed %d (rerun with SHALE_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	var all [][]byte
	for i := 0; i < m.nKeys; i++ {
		all = append(all, testKey(i))
	}
	d.MultiGet(all, nil) // open every table: damage only data blocks
	rs := d.loadReadState()
	var tables []string
	for _, files := range rs.version.Levels {
		for _, f := range files {
			tables = append(tables, d.tablePath(f.FileNum))
		}
	}
	rs.unref()
	defer d.Close()
	for i, name := range tables {
		// A third of the tables, and always an L0 table (tables[0]): every
		// key of L0 is its newest version, so the last round below, which
		// reads every key, must meet its damage.
		if rng.IntN(3) != 0 && i != 0 {
			continue
		}
		f, err := mem.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		size, err := f.Size()
		if err != nil {
			t.Fatal(err)
		}
		raw := make([]byte, size)
		if _, err := f.ReadAt(raw, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for n := 0; n < 3; n++ {
			raw[rng.Int64N(size/2)] ^= 0x5a // data blocks come first
		}
		// The open Reader reads the same in-memory file: rewrite it in place.
		if f, err = mem.Create(name); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(raw); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	corrupt := 0
	for round := 0; round <= 10; round++ {
		keys := m.randomKeys(rng)
		if round == 10 {
			keys = all
		}
		for _, mode := range multiGetModes {
			vals, errs := d.MultiGet(keys, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO})
			for i, k := range keys {
				want, werr := d.Get(k, nil)
				if errors.Is(werr, ErrCorruption) {
					corrupt++
					if !errors.Is(errs[i], ErrCorruption) {
						t.Fatalf("%s: key %q: MultiGet %.20q %v, Get %v", mode.name, k, vals[i], errs[i], werr)
					}
					continue
				}
				if !bytes.Equal(vals[i], want) || !errors.Is(errs[i], werr) && errs[i] != werr {
					t.Fatalf("%s: key %q: MultiGet %.20q %v, Get %.20q %v", mode.name, k, vals[i], errs[i], want, werr)
				}
			}
		}
	}
	if corrupt == 0 {
		t.Fatal("no key read a damaged block")
	}
	t.Logf("%d corrupt answers", corrupt)
}

// TestMultiGetNoCopyAgreesWithMultiGetFunc: on a layered DB with data in
// the memtable, L0 and every level (deletes, range deletes, snapshots), an
// empty value, a duplicate and missing keys, MultiGetNoCopy gives every
// index the answer MultiGetFunc gives, once, in each mode, with a
// non-nil value for a found key; and its values alias memory the call
// owns, so fn sees them intact only during its call (it copies here).
func TestMultiGetNoCopyAgreesWithMultiGetFunc(t *testing.T) {
	m := buildLayeredDB(t, vfs.NewMem(), nil)
	d := m.d
	defer d.Close()
	for _, kv := range [][2]string{{"empty", ""}, {string(testKey(3)), "in the memtable"}} {
		if err := d.Put([]byte(kv[0]), []byte(kv[1]), nil); err != nil {
			t.Fatal(err)
		}
	}
	keys := [][]byte{[]byte("empty"), []byte("missing"), testKey(3), testKey(3)}
	for i := 0; i < m.nKeys; i += 7 {
		keys = append(keys, testKey(i), append(testKey(i), '.'))
	}
	type answer struct {
		value []byte
		err   error
		calls int
	}
	for _, mode := range multiGetModes {
		ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
		want := make([]answer, len(keys))
		d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
			want[i] = answer{v, err, want[i].calls + 1}
		})
		got := make([]answer, len(keys))
		d.MultiGetNoCopy(keys, ro, func(i int, v []byte, err error) {
			if err == nil && v == nil {
				t.Errorf("%s: key %q found with a nil value", mode.name, keys[i])
			}
			got[i] = answer{append([]byte(nil), v...), err, got[i].calls + 1}
		})
		found := 0
		for i := range keys {
			w, g := want[i], got[i]
			if g.calls != 1 || !bytes.Equal(g.value, w.value) || !errors.Is(g.err, w.err) && g.err != w.err {
				t.Fatalf("%s: key %q: MultiGetNoCopy %q, %v (%d calls); MultiGetFunc %q, %v", mode.name, keys[i], g.value, g.err, g.calls, w.value, w.err)
			}
			if w.err == nil {
				found++
			}
		}
		if found < 4 || found == len(keys) {
			t.Fatalf("%s: %d of %d keys found: the test needs found and missing keys", mode.name, found, len(keys))
		}
	}
}

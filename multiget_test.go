package shale

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// multiGetModes are the three ways MultiGet batches its reads.
var multiGetModes = []struct {
	name              string
	async, optimizeIO bool
}{
	{"single-file", false, false},
	{"single-level", true, false},
	{"multi-level", true, true},
}

func testKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

// mgDB is a DB under test with the snapshots taken while it was written.
type mgDB struct {
	d     *DB
	snaps []*Snapshot
	nKeys int
}

// writeRandom applies n random writes to keys [0, nKeys): puts of values
// of varying size, Delete, SingleDelete, DeleteRange, with flushes and
// snapshots along the way.
func (m *mgDB) writeRandom(t *testing.T, rng *rand.Rand, n int, compactRange bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := testKey(rng.IntN(m.nKeys))
		var err error
		switch p := rng.IntN(100); {
		case p < 70:
			v := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, 1+rng.IntN(600))
			copy(v, fmt.Sprintf("%d:", i))
			err = m.d.Put(k, v, nil)
		case p < 82:
			err = m.d.Delete(k, nil)
		case p < 88:
			err = m.d.SingleDelete(k, nil)
		case p < 92:
			a := rng.IntN(m.nKeys)
			err = m.d.DeleteRange(testKey(a), testKey(a+1+rng.IntN(20)), nil)
		case p < 94:
			if len(m.snaps) < 8 {
				m.snaps = append(m.snaps, m.d.NewSnapshot())
			}
		case p < 96:
			err = m.d.Flush()
		case p < 97 && compactRange:
			a := rng.IntN(m.nKeys)
			err = m.d.CompactRange(testKey(a), testKey(a+rng.IntN(200)))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (m *mgDB) release() {
	for _, s := range m.snaps {
		s.Release()
	}
	m.snaps = nil
}

// shape returns the number of files of each level.
func (m *mgDB) shape() []int {
	rs := m.d.loadReadState()
	defer rs.unref()
	var n []int
	for _, files := range rs.version.Levels {
		n = append(n, len(files))
	}
	return n
}

// randomKeys returns a batch of keys with duplicates and absent ones.
func (m *mgDB) randomKeys(rng *rand.Rand) [][]byte {
	n := 1 + rng.IntN(64)
	keys := make([][]byte, 0, n)
	for len(keys) < n {
		switch p := rng.IntN(10); {
		case p == 0 && len(keys) > 0:
			keys = append(keys, append([]byte(nil), keys[rng.IntN(len(keys))]...))
		case p == 1:
			keys = append(keys, []byte(fmt.Sprintf("absent%d", rng.IntN(100))))
		case p == 2:
			keys = append(keys, testKey(m.nKeys+rng.IntN(10)))
		default:
			keys = append(keys, testKey(rng.IntN(m.nKeys)))
		}
	}
	return keys
}

// check compares MultiGet and MultiGetFunc in every mode with looped Get,
// for rounds random batches at random snapshots.
func (m *mgDB) check(t *testing.T, rng *rand.Rand, rounds int) {
	t.Helper()
	for r := 0; r < rounds; r++ {
		keys := m.randomKeys(rng)
		var snap *Snapshot
		if len(m.snaps) > 0 && rng.IntN(3) > 0 {
			snap = m.snaps[rng.IntN(len(m.snaps))]
		}
		skipFill := rng.IntN(4) == 0
		want := make([][]byte, len(keys))
		wantErr := make([]error, len(keys))
		for i, k := range keys {
			want[i], wantErr[i] = m.d.Get(k, &ReadOptions{Snapshot: snap, SkipFillCache: skipFill})
			if wantErr[i] != nil && !errors.Is(wantErr[i], ErrNotFound) {
				t.Fatalf("Get(%q): %v", k, wantErr[i])
			}
		}
		same := func(mode string, i int, v []byte, err error) {
			t.Helper()
			if !errors.Is(err, wantErr[i]) && (err != nil || wantErr[i] != nil) {
				t.Fatalf("%s: key %d %q: error %v, Get says %v", mode, i, keys[i], err, wantErr[i])
			}
			if !bytes.Equal(v, want[i]) || (v == nil) != (want[i] == nil) {
				t.Fatalf("%s: key %d %q: value %.20q, Get says %.20q", mode, i, keys[i], v, want[i])
			}
		}
		for _, mode := range multiGetModes {
			ro := &ReadOptions{Snapshot: snap, SkipFillCache: skipFill, AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
			vals, errs := m.d.MultiGet(keys, ro)
			for i := range keys {
				same("MultiGet "+mode.name, i, vals[i], errs[i])
			}
			calls := make([]int, len(keys))
			kept := make([][]byte, len(keys))
			m.d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
				calls[i]++
				same("MultiGetFunc "+mode.name, i, v, err)
				kept[i] = v
			})
			for i, c := range calls {
				if c != 1 {
					t.Fatalf("MultiGetFunc %s: fn called %d times for index %d", mode.name, c, i)
				}
			}
			// The values handed to fn are the caller's: each its own copy,
			// which later calls do not change.
			vals, _ = m.d.MultiGet(keys, ro)
			seen := map[*byte]bool{}
			for i, v := range kept {
				same("kept value "+mode.name, i, v, wantErr[i])
				if len(v) > 0 {
					if seen[&v[0]] {
						t.Fatalf("MultiGetFunc %s: index %d shares its value's memory", mode.name, i)
					}
					seen[&v[0]] = true
					if len(vals[i]) > 0 && &vals[i][0] == &v[0] {
						t.Fatalf("MultiGetFunc %s: index %d shares memory with a later call", mode.name, i)
					}
				}
			}
		}
	}
}

// TestMultiGetModel checks that MultiGet and MultiGetFunc, in all three
// modes, answer as looped Get does, on DBs with data in memtables, several
// L0 files and several levels, tombstones, range tombstones and snapshots;
// on a plain in-memory FS, a latency FS, without a block cache and with
// direct reads.
func TestMultiGetModel(t *testing.T) {
	variants := []struct {
		name string
		fs   func() vfs.FS
		opt  func(*Options)
	}{
		{"mem", func() vfs.FS { return vfs.NewMem() }, nil},
		{"latency", func() vfs.FS {
			return latencyfs.New(vfs.NewMem(), latencyfs.Options{ReadLatency: 20 * time.Microsecond, ReadJitter: 10 * time.Microsecond})
		}, nil},
		{"nocache", func() vfs.FS { return vfs.NewMem() }, func(o *Options) { o.BlockCacheSize = -1 }},
		{"smallcache", func() vfs.FS { return vfs.NewMem() }, func(o *Options) { o.BlockCacheSize = 16 << 10 }},
		{"direct", func() vfs.FS { return vfs.NewMem() }, func(o *Options) { o.UseDirectReads = true; o.BlockCacheSize = 32 << 10 }},
		// On disk the DB's AsyncReader is io_uring where the kernel allows.
		{"disk", func() vfs.FS { return vfs.Default }, func(o *Options) { o.BlockCacheSize = 32 << 10 }},
		{"disk-direct", func() vfs.FS { return vfs.Default }, func(o *Options) { o.UseDirectReads = true; o.BlockCacheSize = 32 << 10 }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			seed := modelSeed(t)
			t.Logf("seed %d (SHALE_SEED reruns)", seed)
			rng := rand.New(rand.NewPCG(seed, seed^0x3a))
			fs := v.fs()
			opts := testOptions(fs)
			opts.DisableDynamicLevelBytes = true // fill L1 first: data in several levels
			if v.opt != nil {
				v.opt(opts)
			}
			dir := "db"
			if fs == vfs.Default {
				dir = testdir.New(t)
			}
			d, err := Open(dir, opts)
			if err != nil {
				if opts.UseDirectReads && strings.Contains(err.Error(), "UseDirectReads") {
					t.Skipf("no direct IO here: %v", err)
				}
				t.Fatal(err)
			}
			t.Logf("async reader: %s", d.Metrics().IO.AsyncReader)
			m := &mgDB{d: d, nKeys: 1500}
			rounds := bySize(12, 4, 60)
			// Phase 1: automatic compactions spread the data over the levels
			// while MultiGets run.
			for i := 0; i < 4; i++ {
				m.writeRandom(t, rng, bySize(1500, 600, 5000), i == 0)
				m.check(t, rng, rounds)
			}
			t.Logf("after phase 1: files per level %v", m.shape())
			m.release()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// Phase 2: without compactions, flushes pile up L0 files over
			// the levels.
			opts.DisableAutoCompactions = true
			if d, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			m.d = d
			for i := 0; i < 5; i++ {
				m.writeRandom(t, rng, bySize(100, 80, 400), false)
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
				m.writeRandom(t, rng, 50, false) // and some in the memtable
				m.check(t, rng, rounds)
			}
			shape := m.shape()
			t.Logf("after phase 2: files per level %v", shape)
			if shape[0] < 3 {
				t.Fatalf("want several L0 files, have %v", shape)
			}
			m.release()
		})
	}
}

// buildLayeredDB opens a DB on fs with a fixed seed and writes it into a
// shape with data in several L0 files and several levels, auto compactions
// off at the end.
func buildLayeredDB(t *testing.T, fs vfs.FS, opt func(*Options)) *mgDB {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	opts := testOptions(fs)
	opts.DisableDynamicLevelBytes = true
	if opt != nil {
		opt(opts)
	}
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &mgDB{d: d, nKeys: 1500}
	for i := 0; i < 4; i++ {
		m.writeRandom(t, rng, 1500, i == 0)
	}
	m.release()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	opts.DisableAutoCompactions = true
	if m.d, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		m.writeRandom(t, rng, 100, false)
		if err := m.d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	shape := m.shape()
	levels := 0
	for _, n := range shape[1:] {
		if n > 0 {
			levels++
		}
	}
	if shape[0] < 2 || levels < 2 {
		t.Fatalf("want several L0 files and levels, have %v", shape)
	}
	t.Logf("files per level %v", shape)
	return m
}

// TestMultiGetBatching counts the batches each mode submits for one set of
// keys: multi-level fewer than single-level, fewer than single-file.
func TestMultiGetBatching(t *testing.T) {
	m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) { o.BlockCacheSize = -1 })
	d := m.d
	defer d.Close()
	var keys [][]byte
	for i := 0; i < 1500; i += 13 {
		keys = append(keys, testKey(i))
	}
	d.MultiGet(keys, nil) // open every table first
	var batches [3]uint64
	var pcs [3]PerfContext
	for i, mode := range multiGetModes {
		before := d.ioReader.Stats()
		ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO, PerfContext: &pcs[i]}
		_, errs := d.MultiGet(keys, ro)
		batches[i] = d.ioReader.Stats().Batches - before.Batches
		found := 0
		for _, err := range errs {
			if err == nil {
				found++
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		pc := pcs[i]
		t.Logf("%s: %d batches, perf %+v", mode.name, batches[i], pc)
		if pc.MultiGetKeysFound != uint64(found) || found == 0 {
			t.Fatalf("%s: MultiGetKeysFound %d, found %d", mode.name, pc.MultiGetKeysFound, found)
		}
		if pc.AsyncReads == 0 || pc.BlockReads == 0 || pc.BlockCacheHits != 0 || pc.BloomChecks == 0 || pc.BloomUseful == 0 {
			t.Fatalf("%s: implausible counts %+v", mode.name, pc)
		}
	}
	if !(batches[2] < batches[1] && batches[1] < batches[0]) {
		t.Fatalf("batches single-file %d, single-level %d, multi-level %d: want strictly fewer in that order", batches[0], batches[1], batches[2])
	}
	// Every mode walks each key through the same tables; only the grouping
	// of the reads differs. (Block reads may differ slightly: a lookup
	// moving on to the next block may or may not share a round with
	// another key that needs that block.)
	for i := 1; i < 3; i++ {
		if pcs[i].BloomChecks != pcs[0].BloomChecks || pcs[i].BloomUseful != pcs[0].BloomUseful {
			t.Fatalf("bloom probes differ between modes: %+v, %+v", pcs[0], pcs[i])
		}
	}
}

// TestMultiGetCoalesce reads a run of adjacent keys of one table: adjacent
// blocks share requests, and with a block cache a second call reads
// nothing.
func TestMultiGetCoalesce(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	opts.DisableAutoCompactions = true
	opts.WriteBufferSize = 1 << 20
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := 0; i < 400; i++ {
		if err := d.Put(testKey(i), bytes.Repeat([]byte{byte(i)}, 300), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for i := 100; i < 200; i++ {
		keys = append(keys, testKey(i))
	}
	for _, mode := range multiGetModes {
		var pc PerfContext
		before := d.ioReader.Stats()
		ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO, PerfContext: &pc, SkipFillCache: true}
		vals, errs := d.MultiGet(keys, ro)
		for i := range keys {
			if errs[i] != nil || !bytes.Equal(vals[i], bytes.Repeat([]byte{byte(100 + i)}, 300)) {
				t.Fatalf("key %q: %v", keys[i], errs[i])
			}
		}
		batches := d.ioReader.Stats().Batches - before.Batches
		// 100 values of 300 bytes fill about 30 blocks of 1 KiB, read by one
		// request.
		if batches != 1 || pc.AsyncReads != 1 || pc.ReadsCoalesced+1 != pc.BlockReads || pc.BlockReads < 20 {
			t.Fatalf("%s: %d batches, perf %+v", mode.name, batches, pc)
		}
	}
	var pc PerfContext
	d.MultiGet(keys, &ReadOptions{PerfContext: &pc}) // fills the cache
	pc = PerfContext{}
	d.MultiGet(keys, &ReadOptions{PerfContext: &pc})
	if pc.BlockReads != 0 || pc.AsyncReads != 0 || pc.BlockCacheHits != uint64(len(keys)) {
		t.Fatalf("all cached: perf %+v", pc)
	}
}

// TestMultiGetFaults fails reads of table files: keys whose lookups need a
// failing read get an error, every other key the right answer; never a wrong
// value, never a hang.
func TestMultiGetFaults(t *testing.T) {
	ffs := errorfs.New(vfs.NewMem(), 5)
	m := buildLayeredDB(t, ffs, func(o *Options) { o.BlockCacheSize = -1 })
	d := m.d
	defer func() { d.Close() }()
	rng := rand.New(rand.NewPCG(modelSeed(t), 3))
	rs := d.loadReadState()
	var tables []string
	numL0 := len(rs.version.Levels[0])
	for _, files := range rs.version.Levels {
		for _, f := range files {
			tables = append(tables, base.MakeFilename(base.FileTypeTable, f.FileNum))
		}
	}
	rs.unref()
	for round := 0; round < bySize(40, 15, 200); round++ {
		keys := m.randomKeys(rng)
		// The answers without faults.
		ffs.ClearRules()
		want := make([][]byte, len(keys))
		wantErr := make([]error, len(keys))
		for i, k := range keys {
			if want[i], wantErr[i] = d.Get(k, nil); wantErr[i] != nil && !errors.Is(wantErr[i], ErrNotFound) {
				t.Fatal(wantErr[i])
			}
		}
		// One table fails every read: MultiGet fails exactly the keys
		// that Get fails.
		bad := tables[rng.IntN(len(tables))]
		ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: bad})
		getErr := make([]error, len(keys))
		for i, k := range keys {
			_, getErr[i] = d.Get(k, nil)
		}
		for _, mode := range multiGetModes {
			ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
			vals, errs := d.MultiGet(keys, ro)
			for i := range keys {
				injected := errors.Is(errs[i], errorfs.ErrInjected)
				if injected != errors.Is(getErr[i], errorfs.ErrInjected) {
					t.Fatalf("%s: table %s failing: key %q: MultiGet error %v, Get error %v", mode.name, bad, keys[i], errs[i], getErr[i])
				}
				if !injected && (!bytes.Equal(vals[i], want[i]) || !errors.Is(errs[i], wantErr[i]) && errs[i] != wantErr[i]) {
					t.Fatalf("%s: key %q: got %.20q %v, want %.20q %v", mode.name, keys[i], vals[i], errs[i], want[i], wantErr[i])
				}
			}
		}
		// Random reads of every table fail: any key may fail, none may be
		// wrong.
		ffs.ClearRules()
		ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: ".sst", Probability: 0.2})
		for _, mode := range multiGetModes {
			ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
			calls := 0
			d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
				calls++
				if errors.Is(err, errorfs.ErrInjected) {
					return
				}
				if !bytes.Equal(v, want[i]) || !errors.Is(err, wantErr[i]) && err != wantErr[i] {
					t.Fatalf("%s with random faults: key %q: got %.20q %v, want %.20q %v", mode.name, keys[i], v, err, want[i], wantErr[i])
				}
			})
			if calls != len(keys) {
				t.Fatalf("%s: fn called %d times for %d keys", mode.name, calls, len(keys))
			}
		}
	}
	ffs.ClearRules()

	// A table that cannot be opened fails the keys whose walk reaches it,
	// exactly as Get does; the other tables are opened (together) and
	// answer right.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(ffs)
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = -1
	failed := 0
	for round := 0; round < bySize(6, 3, 20); round++ {
		var err error
		if d, err = Open("db", opts); err != nil {
			t.Fatal(err)
		}
		keys := m.randomKeys(rng)
		want := make([][]byte, len(keys))
		wantErr := make([]error, len(keys))
		bad := tables[rng.IntN(numL0)] // an L0 file: its range covers many keys
		ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: bad})
		for _, mode := range multiGetModes {
			ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
			vals, errs := d.MultiGet(keys, ro)
			for i, k := range keys {
				if errors.Is(errs[i], errorfs.ErrInjected) {
					failed++
				}
				want[i], wantErr[i] = d.Get(k, nil)
				if !bytes.Equal(vals[i], want[i]) || errors.Is(errs[i], errorfs.ErrInjected) != errors.Is(wantErr[i], errorfs.ErrInjected) ||
					!errors.Is(errs[i], errorfs.ErrInjected) && !errors.Is(errs[i], wantErr[i]) && errs[i] != wantErr[i] {
					t.Fatalf("%s: table %s unreadable from open: key %q: MultiGet %.20q %v, Get %.20q %v", mode.name, bad, k, vals[i], errs[i], want[i], wantErr[i])
				}
			}
		}
		ffs.ClearRules()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if failed == 0 {
		t.Fatal("no key needed the table that could not be opened")
	}
	d, _ = Open("db", opts) // closed by the deferred Close
}

// TestMultiGetFuncStreams checks that MultiGetFunc answers keys the
// memtable holds before it reads any file, and every key exactly once.
func TestMultiGetFuncStreams(t *testing.T) {
	m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) { o.BlockCacheSize = -1 })
	d := m.d
	defer d.Close()
	if err := d.Put([]byte("in-memtable"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{testKey(10), testKey(700), []byte("in-memtable"), testKey(1400)}
	d.MultiGet(keys, nil) // open the tables
	for _, mode := range multiGetModes {
		ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
		before := d.ioReader.Stats().Batches
		var order []int
		d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
			order = append(order, i)
			if i == 2 {
				if string(v) != "v" || err != nil {
					t.Fatalf("memtable key: %q %v", v, err)
				}
				if got := d.ioReader.Stats().Batches - before; got != 0 {
					t.Fatalf("%s: memtable key answered after %d batches", mode.name, got)
				}
			}
		})
		if len(order) != len(keys) || order[0] != 2 {
			t.Fatalf("%s: answered in order %v", mode.name, order)
		}
		if d.ioReader.Stats().Batches == before {
			t.Fatalf("%s: no batch read", mode.name)
		}
	}
}

// TestGetPerfContext checks Get's per-call counts against MultiGet's: for
// keys far apart, without a block cache, looped Get probes the same bloom
// filters as MultiGet in every mode, and reads about the same blocks.
func TestGetPerfContext(t *testing.T) {
	m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) { o.BlockCacheSize = -1 })
	d := m.d
	defer d.Close()
	var keys [][]byte
	for i := 3; i < 1500; i += 37 {
		keys = append(keys, testKey(i))
	}
	d.MultiGet(keys, nil) // open the tables
	var gets PerfContext
	for _, k := range keys {
		d.Get(k, &ReadOptions{PerfContext: &gets})
	}
	if gets.BlockReads == 0 || gets.BloomChecks == 0 || gets.BlockReadBytes == 0 || gets.AsyncReads != 0 {
		t.Fatalf("Get counts %+v", gets)
	}
	for _, mode := range multiGetModes {
		var pc PerfContext
		d.MultiGet(keys, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO, PerfContext: &pc})
		// MultiGet reads a block wanted by two keys once, looped Get twice.
		if pc.BloomChecks != gets.BloomChecks || pc.BloomUseful != gets.BloomUseful || pc.BlockReads > gets.BlockReads || pc.BlockReads < gets.BlockReads*9/10 {
			t.Fatalf("%s: MultiGet %+v, looped Get %+v", mode.name, pc, gets)
		}
	}
}

// meetFS makes the first read of each table file (the read that opens it)
// wait, up to a few seconds, until two such reads are in flight at once,
// and records whether they met.
type meetFS struct {
	vfs.FS
	mu      sync.Mutex
	waiting int
	arrived chan struct{}
	met     atomic.Bool
	armed   atomic.Bool
}

type meetFile struct {
	vfs.File
	fs      *meetFS
	readOne atomic.Bool
}

func (m *meetFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := m.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &meetFile{File: f, fs: m}, nil
}

func (f *meetFile) ReadAt(p []byte, off int64) (int, error) {
	m := f.fs
	// Only the first read of a file counts: the one that opens it.
	if !f.readOne.Swap(true) && m.armed.Load() && !m.met.Load() {
		m.mu.Lock()
		m.waiting++
		if m.met.Load() {
			m.mu.Unlock()
		} else if m.waiting >= 2 {
			m.met.Store(true)
			close(m.arrived)
			m.mu.Unlock()
		} else {
			m.mu.Unlock()
			select {
			case <-m.arrived:
			case <-time.After(3 * time.Second): // sequential opens never meet
				m.mu.Lock()
				if !m.met.Load() {
					m.waiting--
					m.armed.Store(false) // one wait shows it; do not wait per table
				}
				m.mu.Unlock()
			}
		}
	}
	return f.File.ReadAt(p, off)
}

// TestMultiGetOpensConcurrently reopens a DB and runs a MultiGet that needs
// many tables: they are opened concurrently (two opens' reads are in flight
// at once), not one after another.
func TestMultiGetOpensConcurrently(t *testing.T) {
	mem := vfs.NewMem()
	m := buildLayeredDB(t, mem, nil)
	if err := m.d.Close(); err != nil {
		t.Fatal(err)
	}
	mfs := &meetFS{FS: mem, arrived: make(chan struct{})}
	opts := testOptions(mfs)
	opts.DisableAutoCompactions = true
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var keys [][]byte
	for i := 0; i < 1500; i += 7 {
		keys = append(keys, testKey(i))
	}
	want := make([][]byte, len(keys))
	if n, _ := d.fileCache.numOpen(); n > 0 {
		t.Fatalf("%d tables open before the MultiGet", n)
	}
	mfs.armed.Store(true)
	vals, errs := d.MultiGet(keys, nil)
	if !mfs.met.Load() {
		t.Fatal("no two table reads were in flight at once: tables opened one by one")
	}
	for i, k := range keys {
		var err error
		if want[i], err = d.Get(k, nil); !errors.Is(err, errs[i]) && err != errs[i] || !bytes.Equal(vals[i], want[i]) {
			t.Fatalf("key %q: MultiGet %q %v, Get %q %v", k, vals[i], errs[i], want[i], err)
		}
	}
}

// TestMultiGetLargeBatch looks up every key at once on disk (io_uring where
// the kernel allows) without a block cache: rounds of more reads than the
// AsyncReader's queue depth, compared with looped Get.
func TestMultiGetLargeBatch(t *testing.T) {
	dir := testdir.New(t)
	opts := testOptions(vfs.Default)
	opts.DisableDynamicLevelBytes = true
	opts.BlockCacheSize = -1
	opts.BlockSize = 1 << 10 // many blocks: few keys share one
	opts.DisableAutoCompactions = true
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(modelSeed(t), 5))
	// 750 keys, of which some are absent or ruled out by bloom filters:
	// with 375 keys a seed could leave fewer reads than the queue depth.
	m := &mgDB{d: d, nKeys: 6000}
	m.writeRandom(t, rng, 12000, true)
	m.release()
	var keys [][]byte
	for i := 0; i < m.nKeys; i += 8 { // in blocks apart: reads not coalesced
		keys = append(keys, testKey(i))
	}
	want := make([][]byte, len(keys))
	wantErr := make([]error, len(keys))
	for i, k := range keys {
		want[i], wantErr[i] = d.Get(k, nil)
	}
	for _, mode := range multiGetModes {
		var pc PerfContext
		vals, errs := d.MultiGet(keys, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO, PerfContext: &pc})
		for i := range keys {
			if !bytes.Equal(vals[i], want[i]) || !errors.Is(errs[i], wantErr[i]) && errs[i] != wantErr[i] {
				t.Fatalf("%s: key %q: %.20q %v, Get %.20q %v", mode.name, keys[i], vals[i], errs[i], want[i], wantErr[i])
			}
		}
		t.Logf("%s (%s): %d keys, files per level %v, perf %+v", mode.name, d.Metrics().IO.AsyncReader, len(keys), m.shape(), pc)
		if pc.AsyncReads <= 128 {
			t.Fatalf("%s: only %d reads; want rounds larger than the queue depth", mode.name, pc.AsyncReads)
		}
	}
}

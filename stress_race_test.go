package shale

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// TestConcurrentStress runs writers (batches), readers (Get, MultiGet),
// iterators (bounded, both directions), snapshot holders, and Flush and
// CompactRange callers against one DB at once, on MemFS and on the OS file
// system, and checks what must hold under any interleaving:
//
//   - a batch is all-or-nothing for every reader: each batch rewrites one
//     group of keys (all values tagged with the batch), so every view shows
//     each group whole at one batch;
//   - a read sees every batch acknowledged before it started and none
//     issued after it ended (tags carry per-writer batch numbers);
//   - a snapshot's view never changes while it is held, through flushes
//     and compactions;
//   - an iterator returns keys in order within its bounds;
//   - the final state, and the state after Close and reopen, equals the
//     model of all acknowledged batches (each writer owns its keys).
//
// It runs about a second per file system (half that with -short);
// SHALE_STRESS=1 runs 30 s each, SHALE_STRESS_DURATION=10m sets the time.
func TestConcurrentStress(t *testing.T) {
	d := stressDuration(t)
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		t.Run("memfs", func(t *testing.T) {
			runConcurrentStress(t, seed, vfs.NewMem(), "/db", d)
		})
		t.Run("osfs", func(t *testing.T) {
			runConcurrentStress(t, seed, vfs.Default, testdir.New(t), d)
		})
	})
}

// stressDuration is how long each concurrent stress run lasts.
func stressDuration(t *testing.T) time.Duration {
	if s := os.Getenv("SHALE_STRESS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SHALE_STRESS_DURATION=%q: %v", s, err)
		}
		return d
	}
	return time.Duration(bySize(1000, 500, 30000)) * time.Millisecond
}

const (
	stressWriters   = 4
	stressGroups    = 8 // groups per writer
	stressGroupKeys = 6 // data keys per group, besides its meta key
)

// A group's keys are "w<w>-g<gg>-k<kk>" and its meta key "w<w>-g<gg>-meta":
// all of them lie in [groupPrefix+"-", groupPrefix+".").
func stressGroupPrefix(w, g int) string { return fmt.Sprintf("w%d-g%02d", w, g) }
func stressDataKey(w, g, k int) []byte {
	return []byte(fmt.Sprintf("%s-k%02d", stressGroupPrefix(w, g), k))
}
func stressMetaKey(w, g int) []byte { return []byte(stressGroupPrefix(w, g) + "-meta") }

// stressGroupKeysOf lists a group's data keys, then its meta key.
func stressGroupKeysOf(w, g int) [][]byte {
	keys := make([][]byte, 0, stressGroupKeys+1)
	for k := 0; k < stressGroupKeys; k++ {
		keys = append(keys, stressDataKey(w, g, k))
	}
	return append(keys, stressMetaKey(w, g))
}

// stressWriterState is what readers may know of a writer: issued is the
// number of the batch it is writing or last wrote (batches count from 1);
// acked[g] is the number of the last acknowledged batch that wrote group g.
type stressWriterState struct {
	issued atomic.Int64
	acked  [stressGroups]atomic.Int64
}

// stressBounds is what a read must see of each group: a batch number of at
// least acked (read before the read began) and at most issued (read after
// its view was fixed).
type stressBounds struct {
	acked  [stressWriters][stressGroups]int64
	issued [stressWriters]int64
}

type concurrentStress struct {
	t       *testing.T
	db      *DB
	writers [stressWriters]stressWriterState
	stop    atomic.Bool
	failed  atomic.Bool
	// counts of completed operations, by role.
	batches, gets, multiGets, iters, snapshots, flushes, compactions atomic.Int64
}

// stressPropertyNames are the DB properties the stress test reads while it
// runs.
var stressPropertyNames = []string{"rocksdb.stats", "rocksdb.levelstats", "rocksdb.num-files-at-level0",
	"rocksdb.estimate-num-keys", "rocksdb.total-sst-files-size", "rocksdb.live-sst-files-size",
	"rocksdb.estimate-pending-compaction-bytes", "rocksdb.num-running-compactions", "rocksdb.num-running-flushes",
	"rocksdb.compaction-pending", "rocksdb.mem-table-flush-pending", "rocksdb.num-immutable-mem-table",
	"rocksdb.cur-size-all-mem-tables", "rocksdb.num-entries-active-mem-table", "rocksdb.block-cache-usage",
	"rocksdb.num-snapshots", "rocksdb.oldest-snapshot-time", "rocksdb.background-errors", "rocksdb.is-write-stopped",
	"rocksdb.num-blob-files", "rocksdb.total-blob-file-size", "rocksdb.live-blob-file-size",
	"rocksdb.live-blob-file-garbage-size", "rocksdb.blob-stats"}

func (s *concurrentStress) fail(format string, args ...any) {
	if s.failed.CompareAndSwap(false, true) {
		s.t.Errorf(format, args...)
	}
	s.stop.Store(true)
}

// yield lets readers, which never block, give way: on two cores a woken
// writer or the WAL's flusher would otherwise wait a whole preemption slice
// (about 10 ms) for a processor, and writes would crawl.
func (s *concurrentStress) yield() { runtime.Gosched() }

func (s *concurrentStress) ackedBefore() *stressBounds {
	b := &stressBounds{}
	for w := range s.writers {
		for g := range s.writers[w].acked {
			b.acked[w][g] = s.writers[w].acked[g].Load()
		}
	}
	return b
}

// issuedAfter completes b once the read's view is fixed.
func (s *concurrentStress) issuedAfter(b *stressBounds) {
	for w := range s.writers {
		b.issued[w] = s.writers[w].issued.Load()
	}
}

// parseStressTag reads "w<w>-n<n>" at the start of a value.
func parseStressTag(v []byte) (w int, n int64, ok bool) {
	tag, _, _ := bytes.Cut(v, []byte("|"))
	ws, ns, found := strings.Cut(string(tag), "-n")
	if !found || len(ws) < 2 || ws[0] != 'w' {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(ws[1:])
	n, err2 := strconv.ParseInt(ns, 10, 64)
	return w, n, err1 == nil && err2 == nil
}

// checkGroup checks one group as a read saw it: data[k] is data key k's
// value (nil = absent), meta the meta key's. It returns the batch the group
// shows, or an error saying how the view is impossible.
func checkGroup(w, g int, data [stressGroupKeys][]byte, meta []byte, b *stressBounds) error {
	var n int64
	switch {
	case meta == nil:
		for k, v := range data {
			if v != nil {
				return fmt.Errorf("group %s: data key %d = %q without a meta key", stressGroupPrefix(w, g), k, v)
			}
		}
	case bytes.HasPrefix(meta, []byte("put:")) || bytes.HasPrefix(meta, []byte("del:")):
		mw, mn, ok := parseStressTag(meta[4:])
		if !ok || mw != w {
			return fmt.Errorf("group %s: malformed meta %q", stressGroupPrefix(w, g), meta)
		}
		n = mn
		put := meta[0] == 'p'
		for k, v := range data {
			if !put && v != nil {
				return fmt.Errorf("group %s: data key %d = %.20q after delete batch %d: a batch was not atomic", stressGroupPrefix(w, g), k, v, n)
			}
			if put {
				if v == nil {
					return fmt.Errorf("group %s: data key %d missing in put batch %d: a batch was not atomic", stressGroupPrefix(w, g), k, n)
				}
				if dw, dn, ok := parseStressTag(v); !ok || dw != w || dn != n {
					return fmt.Errorf("group %s: data key %d = %.20q in put batch %d: a batch was not atomic", stressGroupPrefix(w, g), k, v, n)
				}
			}
		}
	default:
		return fmt.Errorf("group %s: malformed meta %q", stressGroupPrefix(w, g), meta)
	}
	if b != nil {
		if n < b.acked[w][g] {
			return fmt.Errorf("group %s shows batch %d, but batch %d was acknowledged before the read began", stressGroupPrefix(w, g), n, b.acked[w][g])
		}
		if n > b.issued[w] {
			return fmt.Errorf("group %s shows batch %d, but writer %d had issued only %d batches when the read's view was fixed", stressGroupPrefix(w, g), n, w, b.issued[w])
		}
	}
	return nil
}

// checkGroups checks every whole group of a scan (key -> value).
func checkGroups(kvs map[string][]byte, b *stressBounds, wantAll bool) error {
	for w := 0; w < stressWriters; w++ {
		for g := 0; g < stressGroups; g++ {
			if !wantAll {
				if _, ok := kvs[string(stressMetaKey(w, g))]; !ok {
					continue // possibly outside the scanned range
				}
			}
			var data [stressGroupKeys][]byte
			for k := range data {
				data[k] = kvs[string(stressDataKey(w, g, k))]
			}
			if err := checkGroup(w, g, data, kvs[string(stressMetaKey(w, g))], b); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanStress reads [lower, upper) with a new iterator (at ro's snapshot,
// if any), forward or backward, checking order and bounds.
func scanStress(db *DB, ro ReadOptions, reverse bool) (map[string][]byte, error) {
	it := db.NewIterator(&ro)
	kvs := map[string][]byte{}
	var prev []byte
	ok := it.First()
	if reverse {
		ok = it.Last()
	}
	for ; ok; ok = step(it, reverse) {
		k := it.Key()
		if (ro.LowerBound != nil && bytes.Compare(k, ro.LowerBound) < 0) || (ro.UpperBound != nil && bytes.Compare(k, ro.UpperBound) >= 0) {
			it.Close()
			return nil, fmt.Errorf("iterator [%s,%s) returned %s, outside its bounds", ro.LowerBound, ro.UpperBound, k)
		}
		if prev != nil {
			if c := bytes.Compare(k, prev); (c <= 0 && !reverse) || (c >= 0 && reverse) {
				it.Close()
				return nil, fmt.Errorf("iterator (reverse=%v) returned %s after %s", reverse, k, prev)
			}
		}
		prev = append(prev[:0], k...)
		kvs[string(k)] = append([]byte(nil), it.Value()...)
	}
	return kvs, it.Close()
}

func step(it *Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

func runConcurrentStress(t *testing.T, seed uint64, fs vfs.FS, dir string, d time.Duration, variants ...func(*Options)) {
	opts := testOptions(fs)
	opts.MaxBackgroundJobs = 3
	opts.MaxWriteBufferNumber = 4
	for _, v := range variants {
		v(opts)
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &concurrentStress{t: t, db: db}
	models := make([]model, stressWriters)
	var wg sync.WaitGroup
	spawn := func(role uint64, fn func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(rand.New(rand.NewPCG(seed, role)))
		}()
	}
	for w := 0; w < stressWriters; w++ {
		models[w] = model{}
		spawn(uint64(w), func(rng *rand.Rand) { s.writer(rng, w, models[w]) })
	}
	spawn(100, s.getter)
	spawn(101, s.multiGetter)
	spawn(102, s.iterator)
	spawn(103, s.iterator)
	spawn(104, s.snapshotter)
	// Flushes and manual compactions are paced: back to back, each
	// CompactRange's flush would rotate the memtable so often that writers
	// mostly wait for room.
	spawn(105, func(rng *rand.Rand) {
		for !s.stop.Load() {
			time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
			if err := db.Flush(); err != nil {
				s.fail("Flush: %v", err)
			}
			s.flushes.Add(1)
		}
	})
	spawn(106, func(rng *rand.Rand) {
		for !s.stop.Load() {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			var start, end []byte
			if rng.IntN(2) == 0 {
				w := rng.IntN(stressWriters)
				start, end = []byte(stressGroupPrefix(w, rng.IntN(stressGroups))), []byte(stressGroupPrefix(w, stressGroups-1)+".")
			}
			if err := db.CompactRange(start, end); err != nil {
				s.fail("CompactRange(%s, %s): %v", start, end, err)
			}
			s.compactions.Add(1)
		}
	})

	spawn(107, func(rng *rand.Rand) {
		// Properties read the DB's state under its locks while everything
		// else runs: under -race this finds a property reading unlocked.
		for !s.stop.Load() {
			time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
			for _, name := range stressPropertyNames {
				if _, ok := db.GetProperty(name); !ok {
					s.fail("GetProperty(%q): unknown", name)
				}
			}
		}
	})

	// Run for d, and on until every role has done its work at least once
	// (a loaded machine may starve one), but never past a hard limit.
	deadline := time.Now().Add(d)
	hardLimit := time.Now().Add(d + 2*time.Minute)
	counters := []*atomic.Int64{&s.batches, &s.gets, &s.multiGets, &s.iters, &s.snapshots, &s.flushes, &s.compactions}
	for !s.stop.Load() {
		time.Sleep(10 * time.Millisecond)
		if now := time.Now(); now.After(deadline) {
			done := true
			for _, c := range counters {
				done = done && c.Load() > 0
			}
			if done || now.After(hardLimit) {
				break
			}
		}
	}
	s.stop.Store(true)
	wg.Wait()
	t.Logf("batches %d, gets %d, multigets %d, iterators %d, snapshots %d, flushes %d, compactions %d; write stalls %+v",
		s.batches.Load(), s.gets.Load(), s.multiGets.Load(), s.iters.Load(), s.snapshots.Load(), s.flushes.Load(), s.compactions.Load(), db.Metrics().Stall)
	if t.Failed() {
		db.Close()
		return
	}
	for i, c := range counters {
		if c.Load() == 0 {
			t.Errorf("role %d did no work", i)
		}
	}

	want := model{}
	for _, m := range models {
		for k, v := range m {
			want[k] = v
		}
	}
	checkStressFinal := func(db *DB, when string) {
		t.Helper()
		got, err := scanStress(db, ReadOptions{}, false)
		if err != nil {
			t.Fatalf("%s: scan: %v", when, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, the acknowledged batches leave %d", when, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != v {
				t.Fatalf("%s: %s = %.30q, the acknowledged batches leave %.30q", when, k, got[k], v)
			}
		}
		if err := checkGroups(got, nil, true); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if n, err := verifyBlobReferences(db); err != nil {
			t.Fatalf("%s: %v", when, err)
		} else if opts.EnableBlobFiles && n == 0 {
			t.Fatalf("%s: blob files are on, but no table holds a blob index", when)
		}
	}
	checkStressFinal(db, "after the run")
	if m := db.Metrics(); m.NumSnapshots != 0 || m.NumIterators != 0 {
		t.Errorf("after the run: %d snapshots and %d iterators still open", m.NumSnapshots, m.NumIterators)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkStressFinal(db, "after reopen")
}

// writer commits batches to its own groups: a put batch rewrites every key
// of a group (sometimes of two groups) with values tagged by the batch, a
// delete batch removes the data keys (by Delete or DeleteRange) and tags
// the meta key.
func (s *concurrentStress) writer(rng *rand.Rand, w int, m model) {
	ws := &s.writers[w]
	b := s.db.NewBatch()
	for n := int64(1); !s.stop.Load(); n++ {
		b.Reset()
		groups := []int{rng.IntN(stressGroups)}
		if rng.IntN(10) == 0 {
			if g := rng.IntN(stressGroups); g != groups[0] {
				groups = append(groups, g)
			}
		}
		tag := fmt.Sprintf("w%d-n%07d", w, n)
		next := map[string]*string{} // nil = deleted
		for _, g := range groups {
			switch r := rng.IntN(10); {
			case r < 7:
				for k := 0; k < stressGroupKeys; k++ {
					v := tag + "|" + strings.Repeat("x", rng.IntN(200))
					b.Put(stressDataKey(w, g, k), []byte(v))
					next[string(stressDataKey(w, g, k))] = &v
				}
				meta := "put:" + tag
				b.Put(stressMetaKey(w, g), []byte(meta))
				next[string(stressMetaKey(w, g))] = &meta
			default:
				if r < 9 {
					for k := 0; k < stressGroupKeys; k++ {
						b.Delete(stressDataKey(w, g, k))
					}
				} else {
					p := stressGroupPrefix(w, g)
					b.DeleteRange([]byte(p+"-k"), []byte(p+"-l"))
				}
				for k := 0; k < stressGroupKeys; k++ {
					next[string(stressDataKey(w, g, k))] = nil
				}
				meta := "del:" + tag
				b.Put(stressMetaKey(w, g), []byte(meta))
				next[string(stressMetaKey(w, g))] = &meta
			}
		}
		ws.issued.Store(n)
		if err := s.db.Write(b, &WriteOptions{Sync: rng.IntN(16) == 0}); err != nil {
			s.fail("writer %d: batch %d: %v", w, n, err)
			return
		}
		for k, v := range next {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = *v
			}
		}
		for _, g := range groups {
			ws.acked[g].Store(n)
		}
		s.batches.Add(1)
	}
}

// getter reads single keys: a meta key shows a batch within the bounds, a
// data key a well-formed value no newer than what was issued.
func (s *concurrentStress) getter(rng *rand.Rand) {
	for !s.stop.Load() {
		w, g := rng.IntN(stressWriters), rng.IntN(stressGroups)
		b := s.ackedBefore()
		key := stressDataKey(w, g, rng.IntN(stressGroupKeys))
		isMeta := rng.IntN(2) == 0
		if isMeta {
			key = stressMetaKey(w, g)
		}
		v, err := s.db.Get(key, nil)
		s.issuedAfter(b)
		switch {
		case errors.Is(err, ErrNotFound):
			if isMeta && b.acked[w][g] > 0 {
				s.fail("Get(%s): not found, but batch %d wrote it and was acknowledged before", key, b.acked[w][g])
			}
		case err != nil:
			s.fail("Get(%s): %v", key, err)
		default:
			if isMeta {
				if len(v) < 4 {
					s.fail("Get(%s) = %q: malformed", key, v)
					continue
				}
				v = v[4:]
			}
			vw, n, ok := parseStressTag(v)
			switch {
			case !ok || vw != w:
				s.fail("Get(%s) = %.30q: malformed", key, v)
			case n > b.issued[w]:
				s.fail("Get(%s) shows batch %d, but only %d were issued", key, n, b.issued[w])
			case isMeta && n < b.acked[w][g]:
				s.fail("Get(%s) shows batch %d, but batch %d was acknowledged before", key, n, b.acked[w][g])
			}
		}
		s.gets.Add(1)
		s.yield()
	}
}

// multiGetter reads whole groups (one or two) with MultiGet, which reads at
// one sequence number: each group must be whole.
func (s *concurrentStress) multiGetter(rng *rand.Rand) {
	for !s.stop.Load() {
		type wg struct{ w, g int }
		groups := []wg{{rng.IntN(stressWriters), rng.IntN(stressGroups)}}
		if rng.IntN(2) == 0 {
			groups = append(groups, wg{rng.IntN(stressWriters), rng.IntN(stressGroups)})
		}
		var keys [][]byte
		for _, x := range groups {
			keys = append(keys, stressGroupKeysOf(x.w, x.g)...)
		}
		b := s.ackedBefore()
		vals, errs := s.db.MultiGet(keys, nil)
		s.issuedAfter(b)
		for i, x := range groups {
			var data [stressGroupKeys][]byte
			var meta []byte
			for k := 0; k <= stressGroupKeys; k++ {
				j := i*(stressGroupKeys+1) + k
				if errs[j] != nil && !errors.Is(errs[j], ErrNotFound) {
					s.fail("MultiGet(%s): %v", keys[j], errs[j])
					return
				}
				if k < stressGroupKeys {
					data[k] = vals[j]
				} else {
					meta = vals[j]
				}
			}
			if err := checkGroup(x.w, x.g, data, meta, b); err != nil {
				s.fail("MultiGet: %v", err)
			}
		}
		s.multiGets.Add(1)
		s.yield()
	}
}

// randomGroupBounds returns bounds on group boundaries (nil = unbounded).
func randomGroupBounds(rng *rand.Rand) (lower, upper []byte) {
	var lp, up string
	if rng.IntN(3) > 0 {
		lp = stressGroupPrefix(rng.IntN(stressWriters), rng.IntN(stressGroups))
	}
	if rng.IntN(3) > 0 {
		up = stressGroupPrefix(rng.IntN(stressWriters), rng.IntN(stressGroups))
	}
	if lp != "" && up != "" && lp > up {
		lp, up = up, lp
	}
	if lp != "" {
		lower = []byte(lp + "-")
	}
	if up != "" {
		upper = []byte(up + ".")
	}
	return lower, upper
}

// iterator scans random group-aligned ranges at the latest state, in both
// directions.
func (s *concurrentStress) iterator(rng *rand.Rand) {
	for !s.stop.Load() {
		lower, upper := randomGroupBounds(rng)
		b := s.ackedBefore()
		ro := ReadOptions{LowerBound: lower, UpperBound: upper}
		// The iterator's view is fixed at NewIterator, inside scanStress;
		// issued is read after the scan, a looser but sound bound.
		kvs, err := scanStress(s.db, ro, rng.IntN(2) == 0)
		s.issuedAfter(b)
		if err == nil {
			err = checkGroups(kvs, b, false)
		}
		if err != nil {
			s.fail("iterator [%s,%s): %v", lower, upper, err)
		}
		s.iters.Add(1)
		s.yield()
	}
}

// snapshotter holds up to four snapshots at a time, each checked when
// taken and re-read (whole scans, bounded reverse scans, MultiGet, Get)
// while writes, flushes and compactions go on: nothing it shows may change.
func (s *concurrentStress) snapshotter(rng *rand.Rand) {
	type held struct {
		snap *Snapshot
		kvs  map[string][]byte
	}
	var live []held
	defer func() {
		for _, h := range live {
			h.snap.Release()
		}
	}()
	for ; !s.stop.Load(); s.yield() {
		if len(live) < 4 && (len(live) == 0 || rng.IntN(3) == 0) {
			b := s.ackedBefore()
			snap := s.db.NewSnapshot()
			s.issuedAfter(b)
			kvs, err := scanStress(s.db, ReadOptions{Snapshot: snap}, false)
			if err == nil {
				err = checkGroups(kvs, b, true)
			}
			if err != nil {
				snap.Release()
				s.fail("snapshot %d: %v", snap.SeqNum(), err)
				return
			}
			live = append(live, held{snap, kvs})
			s.snapshots.Add(1)
			continue
		}
		i := rng.IntN(len(live))
		h := live[i]
		switch rng.IntN(4) {
		case 0:
			h.snap.Release()
			live = append(live[:i], live[i+1:]...)
		case 1:
			lower, upper := randomGroupBounds(rng)
			kvs, err := scanStress(s.db, ReadOptions{Snapshot: h.snap, LowerBound: lower, UpperBound: upper}, rng.IntN(2) == 0)
			if err != nil {
				s.fail("snapshot %d: %v", h.snap.SeqNum(), err)
				return
			}
			for k, v := range h.kvs {
				inRange := (lower == nil || k >= string(lower)) && (upper == nil || k < string(upper))
				if got, ok := kvs[k]; inRange && (!ok || !bytes.Equal(got, v)) {
					s.fail("snapshot %d changed: %s was %.30q, now %.30q", h.snap.SeqNum(), k, v, got)
					return
				}
			}
			for k := range kvs {
				if _, ok := h.kvs[k]; !ok {
					s.fail("snapshot %d changed: %s appeared", h.snap.SeqNum(), k)
					return
				}
			}
		case 2:
			keys := stressGroupKeysOf(rng.IntN(stressWriters), rng.IntN(stressGroups))
			vals, errs := s.db.MultiGet(keys, &ReadOptions{Snapshot: h.snap})
			for j, k := range keys {
				want, ok := h.kvs[string(k)]
				if (ok && (errs[j] != nil || !bytes.Equal(vals[j], want))) || (!ok && !errors.Is(errs[j], ErrNotFound)) {
					s.fail("snapshot %d changed: MultiGet %s = %.30q, %v; was %.30q", h.snap.SeqNum(), k, vals[j], errs[j], want)
					return
				}
			}
		default:
			k := stressDataKey(rng.IntN(stressWriters), rng.IntN(stressGroups), rng.IntN(stressGroupKeys))
			v, err := s.db.Get(k, &ReadOptions{Snapshot: h.snap})
			want, ok := h.kvs[string(k)]
			if (ok && (err != nil || !bytes.Equal(v, want))) || (!ok && !errors.Is(err, ErrNotFound)) {
				s.fail("snapshot %d changed: Get %s = %.30q, %v; was %.30q", h.snap.SeqNum(), k, v, err, want)
				return
			}
		}
	}
}

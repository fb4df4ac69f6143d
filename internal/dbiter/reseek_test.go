package dbiter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/mergeiter"
)

// versionsDB is a random key space with long runs of versions per key, so
// that moves meet runs longer than Options.MaxSkip: of skipped versions of
// a decided key, and of versions newer than the snapshot.
type versionsDB struct {
	nkeys   int
	entries []itertest.Entry // sorted, unique seqnums
	tombs   tombstoneList
	maxSeq  base.SeqNum
}

// tombstoneList is a naive RangeDelChecker over half-open key ranges.
type tombstoneList []struct {
	start, end []byte
	seq        base.SeqNum
}

func (ts tombstoneList) Covers(key []byte, seq, snapshot base.SeqNum) bool {
	for _, t := range ts {
		if t.seq <= snapshot && seq < t.seq && bytes.Compare(t.start, key) <= 0 && bytes.Compare(key, t.end) < 0 {
			return true
		}
	}
	return false
}

// pointKinds are the kinds of the entries of a versionsDB. With
// withOthers, RangeDelete entries appear in the point stream too (the
// iterator must step over them).
func randomVersionsDB(rng *rand.Rand, withOthers bool) *versionsDB {
	kinds := []base.Kind{base.KindSet, base.KindSet, base.KindSet, base.KindDelete, base.KindSingleDelete, base.KindMerge, base.KindBlobIndex}
	if withOthers {
		kinds = append(kinds, base.KindRangeDelete)
	}
	db := &versionsDB{nkeys: 1 + rng.IntN(12)}
	versions := make([]int, db.nkeys)
	n := 0
	for k := range versions {
		switch rng.IntN(4) {
		case 0: // absent
		case 1:
			versions[k] = 1 + rng.IntN(3)
		default:
			versions[k] = 1 + rng.IntN(30)
		}
		n += versions[k]
	}
	seqs := rng.Perm(n)
	for k, nv := range versions {
		// Tombstones come in runs, as deletes of the same key repeated.
		for range nv {
			seq := base.SeqNum(seqs[0] + 1)
			seqs = seqs[1:]
			db.entries = append(db.entries, itertest.Entry{
				Key:   base.MakeInternalKey(itertest.UserKey(k), seq, kinds[rng.IntN(len(kinds))]),
				Value: fmt.Appendf(nil, "v%d@%d", k, seq),
			})
		}
	}
	db.maxSeq = base.SeqNum(n)
	itertest.SortEntries(db.entries)
	for range rng.IntN(3) {
		a, b := rng.IntN(db.nkeys+1), rng.IntN(db.nkeys+1)
		if a > b {
			a, b = b, a
		}
		db.tombs = append(db.tombs, struct {
			start, end []byte
			seq        base.SeqNum
		}{itertest.UserKey(a), itertest.UserKey(b), base.SeqNum(rng.IntN(n + 2))})
	}
	return db
}

// visible returns the keys and values a reader at snap sees in [lower,
// upper), with tombs applied when it is not nil.
func (db *versionsDB) visible(snap base.SeqNum, lower, upper []byte, tombs RangeDelChecker) (keys, vals [][]byte) {
	for i := 0; i < len(db.entries); {
		uk := db.entries[i].Key.UserKey
		var newest *itertest.Entry
		for ; i < len(db.entries) && bytes.Equal(db.entries[i].Key.UserKey, uk); i++ {
			e := &db.entries[i]
			if newest == nil && e.Key.SeqNum() <= snap && e.Key.Kind() != base.KindRangeDelete {
				newest = e
			}
		}
		if newest == nil || (lower != nil && bytes.Compare(uk, lower) < 0) || (upper != nil && bytes.Compare(uk, upper) >= 0) {
			continue
		}
		switch newest.Key.Kind() {
		case base.KindSet, base.KindMerge, base.KindBlobIndex:
			if tombs != nil && tombs.Covers(uk, newest.Key.SeqNum(), snap) {
				continue
			}
			keys, vals = append(keys, uk), append(vals, newest.Value)
		}
	}
	return keys, vals
}

// seekableSlice is a SliceIter that is a base.InternalSeeker, by seeking
// to the user key and stepping (what base.SeekGEInternal does for other
// iterators), so that a lone child gets forward reseeks.
type seekableSlice struct{ itertest.SliceIter }

func (s *seekableSlice) SeekGEInternal(k base.InternalKey) bool {
	ok := s.SeekGE(k.UserKey)
	for ok && base.InternalCompare(bytes.Compare, s.Key(), k) < 0 {
		ok = s.Next()
	}
	return ok
}

// childOf returns an internal iterator over db's entries of one of three
// shapes: merged from k children (the merge is an InternalSeeker), one
// seekableSlice, or one plain SliceIter (forward reseeks impossible).
func (db *versionsDB) childOf(rng *rand.Rand) (base.InternalIterator, string) {
	switch rng.IntN(3) {
	case 0:
		return &seekableSlice{itertest.SliceIter{Entries: db.entries}}, "seekable slice"
	case 1:
		return &itertest.SliceIter{Entries: db.entries}, "plain slice"
	}
	k := 1 + rng.IntN(4)
	parts := make([][]itertest.Entry, k)
	for _, e := range db.entries {
		c := rng.IntN(k)
		parts[c] = append(parts[c], e)
	}
	iters := make([]base.InternalIterator, k)
	for i := range parts {
		iters[i] = &itertest.SliceIter{Entries: parts[i]}
	}
	return mergeiter.New(bytes.Compare, iters...), fmt.Sprintf("merge of %d", k)
}

// maxSkips are the Options.MaxSkip values the reseek tests run: RocksDB's
// 0 (a seek at the first skipped entry), small ones, its default 8, and
// -1 for no reseeks at all (Options.Reseek off).
var maxSkips = []int{0, 1, 2, 8, -1}

// reseekOptions returns o with reseeks after maxSkip, or none for -1.
func reseekOptions(o Options, maxSkip int) Options {
	o.Reseek, o.MaxSkip = maxSkip >= 0, int32(max(maxSkip, 0))
	return o
}

// TestReseekRandom runs random operations on iterators over keys with
// long version runs, under every MaxSkip, and checks every answer against
// the model: reseeking changes how the iterator moves, never what it
// returns. It also checks that reseeks happened.
func TestReseekRandom(t *testing.T) {
	reseeks := map[int]uint64{}
	for iter := 0; iter < 200; iter++ {
		seed := itertest.Seed(iter)
		for _, maxSkip := range maxSkips {
			rng := rand.New(rand.NewPCG(seed, 11))
			db := randomVersionsDB(rng, true)
			o := reseekOptions(Options{
				Snapshot: randomSnapshot(rng, db.maxSeq),
				Lower:    randomBound(rng, db.nkeys),
				Upper:    randomBound(rng, db.nkeys),
			}, maxSkip)
			var checker RangeDelChecker
			if len(db.tombs) > 0 && rng.IntN(2) == 0 {
				o.RangeDels, checker = db.tombs, db.tombs
			}
			keys, vals := db.visible(o.Snapshot, o.Lower, o.Upper, checker)
			child, shape := db.childOf(rng)
			it := New(child, o)
			ctx := fmt.Sprintf("seed %d MaxSkip %d (%s, snapshot %d, bounds [%s, %s), tombstones %v)",
				seed, maxSkip, shape, o.Snapshot, o.Lower, o.Upper, o.RangeDels != nil)
			runOps(t, ctx, rng, it, keys, vals, db.nkeys, 200)
			reseeks[maxSkip] += it.Stats().Reseeks
			if err := it.Close(); err != nil {
				t.Fatalf("%s: close: %v", ctx, err)
			}
		}
	}
	for _, maxSkip := range maxSkips {
		switch r := reseeks[maxSkip]; {
		case maxSkip < 0 && r != 0:
			t.Errorf("MaxSkip %d: %d reseeks, want none", maxSkip, r)
		case maxSkip >= 0 && r == 0:
			t.Errorf("MaxSkip %d: no reseek happened: the test does not exercise them", maxSkip)
		}
	}
}

// scanCounts is what full scans of a versionsDB must count when the
// iterator steps through everything (Reseek off), derived from the entries
// alone: forward, every entry in bounds is counted exactly once, the
// deciding tombstone (or covered value) of each deleted key as a delete,
// the versions newer than the snapshot as recent, all others as keys
// skipped (a present key's deciding entry by the Next that leaves it);
// backward, every visible entry is a key skipped, every visible tombstone
// entry a delete too, and the newer versions recent.
type scanCounts struct {
	fwd, bwd Stats
}

func (db *versionsDB) expectedScanCounts(snap base.SeqNum, lower, upper []byte, tombs RangeDelChecker) scanCounts {
	var c scanCounts
	for i := 0; i < len(db.entries); {
		uk := db.entries[i].Key.UserKey
		in := (lower == nil || bytes.Compare(uk, lower) >= 0) && (upper == nil || bytes.Compare(uk, upper) < 0)
		decided := false
		for ; i < len(db.entries) && bytes.Equal(db.entries[i].Key.UserKey, uk); i++ {
			if !in {
				continue
			}
			e := db.entries[i].Key
			if e.SeqNum() > snap {
				c.fwd.RecentSkipped++
				c.bwd.RecentSkipped++
				continue
			}
			c.bwd.KeySkipped++
			if e.Kind().IsTombstone() {
				c.bwd.DeleteSkipped++
			}
			if decided {
				c.fwd.KeySkipped++
				continue
			}
			decided = true
			if e.Kind().IsTombstone() || (tombs != nil && tombs.Covers(uk, e.SeqNum(), snap)) {
				c.fwd.DeleteSkipped++
			} else {
				c.fwd.KeySkipped++ // by the Next leaving it
			}
		}
		if in && decided && tombs != nil {
			// Backward, a value the tombstones cover is a deleted key too:
			// the newest visible entry, the first visible in key order.
			j := i - 1
			for j > 0 && bytes.Equal(db.entries[j-1].Key.UserKey, uk) {
				j--
			}
			for ; j < i; j++ {
				if e := db.entries[j].Key; e.SeqNum() <= snap {
					if !e.Kind().IsTombstone() && tombs.Covers(uk, e.SeqNum(), snap) {
						c.bwd.DeleteSkipped++
					}
					break
				}
			}
		}
	}
	return c
}

// fullScans scans it forward (First, Next to the end) and backward (Last,
// Prev to the start) and returns what each counted.
func fullScans(it *Iter) (fwd, bwd Stats) {
	before := it.Stats()
	for ok := it.First(); ok; ok = it.Next() {
	}
	mid := it.Stats()
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	end := it.Stats()
	return diffStats(mid, before), diffStats(end, mid)
}

func diffStats(a, b Stats) Stats {
	return Stats{
		KeySkipped:    a.KeySkipped - b.KeySkipped,
		DeleteSkipped: a.DeleteSkipped - b.DeleteSkipped,
		RecentSkipped: a.RecentSkipped - b.RecentSkipped,
		Reseeks:       a.Reseeks - b.Reseeks,
	}
}

// TestSkipCountsFullScans checks the counts of full scans in both
// directions against what the entries say they must be, when the iterator
// steps through everything; and that with reseeks it counts the same
// deleted keys forward, and never more of anything.
func TestSkipCountsFullScans(t *testing.T) {
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 12))
		db := randomVersionsDB(rng, false)
		snap := randomSnapshot(rng, db.maxSeq)
		lower, upper := randomBound(rng, db.nkeys), randomBound(rng, db.nkeys)
		var tombs RangeDelChecker
		if len(db.tombs) > 0 && rng.IntN(2) == 0 {
			tombs = db.tombs
		}
		want := db.expectedScanCounts(snap, lower, upper, tombs)
		ctx := fmt.Sprintf("seed %d (snapshot %d, bounds [%s, %s), tombstones %v)", seed, snap, lower, upper, tombs != nil)
		it := New(&seekableSlice{itertest.SliceIter{Entries: db.entries}}, Options{Snapshot: snap, Lower: lower, Upper: upper, RangeDels: tombs})
		fwd, bwd := fullScans(it)
		it.Close()
		if fwd != want.fwd {
			t.Fatalf("%s: forward scan counted %+v, want %+v", ctx, fwd, want.fwd)
		}
		if bwd != want.bwd {
			t.Fatalf("%s: backward scan counted %+v, want %+v", ctx, bwd, want.bwd)
		}
		for _, maxSkip := range []int{0, 1, 2, 8} {
			it := New(&seekableSlice{itertest.SliceIter{Entries: db.entries}}, reseekOptions(Options{Snapshot: snap, Lower: lower, Upper: upper, RangeDels: tombs}, maxSkip))
			rf, rb := fullScans(it)
			it.Close()
			if rf.DeleteSkipped != fwd.DeleteSkipped || rf.KeySkipped > fwd.KeySkipped || rf.RecentSkipped > fwd.RecentSkipped {
				t.Fatalf("%s: MaxSkip %d forward counted %+v, stepping %+v", ctx, maxSkip, rf, fwd)
			}
			if rb.KeySkipped > bwd.KeySkipped || rb.RecentSkipped > bwd.RecentSkipped || rb.DeleteSkipped > bwd.DeleteSkipped {
				t.Fatalf("%s: MaxSkip %d backward counted %+v, stepping %+v", ctx, maxSkip, rb, bwd)
			}
		}
	}
}

// entriesOf builds sorted entries from "key@seq.KIND" words.
func entriesOf(t *testing.T, spec string) []itertest.Entry {
	t.Helper()
	kinds := map[string]base.Kind{"SET": base.KindSet, "DEL": base.KindDelete, "SINGLEDEL": base.KindSingleDelete}
	var es []itertest.Entry
	for _, w := range strings.Fields(spec) {
		var key, kind string
		var seq uint64
		at := strings.IndexByte(w, '@')
		dot := strings.IndexByte(w, '.')
		key, kind = w[:at], w[dot+1:]
		if _, err := fmt.Sscan(w[at+1:dot], &seq); err != nil {
			t.Fatalf("bad entry %q", w)
		}
		es = append(es, itertest.Entry{Key: base.MakeInternalKey([]byte(key), base.SeqNum(seq), kinds[kind]), Value: []byte(w)})
	}
	itertest.SortEntries(es)
	return es
}

// versionRun returns "key@from.KIND ... key@to.KIND".
func versionRun(key string, from, to int, kind string) string {
	var b strings.Builder
	for s := from; s <= to; s++ {
		fmt.Fprintf(&b, " %s@%d.%s", key, s, kind)
	}
	return b.String()
}

// TestSkipCountsExact checks the counters and reseeks of small hand-built
// cases, forward and backward, against the numbers RocksDB's DBIter
// counts for the same entries.
func TestSkipCountsExact(t *testing.T) {
	type move func(it *Iter) bool
	first := func(it *Iter) bool { return it.First() }
	last := func(it *Iter) bool { return it.Last() }
	next := func(it *Iter) bool { return it.Next() }
	prev := func(it *Iter) bool { return it.Prev() }
	seekGE := func(k string) move { return func(it *Iter) bool { return it.SeekGE([]byte(k)) } }
	cases := []struct {
		name    string
		entries string
		snap    base.SeqNum
		tombs   tombstoneList
		maxSkip int
		moves   []move
		keys    string // the keys the moves land on, "." for none
		want    Stats
	}{{
		// The seed's shape: deleted keys before the live ones. Each deleted
		// key counts one delete and one key (the value it hides); Next
		// counts the key it leaves.
		name:    "deleted prefix forward",
		entries: "a@1.SET b@2.SET c@3.SET d@4.SET b@5.DEL c@6.DEL",
		snap:    base.SeqNumMax, maxSkip: 8,
		moves: []move{first, next, next}, keys: "a d .",
		want: Stats{KeySkipped: 2 + 2, DeleteSkipped: 2},
	}, {
		// Backward every visible entry passed counts as a key, its
		// tombstones as deletes too.
		name:    "deleted prefix backward",
		entries: "a@1.SET b@2.SET c@3.SET d@4.SET b@5.DEL c@6.DEL",
		snap:    base.SeqNumMax, maxSkip: 8,
		moves: []move{last, prev, prev}, keys: "d a .",
		want: Stats{KeySkipped: 6, DeleteSkipped: 2},
	}, {
		// A snapshot below some versions: the newer ones count as recent.
		name:    "recent versions forward",
		entries: "a@1.SET a@5.SET a@6.SET b@2.SET b@7.DEL",
		snap:    4, maxSkip: 8,
		moves: []move{first, next, next}, keys: "a b .",
		want: Stats{RecentSkipped: 3, KeySkipped: 2},
	}, {
		name:    "recent versions backward",
		entries: "a@1.SET a@5.SET a@6.SET b@2.SET b@7.DEL",
		snap:    4, maxSkip: 8,
		moves: []move{last, prev, prev}, keys: "b a .",
		want: Stats{RecentSkipped: 3, KeySkipped: 2},
	}, {
		// Twelve hidden versions of a behind a tombstone, MaxSkip 2: after
		// three of them skipped the iterator seeks past a.
		name:    "reseek past a deleted key's versions",
		entries: versionRun("a", 1, 12, "SET") + " a@13.DEL b@14.SET",
		snap:    base.SeqNumMax, maxSkip: 2,
		moves: []move{first}, keys: "b",
		want: Stats{DeleteSkipped: 1, KeySkipped: 3, Reseeks: 1},
	}, {
		name:    "stepping through a deleted key's versions",
		entries: versionRun("a", 1, 12, "SET") + " a@13.DEL b@14.SET",
		snap:    base.SeqNumMax, maxSkip: -1,
		moves: []move{first}, keys: "b",
		want: Stats{DeleteSkipped: 1, KeySkipped: 12},
	}, {
		// Next from a key with many older versions.
		name:    "reseek past the current key's versions",
		entries: versionRun("a", 1, 10, "SET") + " b@11.SET",
		snap:    base.SeqNumMax, maxSkip: 2,
		moves: []move{first, next}, keys: "a b",
		want: Stats{KeySkipped: 1 + 3, Reseeks: 1},
	}, {
		// Ten versions newer than the snapshot: after three the iterator
		// seeks to the newest the snapshot sees.
		name:    "reseek to the snapshot",
		entries: "a@1.SET" + versionRun("a", 11, 20, "SET") + " b@2.SET",
		snap:    5, maxSkip: 2,
		moves: []move{first, next}, keys: "a b",
		want: Stats{RecentSkipped: 4, KeySkipped: 1, Reseeks: 1},
	}, {
		// Backward, MaxSkip 2: two visible versions are stepped over, then
		// a seek finds the newest visible one; the rest of the key's
		// entries are passed going back, two counted before a seek before
		// the key.
		name:    "backward reseeks",
		entries: "a@1.SET" + versionRun("b", 2, 9, "SET") + versionRun("b", 20, 25, "SET"),
		snap:    10, maxSkip: 2,
		moves: []move{last, prev}, keys: "b a",
		// b: b@2 and b@3 stepped (keys), then a seek to b@9; back from
		// b@9: b@9 counted (a key), b@20 and b@21 (recent), then a seek
		// before b; a: 1 key. b@22 to b@25 are never passed one by one.
		want: Stats{KeySkipped: 2 + 1 + 1, RecentSkipped: 2, Reseeks: 2},
	}, {
		name:    "backward stepping",
		entries: "a@1.SET" + versionRun("b", 2, 9, "SET") + versionRun("b", 20, 25, "SET"),
		snap:    10, maxSkip: -1,
		moves: []move{last, prev}, keys: "b a",
		want: Stats{KeySkipped: 8 + 1, RecentSkipped: 6},
	}, {
		// Range tombstones (the checker): a covered value is a deleted key.
		name:    "range tombstone forward",
		entries: "a@1.SET b@2.SET c@3.SET d@4.SET",
		tombs:   tombstoneList{{start: []byte("b"), end: []byte("d"), seq: 10}},
		snap:    base.SeqNumMax, maxSkip: 8,
		moves: []move{first, next, next}, keys: "a d .",
		want: Stats{KeySkipped: 2, DeleteSkipped: 2},
	}, {
		name:    "range tombstone backward",
		entries: "a@1.SET b@2.SET c@3.SET d@4.SET",
		tombs:   tombstoneList{{start: []byte("b"), end: []byte("d"), seq: 10}},
		snap:    base.SeqNumMax, maxSkip: 8,
		moves: []move{last, prev, prev}, keys: "d a .",
		want: Stats{KeySkipped: 4, DeleteSkipped: 2},
	}, {
		// A range tombstone newer than the snapshot deletes nothing.
		name:    "range tombstone above the snapshot",
		entries: "a@1.SET b@2.SET",
		tombs:   tombstoneList{{start: []byte("a"), end: []byte("c"), seq: 10}},
		snap:    5, maxSkip: 8,
		moves: []move{seekGE("b"), next}, keys: "b .",
		want: Stats{KeySkipped: 1},
	}, {
		// Prev after Next counts the current entry and the newer versions
		// of the current key stepped back over.
		name:    "direction switches",
		entries: "a@1.SET b@2.SET b@8.SET c@3.SET",
		snap:    5, maxSkip: 8,
		moves: []move{seekGE("b"), prev, next}, keys: "b a b",
		// SeekGE(b): b@8 recent. Prev: b@2 key, b@8 recent, then a key.
		// Next: the child, run off the start, goes back to a, the current
		// key, whose entry counts as skipped (as RocksDB's Next after Prev
		// counts it), then b@8 recent; lands on b@2.
		want: Stats{RecentSkipped: 3, KeySkipped: 3},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := reseekOptions(Options{Snapshot: c.snap}, c.maxSkip)
			if c.tombs != nil {
				o.RangeDels = c.tombs
			}
			it := New(&seekableSlice{itertest.SliceIter{Entries: entriesOf(t, c.entries)}}, o)
			defer it.Close()
			var landed []string
			for _, m := range c.moves {
				if m(it) {
					landed = append(landed, string(it.Key()))
				} else {
					landed = append(landed, ".")
				}
			}
			if got := strings.Join(landed, " "); got != c.keys {
				t.Fatalf("moves landed on %q, want %q", got, c.keys)
			}
			if got := it.Stats(); got != c.want {
				t.Fatalf("counted %+v, want %+v", got, c.want)
			}
		})
	}
}

// BenchmarkIterNext4Reseek is dbiter's BenchmarkIterNext4 (two versions
// per key over four merged children) with the DB's reseek setting, MaxSkip
// 8: the cost of the counting and of watching for runs on a scan that
// never reseeks.
func BenchmarkIterNext4Reseek(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var entries []itertest.Entry
	for i := range 100000 {
		entries = append(entries, itertest.Entry{
			Key:   base.MakeInternalKey(fmt.Appendf(nil, "key%08d", i/2), base.SeqNum(100000-i), base.KindSet),
			Value: []byte("value"),
		})
	}
	parts := make([][]itertest.Entry, 4)
	for _, e := range entries {
		c := rng.IntN(4)
		parts[c] = append(parts[c], e)
	}
	iters := make([]base.InternalIterator, 4)
	for i := range parts {
		iters[i] = &itertest.SliceIter{Entries: parts[i], Alias: true}
	}
	it := New(mergeiter.New(bytes.Compare, iters...), Options{Snapshot: base.SeqNumMax, Reseek: true, MaxSkip: 8})
	it.First()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !it.Next() {
			it.First()
		}
	}
}

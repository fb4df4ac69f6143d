package dbiter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/mergeiter"
)

type tombstone struct {
	start, end []byte
	seq        base.SeqNum
}

// tombstones is a naive RangeDelChecker.
type tombstones []tombstone

func (ts tombstones) Covers(key []byte, seq, snapshot base.SeqNum) bool {
	for _, t := range ts {
		if t.seq <= snapshot && seq < t.seq && bytes.Compare(t.start, key) <= 0 && bytes.Compare(key, t.end) < 0 {
			return true
		}
	}
	return false
}

// testDB is a random set of entries and range tombstones.
type testDB struct {
	nkeys   int
	entries []itertest.Entry // sorted
	tombs   tombstones
	maxSeq  base.SeqNum
}

func randomDB(rng *rand.Rand) *testDB {
	kinds := []base.Kind{
		base.KindSet, base.KindSet, base.KindDelete, base.KindSingleDelete,
		base.KindMerge, base.KindBlobIndex, base.KindRangeDelete,
	}
	db := &testDB{nkeys: 1 + rng.IntN(30)}
	n := 0
	versions := make([]int, db.nkeys)
	for k := range versions {
		if rng.IntN(4) != 0 {
			versions[k] = 1 + rng.IntN(5)
			n += versions[k]
		}
	}
	seqs := rng.Perm(n)
	for k, nv := range versions {
		for range nv {
			seq := base.SeqNum(seqs[0] + 1)
			seqs = seqs[1:]
			kind := kinds[rng.IntN(len(kinds))]
			db.entries = append(db.entries, itertest.Entry{
				Key:   base.MakeInternalKey(itertest.UserKey(k), seq, kind),
				Value: fmt.Appendf(nil, "v%d@%d", k, seq),
			})
		}
	}
	db.maxSeq = base.SeqNum(n)
	itertest.SortEntries(db.entries)
	for range rng.IntN(4) {
		a, b := rng.IntN(db.nkeys+1), rng.IntN(db.nkeys+1)
		if a > b {
			a, b = b, a
		}
		db.tombs = append(db.tombs, tombstone{itertest.UserKey(a), itertest.UserKey(b), base.SeqNum(rng.IntN(n + 2))})
	}
	return db
}

func testResolver(kind base.Kind, value []byte) ([]byte, error) {
	return append([]byte(kind.String()+":"), value...), nil
}

// model returns the visible keys and values at snap within [lower, upper).
func (db *testDB) model(snap base.SeqNum, lower, upper []byte, resolve bool) (keys, vals [][]byte) {
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
		switch kind := newest.Key.Kind(); kind {
		case base.KindSet, base.KindMerge, base.KindBlobIndex:
			if db.tombs.Covers(uk, newest.Key.SeqNum(), snap) {
				continue
			}
			v := newest.Value
			if resolve && kind != base.KindSet {
				v, _ = testResolver(kind, v)
			}
			keys, vals = append(keys, uk), append(vals, v)
		}
	}
	return keys, vals
}

// mergedIter splits the entries over k children and merges them.
func (db *testDB) mergedIter(rng *rand.Rand, k int) (*mergeiter.Iter, []*itertest.SliceIter) {
	parts := make([][]itertest.Entry, k)
	for _, e := range db.entries {
		c := rng.IntN(k)
		parts[c] = append(parts[c], e)
	}
	children := make([]*itertest.SliceIter, k)
	iters := make([]base.InternalIterator, k)
	for i := range parts {
		children[i] = &itertest.SliceIter{Entries: parts[i]}
		iters[i] = children[i]
	}
	return mergeiter.New(bytes.Compare, iters...), children
}

func TestIterRandom(t *testing.T) {
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 0))
		db := randomDB(rng)
		o := Options{
			Snapshot: randomSnapshot(rng, db.maxSeq),
			Lower:    randomBound(rng, db.nkeys),
			Upper:    randomBound(rng, db.nkeys),
		}
		if len(db.tombs) > 0 || rng.IntN(2) == 0 {
			o.RangeDels = db.tombs
		}
		resolve := rng.IntN(2) == 0
		if resolve {
			o.ValueResolver = testResolver
		}
		if iter%2 == 1 {
			// The same order through a function that is not
			// bytes.Compare: the comparisons' general path.
			o.Cmp = &base.Comparer{Name: "test.bytewise", Compare: func(a, b []byte) int { return bytes.Compare(a, b) }}
		}
		keys, vals := db.model(o.Snapshot, o.Lower, o.Upper, resolve)
		m, _ := db.mergedIter(rng, 1+rng.IntN(5))
		it := New(m, o)
		if it.bytewise != (iter%2 == 0) {
			t.Fatalf("iteration %d: bytewise %v", iter, it.bytewise)
		}
		ctx := fmt.Sprintf("seed %d (snapshot %d, bounds [%s, %s), tombstones %v)", seed, o.Snapshot, o.Lower, o.Upper, db.tombs)
		runOps(t, ctx, rng, it, keys, vals, db.nkeys, 300)
		if err := it.Close(); err != nil {
			t.Fatalf("%s: close: %v", ctx, err)
		}
	}
}

// TestIterScans walks every snapshot forward and backward, switching
// direction at every key.
func TestIterScans(t *testing.T) {
	for iter := 0; iter < 50; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 1))
		db := randomDB(rng)
		for snap := base.SeqNum(0); snap <= db.maxSeq+1; snap++ {
			keys, vals := db.model(snap, nil, nil, false)
			m, _ := db.mergedIter(rng, 4)
			it := New(m, Options{Snapshot: snap, RangeDels: db.tombs})
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key())+"="+string(it.Value()))
				if it.Prev() {
					if len(got) < 2 || string(it.Key())+"="+string(it.Value()) != got[len(got)-2] {
						t.Fatalf("seed %d snap %d: Prev after %s gave %s", seed, snap, got[len(got)-1], it.Key())
					}
					it.Next()
				} else if len(got) != 1 {
					t.Fatalf("seed %d snap %d: Prev after %s failed", seed, snap, got[len(got)-1])
				} else {
					it.Next() // ran off the start: Next is First
				}
			}
			var want []string
			for i := range keys {
				want = append(want, string(keys[i])+"="+string(vals[i]))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("seed %d snap %d: forward\n got %v\nwant %v", seed, snap, got, want)
			}
			got = got[:0]
			for ok := it.Last(); ok; ok = it.Prev() {
				got = append(got, string(it.Key())+"="+string(it.Value()))
			}
			for l, r := 0, len(got)-1; l < r; l, r = l+1, r-1 {
				got[l], got[r] = got[r], got[l]
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("seed %d snap %d: backward\n got %v\nwant %v", seed, snap, got, want)
			}
			it.Close()
		}
	}
}

func TestIterChildError(t *testing.T) {
	for iter := 0; iter < 100; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 2))
		db := randomDB(rng)
		m, children := db.mergedIter(rng, 3)
		bad := children[rng.IntN(3)]
		bad.FailAfter = 1 + rng.IntN(len(bad.Entries)+3)
		it := New(m, Options{Snapshot: base.SeqNumMax})
		ok := it.First()
		for ok {
			if rng.IntN(3) == 0 {
				ok = it.Prev()
				if !ok && it.Error() == nil {
					ok = it.Next() // ran off the start
				}
			} else {
				ok = it.Next()
			}
		}
		if bad.Error() != nil {
			if !errors.Is(it.Error(), itertest.ErrInjected) || it.Valid() || it.Next() || it.Prev() {
				t.Fatalf("seed %d: after child failure: Error %v, Valid %v", seed, it.Error(), it.Valid())
			}
			if err := it.Close(); !errors.Is(err, itertest.ErrInjected) {
				t.Fatalf("seed %d: Close = %v", seed, err)
			}
		} else if it.Error() != nil {
			t.Fatalf("seed %d: spurious error %v", seed, it.Error())
		}
	}
}

func TestIterResolverError(t *testing.T) {
	es := []itertest.Entry{
		{Key: base.MakeInternalKey([]byte("a"), 3, base.KindSet), Value: []byte("1")},
		{Key: base.MakeInternalKey([]byte("b"), 2, base.KindBlobIndex), Value: []byte("ref")},
	}
	errBlob := errors.New("blob missing")
	it := New(&itertest.SliceIter{Entries: es}, Options{
		Snapshot:      base.SeqNumMax,
		ValueResolver: func(base.Kind, []byte) ([]byte, error) { return nil, errBlob },
	})
	if !it.First() || it.Next() || !errors.Is(it.Error(), errBlob) {
		t.Fatalf("forward: Error %v", it.Error())
	}
	if it.Last() || !errors.Is(it.Error(), errBlob) {
		t.Fatalf("backward: Error %v", it.Error())
	}
	if err := it.Close(); !errors.Is(err, errBlob) {
		t.Fatalf("Close = %v", err)
	}
}

func TestIterNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	db := randomDB(rng)
	for len(db.entries) < 20 {
		db = randomDB(rng)
	}
	m, _ := db.mergedIter(rng, 4)
	it := New(m, Options{Snapshot: base.SeqNumMax, RangeDels: db.tombs})
	it.First()
	for range 3 { // grow the buffers
		for it.Next() {
		}
		for it.Prev() {
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		if !it.Next() {
			it.First()
		}
		it.Prev()
		it.Next()
	})
	if allocs != 0 {
		t.Fatalf("Next/Prev allocate %v per run", allocs)
	}
}

func BenchmarkIterNext4(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	db := &testDB{}
	for i := range 100000 {
		db.entries = append(db.entries, itertest.Entry{
			Key:   base.MakeInternalKey(fmt.Appendf(nil, "key%08d", i/2), base.SeqNum(100000-i), base.KindSet),
			Value: []byte("value"),
		})
	}
	m, children := db.mergedIter(rng, 4)
	for _, c := range children {
		c.Alias = true
	}
	it := New(m, Options{Snapshot: base.SeqNumMax})
	it.First()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !it.Next() {
			it.First()
		}
	}
}

func (t tombstone) String() string { return fmt.Sprintf("[%s,%s)#%d", t.start, t.end, t.seq) }

// TestIter runs testdata/iter, in the scripts' notation (see itertest).
// "define" sets the internal entries (sorted here, fed through one
// SliceIter) and the range tombstones (applied through the naive checker;
// none means no checker). "iter [snapshot=N] [lower=k] [upper=k]
// [resolve]" opens an Iter and runs one operation a line: first, last,
// next, prev, seek-ge k, seek-lt k, seek-for-prev k, close. Each prints
// key:value, "." when not valid, or the error.
func TestIter(t *testing.T) {
	var entries []itertest.Entry
	var tombs tombstones
	datadriven.RunTest(t, "testdata/iter", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "define":
			entries, tombs = nil, nil
			for _, f := range strings.Fields(td.Input) {
				if strings.HasPrefix(f, "[") {
					tb, err := itertest.ParseTombstone(f)
					if err != nil {
						td.Fatalf(t, "%v", err)
					}
					tombs = append(tombs, tombstone{tb.Start, tb.End, tb.Seq})
					continue
				}
				e, err := itertest.ParseEntry(f)
				if err != nil {
					td.Fatalf(t, "%v", err)
				}
				entries = append(entries, e)
			}
			itertest.SortEntries(entries)
			return ""
		case "iter":
			o := Options{Snapshot: base.SeqNumMax}
			if td.HasArg("snapshot") {
				var s uint64
				td.ScanArgs(t, "snapshot", &s)
				o.Snapshot = base.SeqNum(s)
			}
			if td.HasArg("lower") {
				var s string
				td.ScanArgs(t, "lower", &s)
				o.Lower = []byte(s)
			}
			if td.HasArg("upper") {
				var s string
				td.ScanArgs(t, "upper", &s)
				o.Upper = []byte(s)
			}
			if td.HasArg("resolve") {
				o.ValueResolver = testResolver
			}
			if len(tombs) > 0 {
				o.RangeDels = tombs
			}
			it := New(&itertest.SliceIter{Entries: entries}, o)
			closed := false
			var b strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 {
					continue
				}
				ok, known, err := itertest.Move(it, f)
				if err != nil {
					td.Fatalf(t, "%v", err)
				}
				if !known {
					switch f[0] {
					case "seek-for-prev":
						if len(f) != 2 {
							td.Fatalf(t, "%s takes a key", f[0])
						}
						ok = it.SeekForPrev([]byte(f[1]))
					case "close":
						closed = true
						fmt.Fprintf(&b, "%s: %s\n", line, itertest.DescribeErr(it.Close()))
						continue
					default:
						td.Fatalf(t, "unknown operation %q", line)
					}
				}
				fmt.Fprintf(&b, "%s: %s\n", line, describeIter(t, it, ok))
			}
			if !closed {
				if err := it.Close(); err != nil && it.Error() == nil {
					td.Fatalf(t, "Close: %v", err)
				}
			}
			return b.String()
		}
		td.Fatalf(t, "unknown command %q", td.Cmd)
		return ""
	})
}

// describeIter prints the iterator after a positioning call that returned
// ok, checking that Valid, Key and Error agree with it.
func describeIter(t *testing.T, it *Iter, ok bool) string {
	t.Helper()
	if ok != it.Valid() {
		t.Fatalf("positioning returned %v, Valid %v", ok, it.Valid())
	}
	if !ok {
		if it.Key() != nil || it.Value() != nil {
			t.Fatalf("Key %q, Value %q when not valid", it.Key(), it.Value())
		}
		if err := it.Error(); err != nil {
			return itertest.DescribeErr(err)
		}
		return "."
	}
	if err := it.Error(); err != nil {
		t.Fatalf("valid at %q with error %v", it.Key(), err)
	}
	return fmt.Sprintf("%s:%s", it.Key(), it.Value())
}

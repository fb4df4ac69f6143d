package dbiter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

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

func randomBound(rng *rand.Rand, nkeys int) []byte {
	if rng.IntN(3) == 0 {
		return nil
	}
	return itertest.RandomSeekKey(rng, nkeys)
}

func randomSnapshot(rng *rand.Rand, max base.SeqNum) base.SeqNum {
	if rng.IntN(4) == 0 {
		return base.SeqNumMax
	}
	return base.SeqNum(rng.IntN(int(max) + 2))
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
		keys, vals := db.model(o.Snapshot, o.Lower, o.Upper, resolve)
		m, _ := db.mergedIter(rng, 1+rng.IntN(5))
		it := New(m, o)
		ctx := fmt.Sprintf("seed %d (snapshot %d, bounds [%s, %s), tombstones %v)", seed, o.Snapshot, o.Lower, o.Upper, db.tombs)
		runOps(t, ctx, rng, it, keys, vals, db.nkeys, 300)
		if err := it.Close(); err != nil {
			t.Fatalf("%s: close: %v", ctx, err)
		}
	}
}

// runOps applies random operations to it and to a cursor over the model and
// compares them after every step.
func runOps(t *testing.T, ctx string, rng *rand.Rand, it *Iter, keys, vals [][]byte, nkeys, nops int) {
	t.Helper()
	n := len(keys)
	search := func(k []byte) int {
		return sort.Search(n, func(i int) bool { return bytes.Compare(keys[i], k) >= 0 })
	}
	// pos is -1 after running off the start, n after running off the end.
	pos, positioned := 0, false
	var trace []string
	for op := 0; op < nops; op++ {
		var got bool
		var desc string
		switch r := rng.IntN(12); {
		case r == 0:
			desc, got, pos = "First", it.First(), min(0, n)
		case r == 1:
			desc, got, pos = "Last", it.Last(), n-1
		case r == 2:
			k := itertest.RandomSeekKey(rng, nkeys)
			desc, got, pos = fmt.Sprintf("SeekGE(%s)", k), it.SeekGE(k), search(k)
		case r == 3:
			k := itertest.RandomSeekKey(rng, nkeys)
			desc, got, pos = fmt.Sprintf("SeekLT(%s)", k), it.SeekLT(k), search(k)-1
		case r == 4:
			k := itertest.RandomSeekKey(rng, nkeys)
			p := search(k)
			if p < n && bytes.Equal(keys[p], k) {
				p++
			}
			desc, got, pos = fmt.Sprintf("SeekForPrev(%s)", k), it.SeekForPrev(k), p-1
		case r < 8:
			desc, got = "Next", it.Next()
			switch {
			case !positioned:
				pos = 0
			case pos < n:
				pos++
			}
		default:
			desc, got = "Prev", it.Prev()
			switch {
			case !positioned:
				pos = n - 1
			case pos >= 0:
				pos--
			}
		}
		positioned = true
		trace = append(trace, desc)
		if len(trace) > 12 {
			trace = trace[1:]
		}
		if err := it.Error(); err != nil {
			t.Fatalf("%s: %s: unexpected error %v", ctx, desc, err)
		}
		want := pos >= 0 && pos < n
		if got != want || it.Valid() != want {
			t.Fatalf("%s: op %d %s: got %v (Valid %v), want %v (model pos %d of %d)\nlast ops: %v",
				ctx, op, desc, got, it.Valid(), want, pos, n, trace)
		}
		if !want {
			if it.Key() != nil {
				t.Fatalf("%s: %s: Key %q when not valid", ctx, desc, it.Key())
			}
			continue
		}
		if !bytes.Equal(it.Key(), keys[pos]) || !bytes.Equal(it.Value(), vals[pos]) {
			t.Fatalf("%s: op %d %s: got %s=%s, want %s=%s\nlast ops: %v",
				ctx, op, desc, it.Key(), it.Value(), keys[pos], vals[pos], trace)
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

func TestIterCorruptKind(t *testing.T) {
	es := []itertest.Entry{
		{Key: base.MakeInternalKey([]byte("a"), 3, base.KindSet), Value: []byte("1")},
		{Key: base.MakeInternalKey([]byte("b"), 2, base.Kind(0x05)), Value: []byte("2")},
		{Key: base.MakeInternalKey([]byte("c"), 1, base.KindSet), Value: []byte("3")},
	}
	it := New(&itertest.SliceIter{Entries: es}, Options{Snapshot: base.SeqNumMax})
	if !it.First() || string(it.Key()) != "a" {
		t.Fatalf("First: %q", it.Key())
	}
	if it.Next() || !errors.Is(it.Error(), base.ErrCorruption) {
		t.Fatalf("Next over a bad kind: Error %v", it.Error())
	}
	if !it.Last() || string(it.Key()) != "c" {
		t.Fatalf("Last: %q, %v", it.Key(), it.Error())
	}
	if it.Prev() || !errors.Is(it.Error(), base.ErrCorruption) {
		t.Fatalf("Prev over a bad kind: Error %v", it.Error())
	}
	if it.SeekGE([]byte("c")) != true || string(it.Value()) != "3" || it.Error() != nil {
		t.Fatalf("SeekGE past the bad entry: %q, %v", it.Value(), it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
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

// TestIterKeyStable checks that Key and Value survive the child moving on,
// which the test child makes visible by scribbling over its buffers.
func TestIterKeyStable(t *testing.T) {
	es := []itertest.Entry{
		{Key: base.MakeInternalKey([]byte("a"), 5, base.KindSet), Value: []byte("a5")},
		{Key: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Value: []byte("a1")},
		{Key: base.MakeInternalKey([]byte("b"), 4, base.KindSet), Value: []byte("b4")},
		{Key: base.MakeInternalKey([]byte("b"), 3, base.KindDelete)},
		{Key: base.MakeInternalKey([]byte("c"), 2, base.KindSet), Value: []byte("c2")},
	}
	it := New(&itertest.SliceIter{Entries: es}, Options{Snapshot: 4})
	var got []string
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if want := "c=c2 b=b4 a=a1"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
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

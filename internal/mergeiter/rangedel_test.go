package mergeiter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/rangedel"
)

// delsSource is one child of a range-deletion test: its entries and its
// range tombstones.
type delsSource struct {
	entries    []itertest.Entry
	tombstones []rangedel.Tombstone
}

// randomSources returns k sources, newest first, as the sources of a read
// are: source i's entries and tombstones take their seqnums from a band
// above those of source i+1.
func randomSources(rng *rand.Rand, k, nkeys int) []delsSource {
	kinds := []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindMerge, base.KindSingleDelete}
	srcs := make([]delsSource, k)
	for i := range srcs {
		band := base.SeqNum(k-i) * 1000
		seqs := rng.Perm(999)
		n := rng.IntN(60)
		for j := 0; j < n; j++ {
			key := itertest.UserKey(rng.IntN(nkeys))
			seq := band + base.SeqNum(seqs[j]+1)
			srcs[i].entries = append(srcs[i].entries, itertest.Entry{
				Key:   base.MakeInternalKey(key, seq, kinds[rng.IntN(len(kinds))]),
				Value: fmt.Appendf(nil, "v%s@%d", key, seq),
			})
		}
		itertest.SortEntries(srcs[i].entries)
		if rng.IntN(3) == 0 {
			continue // a source without range tombstones
		}
		for j := rng.IntN(4); j > 0; j-- {
			a := rng.IntN(nkeys + 1)
			b := a + 1 + rng.IntN(1+nkeys/3)
			srcs[i].tombstones = append(srcs[i].tombstones, rangedel.Tombstone{
				Start: itertest.UserKey(a), End: itertest.UserKey(b), Seq: band + base.SeqNum(seqs[n+j]+1),
			})
		}
	}
	return srcs
}

// levelChild turns a source into a LevelIter over files of disjoint key
// ranges, each holding the source's entries and the pieces of its
// tombstones within the file's range, as a level's files do.
func levelChild(rng *rand.Rand, src delsSource, nkeys int) (base.InternalIterator, *rangedel.List) {
	spans := rangedel.Fragment(bytes.Compare, src.tombstones)
	var bounds []FileBounds
	var files [][]itertest.Entry
	var fileDels []*rangedel.List
	for lo := 0; lo <= nkeys+nkeys/3+1; {
		hi := lo + 1 + rng.IntN(8)
		start, end := itertest.UserKey(lo), itertest.UserKey(hi)
		var es []itertest.Entry
		for _, e := range src.entries {
			if bytes.Compare(e.Key.UserKey, start) >= 0 && bytes.Compare(e.Key.UserKey, end) < 0 {
				es = append(es, e)
			}
		}
		dels := rangedel.NewList(bytes.Compare, rangedel.Truncate(bytes.Compare, spans, start, end))
		if len(es) > 0 || !dels.Empty() {
			// The bounds are loose (the whole range, ending in a
			// range-delete sentinel), which a file's bounds may be.
			bounds = append(bounds, FileBounds{
				Smallest: base.MakeInternalKey(start, base.SeqNumMax, base.KindSet),
				Largest:  base.MakeRangeDeleteSentinel(end),
			})
			files = append(files, es)
			if dels.Empty() && rng.IntN(2) == 0 {
				dels = nil
			}
			fileDels = append(fileDels, dels)
		}
		lo = hi
	}
	level := NewLevel(bytes.Compare, bounds, fileDels)
	if level.Len() != len(files) {
		panic("mergeiter test: Level.Len")
	}
	li := NewLevelIter(bytes.Compare, level, func(i int) (base.InternalIterator, error) {
		return &itertest.SliceIter{Entries: files[i]}, nil
	}, nil, nil)
	return li, level.RangeDels()
}

// visibleRef returns the entries of srcs, in merged order, that no
// tombstone of any source visible at snap deletes.
func visibleRef(srcs []delsSource, snap base.SeqNum) []itertest.Entry {
	var ts []rangedel.Tombstone
	for _, s := range srcs {
		ts = append(ts, s.tombstones...)
	}
	var out []itertest.Entry
	for _, s := range srcs {
	entries:
		for _, e := range s.entries {
			for _, t := range ts {
				if bytes.Compare(t.Start, e.Key.UserKey) <= 0 && bytes.Compare(e.Key.UserKey, t.End) < 0 &&
					e.Key.SeqNum() < t.Seq && t.Seq <= snap {
					continue entries
				}
			}
			out = append(out, e)
		}
	}
	itertest.SortEntries(out) // seqnums are unique: no ties between sources
	return out
}

// TestMergeRangeDelsRandom checks that with SetRangeDels the merge returns
// exactly the entries no visible tombstone deletes, under random
// operations, with sources newest first (some of them levels whose
// tombstones are joined from their files) and random snapshots.
func TestMergeRangeDelsRandom(t *testing.T) {
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 7))
		nkeys := 1 + rng.IntN(40)
		k := 1 + rng.IntN(5)
		srcs := randomSources(rng, k, nkeys)
		iters := make([]base.InternalIterator, k)
		dels := make([]*rangedel.List, k)
		for i, s := range srcs {
			if rng.IntN(2) == 0 {
				iters[i], dels[i] = levelChild(rng, s, nkeys)
				continue
			}
			iters[i] = &itertest.SliceIter{Entries: s.entries}
			if l := rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare, s.tombstones)); !l.Empty() || rng.IntN(2) == 0 {
				dels[i] = l
			}
		}
		snap := base.SeqNumMax
		if rng.IntN(2) == 0 {
			snap = base.SeqNum(rng.IntN(k*1000 + 1000))
		}
		m := New(bytes.Compare, iters...)
		m.SetRangeDels(snap, dels)
		runRandomOps(t, seed, rng, m, visibleRef(srcs, snap), nkeys+nkeys/3+2, 300)
		if err := m.Close(); err != nil {
			t.Fatalf("seed %d: close: %v", seed, err)
		}
	}
}

// TestMergeRangeDelsSkipError checks that an error of a child while
// deleted entries are skipped stops the positioning call with that error.
func TestMergeRangeDelsSkipError(t *testing.T) {
	es := []itertest.Entry{
		{Key: base.MakeInternalKey([]byte("a"), 5, base.KindSet)},
		{Key: base.MakeInternalKey([]byte("b"), 5, base.KindSet)},
		{Key: base.MakeInternalKey([]byte("c"), 5, base.KindSet)},
	}
	dels := rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare,
		[]rangedel.Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 9}}))
	m := New(bytes.Compare, &itertest.SliceIter{Entries: es, FailAfter: 2})
	m.SetRangeDels(base.SeqNumMax, []*rangedel.List{dels})
	if m.First() {
		t.Fatalf("First = true at %s, want false: the skip past a failed", m.Key())
	}
	if err := m.Error(); !errors.Is(err, itertest.ErrInjected) {
		t.Fatalf("Error = %v, want the injected error", err)
	}
	if m.Next() {
		t.Fatal("Next after a failed First must return false")
	}
}

// rangeDelsBenchIter returns a merge of 4 children over 100,000 keys, each
// child with 100 tombstones of 10 keys newer than every entry, so that
// about 1% of the entries are deleted and every other one is checked.
func rangeDelsBenchIter() *Iter {
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 100000
	es := make([]itertest.Entry, n)
	for i := range es {
		es[i] = itertest.Entry{Key: base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", i)), base.SeqNum(i+1), base.KindSet), Value: []byte("value")}
	}
	parts, _ := splitRandom(rng, es, 4, false)
	iters := make([]base.InternalIterator, 4)
	dels := make([]*rangedel.List, 4)
	for i := range parts {
		iters[i] = &itertest.SliceIter{Entries: parts[i], Alias: true}
		var ts []rangedel.Tombstone
		for j := 0; j < 100; j++ {
			k := rng.IntN(n - 10)
			ts = append(ts, rangedel.Tombstone{
				Start: fmt.Appendf(nil, "key%08d", k), End: fmt.Appendf(nil, "key%08d", k+10), Seq: n + 1 + base.SeqNum(rng.IntN(n)),
			})
		}
		dels[i] = rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare, ts))
	}
	m := New(bytes.Compare, iters...)
	m.SetRangeDels(base.SeqNumMax, dels)
	return m
}

// TestMergeRangeDelsNoAlloc checks that applying range tombstones costs no
// allocation per step.
func TestMergeRangeDelsNoAlloc(t *testing.T) {
	m := rangeDelsBenchIter()
	m.First()
	allocs := testing.AllocsPerRun(1000, func() {
		if !m.Next() {
			m.First()
		}
		m.Prev()
		m.Next()
	})
	if allocs != 0 {
		t.Fatalf("Next/Prev with range tombstones allocate: %v per run", allocs)
	}
}

// BenchmarkMergeNext4RangeDels is BenchmarkMergeNext4 with range tombstones
// in every child.
func BenchmarkMergeNext4RangeDels(b *testing.B) {
	m := rangeDelsBenchIter()
	m.First()
	b.ReportAllocs()
	for b.Loop() {
		if !m.Next() {
			m.First()
		}
	}
}

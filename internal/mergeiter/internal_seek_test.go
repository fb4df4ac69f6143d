package mergeiter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/rangedel"
)

// seekSource is one child of the internal-seek tests: entries (many
// versions per key) and range tombstones, with seqnums from a band above
// those of the sources after it, as the sources of a read are.
type seekSource struct {
	entries    []itertest.Entry
	tombstones []rangedel.Tombstone
}

func randomSeekSources(rng *rand.Rand, k, nkeys int) []seekSource {
	kinds := []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindSingleDelete}
	srcs := make([]seekSource, k)
	for i := range srcs {
		band := base.SeqNum(k-i) * 1000
		seqs := rng.Perm(999)
		n := rng.IntN(80)
		for j := 0; j < n; j++ {
			// Few keys, so that keys have runs of versions.
			key := itertest.UserKey(rng.IntN(nkeys))
			seq := band + base.SeqNum(seqs[j]+1)
			srcs[i].entries = append(srcs[i].entries, itertest.Entry{
				Key: base.MakeInternalKey(key, seq, kinds[rng.IntN(len(kinds))]), Value: fmt.Appendf(nil, "%s@%d", key, seq),
			})
		}
		itertest.SortEntries(srcs[i].entries)
		for j := rng.IntN(3); j > 0; j-- {
			a := rng.IntN(nkeys + 1)
			b := a + 1 + rng.IntN(1+nkeys/2)
			srcs[i].tombstones = append(srcs[i].tombstones, rangedel.Tombstone{
				Start: itertest.UserKey(a), End: itertest.UserKey(b), Seq: band + base.SeqNum(seqs[n+j]+1),
			})
		}
	}
	return srcs
}

// splitLevel turns a source into a LevelIter over files cut at random
// entries, so that the versions of one user key may be split between two
// files, with bounds that are the files' first and last entries, and each
// file's tombstones cut to its user key range.
func splitLevel(rng *rand.Rand, src seekSource) (base.InternalIterator, *rangedel.List) {
	var bounds []FileBounds
	var files [][]itertest.Entry
	var fileDels []*rangedel.List
	spans := rangedel.Fragment(bytes.Compare, src.tombstones)
	es := src.entries
	for len(es) > 0 {
		n := min(len(es), 1+rng.IntN(6))
		f := es[:n]
		es = es[n:]
		files = append(files, f)
		bounds = append(bounds, FileBounds{Smallest: f[0].Key, Largest: f[len(f)-1].Key})
		// The tombstones go with the file holding the range's first key;
		// past the last file's last key none is kept (a test shape, not a
		// real level's, whose bounds would grow to hold them).
		start := f[0].Key.UserKey
		if len(fileDels) == 0 {
			start = []byte("")
		}
		end := append(bytes.Clone(f[len(f)-1].Key.UserKey), 0)
		if len(es) > 0 && bytes.Equal(es[0].Key.UserKey, f[len(f)-1].Key.UserKey) {
			end = f[len(f)-1].Key.UserKey // the next file takes the key's tombstones
		} else if len(es) == 0 {
			end = []byte("~")
		}
		fileDels = append(fileDels, rangedel.NewList(bytes.Compare, rangedel.Truncate(bytes.Compare, spans, start, end)))
	}
	level := NewLevel(bytes.Compare, bounds, fileDels)
	return NewLevelIter(bytes.Compare, level, func(i int) (base.InternalIterator, error) {
		return &itertest.SliceIter{Entries: files[i]}, nil
	}, nil, nil), level.RangeDels()
}

// liveEntries returns the entries of srcs, in merged order, that no
// tombstone visible at snap deletes (dels[i] is what source i kept).
func liveEntries(srcs []seekSource, dels []*rangedel.List, snap base.SeqNum) []itertest.Entry {
	var out []itertest.Entry
	for _, s := range srcs {
	entries:
		for _, e := range s.entries {
			for _, l := range dels {
				if l.Covers(e.Key.UserKey, e.Key.SeqNum(), snap) {
					continue entries
				}
			}
			out = append(out, e)
		}
	}
	itertest.SortEntries(out)
	return out
}

// TestSeekGEInternalRandom checks SeekGEInternal of the merge (and so of
// LevelIters whose files split a user key's versions, and of children
// that are not InternalSeekers) against the reference, with and without
// range tombstones, and that the moves after it, in both directions, go
// on from there; with range tombstones the merge jumps past what they
// delete (RangeDelReseeks), which the test checks happened.
func TestSeekGEInternalRandom(t *testing.T) {
	var reseeks uint64
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 21))
		nkeys := 1 + rng.IntN(15)
		k := 1 + rng.IntN(4)
		srcs := randomSeekSources(rng, k, nkeys)
		iters := make([]base.InternalIterator, k)
		dels := make([]*rangedel.List, k)
		for i, s := range srcs {
			if rng.IntN(2) == 0 {
				iters[i], dels[i] = splitLevel(rng, s)
			} else {
				iters[i] = &itertest.SliceIter{Entries: s.entries}
				dels[i] = rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare, s.tombstones))
			}
		}
		snap := base.SeqNumMax
		if rng.IntN(2) == 0 {
			snap = base.SeqNum(rng.IntN(k*1000 + 1000))
		}
		applyDels := rng.IntN(4) != 0
		// The bands of seqnums make the children ordered, so that both
		// ways of skipping deleted entries must give the same answers.
		ordered := rng.IntN(3) != 0
		var ref []itertest.Entry
		m := New(bytes.Compare, iters...)
		if applyDels {
			m.SetRangeDels(snap, dels)
			m.SetChildrenOrdered(ordered)
			ref = liveEntries(srcs, dels, snap)
		} else {
			ref = liveEntries(srcs, nil, snap)
		}
		ctx := fmt.Sprintf("seed %d (%d sources, snapshot %d, range tombstones %v, ordered %v)", seed, k, snap, applyDels, ordered)
		for op := 0; op < 60; op++ {
			target := base.MakeInternalKey(itertest.RandomSeekKey(rng, nkeys), base.SeqNum(rng.IntN((k+1)*1000)), base.KindSet)
			if rng.IntN(8) == 0 {
				target.Trailer = 0
			}
			pos := sort.Search(len(ref), func(i int) bool { return base.InternalCompare(bytes.Compare, ref[i].Key, target) >= 0 })
			desc := fmt.Sprintf("SeekGEInternal(%s)", target)
			checkAt(t, ctx, desc, m, m.SeekGEInternal(target), ref, pos)
			for step := rng.IntN(6); step > 0 && pos >= 0 && pos < len(ref); step-- {
				if rng.IntN(3) == 0 {
					desc += ", Prev"
					pos--
					checkAt(t, ctx, desc, m, m.Prev(), ref, pos)
				} else {
					desc += ", Next"
					pos++
					checkAt(t, ctx, desc, m, m.Next(), ref, pos)
				}
			}
		}
		if !ordered && m.RangeDelReseeks() != 0 {
			t.Fatalf("%s: %d seeks past range tombstones without SetChildrenOrdered", ctx, m.RangeDelReseeks())
		}
		reseeks += m.RangeDelReseeks()
		if err := m.Close(); err != nil {
			t.Fatalf("%s: close: %v", ctx, err)
		}
	}
	if reseeks == 0 {
		t.Fatal("no seek past a range tombstone happened: the test does not exercise them")
	}
}

func checkAt(t *testing.T, ctx, desc string, m *Iter, ok bool, ref []itertest.Entry, pos int) {
	t.Helper()
	want := pos >= 0 && pos < len(ref)
	if ok != want {
		t.Fatalf("%s: %s: got %v, want %v", ctx, desc, ok, want)
	}
	if err := m.Error(); err != nil {
		t.Fatalf("%s: %s: %v", ctx, desc, err)
	}
	if want && base.InternalCompare(bytes.Compare, m.Key(), ref[pos].Key) != 0 {
		t.Fatalf("%s: %s: at %s, want %s", ctx, desc, m.Key(), ref[pos].Key)
	}
}

// TestRangeDelReseekCounts checks, on small hand-built merges of ordered
// children, where the merge jumps past entries a newer source's range
// tombstone deletes, in both directions, how many child seeks it counts,
// that a tombstone of an entry's own source is stepped over instead, and
// that the jump cascades through a sought source's own tombstone; and that
// without SetChildrenOrdered the same scans step and count nothing.
func TestRangeDelReseekCounts(t *testing.T) {
	letters := func(from, to byte, seq base.SeqNum) []itertest.Entry {
		var es []itertest.Entry
		for c := from; c <= to; c++ {
			es = append(es, itertest.Entry{Key: base.MakeInternalKey([]byte{c}, seq, base.KindSet)})
		}
		return es
	}
	list := func(ts ...rangedel.Tombstone) *rangedel.List {
		return rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare, ts))
	}
	tomb := func(a, b string, seq base.SeqNum) rangedel.Tombstone {
		return rangedel.Tombstone{Start: []byte(a), End: []byte(b), Seq: seq}
	}
	cases := []struct {
		name     string
		children [][]itertest.Entry
		dels     []*rangedel.List
		// fwd and bwd are the entries of full scans, by user key; the
		// counts are each scan's seeks.
		fwd, bwd         string
		fwdSeek, bwdSeek uint64
	}{{
		// The newest source deletes [b, x) of two older ones: the first
		// deleted entry each scan meets moves both older sources at once.
		name:     "newer source deletes",
		children: [][]itertest.Entry{nil, letters('a', 'z', 50), letters('a', 'z', 10)},
		dels:     []*rangedel.List{list(tomb("b", "x", 100)), nil, nil},
		fwd:      "a a x x y y z z", bwd: "z z y y x x a a",
		fwdSeek: 2, bwdSeek: 2,
	}, {
		// A source's own tombstone deletes its older entries: stepped over,
		// no seek.
		name:     "own tombstone",
		children: [][]itertest.Entry{letters('a', 'e', 10)},
		dels:     []*rangedel.List{list(tomb("b", "d", 100))},
		fwd:      "a d e", bwd: "e d a",
	}, {
		// Cascade: the middle source, sought to x, has its own tombstone
		// over [x, z), older than its own entries there but newer than the
		// oldest source's, so the oldest goes straight to z. Backward, the
		// oldest source's y@10 is deleted by the middle source's tombstone
		// (a seek before x), then w@50 by the newest one's (the middle and
		// oldest sources both seek before b).
		name:     "cascade",
		children: [][]itertest.Entry{nil, letters('a', 'z', 50), letters('a', 'z', 10)},
		dels:     []*rangedel.List{list(tomb("b", "x", 100)), list(tomb("x", "z", 40)), nil},
		fwd:      "a a x y z z", bwd: "z z y x a a",
		fwdSeek: 2, bwdSeek: 3,
	}}
	for _, c := range cases {
		for _, ordered := range []bool{true, false} {
			if !ordered {
				c.fwdSeek, c.bwdSeek = 0, 0
			}
			t.Run(fmt.Sprintf("%s/ordered=%v", c.name, ordered), func(t *testing.T) {
				iters := make([]base.InternalIterator, len(c.children))
				for i, es := range c.children {
					iters[i] = &itertest.SliceIter{Entries: es}
				}
				m := New(bytes.Compare, iters...)
				m.SetRangeDels(base.SeqNumMax, c.dels)
				m.SetChildrenOrdered(ordered)
				var got []string
				for ok := m.First(); ok; ok = m.Next() {
					got = append(got, string(m.Key().UserKey))
				}
				if s := strings.Join(got, " "); s != c.fwd {
					t.Errorf("forward scan %q, want %q", s, c.fwd)
				}
				if n := m.RangeDelReseeks(); n != c.fwdSeek {
					t.Errorf("forward scan counted %d seeks, want %d", n, c.fwdSeek)
				}
				got = got[:0]
				for ok := m.Last(); ok; ok = m.Prev() {
					got = append(got, string(m.Key().UserKey))
				}
				if s := strings.Join(got, " "); s != c.bwd {
					t.Errorf("backward scan %q, want %q", s, c.bwd)
				}
				if n := m.RangeDelReseeks() - c.fwdSeek; n != c.bwdSeek {
					t.Errorf("backward scan counted %d seeks, want %d", n, c.bwdSeek)
				}
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

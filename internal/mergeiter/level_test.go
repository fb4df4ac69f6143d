package mergeiter

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
)

// testLevel is a randomly generated level: files of entries and their
// bounds. Entries use even-numbered user keys so that file bounds can fall
// on the odd keys between them.
type testLevel struct {
	files  [][]itertest.Entry
	bounds []FileBounds
	flat   []itertest.Entry
}

func randomLevel(rng *rand.Rand, nUserKeys int) *testLevel {
	kinds := []base.Kind{base.KindSet, base.KindDelete, base.KindMerge}
	seq := base.SeqNum(1)
	var perKey [][]itertest.Entry
	for k := 0; k < nUserKeys; k++ {
		if rng.IntN(3) == 0 {
			continue
		}
		uk := itertest.UserKey(2 * k)
		var vs []itertest.Entry
		for v := 0; v <= rng.IntN(3); v++ {
			vs = append(vs, itertest.Entry{
				Key:   base.MakeInternalKey(uk, seq, kinds[rng.IntN(len(kinds))]),
				Value: fmt.Appendf(nil, "v%s@%d", uk, seq),
			})
			seq++
		}
		itertest.SortEntries(vs)
		perKey = append(perKey, vs)
	}
	l := &testLevel{}
	// Cut the user keys into runs; each run becomes a file.
	for i := 0; i < len(perKey); {
		n := 1 + rng.IntN(4)
		if i+n > len(perKey) {
			n = len(perKey) - i
		}
		var es []itertest.Entry
		for _, vs := range perKey[i : i+n] {
			es = append(es, vs...)
		}
		l.files = append(l.files, es)
		l.bounds = append(l.bounds, FileBounds{Smallest: es[0].Key, Largest: es[len(es)-1].Key})
		i += n
	}
	// Loosen the bounds at some file boundaries as range tombstones would,
	// and insert files holding no point entries.
	var files [][]itertest.Entry
	var bounds []FileBounds
	for f := range l.files {
		if f > 0 {
			prev := &bounds[len(bounds)-1]
			last := prev.Largest.UserKey
			var lastIdx int
			fmt.Sscanf(string(last), "k%d", &lastIdx)
			first := l.bounds[f].Smallest.UserKey
			mid := itertest.UserKey(lastIdx + 1) // strictly between the two files
			switch rng.IntN(5) {
			case 1:
				prev.Largest = base.MakeRangeDeleteSentinel(mid)
			case 2:
				prev.Largest = base.MakeRangeDeleteSentinel(first)
			case 3:
				l.bounds[f].Smallest = base.MakeInternalKey(mid, 3, base.KindRangeDelete)
			case 4:
				files = append(files, nil)
				bounds = append(bounds, FileBounds{
					Smallest: base.MakeInternalKey(mid, 3, base.KindRangeDelete),
					Largest:  base.MakeRangeDeleteSentinel(first),
				})
			}
		}
		files = append(files, l.files[f])
		bounds = append(bounds, l.bounds[f])
	}
	l.files, l.bounds = files, bounds
	for _, es := range l.files {
		l.flat = append(l.flat, es...)
	}
	return l
}

// overlaps reports, naively, whether file f may hold keys in [lower, upper).
func (l *testLevel) overlaps(f int, lower, upper []byte) bool {
	b := l.bounds[f]
	if upper != nil && bytes.Compare(b.Smallest.UserKey, upper) >= 0 {
		return false
	}
	if lower != nil {
		c := bytes.Compare(b.Largest.UserKey, lower)
		if c < 0 || (c == 0 && b.Largest.IsExclusiveSentinel()) {
			return false
		}
	}
	return true
}

func inBounds(uk, lower, upper []byte) bool {
	return (lower == nil || bytes.Compare(uk, lower) >= 0) && (upper == nil || bytes.Compare(uk, upper) < 0)
}

// newLevelIter returns a LevelIter over l that checks, on every open, that
// at most one file is open and that the file overlaps the bounds. Opening
// file bad fails.
func (l *testLevel) newLevelIter(t *testing.T, seed uint64, lower, upper []byte, bad int) (*LevelIter, *int) {
	open := 0
	var last *itertest.SliceIter
	opens := new(int)
	li := NewLevelIter(bytes.Compare, NewLevel(bytes.Compare, l.bounds, nil), func(f int) (base.InternalIterator, error) {
		*opens++
		if last != nil && !last.Closed() {
			t.Fatalf("seed %d: file %d opened while another is open", seed, f)
		}
		if !l.overlaps(f, lower, upper) {
			t.Fatalf("seed %d: file %d opened outside bounds [%s, %s)", seed, f, lower, upper)
		}
		if f == bad {
			return nil, itertest.ErrInjected
		}
		open++
		last = &itertest.SliceIter{Entries: l.files[f]}
		return last, nil
	}, lower, upper)
	return li, opens
}

func randomBound(rng *rand.Rand, nkeys int) []byte {
	if rng.IntN(3) == 0 {
		return nil
	}
	return itertest.RandomSeekKey(rng, nkeys)
}

func TestLevelIterRandom(t *testing.T) {
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 3))
		nUserKeys := rng.IntN(30)
		l := randomLevel(rng, nUserKeys)
		nkeys := 2*nUserKeys + 2
		lower, upper := randomBound(rng, nkeys), randomBound(rng, nkeys)
		var ref []itertest.Entry
		for _, e := range l.flat {
			if inBounds(e.Key.UserKey, lower, upper) {
				ref = append(ref, e)
			}
		}
		li, _ := l.newLevelIter(t, seed, lower, upper, -1)
		runRandomOps(t, seed, rng, li, ref, nkeys, 200)
		if err := li.Close(); err != nil {
			t.Fatalf("seed %d: close: %v", seed, err)
		}
	}
}

func TestLevelIterLazyOpen(t *testing.T) {
	seed := itertest.Seed(0)
	rng := rand.New(rand.NewPCG(seed, 4))
	l := randomLevel(rng, 200)
	li, opens := l.newLevelIter(t, seed, nil, nil, -1)
	// A seek opens exactly the file holding the key (or the next one when
	// the key falls after the file's last point entry).
	for i := 0; i < 50; i++ {
		before := *opens
		k := itertest.RandomSeekKey(rng, 400)
		li.SeekGE(k)
		if n := *opens - before; n > 2 {
			t.Fatalf("seed %d: SeekGE(%s) opened %d files", seed, k, n)
		}
	}
	if err := li.Close(); err != nil {
		t.Fatal(err)
	}
	// A full scan opens every file exactly once.
	li, opens = l.newLevelIter(t, seed, nil, nil, -1)
	n := 0
	for ok := li.First(); ok; ok = li.Next() {
		n++
	}
	if n != len(l.flat) || *opens != len(l.files) {
		t.Fatalf("seed %d: scan saw %d entries and opened %d files, want %d and %d", seed, n, *opens, len(l.flat), len(l.files))
	}
	if err := li.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLevelIterOpenError(t *testing.T) {
	for iter := 0; iter < 100; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 5))
		nUserKeys := 1 + rng.IntN(30)
		l := randomLevel(rng, nUserKeys)
		if len(l.files) == 0 {
			continue
		}
		nkeys := 2*nUserKeys + 2
		lower, upper := randomBound(rng, nkeys), randomBound(rng, nkeys)
		bad := rng.IntN(len(l.files))
		li, _ := l.newLevelIter(t, seed, lower, upper, bad)
		// A forward scan opens every file overlapping the bounds, so it
		// fails exactly when the bad file is one of them, after returning
		// the entries of the files before it.
		var want []itertest.Entry
		for f := 0; f < bad; f++ {
			for _, e := range l.files[f] {
				if inBounds(e.Key.UserKey, lower, upper) {
					want = append(want, e)
				}
			}
		}
		if !l.overlaps(bad, lower, upper) {
			want = want[:0]
			for _, e := range l.flat {
				if inBounds(e.Key.UserKey, lower, upper) {
					want = append(want, e)
				}
			}
		}
		n := 0
		for ok := li.First(); ok; ok = li.Next() {
			if n >= len(want) || base.InternalCompare(bytes.Compare, li.Key(), want[n].Key) != 0 {
				t.Fatalf("seed %d: entry %d: got %s", seed, n, li.Key())
			}
			n++
		}
		if n != len(want) {
			t.Fatalf("seed %d: got %d entries, want %d", seed, n, len(want))
		}
		if failed := errors.Is(li.Error(), itertest.ErrInjected); failed != l.overlaps(bad, lower, upper) {
			t.Fatalf("seed %d: Error() = %v, bad file %d overlaps = %v", seed, li.Error(), bad, l.overlaps(bad, lower, upper))
		}
		li.Close()
	}
}

// TestLevelIterInMerge runs a LevelIter as a child of a merging iterator,
// which switches its direction with single Next/Prev steps.
func TestLevelIterInMerge(t *testing.T) {
	for iter := 0; iter < 200; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 6))
		nUserKeys := rng.IntN(30)
		nkeys := 2*nUserKeys + 2
		l := randomLevel(rng, nUserKeys)
		lower, upper := randomBound(rng, nkeys), randomBound(rng, nkeys)
		li, _ := l.newLevelIter(t, seed, lower, upper, -1)
		other := randomEntries(rng, rng.IntN(60), nkeys)
		var ref []itertest.Entry
		for _, e := range l.flat {
			if inBounds(e.Key.UserKey, lower, upper) {
				ref = append(ref, e)
			}
		}
		for i := range other {
			other[i].Value = append(other[i].Value, "/other"...)
		}
		// Stable: on equal internal keys the level (child 0) comes first.
		ref = append(ref, other...)
		itertest.SortEntries(ref)
		m := New(bytes.Compare, li, &itertest.SliceIter{Entries: other})
		runRandomOps(t, seed, rng, m, ref, nkeys, 300)
		if err := m.Close(); err != nil {
			t.Fatalf("seed %d: close: %v", seed, err)
		}
	}
}

// TestLevelIter runs testdata/level. "define" gives one file of a level a
// line, in key order: "lo-hi: entries", lo and hi being the user keys of the
// file's bounds (hi followed by ")" for a range-delete sentinel, which
// excludes it) and the entries in the scripts' notation (see itertest).
// "iter [lower=k] [upper=k]" runs the operations of runScriptOps on a
// LevelIter, noting after each one the files it opened.
func TestLevelIter(t *testing.T) {
	var files [][]itertest.Entry
	var bounds []FileBounds
	datadriven.RunTest(t, "testdata/level", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "define":
			files, bounds = nil, nil
			for _, line := range strings.Split(td.Input, "\n") {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				rng, points, ok := strings.Cut(line, ":")
				lo, hi, ok2 := strings.Cut(rng, "-")
				if !ok || !ok2 {
					td.Fatalf(t, "bad file %q: want lo-hi: entries", line)
				}
				fb := FileBounds{Smallest: base.MakeSearchKey([]byte(lo))}
				if h, excl := strings.CutSuffix(hi, ")"); excl {
					fb.Largest = base.MakeRangeDeleteSentinel([]byte(h))
				} else {
					fb.Largest = base.MakeInternalKey([]byte(hi), 0, base.KindDelete)
				}
				es := parseScriptEntries(t, td, points)
				for _, e := range es {
					if uk := e.Key.UserKey; bytes.Compare(uk, []byte(lo)) < 0 || !reachesKey(fb, uk) {
						td.Fatalf(t, "entry %s outside the file's bounds %q", e.Key, rng)
					}
				}
				if n := len(bounds); n > 0 && reachesKey(bounds[n-1], []byte(lo)) {
					td.Fatalf(t, "file %q overlaps the one before", line)
				}
				files = append(files, es)
				bounds = append(bounds, fb)
			}
			return ""
		case "iter":
			var lower, upper []byte
			if td.HasArg("lower") {
				var s string
				td.ScanArgs(t, "lower", &s)
				lower = []byte(s)
			}
			if td.HasArg("upper") {
				var s string
				td.ScanArgs(t, "upper", &s)
				upper = []byte(s)
			}
			var opened []string
			var last *itertest.SliceIter
			li := NewLevelIter(bytes.Compare, NewLevel(bytes.Compare, bounds, nil), func(i int) (base.InternalIterator, error) {
				if last != nil && !last.Closed() {
					td.Fatalf(t, "file %d opened while another is open", i)
				}
				opened = append(opened, fmt.Sprint(i))
				last = &itertest.SliceIter{Entries: files[i]}
				return last, nil
			}, lower, upper)
			note := func() string {
				defer func() { opened = opened[:0] }()
				if len(opened) == 0 {
					return ""
				}
				return "(opened " + strings.Join(opened, " ") + ")"
			}
			return runScriptOps(t, td, li, note, func() {
				if last != nil && !last.Closed() {
					td.Fatalf(t, "Close left a file open")
				}
			})
		}
		td.Fatalf(t, "unknown command %q", td.Cmd)
		return ""
	})
}

// reachesKey reports whether the bounds fb end at or after the user key k.
func reachesKey(fb FileBounds, k []byte) bool {
	c := bytes.Compare(fb.Largest.UserKey, k)
	return c > 0 || (c == 0 && !fb.Largest.IsExclusiveSentinel())
}

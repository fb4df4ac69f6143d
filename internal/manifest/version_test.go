package manifest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// modelFile is the reference model's view of a file: its user-key range.
type modelFile struct {
	level       int
	lo, hi      string
	hiExclusive bool
}

func (m modelFile) contains(k string) bool {
	return m.lo <= k && (k < m.hi || (k == m.hi && !m.hiExclusive))
}

// TestApplyRandom applies random edits and checks Apply's verdict and the
// resulting version's queries against a brute-force model.
func TestApplyRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	cmp := base.DefaultComparer
	const numLevels = 4
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var v *Version
	model := map[base.FileNum]modelFile{}
	nextNum := base.FileNum(1)
	for step := range 3000 {
		e := &VersionEdit{}
		next := maps(model)
		ok := true
		for range rng.IntN(3) {
			if len(model) == 0 || rng.IntN(5) == 0 {
				// Possibly absent, possibly wrong level.
				d := DeletedFileEntry{Level: rng.IntN(numLevels), FileNum: base.FileNum(rng.IntN(int(nextNum) + 1))}
				if e.DeletedFiles == nil {
					e.DeletedFiles = map[DeletedFileEntry]bool{}
				}
				if e.DeletedFiles[d] {
					continue
				}
				e.DeletedFiles[d] = true
				if mf, present := next[d.FileNum]; !present || mf.level != d.Level {
					ok = false
				}
				delete(next, d.FileNum)
				continue
			}
			for n, mf := range model {
				d := DeletedFileEntry{Level: mf.level, FileNum: n}
				if e.DeletedFiles == nil {
					e.DeletedFiles = map[DeletedFileEntry]bool{}
				}
				e.DeletedFiles[d] = true
				delete(next, n)
				break
			}
		}
		for range rng.IntN(3) {
			i, j := rng.IntN(len(keys)), rng.IntN(len(keys))
			if i > j {
				i, j = j, i
			}
			mf := modelFile{level: rng.IntN(numLevels), lo: keys[i], hi: keys[j], hiExclusive: i < j && rng.IntN(3) == 0}
			num := nextNum
			if rng.IntN(10) == 0 && nextNum > 1 {
				num = base.FileNum(rng.IntN(int(nextNum-1)) + 1) // maybe a duplicate
			} else {
				nextNum++
			}
			seq := base.SeqNum(rng.IntN(100))
			largest := base.MakeInternalKey([]byte(mf.hi), seq, base.KindSet)
			if mf.hiExclusive {
				largest = base.MakeRangeDeleteSentinel([]byte(mf.hi))
			}
			m := &FileMetadata{
				FileNum: num, Size: uint64(rng.IntN(100)),
				Smallest: base.MakeInternalKey([]byte(mf.lo), seq, base.KindSet), Largest: largest,
				SmallestSeq: seq, LargestSeq: seq,
			}
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: mf.level, Meta: m})
			if _, dup := next[num]; dup {
				ok = false
			}
			next[num] = mf
		}
		// L1+ must not overlap.
		for a, fa := range next {
			for b, fb := range next {
				if a < b && fa.level == fb.level && fa.level > 0 && rangesOverlap(fa, fb) {
					ok = false
				}
			}
		}
		nv, err := Apply(cmp, numLevels, v, e)
		if (err == nil) != ok {
			t.Fatalf("seed %d step %d: Apply error %v, model says ok=%v\nversion:\n%s", seed, step, err, ok, v)
		}
		if err != nil {
			continue
		}
		if err := nv.CheckOrdering(cmp.Compare); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		v, model = nv, next
		checkQueries(t, seed, step, v, model, keys)
	}
}

func maps(m map[base.FileNum]modelFile) map[base.FileNum]modelFile {
	c := make(map[base.FileNum]modelFile, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func rangesOverlap(a, b modelFile) bool {
	// [lo, hi] or [lo, hi) intervals over strings.
	aEndsBeforeB := a.hi < b.lo || (a.hi == b.lo && a.hiExclusive)
	bEndsBeforeA := b.hi < a.lo || (b.hi == a.lo && b.hiExclusive)
	return !aEndsBeforeB && !bEndsBeforeA
}

func checkQueries(t *testing.T, seed uint64, step int, v *Version, model map[base.FileNum]modelFile, keys []string) {
	t.Helper()
	cmp := base.DefaultComparer.Compare
	n := 0
	for l := range v.NumLevels() {
		n += v.NumFiles(l)
	}
	if n != len(model) {
		t.Fatalf("seed %d step %d: version has %d files, model %d", seed, step, n, len(model))
	}
	bounds := append([]string{""}, keys...)
	for l := range v.NumLevels() {
		for _, lo := range bounds {
			for _, hi := range bounds {
				var start, end []byte
				if lo != "" {
					start = []byte(lo)
				}
				if hi != "" {
					end = []byte(hi)
				}
				var want []base.FileNum
				for num, mf := range model {
					if mf.level != l {
						continue
					}
					if (lo == "" || !(mf.hi < lo || (mf.hi == lo && mf.hiExclusive))) && (hi == "" || mf.lo <= hi) {
						want = append(want, num)
					}
				}
				var got []base.FileNum
				for _, f := range v.Overlaps(cmp, l, start, end) {
					got = append(got, f.FileNum)
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: Overlaps(L%d, %q, %q) = %v, want %v\n%s", seed, step, l, lo, hi, got, want, v)
				}
			}
		}
		if l == 0 {
			continue
		}
		for _, k := range append(keys, "", "zz") {
			var want base.FileNum
			for num, mf := range model {
				if mf.level == l && mf.contains(k) {
					want = num
				}
			}
			var got base.FileNum
			if f := v.FindFile(cmp, l, []byte(k)); f != nil {
				got = f.FileNum
			}
			if got != want {
				t.Fatalf("seed %d step %d: FindFile(L%d, %q) = %s, want %s\n%s", seed, step, l, k, got, want, v)
			}
		}
	}
}

// TestOverlapsL0ExpandedClosed checks that the expanded L0 input set is
// closed: no file outside it overlaps the union of its ranges.
func TestOverlapsL0ExpandedClosed(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 4))
	cmp := base.DefaultComparer.Compare
	for iter := range 500 {
		v := &Version{Levels: make([][]*FileMetadata, 1)}
		for i := range rng.IntN(8) {
			a, b := byte('a'+rng.IntN(10)), byte('a'+rng.IntN(10))
			if a > b {
				a, b = b, a
			}
			largest := base.MakeInternalKey([]byte{b}, 1, base.KindSet)
			if a < b && rng.IntN(2) == 0 {
				largest = base.MakeRangeDeleteSentinel([]byte{b})
			}
			v.Levels[0] = append(v.Levels[0], &FileMetadata{
				FileNum: base.FileNum(10 - i), LargestSeq: base.SeqNum(10 - i),
				Smallest: base.MakeInternalKey([]byte{a}, 1, base.KindSet), Largest: largest,
			})
		}
		k := []byte{byte('a' + rng.IntN(10))}
		got := v.OverlapsL0Expanded(cmp, k, k)
		in := map[*FileMetadata]bool{}
		for _, f := range got {
			in[f] = true
		}
		// Every direct overlap is included.
		for _, f := range v.Overlaps(cmp, 0, k, k) {
			if !in[f] {
				t.Fatalf("seed %d iter %d: direct overlap %s missing\n%s", seed, iter, f.FileNum, v)
			}
		}
		// Closure: no excluded file overlaps an included one.
		for _, f := range v.Levels[0] {
			if in[f] {
				continue
			}
			for _, g := range got {
				if overlapsRange(cmp, f, g.Smallest.UserKey, g.Largest.UserKey, g.Largest.IsExclusiveSentinel()) {
					t.Fatalf("seed %d iter %d: %s excluded but overlaps included %s\n%s", seed, iter, f.FileNum, g.FileNum, v)
				}
			}
		}
		// Minimality: the set is exactly the connected component of the
		// files overlapping k (connected intervals have a gap-free union).
		comp := map[*FileMetadata]bool{}
		for _, f := range v.Overlaps(cmp, 0, k, k) {
			comp[f] = true
		}
		for grew := true; grew; {
			grew = false
			for _, f := range v.Levels[0] {
				for g := range comp {
					if !comp[f] && overlapsRange(cmp, f, g.Smallest.UserKey, g.Largest.UserKey, g.Largest.IsExclusiveSentinel()) {
						comp[f], grew = true, true
					}
				}
			}
		}
		if len(comp) != len(in) {
			t.Fatalf("seed %d iter %d: expanded set has %d files, component %d\n%s", seed, iter, len(in), len(comp), v)
		}
	}
}

func TestVersionRefsObsolete(t *testing.T) {
	tr := newFileTracker()
	mk := func(n base.FileNum, k string) *FileMetadata {
		return &FileMetadata{FileNum: n, Smallest: base.MakeInternalKey([]byte(k), 1, base.KindSet),
			Largest: base.MakeInternalKey([]byte(k), 1, base.KindSet), SmallestSeq: 1, LargestSeq: 1}
	}
	v1, err := Apply(base.DefaultComparer, 3, &Version{tracker: tr}, &VersionEdit{NewFiles: []NewFileEntry{
		{Level: 1, Meta: mk(1, "a")}, {Level: 1, Meta: mk(2, "b")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	v1.Ref()
	// v2 deletes 1 and moves 2 to L2 as a fresh FileMetadata (as a
	// decoded edit would).
	v2, err := Apply(base.DefaultComparer, 3, v1, &VersionEdit{
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 1}: true, {Level: 1, FileNum: 2}: true},
		NewFiles:     []NewFileEntry{{Level: 2, Meta: mk(2, "b")}, {Level: 1, Meta: mk(3, "c")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v2.Ref()
	v1.Ref() // a reader
	v1.Unref()
	if o := tr.takeObsolete(); len(o) != 0 {
		t.Fatalf("obsolete too early: %v", o)
	}
	if got := fmt.Sprint(sortedNums(tr.liveFileNums())); got != "[000001 000002 000003]" {
		t.Fatalf("live = %s", got)
	}
	v1.Unref() // the last reference to v1
	o := tr.takeObsolete()
	if len(o) != 1 || o[0].FileNum != 1 {
		t.Fatalf("obsolete = %v, want only 000001 (000002 moved and stays live)", o)
	}
	if o := tr.takeObsolete(); len(o) != 0 {
		t.Fatalf("obsolete returned twice: %v", o)
	}
	if got := fmt.Sprint(sortedNums(tr.liveFileNums())); got != "[000002 000003]" {
		t.Fatalf("live = %s", got)
	}
	v2.Unref()
	if got := len(tr.takeObsolete()); got != 2 {
		t.Fatalf("after last Unref: %d obsolete, want 2", got)
	}
	if len(tr.liveFileNums()) != 0 {
		t.Fatal("files still live")
	}
	for _, f := range v2.Levels[1] {
		if f.refs.Load() != 0 {
			t.Fatalf("file %s refs %d", f.FileNum, f.refs.Load())
		}
	}
	// Referencing a released version is an invariant violation.
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Ref of a released version did not panic")
			}
		}()
		v2.Ref()
	}()
}

func sortedNums(m map[base.FileNum]struct{}) []base.FileNum {
	var s []base.FileNum
	for n := range m {
		s = append(s, n)
	}
	slices.Sort(s)
	return s
}

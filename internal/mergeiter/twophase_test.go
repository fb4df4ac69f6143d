package mergeiter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
)

// prepIter is a SliceIter that implements base.SeekPreparer and logs its
// prepare and positioning calls.
type prepIter struct {
	itertest.SliceIter
	name string
	log  *[]string
	// prepared is the key of the last PrepareSeekGE ("<first>" for
	// PrepareFirst) not yet followed by a positioning call.
	prepared string
	// hits counts positioning calls that followed a prepare of the same
	// target; misses those that followed a prepare of another.
	hits, misses *int
}

var _ base.SeekPreparer = (*prepIter)(nil)

func (p *prepIter) PrepareSeekGE(key []byte) {
	*p.log = append(*p.log, fmt.Sprintf("%s.prepare(%s)", p.name, key))
	p.prepared = string(key)
}

func (p *prepIter) PrepareFirst() {
	*p.log = append(*p.log, p.name+".prepareFirst")
	p.prepared = "<first>"
}

func (p *prepIter) PrepareSeekLT(key []byte) {
	*p.log = append(*p.log, fmt.Sprintf("%s.prepareLT(%s)", p.name, key))
	p.prepared = "<lt>" + string(key)
}

func (p *prepIter) PrepareLast() {
	*p.log = append(*p.log, p.name+".prepareLast")
	p.prepared = "<last>"
}

func (p *prepIter) SeekLT(key []byte) bool {
	*p.log = append(*p.log, fmt.Sprintf("%s.seekLT(%s)", p.name, key))
	p.settle("<lt>" + string(key))
	return p.SliceIter.SeekLT(key)
}

func (p *prepIter) Last() bool {
	*p.log = append(*p.log, p.name+".last")
	p.settle("<last>")
	return p.SliceIter.Last()
}

func (p *prepIter) settle(target string) {
	if p.prepared != "" {
		if p.prepared == target {
			*p.hits++
		} else {
			*p.misses++
		}
	}
	p.prepared = ""
}

func (p *prepIter) SeekGE(key []byte) bool {
	*p.log = append(*p.log, fmt.Sprintf("%s.seek(%s)", p.name, key))
	p.settle(string(key))
	return p.SliceIter.SeekGE(key)
}

func (p *prepIter) First() bool {
	*p.log = append(*p.log, p.name+".first")
	p.settle("<first>")
	return p.SliceIter.First()
}

// TestTwoPhaseOrder checks that with SetTwoPhase a merged SeekGE (First)
// prepares every child that can prepare, then submits, and only then
// positions the children; without it nothing is prepared.
func TestTwoPhaseOrder(t *testing.T) {
	var log []string
	var hits, misses int
	mk := func(name string) *prepIter {
		return &prepIter{SliceIter: itertest.SliceIter{Entries: randomEntries(rand.New(rand.NewPCG(1, 1)), 10, 20)},
			name: name, log: &log, hits: &hits, misses: &misses}
	}
	a, b := mk("a"), mk("b")
	plain := &itertest.SliceIter{Entries: randomEntries(rand.New(rand.NewPCG(2, 2)), 10, 20)}
	m := New(bytes.Compare, a, plain, b)
	defer m.Close()
	m.SeekGE([]byte("k005"))
	m.First()
	m.SeekLT([]byte("k007"))
	m.Last()
	if len(log) != 8 {
		t.Fatalf("one-phase seeks: %q", log)
	}
	log = log[:0]
	m.SetTwoPhase(true, func() { log = append(log, "submit") })
	m.SeekGE([]byte("k005"))
	m.First()
	m.SeekLT([]byte("k007"))
	m.Last()
	want := "[a.prepare(k005) b.prepare(k005) submit a.seek(k005) b.seek(k005) a.prepareFirst b.prepareFirst submit a.first b.first " +
		"a.prepareLT(k007) b.prepareLT(k007) submit a.seekLT(k007) b.seekLT(k007) a.prepareLast b.prepareLast submit a.last b.last]"
	if got := fmt.Sprint(log); got != want {
		t.Fatalf("two-phase calls:\n got %s\nwant %s", got, want)
	}
}

// TestTwoPhaseLevelIterRandom runs random operations on merged level
// iterators whose files can prepare, with two-phase seeks, against the
// reference, and checks that the prepare a LevelIter forwards names the
// file and key its seek then positions at (clamped to the bounds).
func TestTwoPhaseLevelIterRandom(t *testing.T) {
	var log []string
	hits, misses := 0, 0
	for iter := 0; iter < 200; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 7))
		nUserKeys := rng.IntN(30)
		nkeys := 2*nUserKeys + 2
		lower, upper := randomBound(rng, nkeys), randomBound(rng, nkeys)
		var children []base.InternalIterator
		var ref []itertest.Entry
		for c := 0; c < 3; c++ {
			l := randomLevel(rng, nUserKeys)
			for _, e := range l.flat {
				if inBounds(e.Key.UserKey, lower, upper) {
					ref = append(ref, e)
				}
			}
			children = append(children, NewLevelIter(bytes.Compare, NewLevel(bytes.Compare, l.bounds, nil), func(f int) (base.InternalIterator, error) {
				return &prepIter{SliceIter: itertest.SliceIter{Entries: l.files[f]}, name: fmt.Sprint(c, f),
					log: &log, hits: &hits, misses: &misses}, nil
			}, lower, upper))
		}
		itertest.SortEntries(ref)
		m := New(bytes.Compare, children...)
		m.SetTwoPhase(true, nil)
		// The merged iterator does not bound keys itself: the level
		// iterators do.
		runRandomOps(t, seed, rng, m, ref, nkeys, 200)
		if err := m.Close(); err != nil {
			t.Fatalf("seed %d: close: %v", seed, err)
		}
		log = log[:0]
	}
	if hits == 0 || misses != 0 {
		t.Fatalf("%d positionings followed a prepare of their target, %d one of another", hits, misses)
	}
}

// TestTwoPhaseLevelIterOpenError checks that a file that fails to open in
// the prepare phase fails the seek that follows, as it would without the
// prepare, and that the next seek elsewhere works.
func TestTwoPhaseLevelIterOpenError(t *testing.T) {
	files := [][]itertest.Entry{
		{{Key: base.MakeInternalKey([]byte("a"), 1, base.KindSet)}},
		{{Key: base.MakeInternalKey([]byte("m"), 2, base.KindSet)}},
	}
	bounds := []FileBounds{{files[0][0].Key, files[0][0].Key}, {files[1][0].Key, files[1][0].Key}}
	l := NewLevelIter(bytes.Compare, NewLevel(bytes.Compare, bounds, nil), func(f int) (base.InternalIterator, error) {
		if f == 1 {
			return nil, itertest.ErrInjected
		}
		return &itertest.SliceIter{Entries: files[f]}, nil
	}, nil, nil)
	defer l.Close()
	l.PrepareSeekGE([]byte("m"))
	if l.SeekGE([]byte("m")) || !errors.Is(l.Error(), itertest.ErrInjected) {
		t.Fatalf("seek into the file that failed to open: valid %v, error %v", l.Key(), l.Error())
	}
	l.PrepareSeekGE([]byte("a"))
	if !l.SeekGE([]byte("a")) || l.Error() != nil || string(l.Key().UserKey) != "a" {
		t.Fatalf("seek into a good file after the failure: error %v", l.Error())
	}
}

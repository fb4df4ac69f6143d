package mergeiter

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/rangedel"
)

// prefixSliceIter is a SliceIter with a prefix filter: SeekPrefixGE rules
// out a prefix none of its entries has, except for some prefixes it lets
// through (false positives). ruledOut counts the seeks it ruled out.
type prefixSliceIter struct {
	itertest.SliceIter
	tr       base.SliceTransform
	name     string
	ruledOut *int
}

var _ base.PrefixSeeker = (*prefixSliceIter)(nil)

func (p *prefixSliceIter) SeekPrefixGE(prefix, key []byte) bool {
	has := false
	for _, e := range p.Entries {
		if base.HasPrefix(p.tr, e.Key.UserKey, prefix) {
			has = true
			break
		}
	}
	falsePositive := crc32.ChecksumIEEE(append([]byte(p.name), prefix...))%4 == 0
	if !has && !falsePositive {
		*p.ruledOut++
		p.SliceIter.SeekGE([]byte{0xff, 0xff, 0xff}) // unpositioned: past every key
		return false
	}
	return p.SliceIter.SeekGE(key)
}

// prefixSource is one source of a merge: entries newest first by source,
// each source's seqnums above the next one's, with range tombstones in the
// first ones and files in the later ones (levels).
type prefixSource struct {
	entries []itertest.Entry
	tombs   []rangedel.Tombstone
	files   [][]itertest.Entry // nil: not a level
	bounds  []FileBounds
}

func randomPrefixSources(rng *rand.Rand, nkeys int) []prefixSource {
	const n = 4
	srcs := make([]prefixSource, n)
	for s := range srcs {
		seq := base.SeqNum((n - s) * 100000)
		src := &srcs[s]
		density := 1 + rng.IntN(4)
		for k := 0; k < nkeys; k++ {
			if rng.IntN(density+1) != 0 {
				continue
			}
			uk := itertest.UserKey(k)
			for v := rng.IntN(2); v >= 0; v-- {
				kind := base.KindSet
				if rng.IntN(5) == 0 {
					kind = base.KindDelete
				}
				src.entries = append(src.entries, itertest.Entry{Key: base.MakeInternalKey(uk, seq, kind), Value: fmt.Appendf(nil, "v%s@%d", uk, seq)})
				seq++
			}
		}
		itertest.SortEntries(src.entries)
		if s < 2 {
			for t := rng.IntN(3); t > 0; t-- {
				a, b := rng.IntN(nkeys), rng.IntN(nkeys)
				if a > b {
					a, b = b, a
				}
				src.tombs = append(src.tombs, rangedel.Tombstone{Start: itertest.UserKey(a), End: itertest.UserKey(b + 1), Seq: seq})
				seq++
			}
			continue
		}
		// A level: runs of user keys become files.
		for i := 0; i < len(src.entries); {
			j := i
			for users := 1 + rng.IntN(12); j < len(src.entries) && users > 0; users-- {
				uk := src.entries[j].Key.UserKey
				for j < len(src.entries) && bytes.Equal(src.entries[j].Key.UserKey, uk) {
					j++
				}
			}
			es := src.entries[i:j]
			src.files = append(src.files, es)
			src.bounds = append(src.bounds, FileBounds{Smallest: es[0].Key, Largest: es[len(es)-1].Key})
			i = j
		}
	}
	return srcs
}

// newMerge builds a merge over srcs: with prefix filters and level
// extractors (prefixed), or plain, as the reference.
func newMerge(srcs []prefixSource, tr base.SliceTransform, prefixed, levelExtractor, twoPhase bool, ruledOut *int) *Iter {
	var children []base.InternalIterator
	var dels []*rangedel.List
	for s := range srcs {
		src := &srcs[s]
		dels = append(dels, rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare, src.tombs)))
		wrap := func(name string, es []itertest.Entry) base.InternalIterator {
			if !prefixed {
				return &itertest.SliceIter{Entries: es}
			}
			return &prefixSliceIter{SliceIter: itertest.SliceIter{Entries: es}, tr: tr, name: name, ruledOut: ruledOut}
		}
		if src.files == nil {
			children = append(children, wrap(fmt.Sprint(s), src.entries))
			continue
		}
		files := src.files
		li := NewLevelIter(bytes.Compare, NewLevel(bytes.Compare, src.bounds, nil), func(i int) (base.InternalIterator, error) {
			return wrap(fmt.Sprintf("%d/%d", s, i), files[i]), nil
		}, nil, nil)
		if prefixed && levelExtractor {
			li.SetPrefixExtractor(tr)
		}
		children = append(children, li)
	}
	m := New(bytes.Compare, children...)
	m.SetRangeDels(base.SeqNumMax, dels)
	m.SetChildrenOrdered(true)
	m.SetTwoPhase(twoPhase, nil)
	return m
}

// TestSeekPrefixGEMatchesSeekGE: a merge's SeekPrefixGE, with children that
// rule prefixes out (and levels that skip files by their bounds), returns
// the entries of the prefix exactly as SeekGE does, and stops at or after
// their end; Next and SeekGEInternal stay right within the prefix; and
// after turning backward (children repositioned) every move agrees with
// the plain merge, in and out of the prefix.
func TestSeekPrefixGEMatchesSeekGE(t *testing.T) {
	tr := base.NewFixedPrefixTransform(3) // "k01" holds k010..k019
	const nkeys = 300
	var ruledOut int
	for run := 0; run < 300; run++ {
		seed := itertest.Seed(run)
		rng := rand.New(rand.NewPCG(seed, seed))
		srcs := randomPrefixSources(rng, nkeys)
		m := newMerge(srcs, tr, true, rng.IntN(4) != 0, rng.IntN(2) == 0, &ruledOut)
		ref := newMerge(srcs, tr, false, false, false, nil)
		at := func(it *Iter, ok bool) string {
			if !ok {
				return "exhausted"
			}
			return itertest.FormatKey(it.Key())
		}
		for seek := 0; seek < 40; seek++ {
			key := itertest.UserKey(rng.IntN(nkeys + 10))
			if rng.IntN(3) == 0 {
				key = append(key, 'x')
			}
			prefix := tr.Transform(key)
			ok := m.SeekPrefixGE(prefix, key)
			refOK := ref.SeekGE(key)
			for step := 0; ; step++ {
				inPrefix := refOK && base.HasPrefix(tr, ref.Key().UserKey, prefix)
				if !inPrefix {
					if ok && base.HasPrefix(tr, m.Key().UserKey, prefix) {
						t.Fatalf("seed %d: SeekPrefixGE(%s) step %d: at %s, the plain merge at %s", seed, key, step, at(m, ok), at(ref, refOK))
					}
					break
				}
				if !ok || !bytes.Equal(m.Key().UserKey, ref.Key().UserKey) || m.Key().Trailer != ref.Key().Trailer {
					t.Fatalf("seed %d: SeekPrefixGE(%s) step %d: at %s, the plain merge at %s", seed, key, step, at(m, ok), at(ref, refOK))
				}
				switch r := rng.IntN(10); {
				case r == 0:
					// A reseek forward within the prefix, as the DB
					// iterator makes: to an older version of the key.
					cur := m.Key()
					ik := base.MakeInternalKey(append([]byte(nil), cur.UserKey...), base.SeqNum(rng.Uint64N(uint64(cur.SeqNum())+1)), base.KindMax)
					ok, refOK = m.SeekGEInternal(ik), ref.SeekGEInternal(ik)
				case r == 1:
					// Turn backward: from then on, total order.
					ok, refOK = m.Prev(), ref.Prev()
					for walk := 0; walk < 30 && (ok || refOK); walk++ {
						if ok != refOK || ok && (!bytes.Equal(m.Key().UserKey, ref.Key().UserKey) || m.Key().Trailer != ref.Key().Trailer) {
							t.Fatalf("seed %d: after SeekPrefixGE(%s) and a turn, walk %d: at %s, the plain merge at %s", seed, key, walk, at(m, ok), at(ref, refOK))
						}
						if rng.IntN(3) == 0 {
							ok, refOK = m.Next(), ref.Next()
						} else {
							ok, refOK = m.Prev(), ref.Prev()
						}
					}
					ok, refOK = false, false
				default:
					ok, refOK = m.Next(), ref.Next()
				}
				if !ok && !refOK {
					break
				}
			}
			if err := m.Error(); err != nil {
				t.Fatal(err)
			}
		}
		m.Close()
		ref.Close()
	}
	if ruledOut < 1000 {
		t.Fatalf("children ruled a prefix out only %d times", ruledOut)
	}
}

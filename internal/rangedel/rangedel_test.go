package rangedel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
)

func formatSpans(spans []Span) string {
	var sb strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&sb, "[%s,%s)%v ", s.Start, s.End, s.Seqs)
	}
	return strings.TrimSpace(sb.String())
}

func tomb(start, end string, seq base.SeqNum) Tombstone {
	return Tombstone{Start: []byte(start), End: []byte(end), Seq: seq}
}

// keySpace returns every key of one or two letters over "abcdef": single
// letters are tombstone boundaries, two-letter keys fall between them.
func keySpace() [][]byte {
	var keys [][]byte
	const letters = "abcdef"
	for _, a := range letters {
		keys = append(keys, []byte{byte(a)})
		for _, b := range letters {
			keys = append(keys, []byte{byte(a), byte(b)})
		}
	}
	return keys
}

func randTombstones(rng *rand.Rand, maxSeq int) []Tombstone {
	n := rng.IntN(10)
	ts := make([]Tombstone, n)
	for i := range ts {
		ts[i] = Tombstone{
			Start: []byte{byte('a' + rng.IntN(6))},
			End:   []byte{byte('a' + rng.IntN(7))},
			Seq:   base.SeqNum(1 + rng.IntN(maxSeq)),
		}
	}
	return ts
}

// modelMax is the brute-force answer: the largest t.Seq <= snapshot of a
// tombstone covering key.
func modelMax(ts []Tombstone, key []byte, snapshot base.SeqNum) base.SeqNum {
	var best base.SeqNum
	for _, t := range ts {
		if bytes.Compare(t.Start, key) <= 0 && bytes.Compare(key, t.End) < 0 && t.Seq <= snapshot && t.Seq > best {
			best = t.Seq
		}
	}
	return best
}

func modelCovers(ts []Tombstone, key []byte, seq, snapshot base.SeqNum) bool {
	for _, t := range ts {
		if bytes.Compare(t.Start, key) <= 0 && bytes.Compare(key, t.End) < 0 && seq < t.Seq && t.Seq <= snapshot {
			return true
		}
	}
	return false
}

func cloneTombstones(ts []Tombstone) []Tombstone {
	out := make([]Tombstone, len(ts))
	for i, t := range ts {
		out[i] = Tombstone{Start: slices.Clone(t.Start), End: slices.Clone(t.End), Seq: t.Seq}
	}
	return out
}

func TestFragmentRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	keys := keySpace()
	const maxSeq = 12
	for iter := 0; iter < 300; iter++ {
		ts := randTombstones(rng, maxSeq)
		orig := cloneTombstones(ts)
		spans := Fragment(bytes.Compare, ts)
		if !reflect.DeepEqual(ts, orig) {
			t.Fatalf("seed %d: Fragment modified its input", seed)
		}
		if err := CheckFragmented(bytes.Compare, spans); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, formatSpans(spans))
		}
		// The output owns its keys: scribbling over the input changes nothing.
		before := formatSpans(spans)
		for _, tt := range ts {
			for i := range tt.Start {
				tt.Start[i] = 'z'
			}
			for i := range tt.End {
				tt.End[i] = 'z'
			}
		}
		if after := formatSpans(spans); after != before {
			t.Fatalf("seed %d: output aliases input keys: %s became %s", seed, before, after)
		}
		ts = orig
		l := NewList(bytes.Compare, spans)
		if l.Empty() != (len(spans) == 0) {
			t.Fatalf("seed %d: Empty() wrong", seed)
		}
		for _, k := range keys {
			for snap := base.SeqNum(0); snap <= maxSeq+1; snap++ {
				if got, want := l.MaxCoveringSeq(k, snap), modelMax(ts, k, snap); got != want {
					t.Fatalf("seed %d: MaxCoveringSeq(%s, %d) = %d, want %d\ntombstones %v\nspans %s",
						seed, k, snap, got, want, ts, formatSpans(spans))
				}
				for seq := base.SeqNum(0); seq <= maxSeq+1; seq++ {
					if got, want := l.Covers(k, seq, snap), modelCovers(ts, k, seq, snap); got != want {
						t.Fatalf("seed %d: Covers(%s, %d, %d) = %v, want %v\nspans %s",
							seed, k, seq, snap, got, want, formatSpans(spans))
					}
				}
			}
		}

		// An extent's answer is the lookup's, and holds throughout it.
		for _, k := range keys {
			snap := base.SeqNum(rng.IntN(maxSeq + 2))
			e := l.ExtentAt(k, snap)
			if !e.Contains(bytes.Compare, k) || e.Seq != l.MaxCoveringSeq(k, snap) {
				t.Fatalf("seed %d: ExtentAt(%s, %d) = %+v: must contain the key and answer %d\nspans %s",
					seed, k, snap, e, l.MaxCoveringSeq(k, snap), formatSpans(spans))
			}
			for _, k2 := range keys {
				if e.Contains(bytes.Compare, k2) && l.MaxCoveringSeq(k2, snap) != e.Seq {
					t.Fatalf("seed %d: ExtentAt(%s, %d) = %+v holds %s, whose answer is %d\nspans %s",
						seed, k, snap, e, k2, l.MaxCoveringSeq(k2, snap), formatSpans(spans))
				}
			}
		}

		// Merge of fragmented parts equals fragmenting the whole.
		var parts []*List
		for rest := ts; len(rest) > 0; {
			n := 1 + rng.IntN(len(rest))
			parts = append(parts, NewList(bytes.Compare, Fragment(bytes.Compare, rest[:n])))
			rest = rest[n:]
		}
		parts = append(parts, nil)
		merged := Merge(bytes.Compare, parts...)
		if got, want := formatSpans(merged.Spans()), formatSpans(spans); got != want {
			t.Fatalf("seed %d: Merge = %s, want %s", seed, got, want)
		}

		// The intersection of the parts' extents answers for all of them.
		for _, k := range keys {
			snap := base.SeqNum(rng.IntN(maxSeq + 2))
			e := Extent{NoStart: true, NoEnd: true}
			for _, p := range parts {
				pe := p.ExtentAt(k, snap)
				e.Intersect(bytes.Compare, &pe)
			}
			for _, k2 := range keys {
				if e.Contains(bytes.Compare, k2) != (k2Within(parts, k, k2, snap)) {
					t.Fatalf("seed %d: intersected extent at %s (snapshot %d) %+v: contains %s = %v",
						seed, k, snap, e, k2, e.Contains(bytes.Compare, k2))
				}
				if e.Contains(bytes.Compare, k2) && merged.MaxCoveringSeq(k2, snap) != e.Seq {
					t.Fatalf("seed %d: intersected extent at %s (snapshot %d) %+v holds %s, whose answer is %d",
						seed, k, snap, e, k2, merged.MaxCoveringSeq(k2, snap))
				}
			}
		}

		// Truncate behaves as intersecting every tombstone with [start, end).
		var start, end []byte
		if rng.IntN(4) > 0 {
			start = keys[rng.IntN(len(keys))]
		}
		if rng.IntN(4) > 0 {
			end = keys[rng.IntN(len(keys))]
		}
		tl := NewList(bytes.Compare, Truncate(bytes.Compare, spans, start, end))
		if err := CheckFragmented(bytes.Compare, tl.Spans()); err != nil {
			t.Fatalf("seed %d: Truncate: %v", seed, err)
		}
		for _, k := range keys {
			inside := (start == nil || bytes.Compare(start, k) <= 0) && (end == nil || bytes.Compare(k, end) < 0)
			for snap := base.SeqNum(0); snap <= maxSeq+1; snap++ {
				want := base.SeqNum(0)
				if inside {
					want = modelMax(ts, k, snap)
				}
				if got := tl.MaxCoveringSeq(k, snap); got != want {
					t.Fatalf("seed %d: truncated to [%q,%q): MaxCoveringSeq(%s, %d) = %d, want %d",
						seed, start, end, k, snap, got, want)
				}
			}
		}

		// Coalesce keeps what every real reader sees.
		var snaps []base.SeqNum
		for s := base.SeqNum(1); s <= maxSeq; s++ {
			if rng.IntN(4) == 0 {
				snaps = append(snaps, s)
			}
		}
		readers := append(slices.Clone(snaps), base.SeqNumMax)
		for _, s := range spans {
			c := Coalesce(s, snaps)
			if err := CheckFragmented(bytes.Compare, []Span{c}); err != nil {
				t.Fatalf("seed %d: Coalesce: %v", seed, err)
			}
			cl, sl := NewList(bytes.Compare, []Span{c}), NewList(bytes.Compare, []Span{s})
			for _, r := range readers {
				if got, want := cl.MaxCoveringSeq(s.Start, r), sl.MaxCoveringSeq(s.Start, r); got != want {
					t.Fatalf("seed %d: Coalesce(%v, snaps %v) = %v: reader at %d sees %d, want %d",
						seed, s.Seqs, snaps, c.Seqs, r, got, want)
				}
			}
			// Minimal: no two kept seqnums share a stripe.
			for i := 1; i < len(c.Seqs); i++ {
				separated := false
				for _, x := range snaps {
					if c.Seqs[i] <= x && x < c.Seqs[i-1] {
						separated = true
					}
				}
				if !separated {
					t.Fatalf("seed %d: Coalesce(%v, snaps %v) = %v keeps %d and %d in one stripe",
						seed, s.Seqs, snaps, c.Seqs, c.Seqs[i-1], c.Seqs[i])
				}
			}
		}
	}
}

// k2Within reports whether k2 lies in the extent of every part at k.
func k2Within(parts []*List, k, k2 []byte, snap base.SeqNum) bool {
	for _, p := range parts {
		if e := p.ExtentAt(k, snap); !e.Contains(bytes.Compare, k2) {
			return false
		}
	}
	return true
}

func TestNilList(t *testing.T) {
	var l *List
	if e := l.ExtentAt([]byte("a"), base.SeqNumMax); !e.NoStart || !e.NoEnd || e.Seq != 0 {
		t.Fatalf("nil list: ExtentAt = %+v, want everything with no tombstone", e)
	}
	if !l.Empty() || l.Spans() != nil || l.MaxCoveringSeq([]byte("a"), base.SeqNumMax) != 0 || l.Covers([]byte("a"), 0, 10) {
		t.Fatal("nil list must behave as empty")
	}
	if got := Merge(bytes.Compare); !got.Empty() {
		t.Fatalf("Merge of nothing = %s", formatSpans(got.Spans()))
	}
}

func TestMaxCoveringSeqNoAlloc(t *testing.T) {
	l := NewList(bytes.Compare, Fragment(bytes.Compare, []Tombstone{tomb("a", "m", 5), tomb("c", "z", 9)}))
	key := []byte("d")
	var got base.SeqNum
	allocs := testing.AllocsPerRun(100, func() { got = l.MaxCoveringSeq(key, 100) })
	if allocs != 0 || got != 9 {
		t.Fatalf("allocs %v, seq %d", allocs, got)
	}
}

// TestConcat joins per-file lists as the files of one level have them (each
// list within its own key range, the ranges in order) and checks the result
// against fragmenting all the tombstones at once; lists that overlap fall
// back to Merge and give the same answer.
func TestConcat(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	for iter := 0; iter < 300; iter++ {
		// Cut "a".."g" into consecutive ranges [lo, hi], one per file;
		// neighbours may share a boundary key, as a file ending in a
		// range-delete sentinel and the next file do.
		var lists []*List
		var all []Tombstone
		disjoint := rng.IntN(4) > 0
		for lo := 0; lo < 6; {
			hi := lo + 1 + rng.IntN(6-lo)
			var ts []Tombstone
			for n := rng.IntN(4); n > 0; n-- {
				s, e := lo+rng.IntN(hi-lo+1), lo+rng.IntN(hi-lo+1)
				if !disjoint {
					s, e = rng.IntN(7), rng.IntN(7)
				}
				ts = append(ts, Tombstone{Start: []byte{byte('a' + s)}, End: []byte{byte('a' + e)}, Seq: base.SeqNum(1 + rng.IntN(12))})
			}
			all = append(all, ts...)
			switch l := NewList(bytes.Compare, Fragment(bytes.Compare, ts)); {
			case rng.IntN(5) == 0:
				lists = append(lists, nil)
			case l.Empty() && rng.IntN(2) == 0:
				lists = append(lists, nil) // a file with no tombstones
			default:
				lists = append(lists, l)
			}
			if lists[len(lists)-1] == nil {
				all = all[:len(all)-len(ts)]
			}
			lo = hi
		}
		want := Fragment(bytes.Compare, all)
		got := Concat(bytes.Compare, lists...)
		if gs, ws := formatSpans(got.Spans()), formatSpans(want); gs != ws {
			t.Fatalf("seed %d: Concat = %s, want %s", seed, gs, ws)
		}
		if err := CheckFragmented(bytes.Compare, got.Spans()); err != nil {
			t.Fatalf("seed %d: Concat: %v", seed, err)
		}
		var maxSeq base.SeqNum
		for _, ts := range all {
			if bytes.Compare(ts.Start, ts.End) < 0 {
				maxSeq = max(maxSeq, ts.Seq)
			}
		}
		if got.MaxSeq() != maxSeq {
			t.Fatalf("seed %d: MaxSeq = %d, want %d", seed, got.MaxSeq(), maxSeq)
		}
		for _, k := range keySpace() {
			for snap := base.SeqNum(0); snap <= 13; snap++ {
				if g, w := got.MaxCoveringSeq(k, snap), modelMax(all, k, snap); g != w {
					t.Fatalf("seed %d: MaxCoveringSeq(%s, %d) = %d, want %d", seed, k, snap, g, w)
				}
			}
		}
	}
	one := NewList(bytes.Compare, Fragment(bytes.Compare, []Tombstone{tomb("a", "c", 3)}))
	if got := Concat(bytes.Compare, nil, one, NewList(bytes.Compare, nil)); got != one {
		t.Fatal("Concat of one non-empty list must return that list")
	}
	if got := Concat(bytes.Compare, nil, NewList(bytes.Compare, nil)); got != nil {
		t.Fatal("Concat of empty lists must return nil")
	}
	if var0 := (*List)(nil); var0.MaxSeq() != 0 {
		t.Fatal("nil list MaxSeq must be 0")
	}
}

package rangedel

import (
	"cmp"
	"slices"

	"github.com/shaledb/shale/internal/base"
)

// Fragment cuts tombstones, given in any order, into spans that do not
// overlap, sorted by Start, each with its seqnums descending and deduplicated.
// Empty tombstones (Start >= End) are ignored. The result owns copies of the
// keys, so the caller may reuse ts and its key buffers afterwards.
func Fragment(cmpKeys base.Compare, ts []Tombstone) []Span {
	live := make([]Tombstone, 0, len(ts))
	keyBytes := 0
	for _, t := range ts {
		if cmpKeys(t.Start, t.End) < 0 {
			live = append(live, t)
			keyBytes += len(t.Start) + len(t.End)
		}
	}
	if len(live) == 0 {
		return nil
	}
	slices.SortFunc(live, func(a, b Tombstone) int { return cmpKeys(a.Start, b.Start) })

	// Distinct boundaries, sorted, copied into one buffer owned by the result.
	bounds := make([][]byte, 0, 2*len(live))
	for _, t := range live {
		bounds = append(bounds, t.Start, t.End)
	}
	slices.SortFunc(bounds, cmpKeys)
	bounds = slices.CompactFunc(bounds, func(a, b []byte) bool { return cmpKeys(a, b) == 0 })
	buf := make([]byte, 0, keyBytes)
	for i, b := range bounds {
		n := len(buf)
		buf = append(buf, b...)
		bounds[i] = buf[n:len(buf):len(buf)]
	}

	// Sweep the boundaries left to right, keeping the tombstones that cover
	// the current fragment in active.
	var (
		spans  = make([]Span, 0, len(bounds)-1)
		active = make([]Tombstone, 0, len(live))
		seqBuf = make([]base.SeqNum, 0, 2*len(live))
		next   int
	)
	for i := 0; i+1 < len(bounds); i++ {
		b := bounds[i]
		active = slices.DeleteFunc(active, func(t Tombstone) bool { return cmpKeys(t.End, b) <= 0 })
		for next < len(live) && cmpKeys(live[next].Start, b) <= 0 {
			active = append(active, live[next])
			next++
		}
		if len(active) == 0 {
			continue
		}
		n := len(seqBuf)
		for _, t := range active {
			seqBuf = append(seqBuf, t.Seq)
		}
		seqs := seqBuf[n:]
		slices.SortFunc(seqs, func(a, b base.SeqNum) int { return cmp.Compare(b, a) })
		seqs = slices.Compact(seqs)
		seqBuf = seqBuf[:n+len(seqs)]
		spans = append(spans, Span{Start: b, End: bounds[i+1], Seqs: seqs[:len(seqs):len(seqs)]})
	}
	return spans
}

// Merge re-fragments the union of the spans of lists; nil lists are skipped.
func Merge(cmpKeys base.Compare, lists ...*List) *List {
	var ts []Tombstone
	for _, l := range lists {
		if l == nil {
			continue
		}
		for _, s := range l.spans {
			for _, seq := range s.Seqs {
				ts = append(ts, Tombstone{Start: s.Start, End: s.End, Seq: seq})
			}
		}
	}
	return NewList(cmpKeys, Fragment(cmpKeys, ts))
}

// Truncate returns spans clipped to [start, end); a nil start or end leaves
// that side unbounded, and spans clipped to nothing are dropped. The result
// is a new slice whose keys alias spans (and copies of start and end) and
// whose Seqs alias spans' Seqs.
func Truncate(cmpKeys base.Compare, spans []Span, start, end []byte) []Span {
	if start != nil {
		start = append([]byte(nil), start...)
	}
	if end != nil {
		end = append([]byte(nil), end...)
	}
	out := make([]Span, 0, len(spans))
	for _, s := range spans {
		if start != nil && cmpKeys(s.Start, start) < 0 {
			s.Start = start
		}
		if end != nil && cmpKeys(s.End, end) > 0 {
			s.End = end
		}
		if cmpKeys(s.Start, s.End) < 0 {
			out = append(out, s)
		}
	}
	return out
}

// Coalesce drops, for compaction output, the seqnums of s that no reader can
// tell apart from a newer one: snapshots must be ascending, and of the seqnums
// that fall in the same snapshot stripe (no snapshot x with newer > x >= older
// between them) only the newest is kept. s is returned unchanged when nothing
// is dropped; otherwise the result has fresh Seqs and the same keys.
func Coalesce(s Span, snapshots []base.SeqNum) Span {
	keep := 0
	prevStripe := -1
	for _, seq := range s.Seqs {
		if st := stripe(seq, snapshots); st != prevStripe {
			keep++
			prevStripe = st
		}
	}
	if keep == len(s.Seqs) {
		return s
	}
	seqs := make([]base.SeqNum, 0, keep)
	prevStripe = -1
	for _, seq := range s.Seqs {
		if st := stripe(seq, snapshots); st != prevStripe {
			seqs = append(seqs, seq)
			prevStripe = st
		}
	}
	s.Seqs = seqs
	return s
}

// stripe returns the number of snapshots below seq: two seqnums share a
// stripe exactly when no snapshot separates them.
func stripe(seq base.SeqNum, snapshots []base.SeqNum) int {
	i, _ := slices.BinarySearch(snapshots, seq)
	return i
}

package rangedel

import (
	"fmt"

	"github.com/shaledb/shale/internal/base"
)

// List is an immutable set of fragmented spans that answers coverage
// questions. The nil *List is a valid empty list.
type List struct {
	cmp   base.Compare
	spans []Span
	// maxSeq is the highest seqnum of any span: an entry at or above it is
	// covered by none, which readers test before searching.
	maxSeq base.SeqNum
}

// NewList wraps spans that are already fragmented (as Fragment returns them).
// The list keeps spans; the caller must not modify it afterwards.
func NewList(cmp base.Compare, spans []Span) *List {
	l := &List{cmp: cmp, spans: spans}
	for _, s := range spans {
		if len(s.Seqs) > 0 {
			l.maxSeq = max(l.maxSeq, s.Seqs[0])
		}
	}
	return l
}

// Empty reports whether the list holds no spans.
func (l *List) Empty() bool { return l == nil || len(l.spans) == 0 }

// MaxSeq returns the highest seqnum of the list's tombstones, 0 when it has
// none: no entry with a seqnum at or above it is covered.
func (l *List) MaxSeq() base.SeqNum {
	if l == nil {
		return 0
	}
	return l.maxSeq
}

// Concat returns one list of the spans of lists, which must each be
// fragmented and, taken in order, each lie wholly before the next: the range
// tombstones of the files of one level, which do not overlap. It costs one
// pass over the spans and no key copies; the result aliases the lists'
// keys and seqnums. When the lists do overlap, it returns their Merge
// instead. Nil and empty lists are skipped; with none left the result is
// nil, and with one, that list.
func Concat(cmp base.Compare, lists ...*List) *List {
	var first *List
	n, nonEmpty := 0, 0
	var prevEnd []byte
	disjoint := true
	for _, l := range lists {
		if l.Empty() {
			continue
		}
		if nonEmpty == 0 {
			first = l
		} else if cmp(prevEnd, l.spans[0].Start) > 0 {
			disjoint = false
		}
		nonEmpty++
		n += len(l.spans)
		prevEnd = l.spans[len(l.spans)-1].End
	}
	switch {
	case nonEmpty == 0:
		return nil
	case nonEmpty == 1:
		return first
	case !disjoint:
		return Merge(cmp, lists...)
	}
	spans := make([]Span, 0, n)
	for _, l := range lists {
		if l != nil {
			spans = append(spans, l.spans...)
		}
	}
	return NewList(cmp, spans)
}

// Spans returns the list's spans, sorted by Start; the caller must not modify
// them.
func (l *List) Spans() []Span {
	if l == nil {
		return nil
	}
	return l.spans
}

// MaxCoveringSeq returns the largest seqnum <= snapshot of a tombstone that
// covers key, or 0 when there is none.
func (l *List) MaxCoveringSeq(key []byte, snapshot base.SeqNum) base.SeqNum {
	if l == nil {
		return 0
	}
	i := l.search(key)
	if i == len(l.spans) || l.cmp(l.spans[i].Start, key) > 0 {
		return 0
	}
	return visibleSeq(l.spans[i].Seqs, snapshot)
}

// search returns the index of the first span ending after key: spans are
// disjoint and sorted, so their ends are sorted, and it is the only span
// that may cover key.
func (l *List) search(key []byte) int {
	spans := l.spans
	lo, hi := 0, len(spans)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.cmp(spans[mid].End, key) <= 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// visibleSeq returns the first of seqs (descending) visible at snapshot, 0
// when none is.
func visibleSeq(seqs []base.SeqNum, snapshot base.SeqNum) base.SeqNum {
	lo, hi := 0, len(seqs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if seqs[mid] > snapshot {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(seqs) {
		return 0
	}
	return seqs[lo]
}

// Extent is a range of user keys, [Start, End), over which a list gives one
// answer at one snapshot: Seq, the MaxCoveringSeq of each of its keys. It is
// a span of the list, or a gap between spans (Seq 0). NoStart and NoEnd mark
// an unbounded side, whose key is then ignored.
type Extent struct {
	Start, End     []byte
	NoStart, NoEnd bool
	Seq            base.SeqNum
}

// Edge returns the key where a reader moving through e leaves it: End
// moving forward, Start in reverse (the last key before e); false when e is
// unbounded on that side.
func (e *Extent) Edge(reverse bool) ([]byte, bool) {
	if reverse {
		return e.Start, !e.NoStart
	}
	return e.End, !e.NoEnd
}

// ExtentAt returns the extent of l around key at snapshot. Its Seq is
// MaxCoveringSeq(key, snapshot), and it holds for every key of the extent,
// so that a reader moving through keys in order searches again only when it
// leaves the extent. The keys alias the list's spans.
func (l *List) ExtentAt(key []byte, snapshot base.SeqNum) Extent {
	if l == nil {
		return Extent{NoStart: true, NoEnd: true}
	}
	spans := l.spans
	i := l.search(key)
	if i < len(spans) && l.cmp(spans[i].Start, key) <= 0 {
		return Extent{Start: spans[i].Start, End: spans[i].End, Seq: visibleSeq(spans[i].Seqs, snapshot)}
	}
	e := Extent{NoStart: i == 0, NoEnd: i == len(spans)}
	if i > 0 {
		e.Start = spans[i-1].End
	}
	if i < len(spans) {
		e.End = spans[i].Start
	}
	return e
}

// Contains reports whether key lies in e.
func (e *Extent) Contains(cmp base.Compare, key []byte) bool {
	return (e.NoStart || cmp(e.Start, key) <= 0) && (e.NoEnd || cmp(key, e.End) < 0)
}

// Intersect narrows e to its intersection with o, which must contain a key
// e contains too, and raises e.Seq to o.Seq: over the result, the highest
// answer of the two lists is constant.
func (e *Extent) Intersect(cmp base.Compare, o *Extent) {
	if !o.NoStart && (e.NoStart || cmp(o.Start, e.Start) > 0) {
		e.Start, e.NoStart = o.Start, false
	}
	if !o.NoEnd && (e.NoEnd || cmp(o.End, e.End) < 0) {
		e.End, e.NoEnd = o.End, false
	}
	e.Seq = max(e.Seq, o.Seq)
}

// Covers reports whether the entry (key, seq) is deleted for a reader at
// snapshot: a tombstone visible at snapshot covers key at a seqnum above seq.
func (l *List) Covers(key []byte, seq, snapshot base.SeqNum) bool {
	return l.MaxCoveringSeq(key, snapshot) > seq
}

// CheckFragmented returns an error describing the first way spans differ from
// what Fragment produces (empty span, overlap or disorder, seqnums not
// strictly descending). Readers of stored spans use it before NewList.
func CheckFragmented(cmp base.Compare, spans []Span) error {
	for i, s := range spans {
		if cmp(s.Start, s.End) >= 0 {
			return fmt.Errorf("shale: range tombstone span %d [%q, %q) is empty", i, s.Start, s.End)
		}
		if i > 0 && cmp(spans[i-1].End, s.Start) > 0 {
			return fmt.Errorf("shale: range tombstone span %d [%q, %q) overlaps or precedes span %d ending at %q",
				i, s.Start, s.End, i-1, spans[i-1].End)
		}
		if len(s.Seqs) == 0 {
			return fmt.Errorf("shale: range tombstone span %d [%q, %q) has no seqnums", i, s.Start, s.End)
		}
		for j := 1; j < len(s.Seqs); j++ {
			if s.Seqs[j] >= s.Seqs[j-1] {
				return fmt.Errorf("shale: range tombstone span %d [%q, %q) seqnums not strictly descending: %d then %d",
					i, s.Start, s.End, s.Seqs[j-1], s.Seqs[j])
			}
		}
	}
	return nil
}

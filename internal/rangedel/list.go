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
	spans := l.spans
	// Spans are disjoint and sorted, so their ends are sorted: find the first
	// span ending after key; it is the only one that may cover key.
	lo, hi := 0, len(spans)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.cmp(spans[mid].End, key) <= 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(spans) || l.cmp(spans[lo].Start, key) > 0 {
		return 0
	}
	// Seqs are descending: find the first one visible at snapshot.
	seqs := spans[lo].Seqs
	lo, hi = 0, len(seqs)
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

// Package rangedel owns range tombstones: their fragmentation into
// non-overlapping spans, and the questions readers and compaction ask of them
// (does a tombstone visible at a snapshot cover this key at this seqnum?).
//
// It never does IO; SSTs and memtables store tombstones, this package only
// reasons about them.
package rangedel

import "github.com/shaledb/shale/internal/base"

// Tombstone deletes every key k with Start <= k < End whose seqnum is lower
// than Seq.
type Tombstone struct {
	Start, End []byte
	Seq        base.SeqNum
}

// Span is a fragment [Start, End) with the seqnums of every tombstone that
// covers it, sorted descending (newest first). Spans produced by Fragment do
// not overlap and are sorted by Start.
type Span struct {
	Start, End []byte
	Seqs       []base.SeqNum
}

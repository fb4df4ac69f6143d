package manifest

import (
	"fmt"
	"slices"

	"github.com/shaledb/shale/internal/base"
)

// SecondaryTombstone deletes, as of Seq, every key whose newest version
// older than Seq is a Set whose secondary attribute (the DB's
// Options.SecondaryDeleteKey) is in [Lo, Hi): DB.DeleteBySecondaryRange.
// It lives in the Version until no table or memtable can hold an entry it
// deletes.
type SecondaryTombstone struct {
	Lo, Hi uint64
	Seq    base.SeqNum
}

// Deletes reports whether the tombstone deletes a Set of attribute attr at
// seq that is the newest version of its key below limit (exclusive): the
// read's seqnum plus one for the newest visible version.
func (t SecondaryTombstone) Deletes(attr uint64, seq, limit base.SeqNum) bool {
	return seq < t.Seq && t.Seq < limit && attr >= t.Lo && attr < t.Hi
}

// String formats the tombstone as [lo,hi)@seq.
func (t SecondaryTombstone) String() string {
	return fmt.Sprintf("[%d,%d)@%d", t.Lo, t.Hi, t.Seq)
}

// SecondaryRange is a table's range of secondary attributes: the smallest
// and largest attribute of its Sets that have one, and how many do. Known
// is set when the table was written with Options.SecondaryDeleteKey; a
// table without it (written before the field existed, or without the
// option) may hold any attribute. Count 0 with Known means no entry of the
// table has an attribute (Min and Max are then 0).
type SecondaryRange struct {
	Known    bool
	Min, Max uint64
	Count    uint64
}

// Overlaps reports whether some attribute of the range may be in [lo, hi).
func (r SecondaryRange) Overlaps(lo, hi uint64) bool {
	return !r.Known || r.Count > 0 && r.Min < hi && r.Max >= lo
}

// Within reports whether every attribute of the range is known to be in
// [lo, hi).
func (r SecondaryRange) Within(lo, hi uint64) bool {
	return r.Known && r.Count > 0 && r.Min >= lo && r.Max < hi
}

// MayHoldDeletedBy reports whether f may hold an entry that t deletes and
// that no flush or compaction removed yet: data older than t, not written
// by a job that applied t, with attributes meeting t's range.
func (f *FileMetadata) MayHoldDeletedBy(t SecondaryTombstone) bool {
	return f.SmallestSeq < t.Seq && f.SecondaryApplied < t.Seq && f.Secondary.Overlaps(t.Lo, t.Hi)
}

// applySecondary returns the tombstones of base with e's added (sorted by
// Seq) and its retired ones removed. base is not modified.
func applySecondary(cur []SecondaryTombstone, e *VersionEdit) ([]SecondaryTombstone, error) {
	if len(e.AddedSecondaryTombstones) == 0 && len(e.RetiredSecondaryTombstones) == 0 {
		return cur, nil
	}
	out := slices.Clone(cur)
	for _, seq := range e.RetiredSecondaryTombstones {
		i := slices.IndexFunc(out, func(t SecondaryTombstone) bool { return t.Seq == seq })
		if i < 0 {
			return nil, fmt.Errorf("shale: manifest: retiring secondary tombstone @%d: no such tombstone", seq)
		}
		out = slices.Delete(out, i, i+1)
	}
	for _, t := range e.AddedSecondaryTombstones {
		if t.Lo >= t.Hi {
			return nil, fmt.Errorf("shale: manifest: secondary tombstone %s has an empty range", t)
		}
		i, found := slices.BinarySearchFunc(out, t.Seq, func(a SecondaryTombstone, s base.SeqNum) int {
			switch {
			case a.Seq < s:
				return -1
			case a.Seq > s:
				return 1
			}
			return 0
		})
		if found {
			return nil, fmt.Errorf("shale: manifest: secondary tombstone %s added twice", t)
		}
		out = slices.Insert(out, i, t)
	}
	if len(out) == 0 {
		out = nil
	}
	return out, nil
}

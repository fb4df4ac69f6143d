package compact

import (
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// PickEnv is the state of the DB that automatic picking depends on besides
// the version.
type PickEnv struct {
	// HasSnapshots is set when a snapshot is live; EarliestSnapshot is then
	// the seqnum of the oldest one. Tombstones a snapshot may still need
	// cannot be dropped, so last-level files holding them are not
	// rewritten for them.
	HasSnapshots     bool
	EarliestSnapshot base.SeqNum
	// BlobGCOwed are blob files whose relocation a compaction bounded by
	// the DB's BlobGarbageCollectionMaxRelocationBytes left undone,
	// ascending: the picker goes on with them (pickForcedBlobGC,
	// ReasonBlobGCContinued).
	BlobGCOwed []base.FileNum
}

// tombstonesDroppable reports whether a compaction into the last level
// would drop every tombstone of f: they are all older than every snapshot
// (Run elides tombstones of the oldest snapshot stripe only).
func (e PickEnv) tombstonesDroppable(f *manifest.FileMetadata) bool {
	return !e.HasSnapshots || f.LargestSeq <= e.EarliestSnapshot
}

// secondaryCovers reports whether f may hold entries that a live
// secondary tombstone of v deletes, with no snapshot older than the
// tombstone (which would keep them, so that compacting f would not
// remove them). Such files are compacted first, so that deleted data goes
// and the tombstone can retire.
func (e PickEnv) secondaryCovers(f *manifest.FileMetadata, v *manifest.Version) bool {
	for _, t := range v.SecondaryTombstones {
		if e.HasSnapshots && e.EarliestSnapshot < t.Seq {
			return false // and for every later tombstone
		}
		if f.MayHoldDeletedBy(t) {
			return true
		}
	}
	return false
}

// entryAverages are the average sizes of an entry in the version, from the
// files that recorded their raw key and value sizes (files written before
// those were recorded are left out, unless no file recorded them). They
// price what a tombstone deletes.
type entryAverages struct {
	// keySize and valueSize are uncompressed bytes per entry: keySize over
	// all entries, valueSize over those that are not tombstones.
	keySize, valueSize float64
	// compression is file bytes over raw bytes, in (0, 1].
	compression float64
}

func averagesOf(v *manifest.Version) entryAverages {
	var rawKey, rawValue, entries, values, size uint64
	// oldSize and oldValues total the files without raw sizes.
	var oldSize, oldValues uint64
	for _, files := range v.Levels {
		for _, f := range files {
			if f.NumEntries == 0 {
				continue
			}
			if f.RawKeySize == 0 {
				oldSize += f.Size
				oldValues += f.NumEntries - min(f.NumDeletions, f.NumEntries)
				continue
			}
			rawKey += f.RawKeySize
			rawValue += f.RawValueSize
			entries += f.NumEntries
			values += f.NumEntries - min(f.NumDeletions, f.NumEntries)
			size += f.Size
		}
	}
	var a entryAverages
	if entries == 0 {
		// No file recorded its raw sizes (all were written before they
		// were): price an entry at the file bytes per value entry.
		if oldValues > 0 {
			a.valueSize, a.compression = float64(oldSize)/float64(oldValues), 1
		}
		return a
	}
	a.keySize = float64(rawKey) / float64(entries)
	if values > 0 {
		a.valueSize = float64(rawValue) / float64(values)
	}
	a.compression = 1
	if raw := rawKey + rawValue; raw > 0 && size < raw {
		a.compression = float64(size) / float64(raw)
	}
	return a
}

// pointDeletionsBytes estimates the file bytes that f's point tombstones
// delete: each is charged one entry of average key and value size, at the
// version's compression ratio. That is Pebble's estimate (one deleted entry
// per tombstone) with the averages taken over the whole version, as
// RocksDB's compensated_file_size takes them, since a file of tombstones
// has no values of its own to average.
func (a entryAverages) pointDeletionsBytes(f *manifest.FileMetadata) uint64 {
	dels := f.NumDeletions - min(f.NumRangeDeletions, f.NumDeletions)
	if dels == 0 {
		return 0
	}
	return uint64(float64(dels) * (a.keySize + a.valueSize) * a.compression)
}

// compensatedSize is the size a file counts for in level scores: its size
// plus the estimated bytes its tombstones delete (Pebble's
// tableCompensatedSize, RocksDB's compensated_file_size), so that a level
// holding tombstones over much data scores as the data it would free.
func (p *Picker) compensatedSize(f *manifest.FileMetadata, a *entryAverages) uint64 {
	if p.opts.DisableDeleteAware || a == nil {
		return f.Size
	}
	return f.Size + a.pointDeletionsBytes(f) + f.RangeDeletionsBytesEstimate
}

// tombstoneDensity returns the share of f's data blocks that are dense in
// point tombstones.
func tombstoneDensity(f *manifest.FileMetadata) float64 {
	if f.NumDataBlocks == 0 {
		return 0
	}
	return float64(f.NumTombstoneDenseBlocks) / float64(f.NumDataBlocks)
}

// deleteReason returns why f, a file of level, should be compacted for its
// tombstones ("" if it should not). Above the last level: because a
// collector marked it, or because it is tombstone-dense. In the last level,
// where the compaction rewrites the file in place, only when every
// tombstone it holds can be dropped, and then because it is marked, or
// tombstone-dense, or holds tombstones for more than a tenth of its entries
// or range tombstones deleting a tenth of its size (Pebble's elision-only
// rule).
func (p *Picker) deleteReason(f *manifest.FileMetadata, level int, env PickEnv, v *manifest.Version) string {
	o := &p.opts
	last := level == o.NumLevels-1
	if env.secondaryCovers(f, v) {
		return ReasonSecondaryDelete
	}
	dense := !o.DisableDeleteAware && o.TombstoneDenseCompactionThreshold > 0 &&
		f.NumTombstoneDenseBlocks > 0 && tombstoneDensity(f) >= o.TombstoneDenseCompactionThreshold
	if !last {
		switch {
		case f.MarkedForCompaction:
			return ReasonMarked
		case dense:
			return ReasonTombstoneDensity
		}
		return ""
	}
	if f.NumDeletions == 0 || !env.tombstonesDroppable(f) {
		return ""
	}
	switch {
	case f.MarkedForCompaction:
		return ReasonMarked
	case o.DisableDeleteAware:
		return ""
	case dense,
		(f.NumDeletions-min(f.NumRangeDeletions, f.NumDeletions))*10 > f.NumEntries,
		f.RangeDeletionsBytesEstimate*10 >= f.Size && f.NumRangeDeletions > 0:
		return ReasonElisionOnly
	}
	return ""
}

// pickForDeletes returns a compaction of a file that should be compacted for
// its tombstones (see deleteReason), or nil. It looks at the deepest level
// first, as Pebble's tombstone-density picking does: tombstones near the
// bottom are the cheapest to drop and the next step of those pushed down
// from above. Within a level, marked files come first, then the densest.
// A candidate whose inputs would exceed MaxCompactionBytes is passed over.
func (p *Picker) pickForDeletes(v *manifest.Version, env PickEnv, baseLevel int) *Compaction {
	o := &p.opts
	type candidate struct {
		f      *manifest.FileMetadata
		reason string
	}
	var cands []candidate
	for level := o.NumLevels - 1; level >= 0; level-- {
		cands = cands[:0]
		for _, f := range levelFiles(v, level) {
			if f.Compacting {
				continue
			}
			if r := p.deleteReason(f, level, env, v); r != "" {
				cands = append(cands, candidate{f, r})
			}
		}
		slices.SortFunc(cands, func(a, b candidate) int {
			if betterDeleteCandidate(a.f, a.reason, b.f, b.reason) {
				return -1
			}
			if betterDeleteCandidate(b.f, b.reason, a.f, a.reason) {
				return 1
			}
			return 0
		})
		for _, cd := range cands {
			c := p.pickFile(v, level, o.NumLevels-1, baseLevel, cd.f, cd.reason)
			if c != nil && totalSize(c.Inputs[0])+totalSize(c.Inputs[1]) <= o.MaxCompactionBytes {
				return c
			}
			if level == 0 && c == nil {
				break // an L0 compaction is running: no L0 file can go
			}
		}
	}
	return nil
}

// betterDeleteCandidate orders the candidates of one level: files a
// secondary tombstone covers first, then marked files, then by tombstone density, then (elision-only rewrites) the oldest
// data first, then the lowest file number.
func betterDeleteCandidate(f *manifest.FileMetadata, r string, g *manifest.FileMetadata, rg string) bool {
	if (r == ReasonSecondaryDelete) != (rg == ReasonSecondaryDelete) {
		return r == ReasonSecondaryDelete
	}
	if (r == ReasonMarked) != (rg == ReasonMarked) {
		return r == ReasonMarked
	}
	if df, dg := tombstoneDensity(f), tombstoneDensity(g); df != dg {
		return df > dg
	}
	if f.LargestSeq != g.LargestSeq {
		return f.LargestSeq < g.LargestSeq
	}
	return f.FileNum < g.FileNum
}

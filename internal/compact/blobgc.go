package compact

import (
	"math"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// ReasonBlobGC is the Reason of a compaction forced for blob garbage
// collection: it rewrites the tables that reference an old blob file whose
// garbage ratio reached Options.BlobGCForceThreshold, so that the file's
// live values move and the file can go.
const ReasonBlobGC = "blob-gc"

// ReasonBlobGCContinued is the Reason of a compaction that goes on with the
// relocation a compaction bounded by the DB's
// BlobGarbageCollectionMaxRelocationBytes left undone (PickEnv.BlobGCOwed):
// a table referencing such a file is rewritten as for ReasonBlobGC.
const ReasonBlobGCContinued = "blob-gc-continued"

// BlobGCCutoff returns the number below which the blob files of v are old
// enough for garbage collection: those in the oldest ageCutoff fraction of
// them (RocksDB's blob_garbage_collection_age_cutoff: the file at index
// floor(ageCutoff*n) of the n files, oldest first, is the first one too
// young). With ageCutoff 1 every blob file is old enough; with 0, none.
func BlobGCCutoff(v *manifest.Version, ageCutoff float64) base.FileNum {
	n := len(v.BlobFiles)
	i := int(ageCutoff * float64(n))
	if i < 0 || n == 0 {
		return 0
	}
	if i >= n {
		return base.FileNum(math.MaxUint64)
	}
	return v.BlobFiles[i].FileNum
}

// pickForcedBlobGC returns a compaction of a table that references a blob
// file old enough for garbage collection whose garbage ratio (garbage bytes
// over total bytes) reached BlobGCForceThreshold, or nil: the oldest such
// file first, and the first of its tables (by level) whose compaction
// conflicts with none running. An L0 table compacts into the base level;
// a table of another level is rewritten in place, which reads no other
// level (as RocksDB's forced blob GC). The DB relocates every value of an
// old blob file such a compaction reads, so afterwards the table no longer
// references the file, and once none does the file is deleted: each forced
// compaction makes progress.
//
// Then, when none is, a compaction for a file of env.BlobGCOwed still in v
// and below the cutoff (ReasonBlobGCContinued), oldest first: a bounded
// relocation moves the old files in several installments, each deleting
// its files as soon as it is installed, instead of in one compaction that
// holds the whole copy and the old files at once.
func (p *Picker) pickForcedBlobGC(v *manifest.Version, baseLevel int, env PickEnv) *Compaction {
	o := &p.opts
	if !o.BlobGC || len(v.BlobFiles) == 0 {
		return nil
	}
	threshold := o.BlobGCForceThreshold
	if threshold <= 0 {
		threshold = 1
	}
	cutoff := BlobGCCutoff(v, o.BlobGCAgeCutoff)
	for _, b := range v.BlobFiles {
		if b.FileNum >= cutoff {
			break
		}
		if b.TotalBytes == 0 || float64(b.GarbageBytes) < threshold*float64(b.TotalBytes) {
			continue
		}
		if c := p.pickBlobTables(v, baseLevel, b.FileNum, ReasonBlobGC); c != nil {
			return c
		}
	}
	for _, n := range env.BlobGCOwed {
		if n >= cutoff || v.BlobFile(n) == nil {
			continue
		}
		if c := p.pickBlobTables(v, baseLevel, n, ReasonBlobGCContinued); c != nil {
			return c
		}
	}
	return nil
}

// pickBlobTables returns a compaction, for reason, of the first table (by
// level) referencing blob file num whose compaction conflicts with none
// running, or nil: an L0 table compacts into the base level, a table of
// another level is rewritten in place. The DB relocates the values of the
// blob file that the compaction reads (for reason), so that afterwards the
// table no longer references the file.
func (p *Picker) pickBlobTables(v *manifest.Version, baseLevel int, num base.FileNum, reason string) *Compaction {
	for _, t := range v.TablesReferencingBlob(num) {
		if t.Meta.Compacting {
			continue
		}
		// Below L0 the table is rewritten in place: its level is taken as
		// the bottom.
		if c := p.pickFile(v, t.Level, t.Level, baseLevel, t.Meta, reason); c != nil {
			return c
		}
	}
	return nil
}

// L0BlobShare is the share of the live blob bytes that L0's tables may
// reference before L0 scores 1 by them (l0BlobScore).
const L0BlobShare = 1.0 / 8

// l0BlobScore scores L0 by the blob values its tables (those not being
// compacted) reference. Until an L0 table compacts, the older versions of
// its keys in the levels below stay referenced: garbage no edit has
// recorded, which garbage collection cannot see and no blob file loses.
// With values in blob files a memtable's table is small, so L0CompactionTrigger
// files can hide several memtables of garbage in a database of a few of
// them. The score is those blob bytes over the larger of
//   - L0BlobShare of the live bytes of every blob file: the garbage L0
//     hides stays below that share of the data (space amplification);
//   - the bytes of the tables of L0 and the base level, which an L0
//     compaction rewrites: the compaction costs at most the blob bytes
//     whose garbage it records, so a database whose tables are large
//     (most values inline) compacts L0 by file count, as before.
//
// Blob files an L0 table references are those its flush wrote (a flush
// writes memtable values, never blob indexes), so their live bytes are the
// values of L0.
func l0BlobScore(v *manifest.Version, baseLevel int) float64 {
	l0 := levelFiles(v, 0)
	var seen map[base.FileNum]bool
	var l0Blob uint64
	for _, f := range l0 {
		if f.Compacting {
			continue
		}
		for _, n := range f.BlobFiles {
			if seen[n] {
				continue
			}
			if seen == nil {
				seen = map[base.FileNum]bool{}
			}
			seen[n] = true
			if b := v.BlobFile(n); b != nil {
				l0Blob += b.LiveBytes()
			}
		}
	}
	if l0Blob == 0 {
		return 0
	}
	var live uint64
	for _, b := range v.BlobFiles {
		live += b.LiveBytes()
	}
	tables := totalSize(l0)
	if baseLevel > 0 {
		tables += totalSize(levelFiles(v, baseLevel))
	}
	return float64(l0Blob) / max(L0BlobShare*float64(live), float64(tables), 1)
}

// BlobGCSelection returns the blob files, numbered below cutoff, whose
// values a compaction of the tables inputs of v relocates when it may
// relocate about maxBytes (maxBytes <= 0: no bound, every file below
// cutoff; nil is returned for that). Without a bound one compaction that
// reads many tables (a small database's L0 compaction reads them all)
// relocates every live value of the oldest quarter of the blob files, and
// writes that whole copy before the old files can go: a peak of space
// amplification while it runs.
//
// A file's share of this compaction is estimated as its live bytes times
// the share of the bytes of the tables referencing it that are inputs.
// Files are taken in order while the shares add up to at most maxBytes
// (the first is always taken, so that every compaction makes progress):
// first those whose garbage ratio reached forceThreshold, oldest first (the
// files forced compactions are picked for, pickForcedBlobGC), then the
// others by garbage ratio, highest first, the older first on a tie: the
// files that free the most space for the values moved, and that no
// compaction will move again. The taking stops at the first file that does
// not fit, so that the order is kept; the files left out are returned,
// ascending, in left (the DB owes them a compaction, ReasonBlobGCContinued).
// Files no input references are in neither: the compaction cannot move
// them.
//
// among, when not nil, limits the candidates to the files it holds: a
// compaction for ReasonBlobGCContinued moves only what was owed, so that
// the work owed only shrinks.
func BlobGCSelection(v *manifest.Version, inputs []*manifest.FileMetadata, cutoff base.FileNum, maxBytes int64, forceThreshold float64, among map[base.FileNum]struct{}) (sel map[base.FileNum]bool, left []base.FileNum) {
	if maxBytes <= 0 {
		return nil, nil
	}
	if forceThreshold <= 0 {
		forceThreshold = 1
	}
	type candidate struct {
		b      *manifest.BlobFileMetadata
		forced bool
		ratio  float64
		share  float64
	}
	isInput := make(map[*manifest.FileMetadata]bool, len(inputs))
	for _, f := range inputs {
		isInput[f] = true
	}
	var cands []candidate
	for _, b := range v.BlobFiles {
		if b.FileNum >= cutoff {
			break
		}
		if _, ok := among[b.FileNum]; among != nil && !ok {
			continue
		}
		var in, all uint64
		for _, t := range v.TablesReferencingBlob(b.FileNum) {
			size := max(t.Meta.Size, 1)
			all += size
			if isInput[t.Meta] {
				in += size
			}
		}
		if in == 0 {
			continue
		}
		c := candidate{b: b, share: float64(b.LiveBytes()) * float64(in) / float64(all)}
		if b.TotalBytes > 0 {
			c.ratio = float64(b.GarbageBytes) / float64(b.TotalBytes)
		}
		c.forced = b.TotalBytes > 0 && c.ratio >= forceThreshold
		cands = append(cands, c)
	}
	// v.BlobFiles is ascending by number, so a stable sort keeps the older
	// first among equals.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.forced != b.forced:
			if a.forced {
				return -1
			}
			return 1
		case a.forced:
			return 0 // oldest first
		case a.ratio > b.ratio:
			return -1
		case a.ratio < b.ratio:
			return 1
		}
		return 0
	})
	sel = map[base.FileNum]bool{}
	var sum float64
	for i, c := range cands {
		if i > 0 && (left != nil || sum+c.share > float64(maxBytes)) {
			left = append(left, c.b.FileNum)
			continue
		}
		sum += c.share
		sel[c.b.FileNum] = true
	}
	slices.Sort(left)
	return sel, left
}

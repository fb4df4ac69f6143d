package compact

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// ReasonExpired is the Reason of a compaction picked because a file's oldest
// tombstone is older than its level's delete persistence deadline.
const ReasonExpired = "expired"

// ReasonBlobExpired is the Reason of a compaction of a table referencing a
// blob file whose oldest garbage is older than the blob files' delete
// persistence deadline (Deadlines.Blob): the DB relocates the file's values
// that the compaction reads, so that once no table references it the file
// is deleted, and with it the bytes of the values it held for deleted keys.
const ReasonBlobExpired = "blob-expired"

// BlobPersistenceShare is the share of the delete persistence threshold kept
// for blob files (1/BlobPersistenceShare of it) when values may be in blob
// files: the levels share the rest, so a deleted value's blob index is
// dropped by then and its blob file rewritten in what remains.
const BlobPersistenceShare = 10

// MemtableShareOfL0 is the part of L0's deadline a memtable may spend
// (1/MemtableShareOfL0 of it): a memtable whose oldest tombstone is that
// old is flushed, and its tables have the rest of L0's time.
const MemtableShareOfL0 = 2

// PersistenceTTLs splits the delete persistence threshold d over the first
// n-1 of n levels as Lethe's FADE does: ttl[0] = d·(t−1)/(t^(n−1)−1) and
// ttl[i] = ttl[0]·t^i, so that the n-1 values add up to d exactly (the last
// level has no TTL: a tombstone that reaches it is dropped there). t is the
// size ratio of adjacent levels; t <= 1 splits d evenly. n < 2 returns nil.
//
// The values are computed from their running sums, rounded down to the
// nanosecond, and the last sum is d itself, so no rounding makes the total
// exceed d.
func PersistenceTTLs(d time.Duration, t float64, n int) []time.Duration {
	if n < 2 || d <= 0 {
		return nil
	}
	sums := persistenceSums(d, t, n)
	ttls := make([]time.Duration, n-1)
	prev := time.Duration(0)
	for i, s := range sums {
		ttls[i] = s - prev
		prev = s
	}
	return ttls
}

// persistenceSums returns the running sums of PersistenceTTLs: sums[i] is
// the age at which a tombstone must have left level i of the chain.
func persistenceSums(d time.Duration, t float64, n int) []time.Duration {
	sums := make([]time.Duration, n-1)
	for i := range sums {
		var frac float64
		if t > 1 {
			// Σ_{j<=i} t^j / Σ_{j<=n-2} t^j.
			frac = (math.Pow(t, float64(i+1)) - 1) / (math.Pow(t, float64(n-1)) - 1)
		} else {
			frac = float64(i+1) / float64(n-1)
		}
		sums[i] = time.Duration(float64(d) * frac)
	}
	sums[n-2] = d
	// Rounding never makes a sum go backwards or past d.
	for i := n - 3; i >= 0; i-- {
		sums[i] = min(sums[i], sums[i+1])
	}
	return sums
}

// Deadlines says, for one version, how old a tombstone may get before it
// must leave the memtable or a level, under Options.DeletePersistenceThreshold.
//
// The levels a tombstone passes through form a chain: L0, then the base
// level (where L0 compacts into) down to the bottom level, the deepest level
// holding data (or the base level when nothing is below L0), since a
// compaction into the bottom level drops a tombstone and what it deletes.
// Empty levels between the base and the bottom count. The chain's length is
// FADE's L, and PersistenceTTLs splits the threshold over every level of it
// but the bottom, with Options.MaxBytesForLevelMultiplier as T. With
// dynamic level sizes and a small database, the chain is L0 and the last
// level, and L0 has all of the threshold; the chain grows as the base level
// moves up.
//
// The memtable is not a level of the chain: it and L0 hold the same
// recent writes, and L0's deadline runs from the write, so the memtable
// spends part of L0's time. It is flushed at half of it
// (MemtableShareOfL0): then at most two tables flushed for age wait in L0
// when its deadline comes, rather than the L0 file count triggering
// compactions of tables made small by early flushes (Lethe's buffer is
// flushed when full, and has no share at all).
//
// Blob files come after the chain. A compaction that drops a value's blob
// index leaves the value's bytes in its blob file, as garbage, which the DB
// dates no later than any tombstone that may have deleted it
// (manifest.BlobFileMetadata.OldestGarbageTime); a blob file whose garbage
// has the age Blob is rewritten (its tables compacted, relocating its live
// values, until none references it and it is deleted). When values may be
// in blob files (Options.BlobFiles, or a version holding blob files), the
// chain shares the threshold less a tenth (BlobPersistenceShare), Blob is
// that same age, and the tenth is what the last compaction of the chain
// and the rewrite of the blob file have to run in.
type Deadlines struct {
	// Threshold is Options.DeletePersistenceThreshold.
	Threshold time.Duration
	// Memtable is the age of its oldest tombstone at which a memtable must
	// be flushed: L0's deadline divided by MemtableShareOfL0.
	Memtable time.Duration
	// Levels[l] is the age of its oldest tombstone at which a file of level
	// l has expired: the running sum of the TTLs down to l (at the bottom
	// level, and for files of levels outside the chain, which the picker
	// never finds in a version it built, the part of Threshold the chain
	// shares: all of it, or all but the blob files' share).
	Levels []time.Duration
	// Blob is the age of its oldest garbage at which a blob file has
	// expired: the bottom level's deadline.
	Blob time.Duration
	// BaseLevel and BottomLevel delimit the chain below L0.
	BaseLevel, BottomLevel int
	// ChainLen is the number of levels in the chain, L0 to the bottom
	// level (FADE's L; the memtable is not one).
	ChainLen int
}

// ComputeDeadlines returns the deadlines of v under o. With
// DeletePersistenceThreshold zero it returns the zero Deadlines.
func ComputeDeadlines(v *manifest.Version, o *Options) Deadlines {
	opts := *o
	opts.EnsureDefaults()
	baseLevel, _ := targetSizes(v, &opts)
	return computeDeadlines(v, &opts, baseLevel)
}

func computeDeadlines(v *manifest.Version, o *Options, baseLevel int) Deadlines {
	threshold := o.DeletePersistenceThreshold
	if threshold <= 0 {
		return Deadlines{}
	}
	d := threshold
	if o.BlobFiles || len(v.BlobFiles) > 0 {
		d -= threshold / BlobPersistenceShare
	}
	bottom := baseLevel
	for l := o.NumLevels - 1; l > baseLevel; l-- {
		if len(levelFiles(v, l)) > 0 {
			bottom = l
			break
		}
	}
	n := bottom - baseLevel + 2
	sums := persistenceSums(d, o.MaxBytesForLevelMultiplier, n)
	dl := Deadlines{
		Threshold:   threshold,
		Blob:        d,
		Memtable:    sums[0] / MemtableShareOfL0,
		Levels:      make([]time.Duration, o.NumLevels),
		BaseLevel:   baseLevel,
		BottomLevel: bottom,
		ChainLen:    n,
	}
	for l := range dl.Levels {
		switch {
		case l == 0:
			dl.Levels[l] = sums[0]
		case l >= baseLevel && l < bottom:
			dl.Levels[l] = sums[l-baseLevel+1]
		default:
			dl.Levels[l] = d
		}
	}
	return dl
}

// HasTombstones reports whether f holds point or range tombstones (the
// table's NumDeletions counts both).
func HasTombstones(f *manifest.FileMetadata) bool {
	return f.NumDeletions > 0 || f.NumRangeDeletions > 0
}

// ExpiresAt returns when f, a file of level, expires under dl: its oldest
// tombstone's time plus the level's deadline. ok is false for a file without
// tombstones, or when dl is off. A file with tombstones but no recorded time
// (written before shale recorded it) expired long ago: it returns the zero
// unix time plus the deadline.
func (dl *Deadlines) ExpiresAt(f *manifest.FileMetadata, level int) (t int64, ok bool) {
	if dl.Threshold <= 0 || !HasTombstones(f) || level >= len(dl.Levels) {
		return 0, false
	}
	return int64(f.OldestTombstoneTime) + int64(dl.Levels[level]), true
}

// BlobExpiresAt returns when blob file b expires under dl: its oldest
// garbage's date plus Blob. ok is false for a file without dated garbage,
// or when dl is off.
func (dl *Deadlines) BlobExpiresAt(b *manifest.BlobFileMetadata) (t int64, ok bool) {
	if dl.Threshold <= 0 || b.OldestGarbageTime == 0 {
		return 0, false
	}
	return int64(min(b.OldestGarbageTime, math.MaxInt64-uint64(dl.Blob))) + int64(dl.Blob), true
}

// pickExpired returns a compaction for the expired file with the oldest
// tombstone or garbage (then the level nearer the top, blob files last, then
// the lower file number) whose compaction conflicts with none running, or
// nil. A file of a level above the bottom compacts into the next level of
// the chain; a file of the bottom level is rewritten in place, which drops
// its tombstones and what they delete, but only when every entry of it is
// older than the oldest snapshot: otherwise a snapshot may still need them
// and the rewrite could change nothing (it is picked once the snapshot is
// released). An expired blob file has a table referencing it compacted
// (pickBlobTables, ReasonBlobExpired); relocation needs no snapshot's leave.
func (p *Picker) pickExpired(v *manifest.Version, env PickEnv, baseLevel int, sc []float64) *Compaction {
	o := &p.opts
	if o.DeletePersistenceThreshold <= 0 || o.Now == nil {
		return nil
	}
	dl := computeDeadlines(v, o, baseLevel)
	now := o.Now().UnixNano()
	type candidate struct {
		date  uint64
		f     *manifest.FileMetadata // nil for a blob file
		blob  *manifest.BlobFileMetadata
		level int // NumLevels for a blob file
	}
	num := func(c candidate) base.FileNum {
		if c.blob != nil {
			return c.blob.FileNum
		}
		return c.f.FileNum
	}
	var cands []candidate
	for l := 0; l < o.NumLevels; l++ {
		if l > 0 && (l < baseLevel || l > dl.BottomLevel) {
			continue
		}
		for _, f := range levelFiles(v, l) {
			if f.Compacting {
				continue
			}
			if at, ok := dl.ExpiresAt(f, l); !ok || now < at {
				continue
			}
			if l == dl.BottomLevel && l > 0 && !env.tombstonesDroppable(f) {
				continue
			}
			cands = append(cands, candidate{date: f.OldestTombstoneTime, f: f, level: l})
		}
	}
	for _, b := range v.BlobFiles {
		if at, ok := dl.BlobExpiresAt(b); ok && now >= at {
			cands = append(cands, candidate{date: b.OldestGarbageTime, blob: b, level: o.NumLevels})
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(a.date, b.date); c != 0 {
			return c
		}
		if c := cmp.Compare(a.level, b.level); c != 0 {
			return c
		}
		return cmp.Compare(num(a), num(b))
	})
	for _, cand := range cands {
		var c *Compaction
		if cand.blob != nil {
			c = p.pickBlobTables(v, baseLevel, cand.blob.FileNum, ReasonBlobExpired)
		} else {
			c = p.pickFile(v, cand.level, dl.BottomLevel, baseLevel, cand.f, ReasonExpired)
		}
		if c != nil {
			if c.Level < len(sc) {
				c.Score = sc[c.Level]
			}
			return c
		}
	}
	return nil
}

package compact

import (
	"math"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// Options configures picking. Zero fields take the defaults EnsureDefaults
// documents; names follow RocksDB's options of the same meaning.
type Options struct {
	// Comparer orders user keys (default base.DefaultComparer).
	Comparer *base.Comparer
	// NumLevels is the number of levels including L0 (num_levels; default 7,
	// clamped to [2, manifest.NumLevelsMax]).
	NumLevels int
	// L0CompactionTrigger is the number of L0 files that gives L0 a score of
	// 1 (level0_file_num_compaction_trigger; default 4).
	L0CompactionTrigger int
	// MaxBytesForLevelBase is the target size of the base level
	// (max_bytes_for_level_base; default 256 MiB).
	MaxBytesForLevelBase uint64
	// MaxBytesForLevelMultiplier is the size ratio of adjacent levels
	// (max_bytes_for_level_multiplier; default 10).
	MaxBytesForLevelMultiplier float64
	// DynamicLevelBytes derives level targets from the size of the last
	// level (level_compaction_dynamic_level_bytes; default false here, the
	// DB decides).
	DynamicLevelBytes bool
	// TargetFileSizeBase is the output file size of compactions into the base
	// level (target_file_size_base; default 64 MiB).
	TargetFileSizeBase uint64
	// TargetFileSizeMultiplier grows the output file size per level below the
	// base level (target_file_size_multiplier; default 1).
	TargetFileSizeMultiplier int
	// MaxCompactionBytes bounds input expansion (max_compaction_bytes;
	// default 25*TargetFileSizeBase), and the inputs of a compaction picked
	// for tombstones (see PickAuto).
	MaxCompactionBytes uint64
	// L0SlowdownWritesTrigger is the number of L0 files at which the DB
	// slows writes (level0_slowdown_writes_trigger). With that many, an L0
	// compaction goes before any compaction picked for tombstones. Default
	// 0: never.
	L0SlowdownWritesTrigger int
	// TombstoneDenseCompactionThreshold is the share of a file's data
	// blocks that must be tombstone-dense (manifest.FileMetadata.
	// NumTombstoneDenseBlocks over NumDataBlocks) for the file to be
	// compacted for its tombstones (Pebble's option of the same name;
	// default 0.10; negative: never).
	TombstoneDenseCompactionThreshold float64
	// DisableDeleteAware turns off what the picker does about tombstones
	// on its own: tombstone-density compactions, elision-only rewrites of
	// last-level files holding droppable tombstones, and the compensation
	// of file sizes for tombstones in level scores. Files marked for
	// compaction by a property collector are still picked first. Default
	// false.
	DisableDeleteAware bool
	// DeletePersistenceThreshold, when positive, makes PickAuto pick files
	// whose oldest tombstone has outlived its level's deadline first (see
	// Deadlines; Lethe's FADE). Default 0: off.
	DeletePersistenceThreshold time.Duration
	// TTL and Periodic turn on TTL and periodic compactions (Options.TTL
	// and Options.PeriodicCompactionSeconds; 0: off; they need Now).
	TTL, Periodic time.Duration
	// Now tells the time for DeletePersistenceThreshold, TTL and Periodic
	// (nil: they are off).
	Now func() time.Time
	// BlobFiles says values may go to blob files (enable_blob_files): the
	// delete persistence deadlines then keep a share of the threshold for
	// the rewrite of blob files holding deleted values (see Deadlines), as
	// they do for a version holding blob files.
	BlobFiles bool
	// BlobGC turns on blob garbage collection (enable_blob_garbage_
	// collection): with it, PickAuto forces compactions of the tables that
	// reference an old blob file dense in garbage (blobgc.go).
	BlobGC bool
	// BlobGCAgeCutoff is the fraction of blob files, oldest first, whose
	// values compactions relocate (blob_garbage_collection_age_cutoff, 0 to
	// 1; BlobGCCutoff). Default 0: none.
	BlobGCAgeCutoff float64
	// BlobGCForceThreshold is the garbage ratio at which such a blob file's
	// tables are compacted on purpose (blob_garbage_collection_force_
	// threshold, 0 to 1). Default 0: taken as 1, which only a file of
	// nothing but garbage reaches.
	BlobGCForceThreshold float64
}

// DefaultTombstoneDenseCompactionThreshold is the default of
// Options.TombstoneDenseCompactionThreshold.
const DefaultTombstoneDenseCompactionThreshold = 0.10

// EnsureDefaults fills zero fields with their defaults and clamps NumLevels.
func (o *Options) EnsureDefaults() {
	if o.Comparer == nil {
		o.Comparer = base.DefaultComparer
	}
	if o.NumLevels <= 0 {
		o.NumLevels = 7
	}
	o.NumLevels = min(max(o.NumLevels, 2), numLevelsMax)
	if o.L0CompactionTrigger <= 0 {
		o.L0CompactionTrigger = 4
	}
	if o.MaxBytesForLevelBase == 0 {
		o.MaxBytesForLevelBase = 256 << 20
	}
	if !(o.MaxBytesForLevelMultiplier > 0) {
		o.MaxBytesForLevelMultiplier = 10
	}
	if o.TargetFileSizeBase == 0 {
		o.TargetFileSizeBase = 64 << 20
	}
	if o.TargetFileSizeMultiplier <= 0 {
		o.TargetFileSizeMultiplier = 1
	}
	if o.MaxCompactionBytes == 0 {
		o.MaxCompactionBytes = mulSat(o.TargetFileSizeBase, 25)
	}
	if o.TombstoneDenseCompactionThreshold == 0 {
		o.TombstoneDenseCompactionThreshold = DefaultTombstoneDenseCompactionThreshold
	}
}

// targetFileSize returns the output file size for level: the base size at
// the base level (and L0), multiplied once per level below it.
func (o *Options) targetFileSize(level, baseLevel int) uint64 {
	size := o.TargetFileSizeBase
	for l := baseLevel; l < level; l++ {
		size = mulSat(size, float64(o.TargetFileSizeMultiplier))
	}
	return size
}

// mulSat returns v*f rounded down, saturating at math.MaxUint64.
func mulSat(v uint64, f float64) uint64 {
	r := float64(v) * f
	if r >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(r)
}

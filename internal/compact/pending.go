package compact

import (
	"math"

	"github.com/shaledb/shale/internal/manifest"
)

// EstimatePendingCompactionBytes estimates the bytes compactions must
// rewrite to bring every level of v within its target (RocksDB's
// estimate-pending-compaction-bytes, computed as RocksDB does): all of L0
// and the base level when L0 is due, then, level by level from the base,
// the bytes above each target (grown by what the level above pushes down)
// times the size ratio to the next level plus one.
func EstimatePendingCompactionBytes(v *manifest.Version, o *Options) uint64 {
	opts := *o
	opts.EnsureDefaults()
	baseLevel, targets := targetSizes(v, &opts)
	var estimate, toNext float64
	l0 := levelFiles(v, 0)
	l0Due := len(l0) >= opts.L0CompactionTrigger || totalSize(l0) >= opts.MaxBytesForLevelBase
	if l0Due {
		estimate = float64(totalSize(l0))
		toNext = estimate
	}
	for l := baseLevel; l < opts.NumLevels-1; l++ {
		size := float64(totalSize(levelFiles(v, l)))
		if l == baseLevel && l0Due {
			estimate += size
		}
		size += toNext
		toNext = 0
		if t := targets[l]; t != math.MaxUint64 && size > float64(t) {
			toNext = size - float64(t)
			if next := float64(totalSize(levelFiles(v, l+1))); next > 0 {
				estimate += toNext * (next/size + 1)
			}
		}
	}
	return uint64(estimate)
}

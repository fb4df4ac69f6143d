package shale

import (
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/mergeiter"
	"github.com/shaledb/shale/internal/rangedel"
)

// versionView is what the iterators over one version share: for each level
// below L0, the mergeiter.Level its LevelIters read (the bounds of its files
// and its range tombstones as one list). It is built once per version, by
// the first iterator, and never modified after; read states over the same
// version share one (publishReadStateLocked), so neither a new iterator nor
// a memtable switch costs anything per file.
type versionView struct {
	// ready is set once levels is built; mu serializes building it. A
	// failure (a table with range tombstones that did not open) is not
	// kept: the next iterator tries again, so a transient IO error does
	// not last as long as the version.
	mu     sync.Mutex
	ready  atomic.Bool
	levels []*mergeiter.Level // by level; nil for L0 and for empty levels
}

// levelViews returns the views of v's levels, building them on first use
// with the range tombstones rangeDelsOf returns for each file that has any;
// vv must belong to v.
func (vv *versionView) levelViews(cmp base.Compare, v *manifest.Version,
	rangeDelsOf func(*manifest.FileMetadata) (*rangedel.List, error)) ([]*mergeiter.Level, error) {
	if vv.ready.Load() {
		return vv.levels, nil
	}
	vv.mu.Lock()
	defer vv.mu.Unlock()
	if vv.ready.Load() {
		return vv.levels, nil
	}
	levels := make([]*mergeiter.Level, len(v.Levels))
	for level := 1; level < len(v.Levels); level++ {
		files := v.Levels[level]
		if len(files) == 0 {
			continue
		}
		bounds := make([]mergeiter.FileBounds, len(files))
		var dels []*rangedel.List
		for j, f := range files {
			bounds[j] = mergeiter.FileBounds{Smallest: f.Smallest, Largest: f.Largest}
			if f.NumRangeDeletions == 0 {
				continue
			}
			rd, err := rangeDelsOf(f)
			if err != nil {
				return nil, err
			}
			dels = append(dels, rd)
		}
		levels[level] = mergeiter.NewLevel(cmp, bounds, dels)
	}
	vv.levels = levels
	vv.ready.Store(true)
	return levels, nil
}

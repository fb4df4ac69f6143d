package manifest

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
)

// versionBuilder accumulates edits on top of a base version; MANIFEST replay
// feeds it every record and builds one version at the end, so replay costs
// O(files) per edit only in what the edit touches.
type versionBuilder struct {
	cmp       *base.Comparer
	numLevels int
	base      *Version
	// baseLevel maps every file of base to its level.
	baseLevel map[base.FileNum]int
	// deleted[level] holds the files of base removed from level.
	deleted []map[base.FileNum]bool
	// added[level] holds the files added to level and not deleted since.
	added []map[base.FileNum]*FileMetadata
	// addedLevel maps every file of added to its level.
	addedLevel map[base.FileNum]int
	// secondary are the live secondary tombstones so far.
	secondary []SecondaryTombstone
	// blobs are the blob files so far.
	blobs blobBuilder
	// mergeOperator is the merge operator name the edits leave recorded.
	mergeOperator string
}

func newVersionBuilder(cmp *base.Comparer, numLevels int, v *Version) (*versionBuilder, error) {
	if numLevels < 1 || numLevels > NumLevelsMax {
		return nil, fmt.Errorf("shale: manifest: number of levels %d not in [1, %d]", numLevels, NumLevelsMax)
	}
	b := &versionBuilder{
		cmp:        cmp,
		numLevels:  numLevels,
		base:       v,
		baseLevel:  make(map[base.FileNum]int),
		deleted:    make([]map[base.FileNum]bool, numLevels),
		added:      make([]map[base.FileNum]*FileMetadata, numLevels),
		addedLevel: make(map[base.FileNum]int),
	}
	if v == nil {
		return b, nil
	}
	b.secondary = v.SecondaryTombstones
	b.mergeOperator = v.MergeOperatorName
	b.blobs.base = v.BlobFiles
	for level, files := range v.Levels {
		if len(files) > 0 && level >= numLevels {
			return nil, fmt.Errorf("shale: manifest: version has files in L%d but there are only %d levels", level, numLevels)
		}
		for _, f := range files {
			b.baseLevel[f.FileNum] = level
		}
	}
	return b, nil
}

func (b *versionBuilder) apply(e *VersionEdit) error {
	sec, err := applySecondary(b.secondary, e)
	if err != nil {
		return err
	}
	b.secondary = sec
	if e.MergeOperatorName != "" {
		b.mergeOperator = e.MergeOperatorName
	}
	// Deletions come before additions, so an edit can move a file between
	// levels; sorted, so the first error reported does not depend on map
	// order.
	for _, d := range e.sortedDeletedFiles() {
		if d.Level < 0 || d.Level >= b.numLevels {
			return fmt.Errorf("shale: manifest: deleting file %s from L%d: only %d levels", d.FileNum, d.Level, b.numLevels)
		}
		if l, ok := b.addedLevel[d.FileNum]; ok {
			if l != d.Level {
				return fmt.Errorf("shale: manifest: deleting file %s from L%d: it is in L%d", d.FileNum, d.Level, l)
			}
			delete(b.added[l], d.FileNum)
			delete(b.addedLevel, d.FileNum)
			continue
		}
		l, ok := b.baseLevel[d.FileNum]
		if !ok || b.deleted[l][d.FileNum] {
			return fmt.Errorf("shale: manifest: deleting file %s from L%d: no such file", d.FileNum, d.Level)
		}
		if l != d.Level {
			return fmt.Errorf("shale: manifest: deleting file %s from L%d: it is in L%d", d.FileNum, d.Level, l)
		}
		if b.deleted[l] == nil {
			b.deleted[l] = make(map[base.FileNum]bool)
		}
		b.deleted[l][d.FileNum] = true
	}
	for _, nf := range e.NewFiles {
		m := nf.Meta
		if m == nil {
			return fmt.Errorf("shale: manifest: new file entry in L%d without metadata", nf.Level)
		}
		if nf.Level < 0 || nf.Level >= b.numLevels {
			return fmt.Errorf("shale: manifest: adding file %s to L%d: only %d levels", m.FileNum, nf.Level, b.numLevels)
		}
		if base.InternalCompare(b.cmp.Compare, m.Smallest, m.Largest) > 0 {
			return fmt.Errorf("shale: manifest: adding file %s: smallest %s > largest %s", m.FileNum, formatKey(m.Smallest), formatKey(m.Largest))
		}
		if l, ok := b.addedLevel[m.FileNum]; ok {
			return fmt.Errorf("shale: manifest: adding file %s to L%d: already in L%d", m.FileNum, nf.Level, l)
		}
		if l, ok := b.baseLevel[m.FileNum]; ok && !b.deleted[l][m.FileNum] {
			return fmt.Errorf("shale: manifest: adding file %s to L%d: already in L%d", m.FileNum, nf.Level, l)
		}
		if b.added[nf.Level] == nil {
			b.added[nf.Level] = make(map[base.FileNum]*FileMetadata)
		}
		b.added[nf.Level][m.FileNum] = m
		b.addedLevel[m.FileNum] = nf.Level
	}
	return b.blobs.apply(e)
}

// finish builds the resulting version, checking that L1+ files do not
// overlap. Unchanged levels share their base's slice (versions are
// immutable).
func (b *versionBuilder) finish() (*Version, error) {
	v := &Version{Levels: make([][]*FileMetadata, b.numLevels), SecondaryTombstones: b.secondary, BlobFiles: b.blobs.finish(),
		MergeOperatorName: b.mergeOperator}
	if b.base != nil {
		v.tracker = b.base.tracker
	}
	cmpKeys := b.cmp.Compare
	for level := range v.Levels {
		var baseFiles []*FileMetadata
		if b.base != nil && level < len(b.base.Levels) {
			baseFiles = b.base.Levels[level]
		}
		if len(b.deleted[level]) == 0 && len(b.added[level]) == 0 {
			v.Levels[level] = baseFiles
			continue
		}
		files := make([]*FileMetadata, 0, len(baseFiles)-len(b.deleted[level])+len(b.added[level]))
		for _, f := range baseFiles {
			if !b.deleted[level][f.FileNum] {
				files = append(files, f)
			}
		}
		for _, f := range b.added[level] {
			files = append(files, f)
		}
		if level == 0 {
			slices.SortFunc(files, l0Less)
		} else {
			slices.SortFunc(files, func(a, c *FileMetadata) int {
				if r := base.InternalCompare(cmpKeys, a.Smallest, c.Smallest); r != 0 {
					return r
				}
				return cmp.Compare(a.FileNum, c.FileNum)
			})
			for i := 1; i < len(files); i++ {
				if prev, f := files[i-1], files[i]; !endsBefore(cmpKeys, prev, f.Smallest.UserKey) {
					return nil, fmt.Errorf("shale: manifest: L%d files %s [%s-%s] and %s [%s-%s] overlap",
						level, prev.FileNum, formatKey(prev.Smallest), formatKey(prev.Largest),
						f.FileNum, formatKey(f.Smallest), formatKey(f.Largest))
				}
			}
		}
		if len(files) == 0 {
			files = nil
		}
		v.Levels[level] = files
	}
	// Every blob file a table references must be live. Only added tables
	// can break that, unless blob files were deleted.
	if b.blobs.deleted > 0 {
		for level, files := range v.Levels {
			for _, f := range files {
				if err := checkBlobRefs(level, f, v.BlobFile); err != nil {
					return nil, err
				}
			}
		}
	} else {
		for level, added := range b.added {
			for _, f := range added {
				if err := checkBlobRefs(level, f, v.BlobFile); err != nil {
					return nil, err
				}
			}
		}
	}
	return v, nil
}

// Apply returns the version that results from applying edits in order to v
// (nil: the empty version). It fails when an edit deletes a file that is not
// in the named level, adds a file that is already present, or leaves files of
// L1 or below overlapping; and for blob files, when an edit adds one twice,
// records garbage in or deletes one that is not live, records garbage past a
// file's totals, or leaves a table referencing a blob file that is not live. The result has no references and shares v's
// VersionSet; v is unchanged.
func Apply(cmp *base.Comparer, numLevels int, v *Version, edits ...*VersionEdit) (*Version, error) {
	b, err := newVersionBuilder(cmp, numLevels, v)
	if err != nil {
		return nil, err
	}
	for _, e := range edits {
		if err := b.apply(e); err != nil {
			return nil, err
		}
	}
	nv, err := b.finish()
	if invariants.Enabled && err == nil {
		if cerr := nv.CheckOrdering(cmp.Compare); cerr != nil {
			base.AssertionFailedf("manifest: Apply built a badly ordered version: %v", cerr)
		}
	}
	return nv, err
}

package manifest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shaledb/shale/internal/base"
)

// NumLevels returns the number of levels of v.
func (v *Version) NumLevels() int { return len(v.Levels) }

// NumFiles returns the number of files in level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// LevelSize returns the total size in bytes of the files in level.
func (v *Version) LevelSize(level int) uint64 {
	var n uint64
	for _, f := range v.Levels[level] {
		n += f.Size
	}
	return n
}

// endsBefore reports whether every user key of f sorts before key.
func endsBefore(cmp base.Compare, f *FileMetadata, key []byte) bool {
	c := cmp(f.Largest.UserKey, key)
	return c < 0 || (c == 0 && f.Largest.IsExclusiveSentinel())
}

// overlapsRange reports whether f's user keys intersect [start, end], where
// end is exclusive when endExclusive; nil bounds are unbounded.
func overlapsRange(cmp base.Compare, f *FileMetadata, start, end []byte, endExclusive bool) bool {
	if start != nil && endsBefore(cmp, f, start) {
		return false
	}
	if end != nil {
		c := cmp(f.Smallest.UserKey, end)
		if c > 0 || (c == 0 && endExclusive) {
			return false
		}
	}
	return true
}

// Overlaps returns the files of level whose user-key range intersects
// [start, end], both inclusive; a nil bound is unbounded. A file whose
// Largest is a range-delete sentinel does not contain that user key. L0 files
// come newest first; for L1+ the result aliases v and must not be modified.
func (v *Version) Overlaps(cmp base.Compare, level int, start, end []byte) []*FileMetadata {
	files := v.Levels[level]
	if level == 0 {
		var out []*FileMetadata
		for _, f := range files {
			if overlapsRange(cmp, f, start, end, false) {
				out = append(out, f)
			}
		}
		return out
	}
	i := 0
	if start != nil {
		i = sort.Search(len(files), func(i int) bool { return !endsBefore(cmp, files[i], start) })
	}
	j := i
	for j < len(files) && (end == nil || cmp(files[j].Smallest.UserKey, end) <= 0) {
		j++
	}
	if i == j {
		return nil
	}
	return files[i:j:j]
}

// OverlapsL0Expanded returns the L0 files that overlap [start, end] (both
// inclusive, nil unbounded), widening the range by each file found until it
// is closed: the input set of an L0 compaction, as LevelDB computes it.
// Files come newest first.
func (v *Version) OverlapsL0Expanded(cmp base.Compare, start, end []byte) []*FileMetadata {
	var out []*FileMetadata
	endExclusive := false
	for {
		out = out[:0]
		expanded := false
		for _, f := range v.Levels[0] {
			if !overlapsRange(cmp, f, start, end, endExclusive) {
				continue
			}
			out = append(out, f)
			if start != nil && cmp(f.Smallest.UserKey, start) < 0 {
				start, expanded = f.Smallest.UserKey, true
			}
			if end != nil {
				c := cmp(f.Largest.UserKey, end)
				if c > 0 || (c == 0 && endExclusive && !f.Largest.IsExclusiveSentinel()) {
					end, endExclusive, expanded = f.Largest.UserKey, f.Largest.IsExclusiveSentinel(), true
				}
			}
		}
		if !expanded {
			if len(out) == 0 {
				return nil
			}
			return out
		}
	}
}

// FindFile returns the file of level (L1 or below) that may contain key, or
// nil if none does. L0 files overlap, so level 0 is an invariant violation:
// use Overlaps.
func (v *Version) FindFile(cmp base.Compare, level int, key []byte) *FileMetadata {
	if level == 0 {
		base.AssertionFailedf("manifest: FindFile on L0; L0 files overlap")
	}
	files := v.Levels[level]
	i := sort.Search(len(files), func(i int) bool { return !endsBefore(cmp, files[i], key) })
	if i < len(files) && cmp(files[i].Smallest.UserKey, key) <= 0 {
		return files[i]
	}
	return nil
}

// l0Less orders L0 files newest first: LargestSeq descending, ties by
// FileNum descending.
func l0Less(a, b *FileMetadata) int {
	switch {
	case a.LargestSeq != b.LargestSeq:
		if a.LargestSeq > b.LargestSeq {
			return -1
		}
		return 1
	case a.FileNum != b.FileNum:
		if a.FileNum > b.FileNum {
			return -1
		}
		return 1
	}
	return 0
}

// CheckOrdering verifies v's invariants: every file has Smallest <= Largest;
// L0 is sorted newest first (LargestSeq descending, ties FileNum descending);
// L1 and below are sorted by Smallest and do not overlap in user keys; blob
// files are sorted by number, their garbage is within their totals, and
// every blob file a table references is among them.
func (v *Version) CheckOrdering(cmp base.Compare) error {
	if err := v.checkBlobFiles(); err != nil {
		return err
	}
	for level, files := range v.Levels {
		for i, f := range files {
			if base.InternalCompare(cmp, f.Smallest, f.Largest) > 0 {
				return fmt.Errorf("shale: manifest: L%d file %s: smallest %s > largest %s",
					level, f.FileNum, formatKey(f.Smallest), formatKey(f.Largest))
			}
			if i == 0 {
				continue
			}
			prev := files[i-1]
			if level == 0 {
				if l0Less(prev, f) >= 0 {
					return fmt.Errorf("shale: manifest: L0 files %s (largest seqnum %d) and %s (largest seqnum %d) are not ordered newest first",
						prev.FileNum, prev.LargestSeq, f.FileNum, f.LargestSeq)
				}
				continue
			}
			if !endsBefore(cmp, prev, f.Smallest.UserKey) {
				return fmt.Errorf("shale: manifest: L%d files %s [%s-%s] and %s [%s-%s] overlap or are out of order",
					level, prev.FileNum, formatKey(prev.Smallest), formatKey(prev.Largest),
					f.FileNum, formatKey(f.Smallest), formatKey(f.Largest))
			}
		}
	}
	return nil
}

// String draws v's LSM shape, one line per file, skipping empty levels,
// then the blob files (count/bytes, and garbage), when there are some:
//
//	L0:
//	  000005:[a#10,SET-c#12,SET] blobs=000004
//	blob files:
//	  000004:10/4096(garbage 3/1200)
func (v *Version) String() string {
	var b strings.Builder
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:\n", level)
		for _, f := range files {
			fmt.Fprintf(&b, "  %s:[%s-%s]", f.FileNum, formatKey(f.Smallest), formatKey(f.Largest))
			if len(f.BlobFiles) > 0 {
				fmt.Fprintf(&b, " blobs=%s", formatFileNums(f.BlobFiles))
			}
			b.WriteByte('\n')
		}
	}
	if len(v.BlobFiles) > 0 {
		b.WriteString("blob files:\n")
		for _, bf := range v.BlobFiles {
			fmt.Fprintf(&b, "  %s\n", bf)
		}
	}
	return b.String()
}

// formatFileNums joins file numbers with commas.
func formatFileNums(nums []base.FileNum) string {
	var b strings.Builder
	for i, n := range nums {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n.String())
	}
	return b.String()
}

// formatKey prints an internal key compactly: the user key bare when it is
// printable, the seqnum as "inf" for SeqNumMax.
func formatKey(k base.InternalKey) string {
	uk := string(k.UserKey)
	for _, c := range k.UserKey {
		if c < 0x21 || c > 0x7e || c == '-' || c == '[' || c == ']' || c == '#' || c == '"' {
			uk = fmt.Sprintf("%q", k.UserKey)
			break
		}
	}
	if k.SeqNum() == base.SeqNumMax {
		return fmt.Sprintf("%s#inf,%s", uk, k.Kind())
	}
	return fmt.Sprintf("%s#%d,%s", uk, k.SeqNum(), k.Kind())
}

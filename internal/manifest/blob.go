package manifest

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// BlobFileMetadata describes one blob file of a version. Everything but the
// garbage is fixed when the file is added. Garbage only grows, and a version
// whose garbage differs from its base's holds its own copy, so a
// BlobFileMetadata that is part of a version is never modified.
type BlobFileMetadata struct {
	FileNum base.FileNum
	// TotalCount is the number of blobs the file holds, and TotalBytes their
	// bytes as the blob writer counts them (the unit garbage is counted in).
	TotalCount, TotalBytes uint64
	// Size is the file's size in bytes.
	Size uint64
	// ChecksumMethod names the whole-file checksum ("" when there is none)
	// and ChecksumValue holds it (nil when there is none).
	ChecksumMethod string
	ChecksumValue  []byte
	// GarbageCount and GarbageBytes are the blobs, and their bytes, that no
	// table references any more, as the edits so far recorded them.
	GarbageCount, GarbageBytes uint64
	// OldestGarbageTime dates the file's oldest garbage (unix nanoseconds;
	// 0 when no edit dated any): the oldest BlobGarbage.Time recorded for
	// it. Delete persistence rewrites the file by a deadline counted from
	// it.
	OldestGarbageTime uint64
}

// LiveBytes returns the bytes of blobs not yet recorded as garbage.
func (b *BlobFileMetadata) LiveBytes() uint64 { return b.TotalBytes - b.GarbageBytes }

// String formats the blob file as number:count/bytes, with garbage when
// there is some, and its date when known: 000007:10/4096(garbage 3/1200)
// or 000007:10/4096(garbage 3/1200 dated 2025-01-02T03:04:05.5Z).
func (b *BlobFileMetadata) String() string {
	s := fmt.Sprintf("%s:%d/%d", b.FileNum, b.TotalCount, b.TotalBytes)
	if b.GarbageCount != 0 || b.GarbageBytes != 0 {
		if t := b.OldestGarbageTime; t != 0 && t <= math.MaxInt64 {
			s += fmt.Sprintf("(garbage %d/%d dated %s)", b.GarbageCount, b.GarbageBytes,
				time.Unix(0, int64(t)).UTC().Format(time.RFC3339Nano))
		} else {
			s += fmt.Sprintf("(garbage %d/%d)", b.GarbageCount, b.GarbageBytes)
		}
	}
	return s
}

// BlobGarbage is garbage an edit adds to a blob file: blobs (Count) and
// bytes (Bytes) whose last reference a compaction dropped. It adds to what
// the file's earlier edits recorded.
type BlobGarbage struct {
	FileNum      base.FileNum
	Count, Bytes uint64
	// Time dates the garbage (unix nanoseconds; 0: undated): the file's
	// OldestGarbageTime becomes the oldest of the dates recorded for it.
	Time uint64
}

// LevelFile is a table of a version and its level.
type LevelFile struct {
	Level int
	Meta  *FileMetadata
}

// OldestBlobFile returns the smallest blob file number f references
// (RocksDB's oldest_blob_file_number), or 0 when it references none.
func (f *FileMetadata) OldestBlobFile() base.FileNum {
	if len(f.BlobFiles) == 0 {
		return 0
	}
	return f.BlobFiles[0]
}

// ReferencesBlob reports whether f holds a blob index entry pointing into
// blob file num.
func (f *FileMetadata) ReferencesBlob(num base.FileNum) bool {
	_, found := slices.BinarySearch(f.BlobFiles, num)
	return found
}

// BlobFile returns the blob file numbered num of v, or nil.
func (v *Version) BlobFile(num base.FileNum) *BlobFileMetadata {
	i, found := slices.BinarySearchFunc(v.BlobFiles, num, func(b *BlobFileMetadata, n base.FileNum) int {
		return compareFileNum(b.FileNum, n)
	})
	if !found {
		return nil
	}
	return v.BlobFiles[i]
}

// TablesReferencingBlob returns the tables of v that reference blob file
// num, by level and then in level order: the tables a compaction must
// rewrite for the blob file to become unreferenced.
func (v *Version) TablesReferencingBlob(num base.FileNum) []LevelFile {
	var out []LevelFile
	for level, files := range v.Levels {
		for _, f := range files {
			if f.ReferencesBlob(num) {
				out = append(out, LevelFile{Level: level, Meta: f})
			}
		}
	}
	return out
}

// UnreferencedBlobFiles returns, ascending, the blob files of v that no
// table references once e's table changes are applied to v, leaving out
// those e already deletes: the blob files e may, and should, delete
// (append them to e.DeletedBlobFiles). Blob files that e adds are not
// among them even when no table references them. v must be the version e
// will be applied to; a blob file that a version's table references can
// never be deleted (Apply refuses it), so a stale v can only miss
// deletions, which a later edit then makes.
func (v *Version) UnreferencedBlobFiles(e *VersionEdit) []base.FileNum {
	if len(v.BlobFiles) == 0 {
		return nil
	}
	referenced := make(map[base.FileNum]bool)
	for level, files := range v.Levels {
		for _, f := range files {
			if e.DeletedFiles[DeletedFileEntry{Level: level, FileNum: f.FileNum}] {
				continue
			}
			for _, n := range f.BlobFiles {
				referenced[n] = true
			}
		}
	}
	for _, nf := range e.NewFiles {
		if nf.Meta != nil {
			for _, n := range nf.Meta.BlobFiles {
				referenced[n] = true
			}
		}
	}
	var out []base.FileNum
	for _, b := range v.BlobFiles {
		if !referenced[b.FileNum] && !slices.Contains(e.DeletedBlobFiles, b.FileNum) {
			out = append(out, b.FileNum)
		}
	}
	return out
}

// BlobStats returns the number of blob files of v, their total bytes (as
// TotalBytes counts them) and their garbage bytes.
func (v *Version) BlobStats() (files int, totalBytes, garbageBytes uint64) {
	for _, b := range v.BlobFiles {
		totalBytes += b.TotalBytes
		garbageBytes += b.GarbageBytes
	}
	return len(v.BlobFiles), totalBytes, garbageBytes
}

func compareFileNum(a, b base.FileNum) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// blobBuilder accumulates the blob file changes of edits on top of a base
// version's blob files.
type blobBuilder struct {
	base []*BlobFileMetadata
	// files is the blob file set so far; nil until an edit changes it.
	files map[base.FileNum]*BlobFileMetadata
	// deleted counts deletions since base, for finish's reference check.
	deleted int
}

func (b *blobBuilder) set() map[base.FileNum]*BlobFileMetadata {
	if b.files == nil {
		b.files = make(map[base.FileNum]*BlobFileMetadata, len(b.base))
		for _, f := range b.base {
			b.files[f.FileNum] = f
		}
	}
	return b.files
}

// lookup returns blob file num of the set so far, or nil.
func (b *blobBuilder) lookup(num base.FileNum) *BlobFileMetadata {
	if b.files != nil {
		return b.files[num]
	}
	i, found := slices.BinarySearchFunc(b.base, num, func(f *BlobFileMetadata, n base.FileNum) int {
		return compareFileNum(f.FileNum, n)
	})
	if !found {
		return nil
	}
	return b.base[i]
}

// apply applies e's blob records: additions, then garbage, then deletions
// (so one edit can record a file's last garbage and delete it).
func (b *blobBuilder) apply(e *VersionEdit) error {
	if len(e.NewBlobFiles) == 0 && len(e.BlobGarbage) == 0 && len(e.DeletedBlobFiles) == 0 {
		return nil
	}
	files := b.set()
	for _, m := range e.NewBlobFiles {
		switch {
		case m == nil:
			return fmt.Errorf("shale: manifest: new blob file entry without metadata")
		case m.FileNum == 0:
			return fmt.Errorf("shale: manifest: adding blob file 000000: not a file number")
		case m.GarbageCount != 0 || m.GarbageBytes != 0 || m.OldestGarbageTime != 0:
			return fmt.Errorf("shale: manifest: adding blob file %s with garbage %d/%d: garbage is recorded apart",
				m.FileNum, m.GarbageCount, m.GarbageBytes)
		}
		if files[m.FileNum] != nil {
			return fmt.Errorf("shale: manifest: adding blob file %s: already present", m.FileNum)
		}
		files[m.FileNum] = m
	}
	for _, g := range e.BlobGarbage {
		cur := files[g.FileNum]
		if cur == nil {
			return fmt.Errorf("shale: manifest: garbage %d/%d in blob file %s: no such blob file", g.Count, g.Bytes, g.FileNum)
		}
		count, bytes := cur.GarbageCount+g.Count, cur.GarbageBytes+g.Bytes
		if count < cur.GarbageCount || count > cur.TotalCount || bytes < cur.GarbageBytes || bytes > cur.TotalBytes {
			return fmt.Errorf("shale: manifest: garbage %d/%d in blob file %s: with the %d/%d recorded it exceeds the file's %d blobs/%d bytes",
				g.Count, g.Bytes, g.FileNum, cur.GarbageCount, cur.GarbageBytes, cur.TotalCount, cur.TotalBytes)
		}
		if g.Count == 0 && g.Bytes == 0 {
			continue
		}
		next := *cur
		next.GarbageCount, next.GarbageBytes = count, bytes
		if g.Time != 0 && (next.OldestGarbageTime == 0 || g.Time < next.OldestGarbageTime) {
			next.OldestGarbageTime = g.Time
		}
		files[g.FileNum] = &next
	}
	for _, num := range e.DeletedBlobFiles {
		if files[num] == nil {
			return fmt.Errorf("shale: manifest: deleting blob file %s: no such blob file", num)
		}
		delete(files, num)
		b.deleted++
	}
	return nil
}

// finish returns the blob files of the result, sorted by number; unchanged,
// the base's slice.
func (b *blobBuilder) finish() []*BlobFileMetadata {
	if b.files == nil {
		return b.base
	}
	if len(b.files) == 0 {
		return nil
	}
	out := make([]*BlobFileMetadata, 0, len(b.files))
	for _, f := range b.files {
		out = append(out, f)
	}
	slices.SortFunc(out, func(x, y *BlobFileMetadata) int { return compareFileNum(x.FileNum, y.FileNum) })
	return out
}

// checkBlobRefs returns an error naming the first reference of f to a
// blob file that lookup does not find, or a badly ordered reference list.
func checkBlobRefs(level int, f *FileMetadata, lookup func(base.FileNum) *BlobFileMetadata) error {
	for i, n := range f.BlobFiles {
		if i > 0 && f.BlobFiles[i-1] >= n {
			return fmt.Errorf("shale: manifest: L%d file %s: blob references %v are not ascending", level, f.FileNum, f.BlobFiles)
		}
		if lookup(n) == nil {
			return fmt.Errorf("shale: manifest: L%d file %s references blob file %s, which is not in the version", level, f.FileNum, n)
		}
	}
	return nil
}

// checkBlobFiles verifies v's blob invariants: blob files ascending by
// number without duplicates, garbage within the totals, and every blob
// file a table references present.
func (v *Version) checkBlobFiles() error {
	for i, b := range v.BlobFiles {
		if b == nil {
			return fmt.Errorf("shale: manifest: nil blob file")
		}
		if i > 0 && v.BlobFiles[i-1].FileNum >= b.FileNum {
			return fmt.Errorf("shale: manifest: blob files %s and %s are out of order", v.BlobFiles[i-1].FileNum, b.FileNum)
		}
		if b.GarbageCount > b.TotalCount || b.GarbageBytes > b.TotalBytes {
			return fmt.Errorf("shale: manifest: blob file %s: garbage %d/%d exceeds its %d blobs/%d bytes",
				b.FileNum, b.GarbageCount, b.GarbageBytes, b.TotalCount, b.TotalBytes)
		}
	}
	for level, files := range v.Levels {
		for _, f := range files {
			if err := checkBlobRefs(level, f, v.BlobFile); err != nil {
				return err
			}
		}
	}
	return nil
}

// TablesOnly returns a referenced version holding the tables of v (and its
// secondary tombstones and merge operator name) but no blob files, for a
// job that reads v's tables and never its blob files (a flush, which looks
// up older keys in the tables). Release it with Unref.
func (v *Version) TablesOnly() *Version { return v.WithBlobFilesOf(nil) }

// WithBlobFilesOf returns a referenced version holding the tables of v
// (and its secondary tombstones and merge operator name) and, of its blob
// files, only those the given tables reference: for a job that reads blob
// values only through those tables (a compaction, of its inputs). Held
// for a whole job, v itself would keep on disk the blob files that other
// jobs' edits delete meanwhile, which the job never reads; this version
// keeps only what it may read. Release it with Unref.
func (v *Version) WithBlobFilesOf(tables []*FileMetadata) *Version {
	t := &Version{Levels: v.Levels, SecondaryTombstones: v.SecondaryTombstones,
		MergeOperatorName: v.MergeOperatorName, tracker: v.tracker}
	for _, b := range v.BlobFiles {
		for _, f := range tables {
			if f.ReferencesBlob(b.FileNum) {
				t.BlobFiles = append(t.BlobFiles, b)
				break
			}
		}
	}
	t.Ref()
	return t
}

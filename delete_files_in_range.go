package shale

import (
	"errors"
	"fmt"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/sstable"
)

// DeleteFilesInRange deletes every table file whose keys all lie in
// [start, end] (RocksDB's DeleteFilesInRange): end is included when
// includeEnd is set, and a nil start or end is unbounded. It is a fast way
// to drop a large range of data, not a delete: one MANIFEST edit removes
// the files at every level, L0 included, and nothing is written or
// compacted. See DeleteFilesInRanges for what it does and does not
// promise.
func (d *DB) DeleteFilesInRange(start, end []byte, includeEnd bool) error {
	return d.DeleteFilesInRanges([]Range{{Start: start, Limit: end}}, includeEnd)
}

// DeleteFilesInRanges is DeleteFilesInRange over several ranges at once
// (RocksDB's DeleteFilesInRanges), in one MANIFEST edit: each Range is
// [Start, Limit] with Limit included when includeEnd is set (not the
// half-open range Range usually is), nil bounds unbounded. A range whose
// Start is above its Limit deletes nothing.
//
// It is not atomic and not a delete, as in RocksDB:
//   - keys in a table that crosses a range's end, and keys still in
//     memtables, stay (Flush first to include the latter); so do tables
//     compactions are working on when it is called;
//   - a key whose newest version was in a deleted table may read as an
//     older version that a deeper table, or one outside the range, still
//     holds (a deleted tombstone lets the value it deleted come back);
//   - snapshots do not keep deleted tables: reads through a snapshot taken
//     before the call miss the data the call deleted, as later reads do.
//     Iterators opened before the call keep reading the tables they
//     started with, which stay on disk until the last such iterator
//     closes; a checkpoint being made also keeps them until it ends.
//
// Blob values referenced only by deleted tables become garbage; a blob
// file no remaining table references is deleted with the tables. On a DB
// opened with OpenForReadOnly it returns an error wrapping ErrReadOnly. It
// waits for a CompactRange under way to finish first.
func (d *DB) DeleteFilesInRanges(ranges []Range, includeEnd bool) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.readOnly {
		return d.readOnlyErr()
	}
	d.mu.Lock()
	// A manual compaction skips a level whose files another job holds
	// (PickManual), so the two never overlap: CompactRange waits for this
	// job (it counts as running), and this waits for CompactRange.
	for d.mu.compact.manual > 0 && !d.mu.closing && d.mu.bgErr == nil {
		d.mu.compact.cond.Wait()
	}
	switch {
	case d.mu.closing:
		d.mu.Unlock()
		return ErrClosed
	case d.mu.bgErr != nil:
		err := fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
		d.mu.Unlock()
		return err
	}
	v := d.versions.Current()
	deleted := filesWithinRanges(d.cmp.Compare, v, ranges, includeEnd)
	v.Unref()
	if len(deleted) == 0 {
		d.mu.Unlock()
		return nil
	}
	// Held as a compaction holds its inputs, so that no compaction picks
	// them while the edit is written, and counted as a running job, so
	// that Close waits for it.
	for _, lf := range deleted {
		lf.Meta.Compacting = true
	}
	d.mu.compact.running++
	d.mu.Unlock()

	err := d.deleteTables(deleted)
	if err == nil {
		// As RocksDB does, the files no version uses any more leave the
		// disk before the call returns; still counted as running, so that
		// Close has not released the file cache and version set yet.
		d.deleteObsoleteFiles(false)
	}

	d.mu.Lock()
	for _, lf := range deleted {
		lf.Meta.Compacting = false
	}
	d.mu.compact.running--
	d.mu.compact.cond.Broadcast()
	d.maybeScheduleLocked()
	d.mu.Unlock()
	return err
}

// deleteTables removes the tables from the current version in one edit,
// recording the blob references they held as garbage.
func (d *DB) deleteTables(deleted []manifest.LevelFile) error {
	edit := &manifest.VersionEdit{DeletedFiles: make(map[manifest.DeletedFileEntry]bool, len(deleted))}
	tables := make([]*manifest.FileMetadata, len(deleted))
	var bytes uint64
	for i, lf := range deleted {
		edit.DeletedFiles[manifest.DeletedFileEntry{Level: lf.Level, FileNum: lf.Meta.FileNum}] = true
		tables[i] = lf.Meta
		bytes += lf.Meta.Size
	}
	refs, err := d.blobRefsOfTables(tables)
	if err != nil {
		return fmt.Errorf("shale: DeleteFilesInRange: reading the blob references of the tables: %w", err)
	}
	if len(refs) > 0 {
		// The values are deleted now, which is what delete persistence
		// counts from.
		edit.BlobGarbage = blobGarbage(refs, nil, nil, uint64(max(d.clock.Now().UnixNano(), 1)))
	}
	if err := d.applyVersionEdit(edit, nil); err != nil {
		// The edit may be durable: stop writes until Resume, so that what
		// readers see now cannot differ from what a reopen shows.
		err = fmt.Errorf("shale: DeleteFilesInRange: recording the deletion of %d tables: %w", len(deleted), err)
		d.mu.Lock()
		d.setBackgroundErrorLocked(BackgroundErrorManifestWrite, err)
		d.mu.Unlock()
		return err
	}
	d.logger.Info("deleted files in range", "tables", len(deleted), "bytes", bytes, "blob_files_with_garbage", len(refs),
		"blob_files_deleted", len(edit.DeletedBlobFiles))
	return nil
}

// filesWithinRanges returns the tables of v that DeleteFilesInRanges
// deletes, by level: those whose user keys all lie in one of the ranges
// and that no compaction holds. Below L0, a table sharing a boundary user
// key with a neighbour that stays is left too (RocksDB's clean cut), so
// that a level never loses some versions of a key and keeps others.
// d.mu is held (Compacting is read).
func filesWithinRanges(cmp base.Compare, v *manifest.Version, ranges []Range, includeEnd bool) []manifest.LevelFile {
	within := func(f *manifest.FileMetadata, r Range) bool {
		if r.Start != nil && cmp(f.Smallest.UserKey, r.Start) < 0 {
			return false
		}
		if r.Limit == nil {
			return true
		}
		c := cmp(f.Largest.UserKey, r.Limit)
		// A range-delete sentinel's user key is not in the table.
		return c < 0 || c == 0 && (includeEnd || f.Largest.IsExclusiveSentinel())
	}
	var out []manifest.LevelFile
	for level, files := range v.Levels {
		chosen := make([]bool, len(files))
		some := false
		for i, f := range files {
			if f.Compacting {
				continue
			}
			for _, r := range ranges {
				if within(f, r) {
					chosen[i], some = true, true
					break
				}
			}
		}
		if !some {
			continue
		}
		if level > 0 {
			// sharesKey: a's last user key is b's first.
			sharesKey := func(a, b *manifest.FileMetadata) bool {
				return !a.Largest.IsExclusiveSentinel() && cmp(a.Largest.UserKey, b.Smallest.UserKey) == 0
			}
			for changed := true; changed; {
				changed = false
				for i, f := range files {
					if chosen[i] && (i > 0 && !chosen[i-1] && sharesKey(files[i-1], f) ||
						i+1 < len(files) && !chosen[i+1] && sharesKey(f, files[i+1])) {
						chosen[i], changed = false, true
					}
				}
			}
		}
		for i, f := range files {
			if chosen[i] {
				out = append(out, manifest.LevelFile{Level: level, Meta: f})
			}
		}
	}
	return out
}

// blobRefsOfTables counts, per blob file, the blob references the tables
// hold (every blob index entry, as a compaction counts what it reads): the
// garbage their deletion leaves in each blob file.
func (d *DB) blobRefsOfTables(tables []*manifest.FileMetadata) (map[base.FileNum]blobRefCount, error) {
	refs := map[base.FileNum]blobRefCount{}
	for _, f := range tables {
		if len(f.BlobFiles) == 0 {
			continue
		}
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			return nil, err
		}
		path := d.tablePath(f.FileNum)
		it := t.reader.NewIter(sstable.IterOptions{ReadaheadSize: compactionReadaheadSize})
		for ok := it.First(); ok && err == nil; ok = it.Next() {
			if it.Key().Kind() != base.KindBlobIndex {
				continue
			}
			var x blob.Index
			if x, err = blob.DecodeIndex(path, it.Value()); err == nil {
				r := refs[x.FileNum]
				r.count++
				r.bytes += blobRecordBytes(x)
				refs[x.FileNum] = r
			}
		}
		err = errors.Join(err, it.Error(), it.Close())
		t.release()
		if err != nil {
			return nil, err
		}
	}
	return refs, nil
}

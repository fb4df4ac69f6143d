package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// liveFile is one file of a liveFileSet.
type liveFile struct {
	fileType base.FileType
	num      base.FileNum
	// name is the file's base name in the database directory.
	name string
	// size is the number of bytes that belong to the capture: the whole
	// file for an immutable one, and for the MANIFEST and a WAL the prefix
	// holding what the capture covers (the file may grow past it).
	size int64
	// immutable marks tables and blob files, which are never written
	// again: they may be hard-linked and shared between copies.
	immutable bool
	// src is the file opened for reading (MANIFEST, WALs, OPTIONS): read
	// its first size bytes through it, which works even if the DB has
	// replaced and removed the file since. nil for immutable files, which
	// stay in the directory until the capture is released.
	src vfs.File
	// crc32c is the file's whole-file CRC-32C as the MANIFEST records it
	// (FileChecksumCrc32cName), when hasCRC32C; tables and blob files only.
	crc32c    uint32
	hasCRC32C bool
}

// recordedCRC32C returns the whole-file CRC-32C a MANIFEST recorded under
// funcName, when that is the built-in generator's (4 bytes, big-endian).
func recordedCRC32C(funcName string, sum []byte) (uint32, bool) {
	if funcName != FileChecksumCrc32cName || len(sum) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(sum), true
}

// liveFileSet is one consistent capture of the files a copy of the
// database needs (captureLiveFiles): the tables and blob files of one
// version, the MANIFEST prefix that replays to that version, the WALs holding
// every write acknowledged before the capture began (each up to the size its
// records had reached), and the newest OPTIONS file. A directory holding
// these files, with a CURRENT naming manifestNum, opens as the database at a
// moment after the capture began: no acknowledged write is missing, and
// nothing is there that the DB did not hold.
//
// Until release is called, the DB deletes no obsolete file (tables, blob
// files, WALs), so the immutable files can be linked or copied by name.
type liveFileSet struct {
	files []liveFile
	// manifestNum is the number of the MANIFEST among files: CURRENT of
	// the copy names it.
	manifestNum base.FileNum
	release     func()
}

// holdFileDeletions stops obsolete-file deletion until the returned func is
// called (once). A deletion under way when it is called finishes first, so
// no file is removed once it returns. Deletions skipped meanwhile happen
// after the last hold is released.
func (d *DB) holdFileDeletions() (release func()) {
	d.obsoleteMu.Lock()
	d.deletionHolds++
	d.obsoleteMu.Unlock()
	released := false
	return func() {
		if released {
			return
		}
		released = true
		d.obsoleteMu.Lock()
		d.deletionHolds--
		wake := d.deletionHolds == 0 && d.deletionDeferred
		if wake {
			d.deletionDeferred = false
		}
		d.obsoleteMu.Unlock()
		if wake {
			d.signalObsolete()
		}
	}
}

// captureLiveFiles returns the files a copy of the database needs, captured
// consistently (see liveFileSet), with obsolete-file deletion held until
// the set's release is called. Memtables holding writes made with
// WriteOptions.DisableWAL are flushed first, since no WAL holds them.
//
// The capture order makes the set consistent without stopping writes: the
// WAL list and the current WAL's written size are taken first (under d.mu,
// then from the WAL writer), the MANIFEST and its version last, with no
// edit in between (manifest.CaptureManifest). A flush finishing in between
// puts into the version writes also in a WAL copied; a WAL started in
// between holds only writes made after the capture began, and the
// MANIFEST's log number then passes the WALs it replaces. Either way the
// copy shows a prefix of the writes that covers every acknowledged one.
func (d *DB) captureLiveFiles() (_ *liveFileSet, err error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	if !d.readOnly {
		d.mu.Lock()
		noWAL := d.mu.mem.mutable.noWAL
		for _, m := range d.mu.mem.queue {
			noWAL = noWAL || m.noWAL
		}
		d.mu.Unlock()
		if noWAL {
			if err := d.Flush(); err != nil {
				return nil, fmt.Errorf("shale: flushing the writes made without the WAL: %w", err)
			}
		}
	}
	set := &liveFileSet{}
	releaseHold := d.holdFileDeletions()
	var version *manifest.Version
	set.release = func() {
		for _, f := range set.files {
			if f.src != nil {
				_ = f.src.Close()
			}
		}
		if version != nil {
			version.Unref()
			version = nil
		}
		releaseHold()
	}
	defer func() {
		if err != nil {
			set.release()
		}
	}()

	// WALs first, with the blob files of their values (write-time
	// separation, blob_write.go).
	var walNums, memBlobNums []base.FileNum
	var cur struct {
		num  base.FileNum
		size int64
	}
	if d.readOnly {
		walNums = slices.Clone(d.readOnlyWALs)
	} else {
		d.mu.Lock()
		w, num := d.mu.log.w, d.mu.log.num
		for _, m := range d.mu.mem.queue {
			walNums = append(walNums, m.logNum)
		}
		d.mu.Unlock()
		if w == nil {
			return nil, ErrClosed
		}
		if testHookCaptureBeforeWALSize != nil {
			testHookCaptureBeforeWALSize()
		}
		size, err := w.WrittenSize()
		if err != nil {
			return nil, fmt.Errorf("shale: WAL %s: %w", num, err)
		}
		// Listed after the WAL's size: a blob file is created before any
		// WAL record points into it, so every record copied finds its file
		// here. (Deletions are held: a memtable flushed since keeps its
		// files on disk.)
		d.mu.Lock()
		for _, m := range d.mu.mem.queue {
			memBlobNums = append(memBlobNums, m.blobs.nums()...)
		}
		memBlobNums = append(memBlobNums, d.mu.mem.mutable.blobs.nums()...)
		d.mu.Unlock()
		walNums = append(walNums, num)
		cur.num, cur.size = num, size
	}
	slices.Sort(walNums)
	walNums = slices.Compact(walNums)
	// addOpen opens file (t, num) for copying, into the set (which closes
	// it on release), sized size, or as it is now when size is negative.
	addOpen := func(t base.FileType, num base.FileNum, what string, size int64) error {
		name := base.MakeFilename(t, num)
		f, err := d.fs.Open(d.fs.PathJoin(d.dirname, name), vfs.SequentialAccess)
		if err != nil {
			return fmt.Errorf("shale: opening %s %s: %w", what, name, err)
		}
		set.files = append(set.files, liveFile{fileType: t, num: num, name: name, src: f})
		if size < 0 {
			if size, err = f.Size(); err != nil {
				return fmt.Errorf("shale: %s %s: %w", what, name, err)
			}
		}
		set.files[len(set.files)-1].size = size
		return nil
	}
	for _, num := range walNums {
		// Older WALs were closed, whole, when their memtable became
		// immutable: copied as they are.
		size := int64(-1)
		if !d.readOnly && num == cur.num {
			size = cur.size
		}
		if err := addOpen(base.FileTypeLog, num, "WAL", size); err != nil {
			return nil, err
		}
	}
	// A value is in its blob file before its WAL record is in the WAL: the
	// files' sizes, taken after the WAL's, cover every record copied.
	for _, num := range memBlobNums {
		if err := addOpen(base.FileTypeBlob, num, "blob file", -1); err != nil {
			return nil, err
		}
	}

	// Then the MANIFEST and the version it gives.
	mc, err := d.versions.CaptureManifest()
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, fmt.Errorf("shale: capturing the MANIFEST: %w", err)
	}
	version = mc.Version
	set.manifestNum = mc.Num
	var immutable []liveFile
	for _, files := range version.Levels {
		for _, f := range files {
			lf := liveFile{fileType: base.FileTypeTable, num: f.FileNum,
				name: base.MakeFilename(base.FileTypeTable, f.FileNum), size: int64(f.Size), immutable: true}
			lf.crc32c, lf.hasCRC32C = recordedCRC32C(f.FileChecksumFuncName, f.FileChecksum)
			immutable = append(immutable, lf)
		}
	}
	for _, b := range version.BlobFiles {
		if i := slices.IndexFunc(set.files, func(f liveFile) bool { return f.fileType == base.FileTypeBlob && f.num == b.FileNum }); i >= 0 {
			// Flushed since the WALs were captured: the finished file.
			_ = set.files[i].src.Close()
			set.files = slices.Delete(set.files, i, i+1)
		}
		lf := liveFile{fileType: base.FileTypeBlob, num: b.FileNum,
			name: base.MakeFilename(base.FileTypeBlob, b.FileNum), size: int64(b.Size), immutable: true}
		lf.crc32c, lf.hasCRC32C = recordedCRC32C(b.ChecksumMethod, b.ChecksumValue)
		immutable = append(immutable, lf)
	}
	slices.SortFunc(immutable, func(a, b liveFile) int { return compareFileNums(a.num, b.num) })
	set.files = append(immutable, set.files...)
	set.files = append(set.files, liveFile{fileType: base.FileTypeManifest, num: mc.Num,
		name: base.MakeFilename(base.FileTypeManifest, mc.Num), size: mc.Size, src: mc.File})

	// And the OPTIONS file, which Open does not read but tools do.
	if opt, err := d.captureOptionsFile(); err != nil {
		return nil, err
	} else if opt.src != nil {
		set.files = append(set.files, opt)
	}
	return set, nil
}

// captureOptionsFile opens the newest OPTIONS file; none (src nil) if the
// directory has none (a read-only DB of a directory without one).
func (d *DB) captureOptionsFile() (liveFile, error) {
	var num base.FileNum
	if d.readOnly {
		names, err := d.fs.List(d.dirname)
		if err != nil {
			return liveFile{}, fmt.Errorf("shale: listing %s: %w", d.dirname, err)
		}
		for _, name := range names {
			if t, n, ok := base.ParseFilename(name); ok && t == base.FileTypeOptions {
				num = max(num, n)
			}
		}
		if num == 0 {
			return liveFile{}, nil
		}
	} else {
		// SetOptions replaces the file under setOptionsMu.
		d.setOptionsMu.Lock()
		defer d.setOptionsMu.Unlock()
		num = d.optionsFileNum
		if num == 0 {
			return liveFile{}, nil
		}
	}
	name := base.MakeFilename(base.FileTypeOptions, num)
	f, err := d.fs.Open(d.fs.PathJoin(d.dirname, name))
	if err != nil {
		return liveFile{}, fmt.Errorf("shale: opening %s: %w", name, err)
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return liveFile{}, fmt.Errorf("shale: %s: %w", name, err)
	}
	return liveFile{fileType: base.FileTypeOptions, num: num, name: name, size: size, src: f}, nil
}

// CheckpointStats says how DB.CheckpointWithStats made a checkpoint.
type CheckpointStats struct {
	// Files is the number of files in the checkpoint (CURRENT included).
	Files int
	// LinkedFiles and LinkedBytes count the tables and blob files
	// hard-linked into the checkpoint.
	LinkedFiles int
	LinkedBytes int64
	// CopiedFiles and CopiedBytes count the files copied: the MANIFEST,
	// the WALs, OPTIONS, and the tables and blob files that could not be
	// linked (another device, a file system without hard links).
	CopiedFiles int
	CopiedBytes int64
	// Duration is the time the checkpoint took.
	Duration time.Duration
}

// Checkpoint writes into dir, which must not exist, an openable copy of the
// database (RocksDB's Checkpoint::CreateCheckpoint): Open or OpenForReadOnly
// of dir shows every write acknowledged before the call, and the DB keeps
// serving reads and writes meanwhile. Tables and blob files are hard-linked
// where the file system allows and copied otherwise; the MANIFEST, WALs and
// OPTIONS are copied. The copy is built in dir+".tmp" and renamed to dir
// once complete, so a crash leaves either no dir or a whole checkpoint.
// An existing dir (or dir+".tmp"), or one another Checkpoint of this DB is
// building, is refused with an error matching ErrInvalidArgument. Writes
// made with WriteOptions.DisableWAL are flushed first (no WAL holds them).
// A DB opened with OpenForReadOnly can be checkpointed too (see
// docs/decisions.md, Checkpoints).
func (d *DB) Checkpoint(dir string) error {
	_, err := d.CheckpointWithStats(dir)
	return err
}

// CheckpointWithStats is Checkpoint, returning how many files and bytes were
// linked and copied (also logged at INFO).
func (d *DB) CheckpointWithStats(dir string) (CheckpointStats, error) {
	start := time.Now()
	var stats CheckpointStats
	if dir == "" {
		return stats, base.InvalidArgumentf("shale: Checkpoint: the directory is empty")
	}
	if sameDir(dir, d.dirname) {
		return stats, base.InvalidArgumentf("shale: Checkpoint: %s is the database's own directory", dir)
	}
	tmp := dir + ".tmp"
	d.checkpointing.Lock()
	if d.checkpointing.dirs[dir] {
		d.checkpointing.Unlock()
		return stats, base.InvalidArgumentf("shale: Checkpoint: a checkpoint into %s is under way", dir)
	}
	if d.checkpointing.dirs == nil {
		d.checkpointing.dirs = map[string]bool{}
	}
	d.checkpointing.dirs[dir] = true
	d.checkpointing.Unlock()
	defer func() {
		d.checkpointing.Lock()
		delete(d.checkpointing.dirs, dir)
		d.checkpointing.Unlock()
	}()
	for _, p := range []string{dir, tmp} {
		_, err := d.fs.Stat(p)
		switch {
		case err == nil && p == tmp:
			return stats, base.InvalidArgumentf("shale: Checkpoint: %s exists (a checkpoint into %s interrupted by a crash leaves it; remove it)", tmp, dir)
		case err == nil:
			return stats, base.InvalidArgumentf("shale: Checkpoint: %s already exists", dir)
		case !errors.Is(err, os.ErrNotExist):
			return stats, fmt.Errorf("shale: Checkpoint: %s: %w", p, err)
		}
	}
	set, err := d.captureLiveFiles()
	if err != nil {
		return stats, err
	}
	defer set.release()

	if err := d.fs.MkdirAll(tmp, 0o755); err != nil {
		return stats, fmt.Errorf("shale: Checkpoint: creating %s: %w", tmp, err)
	}
	if err := d.fillCheckpoint(set, tmp, &stats); err != nil {
		removeCheckpointDir(d.fs, tmp)
		return stats, fmt.Errorf("shale: Checkpoint into %s: %w", dir, err)
	}
	if err := d.fs.Rename(tmp, dir); err != nil {
		removeCheckpointDir(d.fs, tmp)
		return stats, fmt.Errorf("shale: Checkpoint: renaming %s to %s: %w", tmp, dir, err)
	}
	if err := syncDirOf(d.fs, d.fs.PathDir(dir)); err != nil {
		// dir is complete, but its name may not survive a power loss.
		return stats, fmt.Errorf("shale: Checkpoint: %s is complete, but syncing its parent directory failed: %w", dir, err)
	}
	stats.Duration = time.Since(start)
	d.logger.Info("checkpoint created", "dir", dir, "files", stats.Files,
		"linked_files", stats.LinkedFiles, "linked_bytes", stats.LinkedBytes,
		"copied_files", stats.CopiedFiles, "copied_bytes", stats.CopiedBytes, "duration", stats.Duration)
	return stats, nil
}

// fillCheckpoint links or copies the files of set into tmp and writes
// CURRENT there last (temp file, sync, rename, directory sync).
func (d *DB) fillCheckpoint(set *liveFileSet, tmp string, stats *CheckpointStats) error {
	for _, f := range set.files {
		dst := d.fs.PathJoin(tmp, f.name)
		if f.immutable {
			linked, err := vfs.LinkOrCopy(d.fs, d.fs.PathJoin(d.dirname, f.name), dst)
			if err != nil {
				return fmt.Errorf("linking or copying %s: %w", f.name, err)
			}
			if linked {
				stats.LinkedFiles++
				stats.LinkedBytes += f.size
			} else {
				stats.CopiedFiles++
				stats.CopiedBytes += f.size
			}
		} else {
			if err := vfs.CopyN(d.fs, f.src, dst, f.size); err != nil {
				return fmt.Errorf("copying %s: %w", f.name, err)
			}
			stats.CopiedFiles++
			stats.CopiedBytes += f.size
		}
		stats.Files++
	}
	if err := manifest.SetCurrent(d.fs, tmp, set.manifestNum); err != nil {
		return fmt.Errorf("writing CURRENT: %w", err)
	}
	stats.Files++
	return nil
}

// removeCheckpointDir removes a checkpoint's temporary directory, which
// Checkpoint created and filled: its files, then itself. Errors are
// ignored: what is left holds no CURRENT, so it does not open as a
// database, and Checkpoint refuses to reuse it.
func removeCheckpointDir(fs vfs.FS, tmp string) {
	names, _ := fs.List(tmp)
	// CURRENT first: a crash part way leaves files that do not open.
	slices.SortStableFunc(names, func(a, b string) int { return boolRank(b == "CURRENT") - boolRank(a == "CURRENT") })
	for _, name := range names {
		_ = fs.Remove(fs.PathJoin(tmp, name))
	}
	_ = fs.Remove(tmp)
}

// testHookCaptureBeforeWALSize, when set by a test, runs in
// captureLiveFiles after the WALs are listed and before the current WAL's
// size is read.
var testHookCaptureBeforeWALSize func()

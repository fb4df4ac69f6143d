package manifest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// Options configures a VersionSet.
type Options struct {
	// FS is the file system of the database directory. Required.
	FS vfs.FS
	// Dir is the database directory.
	Dir string
	// Comparer orders user keys; its name is recorded in the MANIFEST and
	// must match on Load. Default: base.DefaultComparer.
	Comparer *base.Comparer
	// NumLevels is the number of LSM levels. Default 7 (RocksDB num_levels);
	// at most NumLevelsMax.
	NumLevels int
	// MaxManifestFileSize is the size past which the next edit starts a new
	// MANIFEST holding a snapshot of the current version. Default 64 MiB
	// (RocksDB max_manifest_file_size).
	MaxManifestFileSize int64
	// Logger receives MANIFEST events (rotations, removal failures).
	// Default: discards.
	Logger *slog.Logger
	// ReadOnly makes Load only read: it starts no new MANIFEST, and
	// LogAndApply fails with base.ErrReadOnly. Nothing is ever written.
	ReadOnly bool
}

func (o *Options) ensureDefaults() error {
	if o.FS == nil {
		return base.InvalidArgumentf("shale: manifest.Options.FS must be set")
	}
	if o.Comparer == nil {
		o.Comparer = base.DefaultComparer
	}
	if o.NumLevels == 0 {
		o.NumLevels = 7
	}
	if o.NumLevels < 1 || o.NumLevels > NumLevelsMax {
		return base.InvalidArgumentf("shale: Options.NumLevels must be between 1 and %d, got %d", NumLevelsMax, o.NumLevels)
	}
	if o.MaxManifestFileSize <= 0 {
		o.MaxManifestFileSize = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// VersionSet owns the MANIFEST and CURRENT files of a database directory,
// the current version, and the file-number and seqnum counters.
type VersionSet struct {
	opts    Options
	tracker *fileTracker

	nextFileNum atomic.Uint64
	lastSeq     atomic.Uint64
	logNum      atomic.Uint64
	manifestNum atomic.Uint64
	// replayedSize is the size of the complete edits Load replayed from
	// the MANIFEST (a torn tail left out): what CaptureManifest reports
	// for a version set loaded read-only.
	replayedSize int64

	// writeMu serializes LogAndApply and Close; it is held across MANIFEST
	// IO, so it never guards anything readers need.
	writeMu struct {
		sync.Mutex
		manifestFile vfs.File
		manifest     *record.Writer
		// broken is set after a failed write or sync: the MANIFEST may end
		// with a partial record, so the next edit starts a new one.
		broken bool
		// staleManifests are older MANIFESTs to remove after the next
		// successful switch of CURRENT.
		staleManifests []base.FileNum
		closed         bool
		buf            []byte
	}

	// follow is where a read-only set's CatchUp reads on: the end of the
	// last record replayed from the MANIFEST it follows (manifestNum).
	// Guarded by writeMu.
	follow struct {
		off int64
	}

	// mu guards current; held only briefly.
	mu struct {
		sync.Mutex
		current *Version
	}
}

// Create initializes a new database directory: MANIFEST-000001 holding the
// comparer name and an empty version (next file number 2), then CURRENT. It
// fails if CURRENT already exists.
func Create(o Options) (*VersionSet, error) {
	if err := o.ensureDefaults(); err != nil {
		return nil, err
	}
	currentPath := o.FS.PathJoin(o.Dir, base.MakeFilename(base.FileTypeCurrent, 0))
	if _, err := o.FS.Stat(currentPath); err == nil {
		return nil, fmt.Errorf("shale: creating database in %s: %w", o.Dir, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("shale: creating database in %s: %w", o.Dir, err)
	}
	if err := o.FS.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("shale: creating database in %s: %w", o.Dir, err)
	}
	vs := newVersionSet(o)
	vs.nextFileNum.Store(1)
	v := &Version{Levels: make([][]*FileMetadata, o.NumLevels), tracker: vs.tracker}
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if err := vs.switchManifestLocked(v, vs.NewFileNum(), vs.LogNumber(), vs.LastSeq()); err != nil {
		return nil, err
	}
	v.Ref()
	vs.mu.current = v
	return vs, nil
}

func newVersionSet(o Options) *VersionSet {
	return &VersionSet{opts: o, tracker: newFileTracker()}
}

// Load opens the version set of an existing database: it reads CURRENT and
// replays the MANIFEST it names, then starts a fresh MANIFEST holding a
// snapshot of the recovered version, so a torn tail of the old one is never
// appended to (with Options.ReadOnly it only reads). A missing CURRENT returns an error wrapping os.ErrNotExist; a
// damaged CURRENT or MANIFEST returns base.ErrCorruption naming the file.
func Load(o Options) (*VersionSet, error) {
	if err := o.ensureDefaults(); err != nil {
		return nil, err
	}
	manifestNum, err := readCurrent(o)
	if err != nil {
		return nil, err
	}
	vs := newVersionSet(o)
	v, err := vs.replay(manifestNum)
	if err != nil {
		return nil, err
	}
	v.tracker = vs.tracker
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if o.ReadOnly {
		v.Ref()
		vs.mu.current = v
		return vs, nil
	}
	vs.writeMu.staleManifests = append(vs.writeMu.staleManifests, manifestNum)
	if err := vs.switchManifestLocked(v, vs.NewFileNum(), vs.LogNumber(), vs.LastSeq()); err != nil {
		return nil, err
	}
	v.Ref()
	vs.mu.current = v
	return vs, nil
}

// readCurrent returns the number of the MANIFEST that CURRENT names.
func readCurrent(o Options) (base.FileNum, error) {
	name := base.MakeFilename(base.FileTypeCurrent, 0)
	f, err := o.FS.Open(o.FS.PathJoin(o.Dir, name))
	if err != nil {
		return 0, fmt.Errorf("shale: opening %s in %s: %w", name, o.Dir, err)
	}
	defer f.Close()
	var buf [256]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("shale: reading %s in %s: %w", name, o.Dir, err)
	}
	return ParseCurrent(buf[:n], name)
}

// replay reads MANIFEST manifestNum (see Replay) and builds its final
// version, setting the counters from it.
func (vs *VersionSet) replay(manifestNum base.FileNum) (*Version, error) {
	o := &vs.opts
	name := base.MakeFilename(base.FileTypeManifest, manifestNum)
	f, err := o.FS.Open(o.FS.PathJoin(o.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("%w (%w)", base.CorruptionErrorf(name, 0, "manifest: CURRENT names %s, which cannot be opened", name), err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("shale: reading %s: %w", name, err)
	}
	res, err := Replay(io.NewSectionReader(f, 0, size), name, o.Comparer, o.NumLevels)
	if err != nil {
		return nil, err
	}
	vs.replayedSize = size
	if res.TornBytes > 0 {
		vs.replayedSize = res.TornOffset
		o.Logger.Warn("shale: ignoring torn tail of MANIFEST", "file", name, "offset", res.TornOffset, "bytes", res.TornBytes)
	}
	vs.nextFileNum.Store(uint64(max(res.NextFileNum, manifestNum+1, res.MaxFileNum+1, res.LogNum+1)))
	vs.logNum.Store(uint64(res.LogNum))
	vs.lastSeq.Store(uint64(res.LastSeq))
	vs.manifestNum.Store(uint64(manifestNum))
	vs.follow.off = res.End
	return res.Version, nil
}

// snapshotEdit returns an edit that recreates v and the counters from
// nothing: the first record of every MANIFEST.
func (vs *VersionSet) snapshotEdit(v *Version, logNum base.FileNum, lastSeq base.SeqNum) *VersionEdit {
	e := &VersionEdit{
		ManifestFormat:    ManifestFormatV1,
		ComparerName:      vs.opts.Comparer.Name,
		MergeOperatorName: v.MergeOperatorName,
		HasLogNumber:      true,
		LogNumber:         logNum,
		HasNextFileNumber: true,
		NextFileNumber:    base.FileNum(vs.nextFileNum.Load()),
		HasLastSeq:        true,
		LastSeq:           lastSeq,
	}
	for level, files := range v.Levels {
		for _, f := range files {
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: f})
		}
	}
	e.AddedSecondaryTombstones = v.SecondaryTombstones
	// Garbage is recorded apart from the addition, as it was first
	// recorded.
	for _, b := range v.BlobFiles {
		a := *b
		a.GarbageCount, a.GarbageBytes, a.OldestGarbageTime = 0, 0, 0
		e.NewBlobFiles = append(e.NewBlobFiles, &a)
		if b.GarbageCount != 0 || b.GarbageBytes != 0 {
			e.BlobGarbage = append(e.BlobGarbage, BlobGarbage{FileNum: b.FileNum, Count: b.GarbageCount, Bytes: b.GarbageBytes,
				Time: b.OldestGarbageTime})
		}
	}
	return e
}

// switchManifestLocked writes MANIFEST num holding a snapshot of v and the
// counters, syncs it, and points CURRENT at it. On success it becomes the
// MANIFEST edits are appended to and stale MANIFESTs are removed. On failure
// before CURRENT changed the new file is removed and nothing changes; after
// CURRENT changed (directory sync failed) the new MANIFEST is kept as the
// active one but marked broken, since it is unknown which CURRENT is durable.
func (vs *VersionSet) switchManifestLocked(v *Version, num, logNum base.FileNum, lastSeq base.SeqNum) error {
	fs, dir := vs.opts.FS, vs.opts.Dir
	name := base.MakeFilename(base.FileTypeManifest, num)
	path := fs.PathJoin(dir, name)
	f, err := fs.Create(path)
	if err != nil {
		return fmt.Errorf("shale: creating %s: %w", name, err)
	}
	w := record.NewWriter(f)
	snap := vs.snapshotEdit(v, logNum, lastSeq)
	vs.writeMu.buf = snap.Encode(vs.writeMu.buf[:0])
	err = writeAndSync(w, f, vs.writeMu.buf)
	if err == nil {
		err = setCurrent(fs, dir, num)
		if errors.Is(err, errDirSync) {
			// CURRENT may name either MANIFEST after a crash: keep both.
			vs.installManifestLocked(f, w, num)
			vs.writeMu.broken = true
			return fmt.Errorf("shale: switching CURRENT to %s: %w", name, err)
		}
	}
	if err != nil {
		_ = f.Close()
		if rmErr := fs.Remove(path); rmErr != nil {
			vs.opts.Logger.Warn("shale: removing unused MANIFEST", "file", name, "error", rmErr)
		}
		return fmt.Errorf("shale: writing %s: %w", name, err)
	}
	vs.installManifestLocked(f, w, num)
	vs.writeMu.broken = false
	for _, stale := range vs.writeMu.staleManifests {
		staleName := base.MakeFilename(base.FileTypeManifest, stale)
		if err := fs.Remove(fs.PathJoin(dir, staleName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			vs.opts.Logger.Warn("shale: removing old MANIFEST", "file", staleName, "error", err)
		}
	}
	vs.writeMu.staleManifests = vs.writeMu.staleManifests[:0]
	vs.opts.Logger.Info("shale: MANIFEST started", "file", name, "snapshot-bytes", len(vs.writeMu.buf))
	return nil
}

// installManifestLocked makes f the MANIFEST edits are appended to; the
// previous one becomes stale.
func (vs *VersionSet) installManifestLocked(f vfs.File, w *record.Writer, num base.FileNum) {
	if old := vs.writeMu.manifestFile; old != nil {
		_ = old.Close()
		vs.writeMu.staleManifests = append(vs.writeMu.staleManifests, vs.ManifestFileNum())
	}
	vs.writeMu.manifestFile, vs.writeMu.manifest = f, w
	vs.manifestNum.Store(uint64(num))
}

func writeAndSync(w *record.Writer, f vfs.File, rec []byte) error {
	if _, err := w.WriteRecord(rec); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// errDirSync marks a failure after CURRENT was renamed into place.
var errDirSync = errors.New("syncing the directory after renaming CURRENT")

// SetCurrent atomically points the CURRENT of dir at MANIFEST num: write a
// temp file (NNNNNN.dbtmp), sync it, rename it over CURRENT, sync the
// directory. A checkpoint writes its CURRENT with it.
func SetCurrent(fs vfs.FS, dir string, num base.FileNum) error { return setCurrent(fs, dir, num) }

// setCurrent atomically points CURRENT at MANIFEST num: write a temp file,
// sync it, rename it over CURRENT, sync the directory.
func setCurrent(fs vfs.FS, dir string, num base.FileNum) error {
	contents := base.MakeFilename(base.FileTypeManifest, num) + "\n"
	tmp := fs.PathJoin(dir, base.MakeFilename(base.FileTypeTemp, num))
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(contents))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)))
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	d, err := fs.OpenDir(dir)
	if err == nil {
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errDirSync, err)
	}
	return nil
}

// ManifestCapture is the MANIFEST as of one moment (CaptureManifest): a
// copy of its first Size bytes, replayed, gives Version.
type ManifestCapture struct {
	// Num is the MANIFEST's file number.
	Num base.FileNum
	// Size is the length of its complete, applied edits.
	Size int64
	// File is the MANIFEST opened for reading; its first Size bytes stay
	// readable through it even after a newer MANIFEST replaces and removes
	// it. The caller closes it.
	File vfs.File
	// Version is the version those edits give, referenced for the caller,
	// who must Unref it: its tables and blob files stay live until then.
	Version *Version
}

// CaptureManifest returns the MANIFEST and the current version with no edit
// in between, for a copy of the database (a checkpoint): the MANIFEST's
// first Size bytes replay to Version exactly. It fails with base.ErrClosed
// after Close, and while the MANIFEST is broken (a failed write or sync may
// have left there an edit that was never applied): the next edit starts a
// new MANIFEST and a capture after it succeeds. A version set loaded
// read-only reports the edits Load replayed.
func (vs *VersionSet) CaptureManifest() (ManifestCapture, error) {
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if vs.writeMu.closed {
		return ManifestCapture{}, base.ErrClosed
	}
	num := vs.ManifestFileNum()
	name := base.MakeFilename(base.FileTypeManifest, num)
	size := vs.replayedSize
	if !vs.opts.ReadOnly {
		if vs.writeMu.broken {
			return ManifestCapture{}, fmt.Errorf("shale: %s failed a write or sync; the next version edit (a flush, or Resume) starts a new one", name)
		}
		size = vs.writeMu.manifest.Size()
	}
	f, err := vs.opts.FS.Open(vs.opts.FS.PathJoin(vs.opts.Dir, name))
	if err != nil {
		return ManifestCapture{}, fmt.Errorf("shale: opening %s: %w", name, err)
	}
	return ManifestCapture{Num: num, Size: size, File: f, Version: vs.Current()}, nil
}

// Current returns the current version with a reference taken for the
// caller, who must Unref it.
func (vs *VersionSet) Current() *Version {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.mu.current
	v.Ref()
	return v
}

// LogAndApply applies edit to the current version, records it durably in the
// MANIFEST and installs the result as the current version. It fills
// NextFileNumber and LastSeq from the set's counters when unset, and raises
// them when the edit names higher ones. Concurrent callers are serialized. On
// any error the current version is unchanged; after a write or sync error the
// next call starts a new MANIFEST.
func (vs *VersionSet) LogAndApply(edit *VersionEdit) error { return vs.LogAndApplyThen(edit, nil) }

// LogAndApplyThen is LogAndApply that calls installed (when not nil) as it
// installs the new version, before any Current can return it: what
// installed does happens before anything done with the new version. It
// must be quick and must not call the VersionSet.
func (vs *VersionSet) LogAndApplyThen(edit *VersionEdit, installed func()) error {
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if vs.writeMu.closed {
		return base.ErrClosed
	}
	if vs.opts.ReadOnly {
		return fmt.Errorf("shale: manifest: the version set was loaded read-only: %w", base.ErrReadOnly)
	}
	if edit.HasLogNumber && edit.LogNumber < vs.LogNumber() {
		return base.InvalidArgumentf("shale: manifest: log number %s is below the current %s", edit.LogNumber, vs.LogNumber())
	}
	vs.mu.Lock()
	cur := vs.mu.current
	vs.mu.Unlock()
	// cur cannot be released while writeMu is held: only LogAndApply
	// replaces (and so unrefs) the current version.
	next, err := Apply(vs.opts.Comparer, vs.opts.NumLevels, cur, edit)
	if err != nil {
		return err
	}

	// Every file number the edit mentions must stay below the recorded
	// next file number.
	for _, nf := range edit.NewFiles {
		vs.MarkFileNumUsed(nf.Meta.FileNum)
	}
	for _, b := range edit.NewBlobFiles {
		vs.MarkFileNumUsed(b.FileNum)
	}
	if edit.HasLogNumber {
		vs.MarkFileNumUsed(edit.LogNumber)
	}
	if edit.HasNextFileNumber && edit.NextFileNumber > 0 {
		vs.MarkFileNumUsed(edit.NextFileNumber - 1)
	}
	logNum := vs.LogNumber()
	if edit.HasLogNumber {
		logNum = edit.LogNumber
	}
	lastSeq := max(vs.LastSeq(), edit.LastSeq)
	edit.HasLastSeq, edit.LastSeq = true, lastSeq

	if vs.writeMu.broken || vs.writeMu.manifest.Size() >= vs.opts.MaxManifestFileSize {
		// The snapshot in the new MANIFEST includes the edit.
		num := vs.NewFileNum()
		edit.HasNextFileNumber, edit.NextFileNumber = true, base.FileNum(vs.nextFileNum.Load())
		if err := vs.switchManifestLocked(next, num, logNum, lastSeq); err != nil {
			return err
		}
	} else {
		edit.HasNextFileNumber, edit.NextFileNumber = true, base.FileNum(vs.nextFileNum.Load())
		vs.writeMu.buf = edit.Encode(vs.writeMu.buf[:0])
		if err := writeAndSync(vs.writeMu.manifest, vs.writeMu.manifestFile, vs.writeMu.buf); err != nil {
			vs.writeMu.broken = true
			return fmt.Errorf("shale: writing %s: %w",
				base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum()), err)
		}
	}
	vs.logNum.Store(uint64(logNum))
	vs.SetLastSeq(lastSeq)

	next.Ref()
	vs.mu.Lock()
	vs.mu.current = next
	if installed != nil {
		installed()
	}
	vs.mu.Unlock()
	cur.Unref()
	return nil
}

// NewFileNum allocates a new file number.
func (vs *VersionSet) NewFileNum() base.FileNum {
	return base.FileNum(vs.nextFileNum.Add(1) - 1)
}

// MarkFileNumUsed makes sure n is never allocated by NewFileNum.
func (vs *VersionSet) MarkFileNumUsed(n base.FileNum) {
	for {
		cur := vs.nextFileNum.Load()
		if uint64(n) < cur || vs.nextFileNum.CompareAndSwap(cur, uint64(n)+1) {
			return
		}
	}
}

// LastSeq returns the last sequence number assigned.
func (vs *VersionSet) LastSeq() base.SeqNum { return base.SeqNum(vs.lastSeq.Load()) }

// SetLastSeq raises the last sequence number to s (it never goes back); it is
// persisted by the next LogAndApply.
func (vs *VersionSet) SetLastSeq(s base.SeqNum) {
	for {
		cur := vs.lastSeq.Load()
		if uint64(s) <= cur || vs.lastSeq.CompareAndSwap(cur, uint64(s)) {
			return
		}
	}
}

// LogNumber returns the recorded log number: WALs numbered below it are
// obsolete.
func (vs *VersionSet) LogNumber() base.FileNum { return base.FileNum(vs.logNum.Load()) }

// ManifestFileNum returns the number of the MANIFEST edits are appended to.
func (vs *VersionSet) ManifestFileNum() base.FileNum { return base.FileNum(vs.manifestNum.Load()) }

// TakeObsoleteTables returns the tables that no referenced version holds any
// more, each once; the caller deletes them.
func (vs *VersionSet) TakeObsoleteTables() []*FileMetadata { return vs.tracker.takeObsolete() }

// LiveFileNums returns the tables held by any version with references.
func (vs *VersionSet) LiveFileNums() map[base.FileNum]struct{} { return vs.tracker.liveFileNums() }

// LiveFileSizes returns the bytes of the tables and of the blob files that
// any version with references holds (RocksDB's total-sst-files-size and
// total-blob-file-size): the current version's and those older versions
// still in use keep.
func (vs *VersionSet) LiveFileSizes() (tables, blobs uint64) { return vs.tracker.liveSizes() }

// TakeObsoleteBlobFiles returns the blob files that no referenced version
// holds any more, each once; the caller deletes them.
func (vs *VersionSet) TakeObsoleteBlobFiles() []*BlobFileMetadata {
	return vs.tracker.takeObsoleteBlobs()
}

// LiveBlobFileNums returns the blob files held by any version with
// references.
func (vs *VersionSet) LiveBlobFileNums() map[base.FileNum]struct{} {
	return vs.tracker.liveBlobFileNums()
}

// Close closes the MANIFEST. It does not release the current version, whose
// files stay live. LogAndApply after Close returns base.ErrClosed.
func (vs *VersionSet) Close() error {
	vs.writeMu.Lock()
	defer vs.writeMu.Unlock()
	if vs.writeMu.closed {
		return base.ErrClosed
	}
	vs.writeMu.closed = true
	if f := vs.writeMu.manifestFile; f != nil {
		vs.writeMu.manifestFile, vs.writeMu.manifest = nil, nil
		return f.Close()
	}
	return nil
}

// WriteManifest writes a new MANIFEST numbered num in dir holding the one
// edit e, which must describe a whole version (comparer, next file number,
// every file: what RepairDB rebuilds from the files it finds), syncs it and
// points CURRENT at it atomically (a temporary file renamed over CURRENT,
// then the directory synced). It first applies e to an empty version of
// numLevels levels and checks the result, so an inconsistent edit writes
// nothing. No other file is touched.
func WriteManifest(fs vfs.FS, dir string, num base.FileNum, cmp *base.Comparer, numLevels int, e *VersionEdit) error {
	if e.ComparerName == "" || !e.HasNextFileNumber || e.NextFileNumber <= num {
		return base.InvalidArgumentf("shale: manifest: a new MANIFEST's edit must name the comparer and a next file number above %d", num)
	}
	v, err := Apply(cmp, numLevels, nil, e)
	if err != nil {
		return err
	}
	if err := v.CheckOrdering(cmp.Compare); err != nil {
		return err
	}
	name := base.MakeFilename(base.FileTypeManifest, num)
	path := fs.PathJoin(dir, name)
	f, err := fs.Create(path)
	if err != nil {
		return fmt.Errorf("shale: creating %s: %w", name, err)
	}
	err = writeAndSync(record.NewWriter(f), f, e.Encode(nil))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = setCurrent(fs, dir, num)
	}
	if err != nil && !errors.Is(err, errDirSync) {
		_ = fs.Remove(path)
	}
	if err != nil {
		return fmt.Errorf("shale: writing %s: %w", name, err)
	}
	return nil
}

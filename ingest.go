package shale

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// IngestExternalFileOptions configure DB.IngestExternalFile (RocksDB's
// IngestExternalFileOptions). The zero value, and nil, are RocksDB's
// defaults: options whose RocksDB default is true are named for turning
// them off (docs/decisions.md, Options (zero values)).
type IngestExternalFileOptions struct {
	// MoveFiles (move_files) hard-links the files into the database
	// directory, where the file system can, and removes the originals once
	// they are ingested; where it cannot link, they are copied and then
	// removed. Default false: the files are copied and the originals kept.
	MoveFiles bool
	// DisableSnapshotConsistency (snapshot_consistency=false) lets files
	// that overlap no data go in at seqnum 0 even while snapshots are open,
	// which then see them. Default false: with snapshots open, the files
	// get a seqnum above every snapshot, which keeps seeing the database as
	// it was.
	DisableSnapshotConsistency bool
	// DisallowGlobalSeqNo (allow_global_seqno=false) refuses files that
	// would need a seqnum above existing data (they overlap it, or
	// snapshots are open) with an error matching ErrInvalidArgument.
	// Default false: such files get one.
	DisallowGlobalSeqNo bool
	// DisallowBlockingFlush (allow_blocking_flush=false) refuses files that
	// overlap a memtable with an error matching ErrInvalidArgument instead
	// of flushing it first. Default false: the memtable is flushed.
	DisallowBlockingFlush bool
	// FailIfNotBottommostLevel (fail_if_not_bottommost_level) refuses the
	// call unless every file can go to the last level. Default false.
	FailIfNotBottommostLevel bool
	// AllowOverlappingFiles lets the files of one call overlap each other:
	// they then all go to L0, each at a seqnum of its own, a later path
	// newer than an earlier one (shale's option; RocksDB orders them the
	// same way). Default false: overlapping files are refused with an error
	// matching ErrInvalidArgument naming two of them.
	AllowOverlappingFiles bool
}

// ingestFile is one external table of an IngestExternalFile call.
type ingestFile struct {
	path  string
	props *sstable.Properties
	// smallest and largest bound the table's entries as stored (seqnum 0);
	// largest may be a range-delete sentinel.
	smallest, largest base.InternalKey
	// blobPaths are the blob files beside the table, blobs what their
	// footers say; hasMerges says the table holds merge operands.
	blobPaths []string
	blobs     []blob.Properties
	hasMerges bool
	// Where it goes: num (and blobNums) in the database directory, the
	// level and the global seqnum, and placed/blobPlaced the files made so
	// far (for removal on failure).
	num        base.FileNum
	blobNums   []base.FileNum
	size       uint64
	placed     bool
	blobPlaced int
	level      int
	seq        base.SeqNum
	// sum and sumName are the table's whole-file checksum and its
	// generator's name, blobSums and blobSumNames its blob files' (empty
	// names: none; ingestedChecksum).
	sum          []byte
	sumName      string
	blobSums     [][]byte
	blobSumNames []string
}

// IngestExternalFile adds the tables at paths (on the database's
// Options.FS), written by SSTFileWriter with the database's comparer (and
// their blob files beside them), to the database in one atomic MANIFEST
// edit (RocksDB's IngestExternalFile). Each table is checked (checksums of every
// block, keys in strictly increasing order at seqnum 0, the external
// property, its blob files), then copied or linked into the database
// directory under a new file number. Holding the commit queue, so that no
// write interleaves, the call flushes the memtables a table overlaps
// (unless DisallowBlockingFlush), gives each table seqnum 0 when it
// overlaps no data and no snapshot needs it, else the next seqnum (its
// entries then all read at that seqnum: newer than every write before the
// call), and puts it in the lowest level whose files it does not overlap
// above the first level it overlaps (and not into a level where a running
// compaction writes over its range). Reads after the call see the
// ingested data over what was there; snapshots taken before it do not
// (unless DisableSnapshotConsistency and no seqnum was needed). On any
// error nothing is ingested and the source files are left as they were; a
// crash leaves all or nothing, and Open removes a partial copy. o nil
// takes the defaults.
func (d *DB) IngestExternalFile(paths []string, o *IngestExternalFileOptions) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.readOnly {
		return errOpenedReadOnly
	}
	if o == nil {
		o = &IngestExternalFileOptions{}
	}
	if len(paths) == 0 {
		return base.InvalidArgumentf("shale: IngestExternalFile: no files given")
	}
	for i, p := range paths {
		if slices.Contains(paths[:i], p) {
			return base.InvalidArgumentf("shale: IngestExternalFile: %s is given twice", p)
		}
	}
	files, err := d.validateExternalFiles(paths)
	if err != nil {
		return err
	}
	overlapping, err := d.checkIngestOverlaps(files, o)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.hasMerges {
			if err := d.recordMergeOperator(); err != nil {
				return err
			}
			break
		}
	}
	if err := d.placeIngestedFiles(files, o); err != nil {
		d.removeIngestedFiles(files)
		return err
	}
	w := &writer{ingest: &ingestRequest{files: files, opts: o, overlapping: overlapping}}
	if _, err := d.commit(w); err != nil {
		if !w.ingest.applied {
			d.removeIngestedFiles(files)
		}
		return err
	}
	if o.MoveFiles {
		// Ingested: the originals go (their data is linked or copied).
		for _, f := range files {
			_ = d.fs.Remove(f.path)
			for _, p := range f.blobPaths {
				_ = d.fs.Remove(p)
			}
		}
	}
	return nil
}

// ingestRequest is what an IngestExternalFile call asks of the commit
// queue (writer.ingest): applied is set once the edit is logged.
type ingestRequest struct {
	files       []*ingestFile
	opts        *IngestExternalFileOptions
	overlapping bool
	applied     bool
}

// ingestErrorf wraps an error about the external table path.
func ingestErrorf(path string, err error) error {
	return fmt.Errorf("shale: IngestExternalFile: %s: %w", path, err)
}

// validateExternalFiles validates the files at paths, several at a time
// (up to GOMAXPROCS: reading a table through is CPU work), and returns the
// first failure in the order of paths.
func (d *DB) validateExternalFiles(paths []string) ([]*ingestFile, error) {
	files := make([]*ingestFile, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, max(1, min(len(paths), runtime.GOMAXPROCS(0))))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			files[i], errs[i] = d.validateExternalFile(p)
			<-sem
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// validateExternalFile opens the external table at path and checks it:
// every block's checksum (the data blocks as they are read), the external
// property, keys strictly increasing by user key at seqnum 0, range
// tombstones at seqnum 0, kinds an external table holds, and its blob
// files (footer and whole-file checksum, and every blob index pointing
// inside one of them).
func (d *DB) validateExternalFile(path string) (_ *ingestFile, err error) {
	tf, err := d.fs.Open(path, vfs.SequentialAccess)
	if err != nil {
		return nil, ingestErrorf(path, err)
	}
	r, err := sstable.NewReader(tf, sstable.ReaderOptions{Comparer: d.cmp, FileName: path})
	if err != nil {
		return nil, ingestErrorf(path, err)
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = ingestErrorf(path, cerr)
		}
	}()
	f := &ingestFile{path: path, props: r.Properties()}
	if f.props.User[propExternalVersion] != externalVersion {
		return nil, ingestErrorf(path, fmt.Errorf("%w: %w", errNotExternal, ErrInvalidArgument))
	}
	if names := f.props.User[propExternalBlobFiles]; names != "" {
		dir := d.fs.PathDir(path)
		for _, n := range strings.Split(names, ",") {
			f.blobPaths = append(f.blobPaths, d.fs.PathJoin(dir, n))
		}
	}
	for _, bp := range f.blobPaths {
		bprops, err := verifyExternalBlobFile(d.fs, bp)
		if err != nil {
			return nil, ingestErrorf(path, err)
		}
		f.blobs = append(f.blobs, bprops)
	}
	corrupt := func(format string, args ...any) error {
		return ingestErrorf(path, base.CorruptionErrorf(path, 0, format, args...))
	}
	it := r.NewIter(sstable.IterOptions{})
	var prev []byte
	var points uint64
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if k.SeqNum() != 0 {
			it.Close()
			return nil, corrupt("entry %s is not at seqnum 0, as every entry of an external table is", k)
		}
		if prev != nil && d.cmp.Compare(k.UserKey, prev) <= 0 {
			it.Close()
			return nil, corrupt("key %q follows %q: the keys of an external table must strictly increase", k.UserKey, prev)
		}
		switch k.Kind() {
		case base.KindSet, base.KindDelete:
		case base.KindMerge:
			if d.opts.MergeOperator == nil {
				it.Close()
				return nil, ingestErrorf(path, fmt.Errorf("holds merge operands and Options.MergeOperator is not set: %w", ErrNoMergeOperator))
			}
			f.hasMerges = true
		case base.KindBlobIndex:
			x, err := blob.DecodeIndex(path, it.Value())
			if err != nil {
				it.Close()
				return nil, ingestErrorf(path, err)
			}
			if x.FileNum == 0 || int(x.FileNum) > len(f.blobs) {
				it.Close()
				return nil, corrupt("blob index of key %q names blob file %d of the %d it has", k.UserKey, x.FileNum, len(f.blobs))
			}
			if bs := f.blobs[x.FileNum-1]; x.Offset < blob.HeaderLen || x.Offset+x.Size > bs.Size-blob.FooterLen {
				it.Close()
				return nil, corrupt("blob index of key %q lies outside %s", k.UserKey, f.blobPaths[x.FileNum-1])
			}
		default:
			it.Close()
			return nil, corrupt("entry %s has a kind external tables do not hold", k)
		}
		if prev == nil {
			f.smallest = k.Clone()
		}
		prev = append(prev[:0], k.UserKey...)
		f.largest = base.InternalKey{UserKey: prev, Trailer: k.Trailer}
		points++
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return nil, ingestErrorf(path, err)
	}
	if points > 0 {
		f.largest = f.largest.Clone()
	}
	spans := r.RangeTombstones()
	for _, s := range spans {
		if len(s.Seqs) != 1 || s.Seqs[0] != 0 {
			return nil, corrupt("range tombstone [%q, %q) is not at seqnum 0 alone", s.Start, s.End)
		}
	}
	if len(spans) > 0 {
		first := base.MakeInternalKey(spans[0].Start, 0, base.KindRangeDelete).Clone()
		if points == 0 || base.InternalCompare(d.cmp.Compare, first, f.smallest) < 0 {
			f.smallest = first
		}
		end := base.MakeRangeDeleteSentinel(slices.Clone(spans[len(spans)-1].End))
		if points == 0 || base.InternalCompare(d.cmp.Compare, end, f.largest) > 0 {
			f.largest = end
		}
	}
	if points == 0 && len(spans) == 0 {
		return nil, ingestErrorf(path, base.InvalidArgumentf("the table is empty"))
	}
	if want := f.props.NumEntries - f.props.NumRangeDeletions; points != want {
		return nil, corrupt("holds %d point entries, its properties say %d", points, want)
	}
	return f, nil
}

// verifyExternalBlobFile checks a blob file beside an external table (its
// footer and whole-file checksum) and returns what its footer says.
func verifyExternalBlobFile(fs vfs.FS, path string) (blob.Properties, error) {
	f, err := fs.Open(path, vfs.SequentialAccess)
	if err != nil {
		return blob.Properties{}, err
	}
	r, err := blob.NewReader(f, blob.ReaderOptions{FileName: path})
	if err != nil {
		return blob.Properties{}, err
	}
	err = r.VerifyFileChecksum()
	props := r.Properties()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return props, err
}

// userBounds returns the user keys bounding f and whether the upper one is
// exclusive (a range-delete sentinel).
func (f *ingestFile) userBounds() (start, end []byte, endExclusive bool) {
	return f.smallest.UserKey, f.largest.UserKey, f.largest.IsExclusiveSentinel()
}

// overlaps reports whether f's user keys intersect g's.
func (f *ingestFile) overlaps(cmp base.Compare, g *ingestFile) bool {
	fs, fe, fx := f.userBounds()
	gs, ge, gx := g.userBounds()
	if c := cmp(fe, gs); c < 0 || (c == 0 && fx) {
		return false
	}
	if c := cmp(ge, fs); c < 0 || (c == 0 && gx) {
		return false
	}
	return true
}

// checkIngestOverlaps refuses files that overlap each other unless
// AllowOverlappingFiles, and reports whether any do.
func (d *DB) checkIngestOverlaps(files []*ingestFile, o *IngestExternalFileOptions) (bool, error) {
	for i, f := range files {
		for _, g := range files[:i] {
			if f.overlaps(d.cmp.Compare, g) {
				if !o.AllowOverlappingFiles {
					return true, base.InvalidArgumentf("shale: IngestExternalFile: %s and %s overlap (set IngestExternalFileOptions.AllowOverlappingFiles to ingest them, the later over the earlier)", g.path, f.path)
				}
				return true, nil
			}
		}
	}
	return false, nil
}

// placeIngestedFiles puts every file (and its blob files) into the database
// directory under new numbers and syncs the directory. A table whose
// entries point into blob files is rewritten with its blob indexes
// renumbered (the blob files themselves are linked or copied); any other
// table is linked (MoveFiles, where the file system can) or copied byte for
// byte. The files are in no version yet: after a crash Open removes them.
func (d *DB) placeIngestedFiles(files []*ingestFile, o *IngestExternalFileOptions) error {
	for _, f := range files {
		f.num = d.versions.NewFileNum()
		for range f.blobPaths {
			f.blobNums = append(f.blobNums, d.versions.NewFileNum())
		}
		for i, bp := range f.blobPaths {
			if err := d.linkOrCopy(bp, d.blobPath(f.blobNums[i]), o.MoveFiles); err != nil {
				return ingestErrorf(f.path, err)
			}
			f.blobPlaced++
		}
		var err error
		if len(f.blobPaths) > 0 {
			err = d.rewriteIngestedTable(f)
		} else {
			err = d.linkOrCopy(f.path, d.tablePath(f.num), o.MoveFiles)
		}
		if err != nil {
			return ingestErrorf(f.path, err)
		}
		f.placed = true
		st, err := d.fs.Stat(d.tablePath(f.num))
		if err != nil {
			return ingestErrorf(f.path, err)
		}
		f.size = uint64(st.Size())
		if err := d.ingestedChecksum(f); err != nil {
			return ingestErrorf(f.path, err)
		}
	}
	return d.syncDir()
}

// ingestedChecksum is the one place where the whole-file checksums of an
// ingested table and its blob files are computed, by the DB's
// FileChecksumGenFactory (none with NoFileChecksums), from the files as
// they lie in the database directory, for the MANIFEST (file_checksum.go).
func (d *DB) ingestedChecksum(f *ingestFile) error {
	factory := fileChecksumFactory(d.opts)
	sum := func(path string) ([]byte, string, error) {
		if factory.CreateFileChecksumGenerator(FileChecksumGenContext{FileName: path}) == nil {
			return nil, "", nil
		}
		return computeFileChecksum(d.fs, path, factory, "")
	}
	var err error
	if f.sum, f.sumName, err = sum(d.tablePath(f.num)); err != nil {
		return err
	}
	f.blobSums, f.blobSumNames = nil, nil
	for _, n := range f.blobNums {
		s, name, err := sum(d.blobPath(n))
		if err != nil {
			return err
		}
		f.blobSums = append(f.blobSums, s)
		f.blobSumNames = append(f.blobSumNames, name)
	}
	return nil
}

// removeIngestedFiles removes what placeIngestedFiles put in the database
// directory.
func (d *DB) removeIngestedFiles(files []*ingestFile) {
	for _, f := range files {
		if f.placed {
			_ = d.fs.Remove(d.tablePath(f.num))
		}
		for _, n := range f.blobNums[:f.blobPlaced] {
			_ = d.fs.Remove(d.blobPath(n))
		}
	}
}

// linkOrCopy gives dst the content of src, synced: a hard link when link
// is set and the file system can, else a copy. A failure removes dst.
func (d *DB) linkOrCopy(src, dst string, link bool) error {
	if l, ok := d.fs.(vfs.Linker); ok && link {
		if err := l.Link(src, dst); err == nil {
			// SSTFileWriter synced it; a file from elsewhere may not be.
			f, err := d.fs.OpenReadWrite(dst)
			if err == nil {
				err = f.Sync()
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				_ = d.fs.Remove(dst)
			}
			return err
		}
		// Another device, or no hard links: copy instead.
	}
	in, err := d.fs.Open(src, vfs.SequentialAccess)
	if err != nil {
		return err
	}
	defer in.Close()
	size, err := in.Size()
	if err != nil {
		return err
	}
	return vfs.CopyN(d.fs, in, dst, size)
}

// rewriteIngestedTable writes f's table into the database directory with
// its blob indexes renumbered to the blob files' database numbers (every
// entry stays at seqnum 0).
func (d *DB) rewriteIngestedTable(f *ingestFile) (err error) {
	tf, err := d.fs.Open(f.path, vfs.SequentialAccess)
	if err != nil {
		return err
	}
	r, err := sstable.NewReader(tf, sstable.ReaderOptions{Comparer: d.cmp, FileName: f.path})
	if err != nil {
		return err
	}
	defer r.Close()
	dst := d.tablePath(f.num)
	out, err := d.fs.Create(dst)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(out, dst, d.writerOptions(int64(f.props.DataSize)))
	defer func() {
		if err != nil {
			w.Abort()
			_ = d.fs.Remove(dst)
		}
	}()
	it := r.NewIter(sstable.IterOptions{})
	var idx []byte
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if k.Kind() == base.KindBlobIndex {
			x, err := blob.DecodeIndex(f.path, v)
			if err != nil {
				it.Close()
				return err
			}
			if x.FileNum == 0 || int(x.FileNum) > len(f.blobNums) {
				// Validated before, so the file changed since.
				it.Close()
				return base.CorruptionErrorf(f.path, 0, "blob index of key %q names blob file %d of the %d it has", k.UserKey, x.FileNum, len(f.blobNums))
			}
			x.FileNum = f.blobNums[x.FileNum-1]
			idx = blob.EncodeIndex(idx[:0], x)
			v = idx
		}
		if err = w.Add(k, v); err != nil {
			it.Close()
			return err
		}
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return err
	}
	for _, s := range r.RangeTombstones() {
		if err = w.AddRangeTombstone(s.Start, s.End, 0); err != nil {
			return err
		}
	}
	_, err = w.Close()
	return err
}

// ingestLocked places the request's files and logs the edit adding them.
// The caller leads the commit queue, so no write interleaves; d.mu is held
// on entry and exit but released for the IO.
func (d *DB) ingestLocked(w *writer) error {
	req := w.ingest
	o := req.opts
	if d.mu.bgErr != nil {
		return fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
	}
	// Memtables holding keys a file overlaps are flushed first: reads look
	// in memtables before tables, so an older memtable entry would hide the
	// ingested one.
	if d.memtablesOverlapLocked(req.files) {
		// Refused before the flush, which would change the database for
		// nothing: a file over memtable data needs a seqnum and cannot go
		// to the last level.
		switch {
		case o.DisallowBlockingFlush:
			return base.InvalidArgumentf("shale: IngestExternalFile: the files overlap a memtable and DisallowBlockingFlush is set")
		case o.DisallowGlobalSeqNo:
			return base.InvalidArgumentf("shale: IngestExternalFile: the files overlap a memtable, so they need a seqnum above its data, and DisallowGlobalSeqNo is set")
		case o.FailIfNotBottommostLevel:
			return base.InvalidArgumentf("shale: IngestExternalFile: the files overlap a memtable, so they cannot go to the last level, and FailIfNotBottommostLevel is set")
		}
		if err := d.makeRoomLocked(true, 0, w); err != nil {
			return err
		}
		for _, m := range d.mu.mem.queue {
			for !isClosedChan(m.flushed) {
				if d.mu.bgErr != nil {
					return fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
				}
				if d.mu.closing {
					return ErrClosed
				}
				d.maybeScheduleLocked()
				d.mu.compact.cond.Wait()
			}
		}
	}
	v := d.versions.Current()
	defer v.Unref()
	snapshots := len(d.mu.snapshots.list) > 0 && !o.DisableSnapshotConsistency
	last := d.mu.lastSeq
	numLevels := len(v.Levels)
	// With dynamic level sizes the levels between L0 and the base level
	// stay empty (RocksDB skips them too).
	co := d.picker.Options()
	baseLevel := 1
	if co.DynamicLevelBytes {
		baseLevel, _ = compact.TargetSizes(v, &co)
	}
	edit := &manifest.VersionEdit{}
	now := d.clock.Now()
	for _, f := range req.files {
		start, end, _ := f.userBounds()
		level, overlapsData := 0, false
		if req.overlapping {
			// Files overlapping each other stack in L0, later over earlier.
			overlapsData = true
		} else {
			for lvl := 0; lvl < numLevels; lvl++ {
				if len(v.Overlaps(d.cmp.Compare, lvl, start, end)) > 0 {
					overlapsData = true
					break
				}
				if lvl > 0 && (lvl < baseLevel || d.compactionWritesOverLocked(lvl, start, end)) {
					continue
				}
				level = lvl
			}
		}
		if o.FailIfNotBottommostLevel && level != numLevels-1 {
			return base.InvalidArgumentf("shale: IngestExternalFile: %s cannot go to the last level L%d (it would go to L%d) and FailIfNotBottommostLevel is set", f.path, numLevels-1, level)
		}
		if overlapsData || snapshots {
			if o.DisallowGlobalSeqNo {
				return base.InvalidArgumentf("shale: IngestExternalFile: %s needs a seqnum above existing data (it overlaps data or snapshots are open) and DisallowGlobalSeqNo is set", f.path)
			}
			last++
			f.seq = last
		}
		f.level = level
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: level, Meta: d.ingestedMeta(f, now.Unix(), now.UnixNano())})
		for i, n := range f.blobNums {
			b := f.blobs[i]
			edit.NewBlobFiles = append(edit.NewBlobFiles, &manifest.BlobFileMetadata{FileNum: n, TotalCount: b.Count,
				TotalBytes: b.Size - blob.HeaderLen - blob.FooterLen, Size: b.Size,
				ChecksumMethod: f.blobSumNames[i], ChecksumValue: f.blobSums[i]})
		}
	}
	// The reader of each table applies its global seqnum from its first
	// open, which may come as soon as the edit is applied.
	for _, f := range req.files {
		if f.seq != 0 {
			d.globalSeqs.Store(f.num, f.seq)
		}
	}
	// No compaction starts while the edit is written: one picked now could
	// write over the ranges the files were placed in.
	d.mu.ingesting = true
	d.mu.lastSeq = last
	d.mu.Unlock()
	err := d.logAndApply(edit, last)
	d.mu.Lock()
	d.mu.ingesting = false
	d.mu.compact.cond.Broadcast()
	if err != nil {
		// The edit may be durable: stop writes until Resume, as for any
		// MANIFEST failure.
		req.applied = true // the files may be live: keep them
		d.setBackgroundErrorLocked(BackgroundErrorManifestWrite, fmt.Errorf("shale: recording ingested files: %w", err))
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	req.applied = true
	d.publishReadStateLocked()
	d.visibleSeq.Store(uint64(last))
	d.maybeScheduleLocked()
	for _, f := range req.files {
		d.logger.Info("ingested external table", "path", f.path, "table", f.num, "level", f.level,
			"global_seqnum", uint64(f.seq), "bytes", f.size, "blob_files", len(f.blobNums))
	}
	return nil
}

// ingestedMeta is the FileMetadata of an ingested table at f.seq.
func (d *DB) ingestedMeta(f *ingestFile, nowSecs, nowNanos int64) *manifest.FileMetadata {
	p := f.props
	atSeq := func(k base.InternalKey) base.InternalKey {
		if k.IsExclusiveSentinel() {
			return k
		}
		return base.MakeInternalKey(k.UserKey, f.seq, k.Kind())
	}
	m := &manifest.FileMetadata{
		FileNum:              f.num,
		Size:                 f.size,
		Smallest:             atSeq(f.smallest),
		Largest:              atSeq(f.largest),
		SmallestSeq:          f.seq,
		LargestSeq:           f.seq,
		GlobalSeqNum:         f.seq,
		NumEntries:           p.NumEntries,
		NumDeletions:         p.NumDeletions,
		NumRangeDeletions:    p.NumRangeDeletions,
		RawKeySize:           p.RawKeySize,
		RawValueSize:         p.RawValueSize,
		NumDataBlocks:        p.NumDataBlocks,
		OldestAncesterTime:   uint64(nowSecs),
		FileCreationTime:     uint64(nowSecs),
		BlobFiles:            slices.Clone(f.blobNums),
		FileChecksum:         f.sum,
		FileChecksumFuncName: f.sumName,
	}
	if p.NumDeletions > 0 {
		m.OldestTombstoneTime = uint64(nowNanos)
	}
	return m
}

// memtablesOverlapLocked reports whether a memtable holds a key or range
// tombstone in the range of one of files. d.mu is held.
func (d *DB) memtablesOverlapLocked(files []*ingestFile) bool {
	mems := append([]*memTable{d.mu.mem.mutable}, d.mu.mem.queue...)
	cmp := d.cmp.Compare
	for _, m := range mems {
		if m.Empty() {
			continue
		}
		for _, f := range files {
			start, end, excl := f.userBounds()
			it := m.NewIter()
			ok := it.SeekGE(start)
			if ok {
				c := cmp(it.Key().UserKey, end)
				ok = c < 0 || (c == 0 && !excl)
			}
			it.Close()
			if ok {
				return true
			}
			for _, s := range m.RangeTombstones().Spans() {
				if cmp(s.End, start) > 0 {
					if c := cmp(s.Start, end); c < 0 || (c == 0 && !excl) {
						return true
					}
				}
			}
		}
	}
	return false
}

// compactionWritesOverLocked reports whether a running compaction writes
// to level over a range intersecting [start, end]. d.mu is held.
func (d *DB) compactionWritesOverLocked(level int, start, end []byte) bool {
	cmp := d.cmp.Compare
	for c := range d.mu.compact.inProgress {
		if c.OutputLevel == level && cmp(c.Smallest, end) <= 0 && cmp(start, c.Largest) <= 0 {
			return true
		}
	}
	return false
}

// isClosedChan reports whether ch is closed.
func isClosedChan(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// tableGlobalSeqNum is the global seqnum the reader of table num applies
// (manifest.FileMetadata.GlobalSeqNum; 0 for tables the DB wrote). The map
// holds every ingested table of the version Open loaded (noteGlobalSeqNums)
// and every table IngestExternalFile added, before its edit. A lookup in
// the current version instead would cost every table open a walk of all
// the files, and miss a table a compaction has since replaced that an
// older version still reads.
func (d *DB) tableGlobalSeqNum(num base.FileNum) base.SeqNum {
	if s, ok := d.globalSeqs.Load(num); ok {
		return s.(base.SeqNum)
	}
	return 0
}

// noteGlobalSeqNums records the global seqnums of the ingested tables of
// the current version, for their readers: Open calls it once the version
// is loaded, and so must anything else that installs versions holding
// tables it did not add itself (a follower replaying a MANIFEST).
func (d *DB) noteGlobalSeqNums() {
	v := d.versions.Current()
	defer v.Unref()
	for _, files := range v.Levels {
		for _, f := range files {
			if f.GlobalSeqNum != 0 {
				d.globalSeqs.Store(f.FileNum, f.GlobalSeqNum)
			}
		}
	}
}

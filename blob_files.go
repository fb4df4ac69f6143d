package shale

import (
	"errors"
	"fmt"
	"slices"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// Key-value separation (Options.EnableBlobFiles): the blob side of flushes
// and compactions, and the reads of blob values.
//
// A flush or compaction whose output level is at least
// BlobFileStartingLevel writes each Set value of at least MinBlobSize bytes
// (and not empty) to its current blob file, and the table gets a
// KindBlobIndex entry holding the encoded blob.Index instead. A job has one
// blob file open at a time, started at its first such value and finished
// (footer, sync, close) once it reaches BlobFileSize, and at the end of
// the job; a job's blob files are synced before the MANIFEST edit that adds
// them, with the tables referencing them. BlobIndex entries of the inputs
// pass through unchanged; each output table records every blob file its
// entries point into (FileMetadata.BlobFiles).
//
// Garbage. A compaction counts the blob references it reads (every
// BlobIndex entry of its input) and those it writes; the difference, per
// blob file, is what it dropped (overwritten or deleted values) or
// relocated, recorded as VersionEdit.BlobGarbage, and dated when some was
// dropped (blobGarbageDate, for delete persistence). Blob bytes, here and in BlobFileMetadata's
// TotalBytes, are record bytes (the record's length, block and trailer:
// blobRecordBytes), so a file's TotalBytes is its size less header and
// footer, and garbage bytes are the disk bytes GC would reclaim. Input
// tables that secondary tombstones drop whole, and blocks they skip, are
// not read, so their references are not counted as garbage: the count may
// fall short, never exceed, what is dropped.
//
// Deletion. Every edit of a flush or compaction also deletes the blob files
// no table references once it applies (Version.UnreferencedBlobFiles),
// computed and logged under blobEditMu so that the version it is computed
// from is the one it applies to. The files leave the disk once no version
// from before their deletion is in use (deleteObsoleteFiles).

// blobRecordOverhead is what a blob record holds beside its stored block:
// the 4-byte length in front and the 5-byte block trailer (blob/doc.go).
const blobRecordOverhead = 4 + 5

// blobRecordBytes is the bytes of the record x locates.
func blobRecordBytes(x blob.Index) uint64 { return x.Size + blobRecordOverhead }

// blobWritePrealloc bounds the preallocation step of blob files: a job's
// blob file seldom reaches a large BlobFileSize, and what is preallocated
// is trimmed at Close anyway.
const blobWritePrealloc = 64 << 20

// blobRefCount counts blob references: values and their record bytes.
type blobRefCount struct{ count, bytes uint64 }

// blobOutput is the blob side of one flush or compaction: the blob files
// it writes and the blob references its tables hold.
type blobOutput struct {
	d *DB
	// separate says values go to blob files (the job's level and options
	// allow it); minSize and fileSize are the job's MinBlobSize and
	// BlobFileSize.
	separate          bool
	minSize, fileSize int64
	wo                blob.WriterOptions
	// w writes the current blob file (nil when none is open); bytes are
	// the record bytes it holds so far.
	w     *blob.Writer
	wNum  base.FileNum
	bytes uint64
	// sumGen hashes the current blob file's bytes as they are written
	// (nil: no checksum is recorded).
	sumGen FileChecksumGenerator
	// files are the finished blob files; created every blob file started,
	// for removal when the job fails.
	files   []*manifest.BlobFileMetadata
	created []base.FileNum
	// written counts the references the outputs hold per blob file that
	// came from the inputs (passed through), for the garbage.
	written map[base.FileNum]blobRefCount
	idxBuf  []byte
	// fresh are the values written by a flush with PrepopulateBlobCache, to
	// put in the cache once their file is finished.
	prepopulate bool
	fresh       []prepopulated
	// flush says the job is a flush (its writes go first through
	// Options.RateLimiter); jobID and reason are what the listener is told
	// of its blob files.
	flush  bool
	jobID  int
	reason FileReason
	// gc, when set, relocates the values of old blob files (garbage
	// collection, blob_gc.go).
	gc *blobGC
}

// prepopulated is a value a flush wrote, for the blob cache.
type prepopulated struct {
	x          blob.Index
	key, value []byte
}

// newBlobOutput returns the blob side of a job writing to level (flush for
// a flush), with the options o the job started with.
func (d *DB) newBlobOutput(o *Options, level int, flush bool) *blobOutput {
	b := &blobOutput{d: d, written: map[base.FileNum]blobRefCount{}, flush: flush}
	// SecondaryDeleteKey reads Set values, which a blob index is not.
	b.separate = o.EnableBlobFiles && level >= o.BlobFileStartingLevel && d.opts.SecondaryDeleteKey == nil
	b.minSize, b.fileSize = o.MinBlobSize, o.BlobFileSize
	b.wo = blob.WriterOptions{Compression: o.BlobCompression, TargetFileSize: min(o.BlobFileSize, blobWritePrealloc),
		BytesPerSync: o.BytesPerSync}
	b.prepopulate = flush && o.PrepopulateBlobCache && d.blobCache != nil
	return b
}

// add writes the entry (k, v) to table output o: a value to separate goes
// to the blob file and o gets its index; a blob index passing through is
// noted among o's references.
func (b *blobOutput) add(o *tableOutput, k base.InternalKey, v []byte) error {
	switch k.Kind() {
	case base.KindBlobIndex:
		x, err := blob.DecodeIndex("", v)
		if err != nil {
			// The path is made only for the error: made for every entry,
			// it cost 7% of the CPU of a blob-heavy compaction.
			if _, named := blob.DecodeIndex(b.d.tablePath(o.fileNum), v); named != nil {
				err = named
			}
			return err
		}
		if b.gc.relocates(x.FileNum) {
			// The value leaves its old file (which the inputs' reference
			// counts make garbage there) and is written as a Set value
			// would be: to this job's blob file, or inline.
			v, err := b.gc.read(x, k.UserKey)
			if err != nil {
				return err
			}
			return b.addSet(o, base.MakeInternalKey(k.UserKey, k.SeqNum(), base.KindSet), v)
		}
		o.noteBlobRef(x.FileNum)
		c := b.written[x.FileNum]
		c.count++
		c.bytes += blobRecordBytes(x)
		b.written[x.FileNum] = c
	case base.KindSet:
		return b.addSet(o, k, v)
	}
	return o.w.Add(k, v)
}

// addSet writes the Set entry (k, v) to o: its value to the blob file when
// the job separates values of its size, leaving o a blob index, and inline
// otherwise.
func (b *blobOutput) addSet(o *tableOutput, k base.InternalKey, v []byte) error {
	if !b.separate || len(v) == 0 || int64(len(v)) < b.minSize {
		return o.w.Add(k, v)
	}
	x, err := b.write(k.UserKey, v)
	if err != nil {
		return err
	}
	o.noteBlobRef(x.FileNum)
	b.idxBuf = blob.EncodeIndex(b.idxBuf[:0], x)
	return o.w.Add(base.MakeInternalKey(k.UserKey, k.SeqNum(), base.KindBlobIndex), b.idxBuf)
}

// write adds the value of key to the current blob file, starting one when
// none is open and finishing it once it reaches the job's BlobFileSize.
func (b *blobOutput) write(key, value []byte) (blob.Index, error) {
	if b.w == nil {
		num := b.d.versions.NewFileNum()
		name := b.d.blobPath(num)
		var createOpts []vfs.OpenOption
		if b.d.opts.UseDirectIOForFlushAndCompaction {
			// As the job's tables: written past the page cache.
			createOpts = append(createOpts, vfs.DirectIO)
		}
		f, err := b.d.fs.Create(name, createOpts...)
		if err != nil {
			return blob.Index{}, err
		}
		// Hashed as written, as the tables are (file_checksum.go).
		f, b.sumGen = b.d.newChecksummedFile(f, name)
		if rl := b.d.opts.RateLimiter; rl != nil {
			// As the job's tables: flushes first.
			pri := IOPriorityLow
			if b.flush {
				pri = IOPriorityHigh
			}
			f = &rateLimitedFile{File: f, limiter: rl, pri: pri, cancel: b.d.bgCancel}
		}
		b.created = append(b.created, num)
		wo := b.wo
		wo.FileNum, wo.FileName = num, name
		b.w, b.wNum, b.bytes = blob.NewWriter(f, wo), num, 0
	}
	x, err := b.w.Add(key, value)
	if err != nil {
		return blob.Index{}, err
	}
	b.bytes += blobRecordBytes(x)
	if b.prepopulate {
		b.fresh = append(b.fresh, prepopulated{x: x, key: slices.Clone(key), value: slices.Clone(value)})
	}
	if int64(b.w.Size()) >= b.fileSize {
		return x, b.finishFile()
	}
	return x, nil
}

// finishFile finishes the current blob file (footer, sync, close) and
// records its metadata.
func (b *blobOutput) finishFile() error {
	if b.w == nil {
		return nil
	}
	w, num := b.w, b.wNum
	b.w = nil
	m, err := w.Close()
	if err != nil {
		return err
	}
	if m.Count == 0 {
		return fmt.Errorf("shale: internal error: blob file %s finished without values", num)
	}
	// The whole file's checksum, footer included, by the DB's generator:
	// one mechanism for tables and blob files. (Blob files recorded before
	// it hold the footer's checksum under "crc32c" or "xxhash64".)
	sum, method := finishFileChecksum(b.sumGen)
	b.sumGen = nil
	b.files = append(b.files, &manifest.BlobFileMetadata{FileNum: num, TotalCount: m.Count, TotalBytes: b.bytes,
		Size: m.Size, ChecksumMethod: method, ChecksumValue: sum})
	b.d.opts.Statistics.add(TickerBlobFileBytesWritten, m.Size)
	if b.prepopulate {
		b.prepopulateCache(num)
	}
	return nil
}

// prepopulateCache puts the values just written to blob file num in the
// blob cache (PrepopulateBlobCache), opening the file in the file cache.
// A failure only leaves them uncached.
func (b *blobOutput) prepopulateCache(num base.FileNum) {
	fresh := b.fresh
	b.fresh = b.fresh[:0]
	f, err := b.d.fileCache.findBlob(num)
	if err != nil {
		return
	}
	defer f.release()
	for _, p := range fresh {
		f.blobReader.AddToCache(p.x, p.key, p.value)
	}
}

// finish finishes the open blob file at the end of a job.
func (b *blobOutput) finish() error { return b.finishFile() }

// abort stops the job's blob writing and removes every blob file it
// started (closing those PrepopulateBlobCache opened); the listener is told
// they were created with err, and so removed.
func (b *blobOutput) abort(err error) {
	if b.w != nil {
		b.w.Abort()
		b.w = nil
	}
	for _, n := range b.created {
		b.d.fileCache.evictObsolete(fileKindBlob, n)
	}
	b.d.removeBlobFiles(b.created)
	for _, n := range b.created {
		b.d.eventBlobCreated(BlobFileInfo{JobID: b.jobID, FileNum: uint64(n), Path: b.d.blobPath(n), Reason: b.reason, Err: err})
	}
	b.files, b.created = nil, nil
}

func (d *DB) eventBlobCreated(info BlobFileInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnBlobFileCreated(info) })
	}
}

func (d *DB) eventBlobDeleted(info BlobFileInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnBlobFileDeleted(info) })
	}
}

// removeBlobFiles removes blob files that no edit has added.
func (d *DB) removeBlobFiles(nums []base.FileNum) {
	for _, n := range nums {
		_ = d.fs.Remove(d.blobPath(n))
	}
}

// removeBlobMetas removes the blob files of metas, which job jobID wrote
// and no edit added (its job failed after writing them), and tells the
// listener.
func (d *DB) removeBlobMetas(jobID int, metas []*manifest.BlobFileMetadata) {
	for _, m := range metas {
		d.fileCache.evictObsolete(fileKindBlob, m.FileNum)
		name := d.blobPath(m.FileNum)
		err := d.fs.Remove(name)
		d.eventBlobDeleted(BlobFileInfo{JobID: jobID, FileNum: uint64(m.FileNum), Path: name, Size: m.Size, Reason: FileReasonFailedJob, Err: err})
	}
}

// noteBlobRef adds blob file num to the references of o.
func (o *tableOutput) noteBlobRef(num base.FileNum) {
	if i, found := slices.BinarySearch(o.blobRefs, num); !found {
		o.blobRefs = slices.Insert(o.blobRefs, i, num)
	}
}

// blobRefCounter wraps a compaction's merged input and counts, per blob
// file, the blob references it yields: with what the outputs write
// (blobOutput.written), the garbage the compaction makes.
type blobRefCounter struct {
	base.InternalIterator
	read map[base.FileNum]blobRefCount
}

func (c *blobRefCounter) note(ok bool) bool {
	if ok && c.Key().Kind() == base.KindBlobIndex {
		// A damaged index is reported by the output's decode.
		if x, err := blob.DecodeIndex("", c.Value()); err == nil {
			r := c.read[x.FileNum]
			r.count++
			r.bytes += blobRecordBytes(x)
			c.read[x.FileNum] = r
		}
	}
	return ok
}

// First implements base.InternalIterator, counting the entry.
func (c *blobRefCounter) First() bool { return c.note(c.InternalIterator.First()) }

// Next implements base.InternalIterator, counting the entry.
func (c *blobRefCounter) Next() bool { return c.note(c.InternalIterator.Next()) }

// blobGarbage returns, ascending by file, the references read and not
// written: the blob values a compaction dropped or relocated (relocated
// counts the latter per file). The garbage of a file is dated by date when
// some of it was dropped: values relocated elsewhere are not deleted data.
func blobGarbage(read, written map[base.FileNum]blobRefCount, relocated map[base.FileNum]uint64, date uint64) []manifest.BlobGarbage {
	var out []manifest.BlobGarbage
	for num, r := range read {
		w := written[num]
		if r.count > w.count {
			g := manifest.BlobGarbage{FileNum: num, Count: r.count - w.count, Bytes: r.bytes - w.bytes}
			if g.Count > relocated[num] {
				g.Time = date
			}
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b manifest.BlobGarbage) int { return compareFileNums(a.FileNum, b.FileNum) })
	return out
}

func compareFileNums(a, b base.FileNum) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// logAndApplyDeletingBlobs logs edit, a flush's or compaction's, after
// adding to it the deletion of every blob file that no table references
// once it applies, calling installed (when not nil) as the new version is
// installed (manifest.VersionSet.LogAndApplyThen). blobEditMu keeps other
// such edits out between the computation and the apply.
func (d *DB) logAndApplyDeletingBlobs(edit *manifest.VersionEdit, installed func()) error {
	d.blobEditMu.Lock()
	defer d.blobEditMu.Unlock()
	v := d.versions.Current()
	edit.DeletedBlobFiles = append(edit.DeletedBlobFiles, v.UnreferencedBlobFiles(edit)...)
	v.Unref()
	return d.versions.LogAndApplyThen(edit, installed)
}

// readBlobValue returns the value the blob index idx (of key) locates,
// read through the file cache's reader of its blob file. The value may
// alias cached memory: copy it before changing it.
func (d *DB) readBlobValue(key, idx []byte, fillCache bool, stats *blob.ReadStats) ([]byte, error) {
	x, err := blob.DecodeIndex("blob index of key", idx)
	if err != nil {
		return nil, err
	}
	f, err := d.fileCache.findBlob(x.FileNum)
	if err != nil {
		return nil, err
	}
	v, err := f.blobReader.GetCounted(x, key, fillCache, stats)
	f.release()
	return v, err
}

// checkTableBlobRefs reads every blob index of table r (at path, recording
// the blob references refs) and reads its value back through open (the
// reader of a live blob file; an error for one that is not live; nil,
// without error, for one the caller has already found damaged, whose
// indexes are then not read). It
// returns the number of blob indexes and the first error: an index that
// does not decode, that names a blob file the table does not record or
// that is not live (a dangling reference), or whose value does not read
// back (damage in the blob file, reported by the blob reader).
func checkTableBlobRefs(path string, r *sstable.Reader, refs []base.FileNum, open func(base.FileNum) (*blob.Reader, error)) (int, error) {
	it := r.NewIter(sstable.IterOptions{})
	n := 0
	var err error
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		k := it.Key()
		if k.Kind() != base.KindBlobIndex {
			continue
		}
		n++
		var x blob.Index
		if x, err = blob.DecodeIndex(path, it.Value()); err != nil {
			break
		}
		if _, found := slices.BinarySearch(refs, x.FileNum); !found {
			err = base.CorruptionErrorf(path, 0, "key %q holds blob index %s into a blob file the MANIFEST does not record for the table", k.UserKey, x)
			break
		}
		var br *blob.Reader
		if br, err = open(x.FileNum); err != nil || br == nil {
			continue
		}
		_, err = br.GetCounted(x, k.UserKey, false, nil)
	}
	return n, errors.Join(err, it.Error(), it.Close())
}

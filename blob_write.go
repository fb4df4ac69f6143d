package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// Write-time key-value separation (Options.EnableBlobWriteSeparation).
//
// The commit leader appends each Set value of at least MinBlobSize bytes
// of its group to the active blob file of the mutable memtable, and the
// WAL record and the memtable get the batch rewritten with a KindBlobIndex
// entry in its place. A value is then written once (to its blob file)
// instead of twice (WAL, then the flush's blob file), and a flush of
// such entries writes a table of indexes only.
//
// A group that syncs its WAL is left as it is: its values stay inline (in
// the WAL and the memtable, written twice, as without the option) and the
// flush separates them into blob files of its own. The group then syncs
// one file, not two, unless earlier unsynced groups left the memtable's
// blob file dirty: it syncs that too, beside the WAL (see below).
//
// Invariants, relied on by recovery:
//   - The blob bytes of a group are handed to the OS (blob.Writer.Flush)
//     before its WAL record is: a crash of the process never leaves a WAL
//     record whose value is not in the file.
//   - A memtable's blob files other than its active one are synced when
//     they are rolled (BlobFileSize), and the active one with every WAL
//     sync that covers its records: before the sync before a secondary
//     tombstone and the close of a WAL at rotation or Close, and beside
//     the WAL's write and sync for a synced group, which is acknowledged
//     once both are done. A power loss between the two leaves at worst an
//     unacknowledged WAL record whose value is lost, and recovery ends the
//     WAL there: an acknowledged synced write never points at lost bytes,
//     and the older WALs never do.
//   - A blob file whose write or sync failed is never finished and added
//     to the version: its flush reads the memtable's values back from it
//     (the page cache holds them, verified by their checksums) and writes
//     them anew (relocatingIter), since after a failed sync the file's
//     bytes on disk are not to be trusted. It stays on disk for the WAL
//     until the next Open's sweep.
//   - Every value of a memtable's blob files belongs to that memtable
//     (files are per memtable): its flush adds them to the version with
//     the tables, recording as garbage the values the flush dropped.
//
// Recovery reads each blob index of a WAL back from its file and replays
// the value inline (walBlobResolver), so the recovered memtables hold
// values, and the old files are deleted once the flush of what they held
// is in the MANIFEST. A value whose record is cut off or ends in zeros (an
// unsynced value a power loss took while its WAL record survived) ends the
// WAL there, as a torn record does; a record present and wrong is
// corruption (walBlobResolver.notWritten).
//
// Reads of a memtable's blob index go through the file cache as those of
// a table's do: an unfinished file is opened with blob.ReaderOptions
// Unfinished. A blob file is pinned (memBlobPins) from its creation until
// the last memtable holding its indexes is released, so that neither the
// sweep of unknown files nor the deletion of an obsolete blob file takes
// it from a reader of an old read state.

// memBlobFile is one blob file written by the commit path for a memtable.
type memBlobFile struct {
	num    base.FileNum
	w      *blob.Writer
	sumGen FileChecksumGenerator
	// bytes are the record bytes written (blobRecordBytes): the file's
	// TotalBytes once finished.
	bytes uint64
	// dirty says records were handed to the OS since the last sync.
	dirty bool
	// failed is set once a write or sync of the file failed.
	failed bool
	// zeroEnd is where the zeros written ahead of the records end
	// (zeroAhead); noZeros says the file cannot take them.
	zeroEnd int64
	noZeros bool
	// meta is set once the file is finished (by its memtable's flush).
	meta *manifest.BlobFileMetadata
	// closed is set once the writer is closed or aborted.
	closed bool
	// file is the file the writer writes (for presync); presyncs is the
	// background sync started as the memtable nears full, which the
	// file's close waits for.
	file       vfs.File
	presyncs   sync.WaitGroup
	presync    bool
	presyncErr error
}

// startPresync syncs a's data in the background, so that the sync the
// memtable's rotation makes before closing its WAL finds little left to
// write: the commit leader waits for that one. Errors are left to it.
func (a *memBlobFile) startPresync() {
	if a.presync {
		return
	}
	a.presync = true
	a.presyncs.Add(1)
	go func() {
		defer a.presyncs.Done()
		// A failure is reported by the next sync: the kernel reports a
		// failed writeback once.
		a.presyncErr = a.file.SyncData()
	}()
}

// memBlobs is the blob side of one memtable. Only the commit leader
// touches it while the memtable is mutable; once it is immutable, only its
// flush (or Close).
type memBlobs struct {
	files []*memBlobFile
	// charge is the bytes of values sent to blob files: the memtable is
	// full when its arena and charge reach the write buffer size, so that
	// flushes keep their cadence and record the garbage of overwritten
	// values as often as without separation.
	charge int
	// rolled is set when the last file reached BlobFileSize: the next
	// value starts another.
	rolled bool
	// unadded are the files the memtable's flush did not add to the
	// version (no table references them): they are removed once the
	// memtable is released after the flush installed.
	unadded []base.FileNum
	// fresh are the values the current group wrote, for the blob cache
	// (PrepopulateBlobCache); their key and value alias the batches.
	fresh []freshBlob
}

// freshBlob is a value written at commit, for the blob cache.
type freshBlob struct {
	num        base.FileNum
	x          blob.Index
	key, value []byte
}

// prepopulateMemBlobs puts the values the group wrote into the blob cache
// (PrepopulateBlobCache, which RocksDB applies to the values a flush
// writes: here they are written at commit). Their records are in the
// files by now, so their readers open; a file that does not is skipped.
func (d *DB) prepopulateMemBlobs(mem *memTable) {
	for _, fb := range mem.blobs.fresh {
		f, err := d.fileCache.findBlob(fb.num)
		if err != nil {
			continue
		}
		f.blobReader.AddToCache(fb.x, fb.key, fb.value)
		f.release()
	}
}

// nums returns the numbers of the files. The caller holds d.mu, under
// which files grows (newMemBlobFile).
func (m *memBlobs) nums() []base.FileNum {
	out := make([]base.FileNum, len(m.files))
	for i, f := range m.files {
		out[i] = f.num
	}
	return out
}

// active returns the file values are appended to, nil for none.
func (m *memBlobs) active() *memBlobFile {
	if len(m.files) == 0 || m.rolled {
		return nil
	}
	return m.files[len(m.files)-1]
}

// memBlobPins counts, per blob file, the memtables that hold indexes into
// it and are not yet released.
type memBlobPins struct {
	mu sync.Mutex
	n  map[base.FileNum]int
	// finished are the pinned files whose flush has finished them: the
	// file cache opens them as finished files.
	finished map[base.FileNum]bool
	// dropped are pinned files their memtable's flush left out of the
	// version; obsolete those of them no memtable holds any more, for
	// deleteObsoleteFiles.
	dropped  map[base.FileNum]bool
	obsolete []base.FileNum
}

func (p *memBlobPins) pin(num base.FileNum) {
	p.mu.Lock()
	if p.n == nil {
		p.n = map[base.FileNum]int{}
		p.finished = map[base.FileNum]bool{}
		p.dropped = map[base.FileNum]bool{}
	}
	p.n[num]++
	p.mu.Unlock()
}

func (p *memBlobPins) unpin(num base.FileNum) {
	p.mu.Lock()
	if p.n[num]--; p.n[num] <= 0 {
		if p.dropped[num] {
			p.obsolete = append(p.obsolete, num)
		}
		delete(p.n, num)
		delete(p.finished, num)
		delete(p.dropped, num)
	}
	p.mu.Unlock()
}

// drop marks num, pinned, as left out of the version by its memtable's
// flush: it is obsolete once unpinned.
func (p *memBlobPins) drop(num base.FileNum) {
	p.mu.Lock()
	if p.n[num] > 0 {
		p.dropped[num] = true
	}
	p.mu.Unlock()
}

// takeObsolete returns the dropped files no memtable holds any more.
func (p *memBlobPins) takeObsolete() []base.FileNum {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.obsolete
	p.obsolete = nil
	return out
}

// pinned reports whether a live memtable holds indexes into num.
func (p *memBlobPins) pinned(num base.FileNum) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[num] > 0
}

// unfinished reports whether num is a memtable's blob file not yet
// finished by its flush.
func (p *memBlobPins) unfinished(num base.FileNum) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[num] > 0 && !p.finished[num]
}

func (p *memBlobPins) markFinished(num base.FileNum) {
	p.mu.Lock()
	if p.n[num] > 0 {
		p.finished[num] = true
	}
	p.mu.Unlock()
}

// writeSeparation says whether the commit path separates values under o,
// and from which size.
func (d *DB) writeSeparation(o *Options) (minSize int64, ok bool) {
	ok = o.EnableBlobFiles && o.EnableBlobWriteSeparation && o.BlobFileStartingLevel == 0 &&
		d.opts.SecondaryDeleteKey == nil && !d.readOnly
	return max(o.MinBlobSize, 1), ok
}

// separateGroup writes the values of the group to separate to mem's blob
// files and sets each writer's walData to its batch with blob indexes in
// their place (nil: the batch goes as it is), and hands the blob bytes to
// the OS. When the group syncs its WAL, the blob file's sync starts in the
// background and synced returns its outcome: the caller waits for it
// before acknowledging the group. The caller leads the commit queue and
// does not hold d.mu.
func (d *DB) separateGroup(mem *memTable, group []*writer, syncWAL bool) (synced func() error, err error) {
	o := d.mutableOptions()
	minSize, ok := d.writeSeparation(o)
	for _, w := range group {
		w.walData = nil
		// A synced group keeps its values inline, in the WAL (its flush
		// separates them): one file to sync rather than two, and synced
		// writes as fast as without write-time separation.
		if !ok || syncWAL || w.batch.maxSetValue < minSize {
			continue
		}
		data, err := d.separateBatch(mem, w.batch.data, w.walBuf[:0], minSize, o)
		if err != nil {
			return nil, err
		}
		w.walBuf, w.walData = data, data
	}
	defer func() { clear(mem.blobs.fresh); mem.blobs.fresh = mem.blobs.fresh[:0] }()
	a := mem.blobs.active()
	if a == nil || !a.dirty {
		d.prepopulateMemBlobs(mem)
		return nil, nil
	}
	if err := a.w.Flush(); err != nil {
		a.failed = true
		return nil, err
	}
	d.prepopulateMemBlobs(mem)
	if !syncWAL {
		return nil, nil
	}
	if err := a.waitPresync(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- a.file.SyncData() }()
	return func() error {
		if err := <-done; err != nil {
			a.failed = true
			return fmt.Errorf("shale: syncing blob file %s: %w", a.num, err)
		}
		a.dirty = false
		d.zeroAhead(a, mem)
		return nil
	}, nil
}

// zeroAhead keeps zeros written ahead of the records of a, the active blob
// file of mem, once synced writes use it, as the WAL does (wal.WriterOptions
// ZeroFill): their fdatasync then writes data only, not the file's size and
// block map. The zeros reach the second multiple of the step past the
// records, renewed when the records come within half a step of their end;
// the step is the WAL's (256 KiB, or the write buffer when smaller).
func (d *DB) zeroAhead(a *memBlobFile, mem *memTable) {
	step := min(int64(mem.writeBufferSize), wal.DefaultZeroFillStep)
	size := int64(a.w.Size())
	if step <= 0 || a.noZeros || a.zeroEnd-size > step/2 {
		return
	}
	end := (size/step + 2) * step
	if err := a.w.ZeroAhead(end); err != nil {
		// A hint: the records are as they were; the file cannot.
		a.noZeros = true
		return
	}
	a.zeroEnd = end
}

// waitPresync waits for the background sync and returns its failure,
// marking the file failed.
func (a *memBlobFile) waitPresync() error {
	a.presyncs.Wait()
	if err := a.presyncErr; err != nil {
		a.failed = true
		return fmt.Errorf("shale: syncing blob file %s: %w", a.num, err)
	}
	return nil
}

// sync syncs the file's records.
func (a *memBlobFile) sync() error {
	if err := a.waitPresync(); err != nil {
		return err
	}
	if err := a.w.Sync(); err != nil {
		a.failed = true
		return err
	}
	a.dirty = false
	return nil
}

// separateBatch returns data (an encoded batch) rewritten into dst with
// the values of its Sets of at least minSize bytes in mem's blob files
// and blob indexes in their place.
func (d *DB) separateBatch(mem *memTable, data, dst []byte, minSize int64, o *Options) ([]byte, error) {
	r, ok := newBatchReader(data)
	if !ok {
		return nil, base.CorruptionErrorf("batch", 0, "batch shorter than its header")
	}
	dst = append(dst, data[:batchHeaderLen]...)
	var idx []byte
	for {
		kind, key, value, ok, malformed := r.next()
		if malformed {
			return nil, base.CorruptionErrorf("batch", 0, "malformed batch at seqnum %d", r.seq)
		}
		if !ok {
			return dst, nil
		}
		// A value too large for a blob record stays inline: the write
		// goes on as without write-time separation.
		if kind == base.KindSet && int64(len(value)) >= minSize && len(key)+len(value)+binary.MaxVarintLen64 <= block.MaxLen {
			x, err := d.appendMemBlob(mem, key, value, o)
			if err != nil {
				return nil, err
			}
			if o.PrepopulateBlobCache && d.blobCache != nil {
				mem.blobs.fresh = append(mem.blobs.fresh, freshBlob{num: x.FileNum, x: x, key: key, value: value})
			}
			idx = blob.EncodeIndex(idx[:0], x)
			kind, value = base.KindBlobIndex, idx
		}
		dst = appendBatchEntry(dst, kind, key, value)
	}
}

// appendBatchEntry appends one entry to an encoded batch, as Batch.add
// encodes it.
func appendBatchEntry(dst []byte, kind base.Kind, key, value []byte) []byte {
	dst = append(dst, byte(kind))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	switch kind {
	case base.KindDelete, base.KindSingleDelete, base.KindLogData:
	default:
		dst = binary.AppendUvarint(dst, uint64(len(value)))
		dst = append(dst, value...)
	}
	return dst
}

// appendMemBlob writes the value of key to mem's active blob file,
// starting one when there is none and rolling it (synced) once it reaches
// BlobFileSize.
func (d *DB) appendMemBlob(mem *memTable, key, value []byte, o *Options) (blob.Index, error) {
	a := mem.blobs.active()
	if a == nil {
		var err error
		if a, err = d.newMemBlobFile(mem, o); err != nil {
			return blob.Index{}, err
		}
	}
	x, err := a.w.Add(key, value)
	if err != nil {
		a.failed = true
		return blob.Index{}, err
	}
	a.bytes += blobRecordBytes(x)
	a.dirty = true
	mem.blobs.charge += len(value)
	if mem.blobs.charge >= mem.writeBufferSize-mem.writeBufferSize/8 {
		a.startPresync()
	}
	if int64(a.w.Size()) >= o.BlobFileSize {
		// Only the active file may hold unsynced records.
		if err := a.sync(); err != nil {
			return blob.Index{}, err
		}
		mem.blobs.rolled = true
	}
	return x, nil
}

// newMemBlobFile creates a blob file for mem's values, with its directory
// entry synced (a WAL record synced later may point into it).
func (d *DB) newMemBlobFile(mem *memTable, o *Options) (*memBlobFile, error) {
	num := d.versions.NewFileNum()
	name := d.blobPath(num)
	d.memBlobPins.pin(num)
	f, err := d.fs.Create(name)
	if err == nil {
		if err = d.syncDir(); err != nil {
			f.Close()
		}
	}
	if err != nil {
		d.memBlobPins.unpin(num)
		return nil, fmt.Errorf("shale: creating blob file %s: %w", name, err)
	}
	f, sumGen := d.newChecksummedFile(f, name)
	a := &memBlobFile{num: num, sumGen: sumGen, file: f, w: blob.NewWriter(f, blob.WriterOptions{
		FileNum: num, FileName: name, Compression: o.BlobCompression,
		TargetFileSize: min(o.BlobFileSize, blobWritePrealloc), BytesPerSync: o.BytesPerSync})}
	d.mu.Lock() // captureLiveFiles lists the files under d.mu
	mem.blobs.files = append(mem.blobs.files, a)
	d.mu.Unlock()
	mem.blobs.rolled = false
	return a, nil
}

// syncMemBlobs syncs the active blob file of mem, ahead of a sync of its
// WAL. The caller leads the commit queue (or the DB is closing).
func syncMemBlobs(mem *memTable) error {
	if a := mem.blobs.active(); a != nil && a.dirty && !a.closed {
		return a.sync()
	}
	return nil
}

// abortMemBlobs syncs and closes the blob files of an unflushed memtable
// at Close: the WAL that indexes them is replayed at the next Open.
func abortMemBlobs(mem *memTable) error {
	err := syncMemBlobs(mem)
	for _, a := range mem.blobs.files {
		if !a.closed {
			a.closed = true
			a.presyncs.Wait()
			a.w.Abort()
		}
	}
	return err
}

// finishMemBlobs finishes (footer, sync, close) the blob files of m, an
// immutable memtable about to be flushed by job jobID (which the listener
// is told they were created by), and returns their metadata. A flush that
// failed and runs again finds them finished. The files whose write or sync
// failed, or that cannot be finished, are not: relocate lists them, and
// the flush writes their values anew (relocatingIter).
func (d *DB) finishMemBlobs(m *memTable, jobID int) (_ []*manifest.BlobFileMetadata, relocate map[base.FileNum]bool, _ error) {
	var out []*manifest.BlobFileMetadata
	for _, a := range m.blobs.files {
		if a.meta == nil && !a.failed {
			if a.closed {
				a.failed = true // closed unfinished by an earlier attempt
			} else if err := a.waitPresync(); err == nil {
				a.closed = true
				wm, err := a.w.Close()
				if err != nil {
					d.logger.Warn("finishing a memtable's blob file failed: the flush writes its values anew", "file", a.num, "err", err)
					a.failed = true
				} else {
					sum, method := finishFileChecksum(a.sumGen)
					a.meta = &manifest.BlobFileMetadata{FileNum: a.num, TotalCount: wm.Count, TotalBytes: a.bytes,
						Size: wm.Size, ChecksumMethod: method, ChecksumValue: sum}
					d.opts.Statistics.add(TickerBlobFileBytesWritten, wm.Size)
					d.eventBlobCreated(BlobFileInfo{JobID: jobID, FileNum: uint64(a.num), Path: d.blobPath(a.num), Size: wm.Size, Reason: FileReasonFlush})
					d.memBlobPins.markFinished(a.num)
					// A reader opened while the file was unfinished has no
					// footer bounds: the finished file is opened again now
					// (not by the next read of one of its values).
					d.fileCache.evictUnfinished(a.num)
					if f, err := d.fileCache.findBlob(a.num); err == nil {
						f.release()
					}
				}
			}
		}
		switch {
		case a.failed:
			if !a.closed {
				a.closed = true
				a.w.Abort()
			}
			if relocate == nil {
				relocate = map[base.FileNum]bool{}
			}
			relocate[a.num] = true
		case a.meta.TotalCount > 0:
			out = append(out, a.meta)
		}
	}
	return out, relocate, nil
}

// relocatingIter is the iterator of a flushed memtable that turns its blob
// indexes into the files in relocate into Set entries with their values,
// read back (and verified) from those files through the file cache: the
// flush writes them anew. A value that does not read back stops the
// iteration with its error, failing the flush.
type relocatingIter struct {
	base.InternalIterator
	d        *DB
	relocate map[base.FileNum]bool
	key      base.InternalKey
	value    []byte
	buf      []byte
	err      error
}

func (r *relocatingIter) resolve(ok bool) bool {
	if !ok || r.err != nil {
		return false
	}
	k, v := r.InternalIterator.Key(), r.InternalIterator.Value()
	r.key, r.value = k, v
	if k.Kind() != base.KindBlobIndex {
		return true
	}
	x, err := blob.DecodeIndex("blob index in a memtable", v)
	if err != nil {
		r.err = err
		return false
	}
	if !r.relocate[x.FileNum] {
		return true
	}
	val, err := r.d.readBlobValue(k.UserKey, v, false, nil)
	if err != nil {
		r.err = fmt.Errorf("shale: reading back a value of blob file %s, whose write failed: %w", x.FileNum, err)
		return false
	}
	r.buf = append(r.buf[:0], val...)
	r.key, r.value = base.MakeInternalKey(k.UserKey, k.SeqNum(), base.KindSet), r.buf
	return true
}

func (r *relocatingIter) First() bool           { return r.resolve(r.InternalIterator.First()) }
func (r *relocatingIter) Last() bool            { return r.resolve(r.InternalIterator.Last()) }
func (r *relocatingIter) Next() bool            { return r.resolve(r.InternalIterator.Next()) }
func (r *relocatingIter) Prev() bool            { return r.resolve(r.InternalIterator.Prev()) }
func (r *relocatingIter) SeekGE(k []byte) bool  { return r.resolve(r.InternalIterator.SeekGE(k)) }
func (r *relocatingIter) SeekLT(k []byte) bool  { return r.resolve(r.InternalIterator.SeekLT(k)) }
func (r *relocatingIter) Key() base.InternalKey { return r.key }
func (r *relocatingIter) Value() []byte         { return r.value }

func (r *relocatingIter) Error() error {
	if r.err != nil {
		return r.err
	}
	return r.InternalIterator.Error()
}

func (r *relocatingIter) Close() error {
	return errors.Join(r.InternalIterator.Close(), r.err)
}

// memBlobGarbage returns the garbage a flush of files (a memtable's, in
// full) makes: the values its tables do not reference (written, counted by
// the flush's blobOutput), dated by date.
func memBlobGarbage(files []*manifest.BlobFileMetadata, written map[base.FileNum]blobRefCount, date uint64) []manifest.BlobGarbage {
	read := make(map[base.FileNum]blobRefCount, len(files))
	for _, f := range files {
		read[f.FileNum] = blobRefCount{count: f.TotalCount, bytes: f.TotalBytes}
	}
	return blobGarbage(read, written, nil, date)
}

// releaseMemBlobs unpins the blob files of a released memtable, closing any
// writer left open (a memtable recovery or a failed Open dropped).
func (d *DB) releaseMemBlobs(m *memTable) {
	if len(m.blobs.files) == 0 {
		return
	}
	for _, a := range m.blobs.files {
		if !a.closed {
			a.closed = true
			a.presyncs.Wait()
			a.w.Abort()
		}
		d.memBlobPins.unpin(a.num)
	}
	d.signalObsolete() // a deletion waiting for the pin may go now
}

// errStopReplay stops a WAL replay at a record whose blob value is lost.
var errStopReplay = errors.New("shale: replay stopped at a lost blob value")

// errBlobValueLost marks a WAL blob index whose value does not read back.
var errBlobValueLost = errors.New("shale: blob value of a WAL record does not read back")

// walBlobResolver replaces the blob indexes of WAL records by their values,
// read from the blob files the commit path wrote (unfinished files, opened
// as such). It is not safe for concurrent use.
type walBlobResolver struct {
	fs      vfs.FS
	dir     string
	readers map[base.FileNum]*blob.Reader
	buf     []byte
}

func newWALBlobResolver(fs vfs.FS, dir string) *walBlobResolver {
	return &walBlobResolver{fs: fs, dir: dir}
}

// resolve returns rec (a WAL record of the WAL at path, at offset off)
// with every blob index replaced by its value, in memory reused by the
// next call; rec itself when it holds none. A value that does not read
// back is an error matching errBlobValueLost and base.ErrCorruption.
func (r *walBlobResolver) resolve(path string, off int64, rec []byte) ([]byte, bool, error) {
	br, ok := newBatchReader(rec)
	if !ok || !batchHasBlobIndex(br) {
		return rec, false, nil
	}
	out := append(r.buf[:0], rec[:batchHeaderLen]...)
	for {
		kind, key, value, ok, malformed := br.next()
		if malformed {
			return nil, false, base.CorruptionErrorf(path, off, "malformed batch at seqnum %d", br.seq)
		}
		if !ok {
			break
		}
		if kind == base.KindBlobIndex {
			v, lost, err := r.read(key, value)
			switch {
			case lost:
				return nil, false, fmt.Errorf("%w: %w", errBlobValueLost, base.CorruptionErrorf(path, off, "blob value of key %q is not in its file: %v", base.KeyForError(key), err))
			case err != nil:
				return nil, false, fmt.Errorf("%w: %w", base.CorruptionErrorf(path, off, "blob value of key %q", base.KeyForError(key)), err)
			}
			kind, value = base.KindSet, v
		}
		out = appendBatchEntry(out, kind, key, value)
	}
	r.buf = out
	return out, true, nil
}

// batchHasBlobIndex reports whether the batch r reads holds a blob index.
func batchHasBlobIndex(r batchReader) bool {
	for {
		kind, _, _, ok, _ := r.next()
		if !ok {
			return false
		}
		if kind == base.KindBlobIndex {
			return true
		}
	}
}

// read returns the value idx (of key) locates. lost says it is not in the
// file: the file ends before the record, or the record's bytes are zeros
// (a power loss took them, as it may take unsynced writes). Any other
// failure (a record present and damaged, a file that cannot be read) is
// an error with lost false.
func (r *walBlobResolver) read(key, idx []byte) (_ []byte, lost bool, _ error) {
	x, err := blob.DecodeIndex("blob index in a WAL record", idx)
	if err != nil {
		return nil, false, err
	}
	name := r.fs.PathJoin(r.dir, base.MakeFilename(base.FileTypeBlob, x.FileNum))
	br := r.readers[x.FileNum]
	if br == nil {
		f, err := r.fs.Open(name)
		if err != nil {
			return nil, false, err
		}
		if br, err = blob.NewReader(f, blob.ReaderOptions{FileNum: x.FileNum, FileName: name, Unfinished: true}); err != nil {
			// Only the header can be short, or zeros: the file was created
			// and synced empty, and the header is its first write.
			return nil, errors.Is(err, blob.ErrNoFooter) || r.zeroHeader(name), err
		}
		if r.readers == nil {
			r.readers = map[base.FileNum]*blob.Reader{}
		}
		r.readers[x.FileNum] = br
	}
	v, err := br.GetCounted(x, key, false, nil)
	if err == nil {
		return v, false, nil
	}
	return nil, r.notWritten(name, x), err
}

// zeroHeader reports whether the file name's header was lost to a power
// loss: the file is shorter, or its header reads as zeros.
func (r *walBlobResolver) zeroHeader(name string) bool {
	return r.cutOrZeros(name, 0, blob.HeaderLen, blob.HeaderLen)
}

// notWritten reports whether the record x locates in the file name was
// cut by a power loss: the file ends before the record does, or the record
// ends in zeros where its trailer should be (a written trailer is zeros
// only when its checksum is 0, one chance in 2^32) — the WAL's rule for
// torn records: a tear leaves the end unwritten. A record whose end was
// written and whose middle reads wrong is damage, even as zeros: a value
// may hold zeros, and a bit flip elsewhere in it must not pass for a tear
// that silently ends the WAL.
func (r *walBlobResolver) notWritten(name string, x blob.Index) bool {
	const lengthLen = blobRecordOverhead - block.TrailerLen // in front of the record's block
	if x.Offset < lengthLen || x.Size > 1<<32 {
		return false
	}
	return r.cutOrZeros(name, int64(x.Offset-lengthLen), int64(x.Size+blobRecordOverhead), block.TrailerLen)
}

// cutOrZeros reports whether the file name ends before off+n, or its last
// tail bytes before off+n read as zeros. A file that cannot be opened is
// neither.
func (r *walBlobResolver) cutOrZeros(name string, off, n, tail int64) bool {
	f, err := r.fs.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, tail)
	if k, _ := f.ReadAt(buf, off+n-tail); k < len(buf) {
		return true
	}
	for _, b := range buf {
		if b != 0 {
			return false
		}
	}
	return true
}

// files returns the blob files the resolver read from, ascending.
func (r *walBlobResolver) files() []base.FileNum {
	var out []base.FileNum
	for n := range r.readers {
		out = append(out, n)
	}
	slices.SortFunc(out, compareFileNums)
	return out
}

// close closes the resolver's readers.
func (r *walBlobResolver) close() error {
	var err error
	for n, br := range r.readers {
		err = errors.Join(err, br.Close())
		delete(r.readers, n)
	}
	return err
}

package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// maxBufferedBytes is how much a background-writes WAL buffers before a
// commit waits for the write in flight (back-pressure).
const maxBufferedBytes = 4 << 20

// maxSpareBytes bounds the buffer kept for reuse between writes. It is
// well above maxBufferedBytes: a buffer that reached the back-pressure
// bound (its capacity grown past it by append) must still be reused, or
// every write would grow a new one from nothing, copying it over and over.
const maxSpareBytes = 4 * maxBufferedBytes

// buffers recycles the framing buffers of closed Writers: a DB starts a WAL
// with every memtable, and a buffer grown from nothing to a few MiB copies
// itself at every growth, on memory touched for the first time. (A
// sync.Pool would not do: it is emptied by the garbage collections that a
// write-heavy process runs between two WALs.) It keeps maxFreeBuffers,
// two per Writer of two DBs.
var buffers struct {
	sync.Mutex
	free [][]byte
}

const maxFreeBuffers = 4

func getBuffer() []byte {
	buffers.Lock()
	defer buffers.Unlock()
	n := len(buffers.free)
	if n == 0 {
		return nil
	}
	b := buffers.free[n-1]
	buffers.free[n-1] = nil
	buffers.free = buffers.free[:n-1]
	return b
}

func putBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxSpareBytes {
		return
	}
	buffers.Lock()
	if len(buffers.free) < maxFreeBuffers {
		buffers.free = append(buffers.free, b[:0])
	}
	buffers.Unlock()
}

// Writer appends records to one WAL file. AddRecord and Commit are called by
// one goroutine at a time (the DB's commit leader). A commit without sync
// writes the framed bytes to the file itself (one write system call for the
// whole commit group, no hand-off); a commit with sync hands them to a
// background flusher, which writes and syncs, batching the syncs requested
// while one runs into the next. At most one goroutine writes at a time.
//
// Durability: Commit(true) returns once every record added before it is
// synced. Commit(false) returns once its records have been handed to the OS
// (written), so they survive a crash of the process but not a power failure,
// which loses everything since the last sync.
type Writer struct {
	f        vfs.File
	fileName string
	onError  func(error)

	mu sync.Mutex
	// flushCond wakes the flusher; doneCond wakes committers waiting for
	// their bytes to be written or synced.
	flushCond, doneCond sync.Cond
	rw                  *record.Writer // frames records; its buffer is what is pending
	spare               []byte
	appended            int64 // bytes framed so far
	written             int64 // bytes handed to the file
	synced              int64 // bytes known durable
	flushWanted         int64 // the flusher writes when written < flushWanted
	syncWanted          int64 // the flusher syncs when synced < syncWanted
	// writing is set while a goroutine (the flusher or a committer) writes
	// or syncs with mu released; the others wait for it.
	writing bool
	// err is sticky: after a failed write or sync the file's durable state
	// is unknown, and retrying an fsync can falsely report success, so every
	// later call fails with the first error.
	err         error
	closing     bool
	closed      bool
	flusherDone chan struct{}

	// preallocStep is WriterOptions.PreallocateSize; preallocated, the end
	// of the space reserved so far, is used only by the flusher (and by
	// Close once the flusher is done).
	preallocStep, preallocated int64
	// backgroundWrites is WriterOptions.BackgroundWrites.
	backgroundWrites bool
	// zeroFill is WriterOptions.ZeroFill (cleared when the file cannot
	// write zeros); zeroed is the end of the zeros written ahead of the
	// records so far (the file's size when it exceeds written). Both are
	// used only by the goroutine writing.
	zeroFill bool
	zeroed   int64
	// zeroStep is WriterOptions.ZeroFillStep, rounded.
	zeroStep int64

	// mmap is WriterOptions.Mmap: records are copied into a shared,
	// writable mapping of the file instead of written (writeMapped). The
	// window maps [mapOff, mapOff+len(mapData)); mapped says a window was
	// ever made (Close then trims the file to its written size). Used only
	// by the goroutine writing (w.writing) and by Close after the flusher.
	mmap               bool
	mapped             bool
	mapOff             int64
	mapData            []byte
	mapFlush, mapUnmap func() error

	// syncs is WriterOptions.Syncs.
	syncs *atomic.Uint64
}

// mapWindow is the size of the WAL's mapping windows: each new one is
// reserved (File.Preallocate), extends the file, and is mapped.
const mapWindow = 4 << 20

// WriterOptions configure NewWriterWithOptions.
type WriterOptions struct {
	// PreallocateSize reserves the file's space ahead of the writes in
	// steps of this many bytes (File.Preallocate), so that appends do not
	// allocate blocks one by one; Close gives back what is unused. 0 (the
	// default) or negative: no preallocation.
	PreallocateSize int64
	// BackgroundWrites makes Commit(false) return before its records are
	// written: the flusher writes them within microseconds, batching many
	// commits into one write system call. Faster for small writes, but a
	// crash of the process can lose the last commits made without sync.
	BackgroundWrites bool
	// Mmap copies records into a shared, writable mapping of the file
	// (vfs.MapWritable) instead of writing them: once copied they are in
	// the page cache, so Commit(false) keeps its guarantee (a crash of the
	// process loses nothing) with no system call per commit. The file grows
	// in windows of 4 MiB, reserved first, and reads as zeros past the last
	// record until Close trims it. A file that cannot be mapped is written
	// as without Mmap.
	Mmap bool
	// Syncs, when set, counts the file syncs the writer makes.
	Syncs *atomic.Uint64
	// ZeroFill extends the file with zeros ahead of its records, at least
	// ZeroFillStep at a time, whenever a sync covers at most a quarter of
	// ZeroFillStep of new records: the records that follow then overwrite
	// blocks already written, within the file's size, so each fdatasync
	// writes their data without a journal commit for the size or block map
	// (on ext4 about 1.7x faster for 16 KiB syncs, 1.5x for 300 bytes).
	// Workloads that sync rarely or in large amounts never pay for the
	// zeros. Ignored with Mmap; a file that cannot write zeros
	// (vfs.WriteZeros) is written as without it.
	ZeroFill bool
	// ZeroFillStep is how far ahead of its records ZeroFill extends the
	// file, at least (renewed when the records come within half of it);
	// the file's size is then a multiple of it. Rounded up to a multiple of
	// zeroFillUnit; 0 means DefaultZeroFillStep. A WAL that stays small
	// (a small write buffer) wants a small step, so that its zeros do not
	// outweigh its records.
	ZeroFillStep int64
}

// DefaultZeroFillStep is ZeroFillStep's default (and the DB's, unless its
// write buffer is smaller). A smaller step spreads the
// zeros' writeback over more syncs: with 1 MiB steps the p99 of 16 KiB
// synced writes was about 1 ms here, with 256 KiB about 0.4 ms, at the same
// throughput. zeroFillUnit is what every step is a multiple of, and the
// unit ReplayFrom's tear rule for grown files takes (mapWindow is a
// multiple of it too).
const (
	DefaultZeroFillStep = 256 << 10
	zeroFillUnit        = record.BlockSize
)

// roundUp returns n rounded up to a multiple of unit (> 0).
func roundUp(n, unit int64) int64 { return (n + unit - 1) / unit * unit }

// NewWriter returns a Writer appending to f, a newly created empty file;
// fileName is used in errors. It starts the background flusher.
func NewWriter(f vfs.File, fileName string) *Writer {
	return NewWriterWithOptions(f, fileName, WriterOptions{})
}

// NewWriterWithOptions is NewWriter with options.
func NewWriterWithOptions(f vfs.File, fileName string, o WriterOptions) *Writer {
	return NewWriterAt(f, fileName, 0, o)
}

// NewWriterAt returns a Writer that continues the WAL f, whose first offset
// bytes hold intact records and which is exactly that long (a WAL that
// recovery replayed to a clean end, truncated there): new records are
// framed from that point, and what is already there counts as synced. It
// starts the background flusher.
func NewWriterAt(f vfs.File, fileName string, offset int64, o WriterOptions) *Writer {
	w := &Writer{f: f, fileName: fileName, flusherDone: make(chan struct{}), preallocStep: max(o.PreallocateSize, 0), backgroundWrites: o.BackgroundWrites,
		mmap: o.Mmap, syncs: o.Syncs, zeroFill: o.ZeroFill && !o.Mmap, zeroStep: DefaultZeroFillStep}
	if o.ZeroFillStep > 0 {
		w.zeroStep = roundUp(o.ZeroFillStep, zeroFillUnit)
	}
	w.flushCond.L = &w.mu
	w.doneCond.L = &w.mu
	// never flushed: the flusher takes its buffer
	w.rw = record.NewWriterAt(nil, offset)
	w.rw.SwapBuffer(getBuffer())
	w.spare = getBuffer()
	w.appended, w.written, w.synced = offset, offset, offset
	w.flushWanted, w.syncWanted = offset, offset
	w.preallocated, w.zeroed = offset, offset
	go w.flushLoop()
	return w
}

// SetErrorHandler registers fn to be called (from the flusher goroutine)
// when a background write or sync fails; a commit without sync learns of
// such a failure only this way or from a later call.
func (w *Writer) SetErrorHandler(fn func(error)) {
	w.mu.Lock()
	w.onError = fn
	w.mu.Unlock()
}

func (w *Writer) checkLocked() error {
	if w.closed || w.closing {
		return fmt.Errorf("shale: WAL %s: %w", w.fileName, base.ErrClosed)
	}
	return w.err
}

// AddRecord frames p as one record into the buffer; Commit or Flush makes
// it reach the file.
func (w *Writer) AddRecord(p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkLocked(); err != nil {
		return err
	}
	if _, err := w.rw.WriteRecord(p); err != nil {
		w.err = fmt.Errorf("shale: WAL %s: %w", w.fileName, err)
		return w.err
	}
	w.appended = w.rw.Size()
	return nil
}

// requestFlushLocked asks the flusher to write (and, with sync, sync)
// everything added so far, and returns that size as the target to wait for.
func (w *Writer) requestFlushLocked(sync bool) (target int64, err error) {
	if err = w.checkLocked(); err != nil {
		return 0, err
	}
	target = w.appended
	w.flushWanted = target
	if sync && w.syncWanted < target {
		w.syncWanted = target
	}
	w.flushCond.Signal()
	return target, nil
}

// Commit makes the records added so far reach the file: without sync it
// writes them itself (or waits for a write in progress that takes them),
// and returns once the OS has them; with sync it hands them to the flusher
// and waits until they are durable. With WriterOptions.BackgroundWrites, a
// commit without sync only hands its records to the flusher.
func (w *Writer) Commit(sync bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sync {
		target, err := w.requestFlushLocked(true)
		if err != nil {
			return err
		}
		for w.err == nil && w.synced < target {
			w.doneCond.Wait()
		}
		return w.err
	}
	if w.backgroundWrites {
		if _, err := w.requestFlushLocked(false); err != nil {
			return err
		}
		// Back-pressure when the disk is slower than the writers.
		for w.err == nil && w.rw.Buffered() > maxBufferedBytes {
			w.doneCond.Wait()
		}
		return w.err
	}
	if err := w.checkLocked(); err != nil {
		return err
	}
	target := w.appended
	for w.err == nil && w.written < target {
		if w.writing {
			w.doneCond.Wait()
			continue
		}
		w.writeOutLocked(false)
	}
	return w.err
}

// Flush waits until every record added so far is written to the file, and
// synced if sync is set.
func (w *Writer) Flush(sync bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target, err := w.requestFlushLocked(sync)
	if err != nil {
		return err
	}
	for w.err == nil && (w.written < target || (sync && w.synced < target)) {
		w.doneCond.Wait()
	}
	return w.err
}

// WrittenSize waits until every record added so far is written to the file
// (handed to the OS, not synced) and returns the size they take. On a
// closing or closed writer it waits for the last write of Close and returns
// the final size. A copy of the file's first WrittenSize bytes, made after
// it returns, holds every record added before the call, whole. It returns
// the writer's sticky error, if any.
func (w *Writer) WrittenSize() (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing || w.closed {
		w.mu.Unlock()
		<-w.flusherDone
		w.mu.Lock()
		return w.written, w.err
	}
	target, err := w.requestFlushLocked(false)
	if err != nil {
		return 0, err
	}
	for w.err == nil && w.written < target {
		w.doneCond.Wait()
	}
	return target, w.err
}

// Size returns the size the file will have once everything added is written.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// flushLoop writes pending bytes with one write per round, then syncs when
// a committer asked for it.
func (w *Writer) flushLoop() {
	defer close(w.flusherDone)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for w.err == nil && (w.writing || (!w.closing && w.flushWanted <= w.written && w.syncWanted <= w.synced)) {
			w.flushCond.Wait()
		}
		if w.err != nil {
			// A committer's write failed and it reported the error; the
			// file's state is unknown, so nothing more is written.
			return
		}
		if w.rw.Buffered() == 0 && w.syncWanted <= w.synced && w.flushWanted <= w.written {
			if w.closing {
				return
			}
			continue // a committer wrote what was wanted
		}
		if err := w.writeOutLocked(w.syncWanted > w.synced); err != nil {
			if fn := w.onError; fn != nil {
				w.mu.Unlock()
				fn(err)
				w.mu.Lock()
			}
			return
		}
	}
}

// writeOutLocked writes everything buffered to the file, and syncs it when
// doSync, with w.mu released during the IO and w.writing set; w.mu is held
// on entry and on return, and w.writing must be false on entry. A failure
// is sticky (w.err) and returned.
func (w *Writer) writeOutLocked(doSync bool) error {
	w.writing = true
	data := w.rw.SwapBuffer(w.spare)
	w.spare = nil
	end := w.written + int64(len(data))
	// Zeros ahead are for the syncs to come: none at Close.
	zeroFill := w.zeroFill && !w.closing && end-w.synced <= w.zeroStep/4
	w.mu.Unlock()
	var err error
	if w.mmap && len(data) > 0 {
		if err = w.writeMapped(data, w.written); errors.Is(err, vfs.ErrMapUnsupported) && !w.mapped {
			w.mmap, err = false, nil // written as without Mmap
		} else if err != nil {
			err = fmt.Errorf("shale: writing WAL %s through its mapping: %w", w.fileName, err)
		}
		if err == nil && w.mmap {
			data = data[:0:cap(data)] // copied: nothing left to write
		}
	}
	if len(data) > 0 && w.preallocStep > 0 && end > w.preallocated {
		next := roundUp(end, w.preallocStep)
		if perr := w.f.Preallocate(w.preallocated, next-w.preallocated); perr != nil {
			// Preallocation is a hint: stop reserving and let the write
			// report a full disk itself.
			w.preallocStep = 0
		} else {
			w.preallocated = next
		}
	}
	if err == nil && len(data) > 0 {
		var n int
		n, err = w.f.Write(data)
		if err == nil && n != len(data) {
			err = fmt.Errorf("short write of %d of %d bytes", n, len(data))
		}
		if err != nil {
			err = fmt.Errorf("shale: writing WAL %s: %w", w.fileName, err)
		}
	}
	if err == nil && doSync && w.mapData != nil {
		// The window's dirty pages reach the file for the sync to cover
		// (earlier windows were unmapped, their pages left to the page
		// cache, which the sync covers).
		if err = w.mapFlush(); err != nil {
			err = fmt.Errorf("shale: flushing the mapping of WAL %s: %w", w.fileName, err)
		}
	}
	if err == nil && doSync {
		// fdatasync: the WAL is only appended to, and the size it reaches
		// is part of what fdatasync makes durable.
		if err = w.f.SyncData(); err != nil {
			err = fmt.Errorf("shale: syncing WAL %s: %w", w.fileName, err)
		} else if w.syncs != nil {
			w.syncs.Add(1)
		}
	}
	// Zeros ahead once the records come within half a step of the end of
	// those written so far, after the sync: the committers it made durable
	// are released first, and the zeros reach the disk in the background
	// (StartWriteback) before the next sync, which then commits the new
	// size only.
	zeroAhead := err == nil && doSync && zeroFill && end > w.zeroed-w.zeroStep/2
	w.mu.Lock()
	w.writing = zeroAhead
	if cap(data) <= maxSpareBytes {
		w.spare = data[:0]
	}
	if err != nil {
		w.err = err
	} else {
		w.written = end
		if doSync {
			w.synced = end
		}
	}
	w.doneCond.Broadcast()
	if zeroAhead {
		w.mu.Unlock()
		w.writeZerosAhead(end)
		w.mu.Lock()
		w.writing = false
		w.doneCond.Broadcast()
	}
	// The flusher may be waiting for this write to end.
	w.flushCond.Signal()
	return err
}

// writeZerosAhead extends the file with zeros from the end of the records
// (or of the zeros already there) to the second multiple of w.zeroStep
// past end, and starts their writeback from the first page after end (the
// page the next record is copied into is left to the next sync). The
// caller is the goroutine writing (w.writing set, w.mu not held). A failure
// only stops zero-filling: the zeros are a hint, like preallocation, and a
// full disk shows in the writes that follow.
//
// The file's size is then a multiple of zeroFillUnit, which is what lets
// replay tell a record cut inside the zeros (a crash in the middle of its
// copy, or a page written back while it was being copied, then a power
// loss) from damage: see ReplayFrom and record.Reader.SetMappedWriteUnit.
func (w *Writer) writeZerosAhead(end int64) {
	from, next := max(end, w.zeroed), (end/w.zeroStep+2)*w.zeroStep
	// Whatever the outcome, Close trims back to the records.
	w.preallocated = max(w.preallocated, next)
	if err := vfs.WriteZeros(w.f, from, next-from); err != nil {
		w.zeroFill = false
		return
	}
	const page = 4 << 10
	if wb := roundUp(end, page); wb < next {
		_ = w.f.StartWriteback(wb, next-wb) // a hint
	}
	w.zeroed = next
}

// writeMapped copies data into the mapping at file offset at, mapping new
// windows as it goes.
func (w *Writer) writeMapped(data []byte, at int64) error {
	for len(data) > 0 {
		if w.mapData == nil || at < w.mapOff || at >= w.mapOff+int64(len(w.mapData)) {
			if err := w.unmap(); err != nil {
				return err
			}
			off := at &^ (vfs.MapWriteAlignment - 1)
			// The window ends on a multiple of zeroFillUnit, even when
			// it starts where a reopened WAL ended, so that replay's tear
			// rule for grown files applies (ReplayFrom).
			size := roundUp(off+mapWindow, zeroFillUnit)
			// Blocks reserved before the pages are touched: a full disk
			// is then an error here, not a fault at the copy.
			if err := w.f.Preallocate(off, size-off); err != nil {
				return err
			}
			d, flush, unmap, err := vfs.MapWritable(w.f, off, size)
			if err != nil {
				return err
			}
			w.mapOff, w.mapData, w.mapFlush, w.mapUnmap, w.mapped = off, d, flush, unmap, true
		}
		n := copyForward(w.mapData[at-w.mapOff:], data)
		data, at = data[n:], at+int64(n)
	}
	return nil
}

// copyForward copies src into dst like copy, but strictly from the first
// byte to the last, a word at a time: a crash of the process in the middle
// leaves a prefix of src in the mapping and zeros after it (what a torn
// append looks like to the record reader), where copy's memmove may store
// a later chunk before an earlier one.
func copyForward(dst, src []byte) int {
	n := min(len(dst), len(src))
	i := 0
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:]))
	}
	for ; i < n; i++ {
		dst[i] = src[i]
	}
	return n
}

// unmap drops the current window, if any; its pages stay in the page cache.
func (w *Writer) unmap() error {
	if w.mapData == nil {
		return nil
	}
	err := w.mapUnmap()
	w.mapData, w.mapFlush, w.mapUnmap = nil, nil, nil
	return err
}

// Close writes and syncs what is buffered, stops the flusher, trims space
// preallocated past the end and closes the file. The file is closed even when the flush fails; that error is returned.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed || w.closing {
		w.mu.Unlock()
		return fmt.Errorf("shale: WAL %s: %w", w.fileName, base.ErrClosed)
	}
	w.closing = true
	w.flushWanted = w.appended
	if w.syncWanted < w.appended {
		w.syncWanted = w.appended
	}
	w.flushCond.Signal()
	w.mu.Unlock()
	<-w.flusherDone
	w.mu.Lock()
	err := w.err
	w.closed = true
	written := w.written
	// Nothing is added or written any more: the buffers go to the next WAL.
	putBuffer(w.rw.SwapBuffer(nil))
	putBuffer(w.spare)
	w.spare = nil
	w.mu.Unlock()
	if uerr := w.unmap(); err == nil && uerr != nil {
		err = fmt.Errorf("shale: unmapping WAL %s: %w", w.fileName, uerr)
	}
	if err == nil && w.mapped {
		// The windows grew the file past its records: back to its size,
		// synced so that no zeros past it outlive a crash either.
		if terr := w.f.Truncate(written); terr != nil {
			err = fmt.Errorf("shale: trimming WAL %s: %w", w.fileName, terr)
		} else if serr := w.f.SyncData(); serr != nil {
			err = fmt.Errorf("shale: syncing WAL %s: %w", w.fileName, serr)
		}
	} else if err == nil && w.preallocated > written {
		// Give back the reserved space (and zeros) past the end. Not
		// synced: should a crash bring back zeros past the new size,
		// they read as the clean end of the log.
		if terr := w.f.Truncate(written); terr != nil {
			err = fmt.Errorf("shale: trimming WAL %s: %w", w.fileName, terr)
		}
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("shale: closing WAL %s: %w", w.fileName, cerr)
	}
	return err
}

package shale

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/offheap"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// DB is an open database. All methods are safe for concurrent use.
type DB struct {
	// Immutable after Open.
	dirname string
	// opts are the options Open settled on: read the immutable ones here
	// and the ones SetOptions may change through mutableOptions.
	opts     *Options
	fs       vfs.FS
	cmp      *base.Comparer
	logger   *slog.Logger
	infoLog  *infoLogFile // the LOG file when the DB owns the logger
	fileLock io.Closer    // nil for a read-only DB, which takes no lock
	// readOnly is set by OpenForReadOnly and OpenAsSecondary: nothing is
	// ever written to the database's directory.
	readOnly bool
	// follower is the state of a secondary instance (OpenAsSecondary),
	// nil otherwise.
	follower *follower
	// recovery is what Open's WAL replay dropped (Metrics().Recovery).
	recovery   RecoveryMetrics
	blockCache *cache.Cache
	// blobCache caches blob values: blockCache unless Options.BlobCacheSize
	// gives blob values a cache of their own.
	blobCache *cache.Cache
	// ioReader issues the batched reads of the read path (io_uring on
	// Linux); it outlives every reader of the DB's tables.
	ioReader  vfs.AsyncReader
	fileCache *fileCache
	versions  *manifest.VersionSet
	// picker is used under d.mu (SetOptions replaces its options).
	picker *compact.Picker
	// clock is Options.Clock: tombstone dates and delete persistence
	// deadlines.
	clock Clock
	// events delivers to Options.EventListener (nil without one, and for a
	// read-only DB).
	events *eventQueue
	// bgCancel is closed when Close begins stopping background jobs: table
	// writes waiting for Options.RateLimiter give up.
	bgCancel chan struct{}

	// Atomics.
	// liveOpts are the current options (set_options.go): Open's, then each
	// SetOptions's copy; never modified once stored.
	liveOpts atomic.Pointer[Options]
	// visibleSeq is the last seqnum readers may see: every entry at or below
	// it is fully in a memtable. Written by the commit leader only.
	visibleSeq atomic.Uint64
	closed     atomic.Bool
	stats      dbStats
	// openIters counts iterators not yet closed; leaked ones pin versions.
	openIters atomic.Int64
	// secondarySeq is the seqnum of the newest secondary tombstone, stored
	// after its read state is published and before its seqnum is visible
	// (loadReadStateAt).
	secondarySeq atomic.Uint64
	// mergeRecorded says the MANIFEST names Options.MergeOperator, so that
	// Merges may be written; mergeRecordMu orders the one edit recording it.
	mergeRecorded atomic.Bool
	mergeRecordMu sync.Mutex
	// globalSeqs maps the ingested tables read at a global seqnum to it
	// (ingest.go): filled at Open and by IngestExternalFile before the
	// edit adding a table, read when the table's reader opens.
	globalSeqs sync.Map // base.FileNum -> base.SeqNum

	// readState is what a reader pins: memtables and a version.
	readState struct {
		sync.RWMutex
		val *readState
	}
	// spareArena is the arena of the last memtable released by every
	// holder, for the next memtable of its size (see memtable_arena.go).
	spareArena atomic.Pointer[offheap.Words]

	// obsoleteCh wakes the goroutine that deletes obsolete files; it is
	// never closed (late signals after Close are harmless), closeCh stops it.
	obsoleteCh chan struct{}
	closeCh    chan struct{}
	bgDone     sync.WaitGroup
	// obsoleteMu serializes deleteObsoleteFiles, so that a call returns
	// only once the files obsolete at its start are gone, including those
	// a concurrent call took first.
	obsoleteMu sync.Mutex
	// blobEditMu serializes the edits of flushes and compactions from the
	// computation of the blob files they delete to their apply
	// (logAndApplyDeletingBlobs).
	blobEditMu sync.Mutex
	// memBlobPins are the blob files memtables hold indexes into
	// (blob_write.go).
	memBlobPins memBlobPins
	// deadlineCalls counts the armed delete persistence timers and their
	// calls in progress (delete_persistence.go); Close waits for them.
	deadlineCalls sync.WaitGroup
	// scanFlushCalls counts the flush requests of iterators in progress
	// (scan_flush.go); Close waits for them.
	scanFlushCalls sync.WaitGroup
	// setOptionsMu serializes SetOptions calls, and Close with them.
	setOptionsMu sync.Mutex
	// optionsFileNum is the newest OPTIONS file's number (under
	// setOptionsMu once Open returns).
	optionsFileNum base.FileNum
	// readOnlyWALs are the WALs a read-only DB replayed (set by recover):
	// a checkpoint of it copies them.
	readOnlyWALs []base.FileNum
	// deletionHolds counts the holds on obsolete-file deletion
	// (holdFileDeletions), and deletionDeferred says a deletion was skipped
	// while one was held; both under obsoleteMu.
	deletionHolds    int
	deletionDeferred bool
	// pinnedObsoleteBlobs are obsolete blob files that a live memtable
	// still indexes, deleted by a later deleteObsoleteFiles (under
	// obsoleteMu).
	pinnedObsoleteBlobs []*manifest.BlobFileMetadata
	// checkpointing names the directories Checkpoint is building, so that
	// a second call for one of them is refused before it touches the
	// first's staging directory.
	checkpointing struct {
		sync.Mutex
		dirs map[string]bool
	}
	// jobIDs numbers flushes and compactions for the listener.
	jobIDs atomic.Int64

	mu struct {
		sync.Mutex
		// writers is the commit queue; writers[0] is the leader.
		writers []*writer
		// syncGather is what the leader of the next synced group waits for
		// (gatherSyncedWritersLocked): the writers queued when the last
		// synced group ended plus those it released, and how long its WAL
		// write and sync took.
		syncGather struct {
			writers int
			took    time.Duration
		}
		// lastSeq is the last seqnum assigned (>= visibleSeq).
		lastSeq base.SeqNum
		mem     struct {
			mutable *memTable
			// queue holds immutable memtables, oldest first.
			queue []*memTable
			// released is set once Close dropped the list's holds on
			// mutable and queue (releaseMemTablesAtClose).
			released bool
		}
		log struct {
			w   *wal.Writer
			num base.FileNum
			// obsolete lists WAL files whose memtables are flushed.
			obsolete []base.FileNum
			// failed is the last WAL whose failure was recorded.
			failed *wal.Writer
		}
		compact struct {
			// cond is broadcast whenever background work finishes or state
			// that stalled writers wait on changes.
			cond       sync.Cond
			flushing   bool
			running    int // compactions running
			manual     int // manual compactions waiting or running
			inProgress map[*compact.Compaction]struct{}
			// blobGCOwed are the blob files whose relocation a bounded
			// compaction left undone (blob_gc.go, noteBlobGCOwed).
			blobGCOwed map[base.FileNum]struct{}
		}
		snapshots snapshotList
		// deadline is the delete persistence timer (delete_persistence.go).
		deadline deadlineState
		// secondaryLast is the seqnum of the newest secondary tombstone
		// published (readState.secondaryUpTo).
		secondaryLast base.SeqNum
		// secondaryRetiring is set while retireSecondaryTombstones records
		// retirements.
		secondaryRetiring bool
		// bgErr, once set, makes the DB read-only until Resume.
		bgErr error
		// stall is the write stall condition last reported to the listener.
		stall WriteStallInfo
		// resuming holds writes back while Resume flushes the memtables.
		resuming bool
		closing  bool
		// ingesting is set while IngestExternalFile writes its edit: no
		// compaction starts meanwhile.
		ingesting bool
	}
}

// memTable is a memtable with the WAL that holds its entries.
type memTable struct {
	*memtable.Memtable
	logNum   base.FileNum
	capacity int
	// writeBufferSize is Options.WriteBufferSize when the memtable was
	// made: a raised one applies from the next memtable (capacity was
	// sized for this one), a lowered one at once.
	writeBufferSize int
	// flushed is closed once the memtable is in an L0 table.
	flushed chan struct{}
	// flushInstalled is set as the version holding the memtable's L0
	// tables is installed, before any reader can get that version, and
	// before the flush takes the memtable out of the queue of immutable
	// memtables: publishReadStateLocked leaves such a memtable out of the
	// read states it makes, so that no read sees its entries twice.
	flushInstalled atomic.Bool
	// noWAL is set (under d.mu) when a write that skipped the WAL went into
	// this memtable: only a flush keeps it, so Close must flush.
	noWAL bool
	// firstSeq bounds the seqnums of the memtable's entries from below (0
	// for a memtable of recovery, which may hold any): a secondary
	// tombstone above it may delete some of them.
	firstSeq base.SeqNum
	// created is when the memtable was made (unix seconds by the DB's
	// clock): the OldestAncesterTime of its flushed tables.
	created uint64
	// oldestTombstone is when the first tombstone went into the memtable
	// (unix nanoseconds by d.clock, 0 for none), set under d.mu while the
	// memtable is mutable. Its flush dates its tables' tombstones by it.
	oldestTombstone int64
	// scanFlushRequested is set once an iterator asked for its flush
	// (Options.MemtableOpScanFlushTrigger).
	scanFlushRequested atomic.Bool
	// flushReason is why the memtable was made immutable (set under d.mu).
	flushReason FlushReason
	// refs counts the memtable's holders: one for the DB's list (mutable
	// or queued) and one per read state that includes it. The last
	// release recycles its arena (releaseMemTable).
	refs atomic.Int32
	// blobs are the blob files write-time separation wrote the memtable's
	// large values to (blob_write.go).
	blobs memBlobs
	// arena holds the memtable's entries, outside the Go heap: released
	// by the last holder (refs), never earlier, as nothing else keeps the
	// memory alive.
	arena *offheap.Words
}

// newMemTable returns an empty memtable for WAL logNum, with room for at
// least minCapacity bytes of entries (by memtable.EntrySizeBound) besides
// its fixed overhead.
func (d *DB) newMemTable(logNum base.FileNum, minCapacity int) *memTable {
	mo := d.mutableOptions()
	size := mo.WriteBufferSize
	capacity := size + size/8 + 1<<20
	capacity = max(capacity, memtable.FixedOverhead+minCapacity)
	mt, arena := d.memtableOnArena(capacity)
	m := &memTable{
		Memtable:        mt,
		arena:           arena,
		created:         unixSeconds(d.clock.Now()),
		logNum:          logNum,
		capacity:        capacity,
		writeBufferSize: size,
		flushed:         make(chan struct{}),
	}
	setPrefixBloom(m.Memtable, mo, size)
	m.refs.Store(1)
	return m
}

// readState pins the memtables and the version a reader consults. It is
// replaced, never modified, when either changes.
type readState struct {
	db      *DB
	refs    atomic.Int32
	mem     *memTable
	imms    []*memTable // oldest first
	version *manifest.Version
	// view is version's per-level view for iterators, shared with the
	// other read states of the same version.
	view *versionView
	// secondary are version's live secondary tombstones; secondaryUpTo is
	// the seqnum of the newest secondary tombstone committed when the read
	// state was published (loadReadStateAt).
	secondary     []manifest.SecondaryTombstone
	secondaryUpTo base.SeqNum
	// seq, on a secondary instance, is the seqnum its reads see: every
	// entry at or below it is in mem, imms or version (a catch-up may
	// append newer ones to mem, and install tables holding entries this
	// state lacks). 0 on other DBs, whose reads take visibleSeq.
	seq base.SeqNum
}

func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.db.releaseMemTable(rs.mem)
		for _, m := range rs.imms {
			rs.db.releaseMemTable(m)
		}
		rs.version.Unref()
		rs.db.signalObsolete()
	}
}

// loadReadState returns the current read state with a reference, or nil
// once the DB is closed.
func (d *DB) loadReadState() *readState {
	d.readState.RLock()
	rs := d.readState.val
	if rs != nil {
		rs.refs.Add(1)
	}
	d.readState.RUnlock()
	return rs
}

// publishReadStateLocked installs a read state for the current memtables and
// version. d.mu must be held.
func (d *DB) publishReadStateLocked() {
	v, imms := d.currentVersionAndImmsLocked()
	rs := &readState{
		db:      d,
		mem:     d.mu.mem.mutable,
		imms:    imms,
		version: v,
	}
	rs.secondary, rs.secondaryUpTo = rs.version.SecondaryTombstones, d.mu.secondaryLast
	if d.follower != nil {
		rs.seq = base.SeqNum(d.visibleSeq.Load())
	}
	rs.refs.Store(1)
	rs.mem.refs.Add(1)
	for _, m := range rs.imms {
		m.refs.Add(1)
	}
	d.readState.Lock()
	old := d.readState.val
	// A memtable switch keeps the version, and with it the view its
	// iterators have built; only a new version needs a new one.
	if old != nil && old.version == rs.version {
		rs.view = old.view
	} else {
		rs.view = new(versionView)
	}
	d.readState.val = rs
	d.readState.Unlock()
	if old != nil {
		old.unref()
	}
	d.noteWriteStallLocked(false)
}

// currentVersionAndImmsLocked returns the current version, with a
// reference, and the immutable memtables whose entries it does not hold,
// oldest first. d.mu is held.
//
// A flush installs the version holding a memtable's tables (without d.mu)
// before it takes the memtable out of the queue (under d.mu): in between,
// the queue and the current version both hold the memtable's entries, and
// a read state made of both would read each of them twice (a merge operand
// applied twice). Such a memtable is marked flushInstalled as its version
// is installed, and is left out. The marks are read before and after the
// version: when no mark changed in between, a memtable marked was installed
// before the version was read, so the version (or a later one, which
// compactions only rearrange) holds its entries, and one not marked was
// not, so the version lacks them. A mark set in between could be either:
// then it reads them again.
func (d *DB) currentVersionAndImmsLocked() (*manifest.Version, []*memTable) {
	queue := d.mu.mem.queue
	unflushed := func() []*memTable {
		var imms []*memTable
		for _, m := range queue {
			if !m.flushInstalled.Load() {
				imms = append(imms, m)
			}
		}
		return imms
	}
	for {
		before := unflushed()
		v := d.versions.Current()
		// Marks are only ever set: the same number is the same set.
		if after := unflushed(); len(after) == len(before) {
			return v, after
		}
		v.Unref()
	}
}

func (d *DB) signalObsolete() {
	select {
	case d.obsoleteCh <- struct{}{}:
	default:
	}
}

// Put sets key to value.
func (d *DB) Put(key, value []byte, wo *WriteOptions) error {
	return d.writeOne(base.KindSet, key, value, true, wo)
}

// Delete removes key.
func (d *DB) Delete(key []byte, wo *WriteOptions) error {
	return d.writeOne(base.KindDelete, key, nil, false, wo)
}

// SingleDelete removes a key that was Put once since its last deletion.
func (d *DB) SingleDelete(key []byte, wo *WriteOptions) error {
	return d.writeOne(base.KindSingleDelete, key, nil, false, wo)
}

// DeleteRange removes every key in [start, end).
func (d *DB) DeleteRange(start, end []byte, wo *WriteOptions) error {
	switch c := d.cmp.Compare(start, end); {
	case c == 0:
		return d.checkOpen() // an empty range deletes nothing
	case c > 0:
		return base.InvalidArgumentf("shale: DeleteRange start %q must be before end %q", start, end)
	}
	return d.writeOne(base.KindRangeDelete, start, end, true, wo)
}

// writeOne writes a single entry through a pooled batch.
func (d *DB) writeOne(kind base.Kind, key, value []byte, hasValue bool, wo *WriteOptions) error {
	b := getBatch()
	b.add(kind, key, value, hasValue)
	err := d.Write(b, wo)
	putBatch(b)
	return err
}

// writer is one caller waiting in the commit queue.
type writer struct {
	batch      *Batch // nil for a flush request
	sync       bool
	disableWAL bool
	done       bool
	err        error
	cond       sync.Cond
	// rotated is set for a flush request: the memtable it made immutable
	// (nil when there was nothing to flush).
	rotated *memTable
	// newWAL makes a flush request rotate even an empty memtable, to start
	// a fresh WAL (Resume), and lets it pass while writes wait for Resume.
	newWAL bool
	// cleared is set once a Resume request has cleared the background
	// error: an error set after that (the flush it waits for failed again)
	// ends the request instead of being cleared in turn, which would retry
	// for as long as the fault lasts.
	cleared bool
	// closing marks Close's own flush, which passes the closed check.
	closing bool
	// rotateOnly makes a flush request rotate only this memtable: it does
	// nothing once another rotation made it immutable (a delete
	// persistence deadline flush, which must not flush its successor).
	rotateOnly *memTable
	// secondary is the tombstone of a DeleteBySecondaryRange request
	// (batch nil), which commits alone.
	secondary *manifest.SecondaryTombstone
	// flushReason is why a flush request (batch nil) flushes.
	flushReason FlushReason
	// syncOnly makes a request (batch nil) that only syncs the WAL, so that
	// every write before it is durable: an empty DeleteBySecondaryRange,
	// which is a synced write all the same.
	syncOnly bool
	// validate, when set, runs when the writer leads the commit queue,
	// before its batch gets seqnums: every earlier write is then in a
	// memtable and visible, and none can commit until this one is done.
	// An error fails the write, which writes nothing. An optimistic
	// transaction's conflict check (transaction.go). Such a writer always
	// leads its own group. With an empty batch only the check runs.
	validate func() error
	// ingest is an IngestExternalFile request (batch nil), which commits
	// alone.
	ingest *ingestRequest
	// walData, when set by write-time separation (separateGroup), is the
	// batch with blob indexes in place of its large values: what the WAL
	// and the memtable get. walBuf is its memory, reused.
	walData, walBuf []byte
}

// data returns what w's group writes to the WAL and memtable for w.
func (w *writer) data() []byte {
	if w.walData != nil {
		return w.walData
	}
	return w.batch.data
}

var defaultWriteOptions WriteOptions

// maxGroupBytes bounds the batches one leader commits together.
const maxGroupBytes = 1 << 20

// Write applies the batch atomically: all of it or none of it is visible and
// durable. Concurrent writers are committed in groups: one WAL write and at
// most one fsync per group.
func (d *DB) Write(b *Batch, wo *WriteOptions) error {
	if b == nil || b.Empty() {
		return d.checkOpen()
	}
	if b.merges {
		if err := d.checkOpen(); err != nil {
			return err
		}
		if d.readOnly {
			return d.readOnlyErr()
		}
		if err := d.recordMergeOperator(); err != nil {
			return err
		}
	}
	if wo == nil {
		wo = &defaultWriteOptions
	}
	w := &b.commit
	w.batch, w.sync, w.disableWAL = b, wo.Sync, wo.DisableWAL
	w.done, w.err, w.rotated = false, nil, nil
	_, err := d.commit(w)
	w.batch = nil
	return err
}

func (d *DB) checkOpen() error {
	if d.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (d *DB) commit(w *writer) (*writer, error) {
	if err := d.checkOpen(); err != nil && !w.closing {
		return w, err
	}
	if d.readOnly {
		return w, d.readOnlyErr()
	}
	w.cond.L = &d.mu
	d.mu.Lock()
	if d.closed.Load() && !w.closing {
		// Checked under d.mu: Close drains the queue after setting closed,
		// so no write can slip in behind its final flush.
		d.mu.Unlock()
		return w, ErrClosed
	}
	d.mu.writers = append(d.mu.writers, w)
	for !w.done && d.mu.writers[0] != w {
		w.cond.Wait()
	}
	if w.done {
		d.mu.Unlock()
		return w, w.err
	}
	// w leads: take the group.
	var syncStart time.Time
	if w.sync && w.batch != nil && !w.disableWAL && w.validate == nil {
		d.gatherSyncedWritersLocked()
		syncStart = time.Now()
	}
	group := d.mu.writers[:1]
	need := 0
	if w.batch != nil {
		need = w.batch.memBytes
		size := w.batch.Size()
		for _, o := range d.mu.writers[1:] {
			// A writer with a check leads alone: its check's failure is
			// its own, and a follower's write must not precede the check.
			if w.validate != nil || o.batch == nil || o.validate != nil || size+o.batch.Size() > maxGroupBytes {
				break
			}
			size += o.batch.Size()
			need += o.batch.memBytes
			group = d.mu.writers[:len(group)+1]
		}
	}
	// group stays valid while d.mu is released in makeRoomLocked: other
	// writers only append to d.mu.writers, never touching its first
	// len(group) elements.
	var err error
	if w.validate != nil {
		// Leadership keeps every other writer out while the check reads
		// (without d.mu, which is never held across IO).
		d.mu.Unlock()
		err = w.validate()
		d.mu.Lock()
	}
	switch {
	case err != nil:
	case w.validate != nil && w.batch.Empty():
		// A check with nothing to write.
	case w.syncOnly:
		if d.mu.bgErr != nil {
			err = fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
		} else {
			err = d.syncWALLocked("an empty secondary delete")
		}
	case w.batch != nil:
		if err = d.makeRoomLocked(false, need, w); err == nil {
			err = d.commitGroupLocked(group)
		}
	case w.secondary != nil:
		if err = d.makeRoomLocked(false, need, w); err == nil {
			err = d.commitSecondaryLocked(w)
		}
	case w.ingest != nil:
		err = d.ingestLocked(w)
	default: // a flush request
		err = d.makeRoomLocked(true, need, w)
	}
	// Pop the group and hand leadership on.
	d.mu.writers = d.mu.writers[len(group):]
	if !syncStart.IsZero() {
		d.mu.syncGather.writers = len(d.mu.writers) + len(group)
		d.mu.syncGather.took = time.Since(syncStart)
	}
	for _, o := range group {
		o.err = err
		o.done = true
		if o != w {
			o.cond.Signal()
		}
	}
	if len(d.mu.writers) > 0 {
		d.mu.writers[0].cond.Signal()
	} else if d.closed.Load() {
		d.mu.compact.cond.Broadcast() // Close waits for the queue to drain
	}
	d.mu.Unlock()
	return w, err
}

// maxSyncGather bounds gatherSyncedWritersLocked's wait.
const maxSyncGather = time.Millisecond

// gatherSyncedWritersLocked lets the writers the last synced group released
// come back before a synced group is taken, so that one WAL sync carries
// them all. Without it, writers that write again as soon as they return
// split into two cohorts that sync in turn (each group takes those that
// queued during the previous sync), about half of them per sync. The
// leader yields its processor while fewer writers are queued than there
// were when the last synced group ended (queued, plus released), for at
// most a quarter of that group's write and sync time (and maxSyncGather):
// a lone writer, or
// one whose peers stopped writing, waits not at all or that long. d.mu is
// held on entry and return (released while yielding); w leads throughout.
func (d *DB) gatherSyncedWritersLocked() {
	want, took := d.mu.syncGather.writers, d.mu.syncGather.took
	if len(d.mu.writers) >= want {
		return
	}
	deadline := time.Now().Add(min(took/4, maxSyncGather))
	for len(d.mu.writers) < want && time.Now().Before(deadline) {
		d.mu.Unlock()
		runtime.Gosched()
		d.mu.Lock()
	}
}

// commitGroupLocked assigns seqnums, writes the WAL and applies the group
// to the memtable. d.mu is held on entry and exit but released for the IO;
// leadership keeps other writers out meanwhile.
func (d *DB) commitGroupLocked(group []*writer) error {
	seq := d.mu.lastSeq + 1
	first := seq
	syncWAL, anyWAL := false, false
	if d.mu.mem.mutable.oldestTombstone == 0 {
		for _, o := range group {
			if o.batch.tombstones {
				// Dated before the WAL write: a little older than the
				// write, never younger.
				d.mu.mem.mutable.oldestTombstone = d.clock.Now().UnixNano()
				d.armDeadlineTimerLocked()
				break
			}
		}
	}
	for _, o := range group {
		o.batch.setSeqNum(seq)
		seq += base.SeqNum(o.batch.count)
		if !o.disableWAL {
			anyWAL = true
			syncWAL = syncWAL || o.sync
		} else {
			d.mu.mem.mutable.noWAL = true
		}
	}
	last := seq - 1
	d.mu.lastSeq = last
	mem := d.mu.mem.mutable
	logw := d.mu.log.w
	d.mu.Unlock()

	var err, walErr error
	blobSynced, walErr := d.separateGroup(mem, group, syncWAL)
	if walErr != nil {
		walErr = fmt.Errorf("shale: writing values to blob files: %w", walErr)
		err = walErr
	}
	if anyWAL && walErr == nil {
		before := logw.Size()
		for _, o := range group {
			if !o.disableWAL {
				if walErr = logw.AddRecord(o.data()); walErr != nil {
					break
				}
			}
		}
		if walErr == nil {
			walErr = logw.Commit(syncWAL)
		}
		if walErr == nil {
			d.stats.walBytes.Add(uint64(logw.Size() - before))
		}
		err = walErr
	}
	if blobSynced != nil {
		// The group's values were synced beside its WAL record.
		if serr := blobSynced(); serr != nil && walErr == nil {
			walErr = fmt.Errorf("shale: syncing values' blob file: %w", serr)
			err = walErr
		}
	}
	if err == nil {
		for _, o := range group {
			if _, err = applyBatch(mem.Memtable, o.data()); err != nil {
				break
			}
		}
	}
	d.mu.Lock()
	if walErr != nil {
		d.walFailedLocked(logw, fmt.Errorf("shale: commit of seqnums %d..%d failed: %w", first, last, walErr))
		return fmt.Errorf("%w: %w", ErrReadOnly, walErr)
	}
	if err != nil {
		// The memtable may now hold part of the group: stop writes.
		d.setBackgroundErrorLocked(BackgroundErrorWrite, fmt.Errorf("shale: commit of seqnums %d..%d failed: %w", first, last, err))
		return d.mu.bgErr
	}
	d.visibleSeq.Store(uint64(last))
	n := uint64(0)
	for _, o := range group {
		n += uint64(len(o.batch.data))
	}
	d.stats.userBytesWritten.Add(n)
	d.stats.commitGroups.Add(1)
	d.stats.commitBatches.Add(uint64(len(group)))
	if syncWAL {
		d.stats.walSyncs.Add(1)
	}
	return nil
}

// applyBatch inserts an encoded batch into a memtable and reports whether
// it held a tombstone.
func applyBatch(m *memtable.Memtable, data []byte) (tombstones bool, _ error) {
	r, ok := newBatchReader(data)
	if !ok {
		return false, base.CorruptionErrorf("batch", 0, "batch shorter than its header")
	}
	seq := r.seq
	for {
		kind, key, value, ok, malformed := r.next()
		if malformed {
			return tombstones, base.CorruptionErrorf("batch", 0, "malformed batch at seqnum %d", seq)
		}
		if !ok {
			return tombstones, nil
		}
		if kind == base.KindLogData {
			continue
		}
		if err := m.Add(seq, kind, key, value); err != nil {
			return tombstones, err
		}
		tombstones = tombstones || isTombstone(kind)
		seq++
	}
}

// makeRoomLocked makes sure the mutable memtable can take need more bytes,
// rotating it (and the WAL) when full or when force is set, and stalling
// writes while too many memtables or L0 files wait. d.mu is held.
func (d *DB) makeRoomLocked(force bool, need int, w *writer) error {
	slowed := false
	for {
		if d.mu.closing {
			return ErrClosed
		}
		if d.mu.bgErr != nil {
			if !w.newWAL || w.cleared {
				return fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
			}
			if d.mu.compact.flushing || d.mu.compact.running > 0 {
				// A flush or compaction that started before the error may
				// still fail with a fault met before the Resume: wait for
				// it, so that its error is set before the clear and not
				// after it (where the Resume would report it, or later
				// writes fail). Jobs end once bgErr is set (none start).
				d.mu.compact.cond.Wait()
				continue
			}
			w.cleared = true
			// Resume leads: clear the error, hold later writers back until
			// the memtables are flushed, and let the flushes run.
			d.logger.Info("resuming after background error", "err", d.mu.bgErr)
			d.mu.bgErr = nil
			d.mu.resuming = true
			d.maybeScheduleLocked()
		}
		if d.mu.resuming && !w.newWAL {
			d.mu.compact.cond.Wait()
			continue
		}
		mem := d.mu.mem.mutable
		if force && w.rotateOnly != nil && w.rotateOnly != mem {
			return nil
		}
		o := d.mutableOptions()
		l0 := len(d.readState.val.version.Levels[0])
		if o.DisableAutoCompactions {
			// As RocksDB: L0 triggers do not stall writes when nothing
			// would compact L0 away.
			l0 = 0
		}
		if !force && !slowed && l0 >= o.Level0SlowdownWritesTrigger {
			// Slow down by 1 ms per group, as RocksDB's delayed write.
			d.noteWriteStallLocked(false)
			d.mu.Unlock()
			start := time.Now()
			time.Sleep(time.Millisecond)
			d.stats.recordStall(time.Since(start), false)
			d.mu.Lock()
			slowed = true
			continue
		}
		// Values written to blob files at commit count as if they were in
		// the memtable (memBlobs.charge).
		used := mem.ApproximateMemoryUsage() + mem.blobs.charge
		if !force && used < min(o.WriteBufferSize, mem.writeBufferSize) && used+need <= mem.capacity {
			return nil
		}
		if force && mem.Empty() && !w.newWAL {
			return nil
		}
		if len(d.mu.mem.queue) >= o.MaxWriteBufferNumber-1 || l0 >= o.Level0StopWritesTrigger {
			if d.closed.Load() && !w.closing {
				// Close is waiting for the writers to leave before it stops
				// the background jobs this stall waits for (a flush held
				// back by the rate limiter may take minutes): nothing of
				// this group has reached the WAL or a memtable yet.
				return ErrClosed
			}
			d.logger.Info("write stall", "immutable_memtables", len(d.mu.mem.queue), "l0_files", l0)
			d.noteWriteStallLocked(true)
			start := time.Now()
			d.mu.compact.cond.Wait()
			d.stats.recordStall(time.Since(start), true)
			continue
		}
		reason := FlushReasonWriteBufferFull
		if force {
			reason = w.flushReason
		}
		if err := d.rotateMemtableLocked(need, w.newWAL, reason); err != nil {
			return err
		}
		if force {
			w.rotated = d.mu.mem.queue[len(d.mu.mem.queue)-1]
			return nil
		}
	}
}

// rotateMemtableLocked makes the mutable memtable immutable, starts a new WAL
// and a new memtable, and schedules a flush. Only the commit leader calls it.
func (d *DB) rotateMemtableLocked(need int, resuming bool, reason FlushReason) error {
	newLogNum := d.versions.NewFileNum()
	oldLog := d.mu.log.w
	oldMem := d.mu.mem.mutable
	d.mu.Unlock()
	newLog, err := d.createWAL(newLogNum)
	var closeErr error
	if err == nil {
		// Closing the WAL syncs it: the values its records index first.
		if closeErr = syncMemBlobs(oldMem); closeErr == nil {
			closeErr = oldLog.Close()
		} else {
			oldLog.Close()
		}
	}
	d.mu.Lock()
	if err != nil {
		if newLog != nil {
			newLog.Close()
		}
		d.setBackgroundErrorLocked(BackgroundErrorWrite, fmt.Errorf("shale: switching to WAL %s: %w", newLogNum, err))
		return d.mu.bgErr
	}
	d.mu.mem.mutable.flushReason = reason
	d.mu.log.w = newLog
	d.mu.log.num = newLogNum
	d.mu.mem.queue = append(d.mu.mem.queue, d.mu.mem.mutable)
	d.mu.mem.mutable = d.newMemTable(newLogNum, 2*need)
	d.mu.mem.mutable.firstSeq = d.mu.lastSeq + 1
	d.publishReadStateLocked()
	if closeErr != nil {
		// The old WAL may not hold all of its memtable. The memtable is
		// flushed before any new write is accepted: by Resume, or right now
		// when Resume is what asked for the new WAL (the WAL had failed).
		d.logger.Warn("closing the previous WAL failed", "err", closeErr)
		if !resuming {
			d.setBackgroundErrorLocked(BackgroundErrorWrite, fmt.Errorf("shale: closing WAL: %w", closeErr))
			return d.mu.bgErr
		}
	}
	d.maybeScheduleLocked()
	return nil
}

func (d *DB) createWAL(num base.FileNum) (*wal.Writer, error) {
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeLog, num))
	f, err := d.fs.Create(name)
	if err != nil {
		return nil, err
	}
	if err := d.syncDir(); err != nil {
		f.Close()
		return nil, err
	}
	w := wal.NewWriterWithOptions(f, name, d.walWriterOptions())
	d.watchWAL(w)
	return w, nil
}

// walWriterOptions are the options of every WAL the DB writes. The space of
// a WAL is reserved ahead in steps of up to 4 MiB (a WAL grows to about
// WriteBufferSize), so appends and fdatasync rarely allocate; under small
// synced writes it is also zero-filled ahead, so their fdatasync does not
// change the file's size or block map (wal.WriterOptions.ZeroFill).
func (d *DB) walWriterOptions() wal.WriterOptions {
	return wal.WriterOptions{
		PreallocateSize:  min(int64(d.mutableOptions().WriteBufferSize), 4<<20),
		ZeroFill:         true,
		ZeroFillStep:     min(int64(d.mutableOptions().WriteBufferSize), wal.DefaultZeroFillStep),
		BackgroundWrites: d.opts.WALBackgroundWrites,
		Mmap:             d.opts.AllowMmapWrites,
		Syncs:            &d.stats.walFileSyncs,
	}
}

// watchWAL makes a background failure of w stop the DB's writes.
func (d *DB) watchWAL(w *wal.Writer) {
	w.SetErrorHandler(func(err error) {
		d.mu.Lock()
		d.walFailedLocked(w, err)
		d.mu.Unlock()
	})
}

func (d *DB) syncDir() error { return syncDirOf(d.fs, d.dirname) }

// walFailedLocked records a failure of WAL w once: the flusher's report may
// arrive after a commit already saw the error and after Resume cleared it,
// and must not stop the DB again for a WAL it no longer writes.
func (d *DB) walFailedLocked(w *wal.Writer, err error) {
	if d.mu.log.failed == w {
		return
	}
	d.mu.log.failed = w
	d.setBackgroundErrorLocked(BackgroundErrorWrite, err)
}

// setBackgroundErrorLocked puts the DB in the read-only error state; reason
// is the operation that failed.
func (d *DB) setBackgroundErrorLocked(reason BackgroundErrorReason, err error) {
	if d.mu.bgErr == nil {
		d.mu.bgErr = err
		d.stats.backgroundErrors.Add(1)
		d.logger.Error("background error; writes stop until Resume", "err", err)
		d.eventBackgroundErrorLocked(reason, err)
	}
	d.mu.compact.cond.Broadcast()
}

// Resume clears a background error after its cause was fixed (for example
// disk space was freed). It starts a fresh WAL, flushes the memtables (whose
// old WAL may be damaged) and lets writes proceed once they are in tables,
// so that recovery after a later crash still sees a prefix of the writes.
func (d *DB) Resume() error {
	if d.readOnly {
		return d.readOnlyErr()
	}
	d.mu.Lock()
	if d.mu.closing {
		d.mu.Unlock()
		return ErrClosed
	}
	if d.mu.bgErr == nil {
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	// The error is cleared when this request leads the commit queue (in
	// makeRoomLocked): writers queued before it fail fast with ErrReadOnly
	// instead of waiting ahead of it for a Resume that cannot lead.
	err := d.flushAndWait(&writer{newWAL: true, flushReason: FlushReasonErrorRecovery})
	d.mu.Lock()
	d.mu.resuming = false
	d.mu.compact.cond.Broadcast()
	d.maybeScheduleLocked()
	d.mu.Unlock()
	return err
}

// Flush flushes the mutable memtable to an L0 table and waits until every
// memtable written before the call is in a table.
func (d *DB) Flush() error {
	return d.flushAndWait(&writer{flushReason: FlushReasonManual})
}

// flushAndWait sends a flush request through the commit queue and waits
// until the memtable it made immutable (or the newest waiting one) is in
// a table.
func (d *DB) flushAndWait(req *writer) error {
	w, err := d.commit(req)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var target *memTable
	if w.rotated != nil {
		target = w.rotated
	} else if n := len(d.mu.mem.queue); n > 0 {
		target = d.mu.mem.queue[n-1]
	}
	if target == nil {
		return nil
	}
	for {
		select {
		case <-target.flushed:
			return nil
		default:
		}
		if d.mu.bgErr != nil {
			return fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
		}
		if d.mu.closing {
			return ErrClosed
		}
		d.mu.compact.cond.Wait()
	}
}

// unixSeconds returns t in unix seconds, 0 before 1970.
func unixSeconds(t time.Time) uint64 { return uint64(max(t.Unix(), 0)) }

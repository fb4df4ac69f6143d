package shale

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// EventListener is told of the DB's background work (RocksDB's
// EventListener): flushes, compactions, files created and deleted, write
// stalls and background errors. Implementations embed NoopEventListener, so
// that they keep compiling, and ignore the event, when a method is added.
//
// The DB calls the methods from one goroutine of its own, one at a time and
// in the order the events happened (a job's begin before its completion,
// and a job's completion before the begin of any compaction of its
// outputs: it is queued as the job's version is installed), never while
// it holds a lock and never from a writer's goroutine. The events wait in
// a queue of 4096; a listener that falls
// that far behind loses the newest events, is told how many
// (OnEventsDropped) and Metrics().DroppedEvents counts them, so a listener
// that blocks delays only later events, never a write or background job.
// Close returns once every queued event was delivered. A method may call
// the DB (Metrics, GetLiveFilesMetaData, even Flush), but not Close.
type EventListener interface {
	// OnFlushBegin is called when a flush starts writing a memtable.
	OnFlushBegin(FlushInfo)
	// OnFlushCompleted is called when a flush ends, with Err set if it failed.
	OnFlushCompleted(FlushInfo)
	// OnCompactionBegin is called when a compaction (or trivial move) starts.
	OnCompactionBegin(CompactionInfo)
	// OnCompactionCompleted is called when it ends, with Err set if it failed.
	OnCompactionCompleted(CompactionInfo)
	// OnTableFileCreated is called for each table a flush or compaction
	// wrote (Err set: the table was abandoned and removed).
	OnTableFileCreated(TableFileInfo)
	// OnTableFileDeleted is called for each table file removed.
	OnTableFileDeleted(TableFileInfo)
	// OnBlobFileCreated is called for each blob file a flush or compaction
	// wrote (with Err set, and the file removed, when its job failed).
	OnBlobFileCreated(BlobFileInfo)
	// OnBlobFileDeleted is called for each blob file removed.
	OnBlobFileDeleted(BlobFileInfo)
	// OnStallConditionsChanged is called when writes become delayed,
	// stopped or normal again (RocksDB's OnStallConditionsChanged).
	OnStallConditionsChanged(WriteStallInfo)
	// OnBackgroundError is called when an error puts the DB in the
	// read-only error state (until Resume).
	OnBackgroundError(BackgroundErrorInfo)
	// OnEventsDropped is called, in place of the events, after the queue
	// overflowed.
	OnEventsDropped(EventsDroppedInfo)
}

// NoopEventListener implements EventListener with methods that do nothing.
// Embed it in a listener so that methods added to the interface later have
// a default.
type NoopEventListener struct{}

// OnFlushBegin does nothing.
func (NoopEventListener) OnFlushBegin(FlushInfo) {}

// OnFlushCompleted does nothing.
func (NoopEventListener) OnFlushCompleted(FlushInfo) {}

// OnCompactionBegin does nothing.
func (NoopEventListener) OnCompactionBegin(CompactionInfo) {}

// OnCompactionCompleted does nothing.
func (NoopEventListener) OnCompactionCompleted(CompactionInfo) {}

// OnTableFileCreated does nothing.
func (NoopEventListener) OnTableFileCreated(TableFileInfo) {}

// OnTableFileDeleted does nothing.
func (NoopEventListener) OnTableFileDeleted(TableFileInfo) {}

// OnBlobFileCreated does nothing.
func (NoopEventListener) OnBlobFileCreated(BlobFileInfo) {}

// OnBlobFileDeleted does nothing.
func (NoopEventListener) OnBlobFileDeleted(BlobFileInfo) {}

// OnStallConditionsChanged does nothing.
func (NoopEventListener) OnStallConditionsChanged(WriteStallInfo) {}

// OnBackgroundError does nothing.
func (NoopEventListener) OnBackgroundError(BackgroundErrorInfo) {}

// OnEventsDropped does nothing.
func (NoopEventListener) OnEventsDropped(EventsDroppedInfo) {}

var _ EventListener = NoopEventListener{}

// FlushReason says why a memtable was flushed (RocksDB's FlushReason).
type FlushReason int

// The flush reasons.
const (
	FlushReasonOther             FlushReason = iota // none of the others
	FlushReasonWriteBufferFull                      // the memtable reached Options.WriteBufferSize
	FlushReasonManual                               // DB.Flush, CompactRange
	FlushReasonErrorRecovery                        // DB.Resume
	FlushReasonShutdown                             // Close, for writes that skipped the WAL
	FlushReasonDeletePersistence                    // Options.DeletePersistenceThreshold
	FlushReasonMemtableScan                         // Options.MemtableOpScanFlushTrigger
	FlushReasonSecondaryDelete                      // DB.DeleteBySecondaryRange
	FlushReasonRecovery                             // Open, replaying WALs
)

// String names the reason in words.
func (r FlushReason) String() string {
	switch r {
	case FlushReasonOther:
		return "other"
	case FlushReasonWriteBufferFull:
		return "write buffer full"
	case FlushReasonManual:
		return "manual"
	case FlushReasonErrorRecovery:
		return "error recovery"
	case FlushReasonShutdown:
		return "shutdown"
	case FlushReasonDeletePersistence:
		return "delete persistence"
	case FlushReasonMemtableScan:
		return "memtable scan"
	case FlushReasonSecondaryDelete:
		return "secondary delete"
	case FlushReasonRecovery:
		return "recovery"
	}
	return fmt.Sprintf("FlushReason(%d)", int(r))
}

// FlushInfo describes a flush (RocksDB's FlushJobInfo). OnFlushBegin gets
// JobID, Reason and WALNum; OnFlushCompleted gets all of it.
type FlushInfo struct {
	// JobID numbers the DB's flushes and compactions since Open.
	JobID  int
	Reason FlushReason
	// WALNum is the number of the WAL whose memtable is flushed (0 at Open).
	WALNum uint64
	// Outputs are the numbers of the L0 tables written (one, normally).
	Outputs      []uint64
	BytesWritten uint64
	Duration     time.Duration
	Err          error
}

// CompactionInfo describes a compaction (RocksDB's CompactionJobInfo).
// OnCompactionBegin gets the fields up to Inputs; OnCompactionCompleted all.
type CompactionInfo struct {
	JobID int
	// Reason is why it was picked: "L0", "size", "manual", "marked",
	// "tombstone-density", "elision-only", "expired", "secondary-delete",
	// "blob-gc", "blob-expired", "blob-gc-continued", ... (the compact
	// package's Reason constants).
	Reason                  string
	InputLevel, OutputLevel int
	// Inputs are the input tables by level, InputLevel first.
	Inputs []LevelFiles
	// TrivialMove is set when the one input moved to OutputLevel unread.
	TrivialMove bool
	// Outputs are the numbers of the tables written to OutputLevel (the
	// moved table for a trivial move).
	Outputs []uint64
	// BytesRead and BytesWritten are the bytes of the input tables read
	// and of the tables and blob files written.
	BytesRead, BytesWritten uint64
	// InputEntries and OutputEntries count the entries merged and kept.
	InputEntries, OutputEntries uint64
	// BlobBytesRelocated counts the blob bytes garbage collection moved
	// out of old blob files (their record bytes there).
	BlobBytesRelocated uint64
	Duration           time.Duration
	Err                error
}

// LevelFiles lists table numbers of one level.
type LevelFiles struct {
	Level int
	Files []uint64
}

// FileReason says why a file was created or deleted.
type FileReason int

// The file reasons.
const (
	FileReasonFlush      FileReason = iota // created by a flush
	FileReasonCompaction                   // created by a compaction
	FileReasonRecovery                     // created by Open's WAL replay
	FileReasonObsolete                     // deleted: no version references it
	FileReasonOrphan                       // deleted at Open: the MANIFEST does not know it
	FileReasonFailedJob                    // deleted: the job that wrote it failed
)

// String names the reason in words.
func (r FileReason) String() string {
	switch r {
	case FileReasonFlush:
		return "flush"
	case FileReasonCompaction:
		return "compaction"
	case FileReasonRecovery:
		return "recovery"
	case FileReasonObsolete:
		return "obsolete"
	case FileReasonOrphan:
		return "orphan"
	case FileReasonFailedJob:
		return "failed job"
	}
	return fmt.Sprintf("FileReason(%d)", int(r))
}

// TableFileInfo describes a table file created or deleted (RocksDB's
// TableFileCreationInfo and TableFileDeletionInfo).
type TableFileInfo struct {
	// JobID is the flush or compaction that wrote or abandoned the file (0
	// for a deletion of an obsolete file).
	JobID   int
	FileNum uint64
	Path    string
	// Level is the level a created table goes to.
	Level int
	// Size is the file's size (0 when unknown: an abandoned table).
	Size   uint64
	Reason FileReason
	// Err is why the table was abandoned, or why its removal failed.
	Err error
}

// BlobFileInfo describes a blob file created or deleted (RocksDB's
// BlobFileCreationInfo and BlobFileDeletionInfo).
type BlobFileInfo struct {
	JobID   int
	FileNum uint64
	Path    string
	Size    uint64
	Reason  FileReason
	Err     error
}

// WriteStallCondition is the state of writes (RocksDB's WriteStallCondition).
type WriteStallCondition int

// The write stall conditions.
const (
	// WriteStallNormal: writes proceed.
	WriteStallNormal WriteStallCondition = iota
	// WriteStallDelayed: each commit group is delayed 1 ms
	// (Options.Level0SlowdownWritesTrigger).
	WriteStallDelayed
	// WriteStallStopped: a write that needs a new memtable waits, because
	// too many memtables wait for a flush (Options.MaxWriteBufferNumber) or
	// too many L0 files for a compaction (Options.Level0StopWritesTrigger).
	WriteStallStopped
)

// String names the condition in words.
func (c WriteStallCondition) String() string {
	switch c {
	case WriteStallNormal:
		return "normal"
	case WriteStallDelayed:
		return "delayed"
	case WriteStallStopped:
		return "stopped"
	}
	return fmt.Sprintf("WriteStallCondition(%d)", int(c))
}

// WriteStallCause says what made writes stall (RocksDB's WriteStallCause).
type WriteStallCause int

// The write stall causes.
const (
	WriteStallCauseNone          WriteStallCause = iota
	WriteStallCauseMemtableLimit                 // Options.MaxWriteBufferNumber
	WriteStallCauseL0FileCount                   // the L0 triggers
)

// String names the cause in words.
func (c WriteStallCause) String() string {
	switch c {
	case WriteStallCauseNone:
		return "none"
	case WriteStallCauseMemtableLimit:
		return "memtable limit"
	case WriteStallCauseL0FileCount:
		return "L0 file count"
	}
	return fmt.Sprintf("WriteStallCause(%d)", int(c))
}

// WriteStallInfo describes a change of the write stall condition.
type WriteStallInfo struct {
	Condition, Previous WriteStallCondition
	// Cause is what holds writes back now (None when Condition is normal).
	Cause WriteStallCause
}

// BackgroundErrorReason says which operation failed (RocksDB's
// BackgroundErrorReason).
type BackgroundErrorReason int

// The operations whose failure stops writes.
const (
	BackgroundErrorFlush         BackgroundErrorReason = iota
	BackgroundErrorCompaction                          // automatic or manual
	BackgroundErrorWrite                               // a WAL write or sync, a memtable insert, a WAL switch
	BackgroundErrorManifestWrite                       // a MANIFEST edit outside flushes and compactions
)

// String names the operation in words.
func (r BackgroundErrorReason) String() string {
	switch r {
	case BackgroundErrorFlush:
		return "flush"
	case BackgroundErrorCompaction:
		return "compaction"
	case BackgroundErrorWrite:
		return "write"
	case BackgroundErrorManifestWrite:
		return "manifest write"
	}
	return fmt.Sprintf("BackgroundErrorReason(%d)", int(r))
}

// BackgroundErrorInfo describes the error that made the DB read-only.
type BackgroundErrorInfo struct {
	Reason BackgroundErrorReason
	Err    error
}

// EventsDroppedInfo says how many events a listener that fell behind lost,
// just before the events that follow the loss.
type EventsDroppedInfo struct {
	Count int
}

// eventQueueCapacity bounds the events waiting for a listener; a variable
// so that tests can make it overflow.
var eventQueueCapacity = 4096

// eventQueue delivers events to a listener from a goroutine of its own.
// Events are queued, never delivered, by the goroutine that produces them,
// which may hold d.mu (the queue's lock comes after d.mu and the queue
// never takes a DB lock), and push never blocks, so neither a writer nor a
// background job ever waits for the listener. The alternative, calling the
// listener from the background job after it releases its locks as RocksDB
// does, lets a slow listener hold up flushes and so, through write stalls,
// the writers; and stall events come from the commit path itself.
type eventQueue struct {
	listener EventListener
	logger   *slog.Logger
	capacity int

	mu      sync.Mutex
	cond    sync.Cond
	pending []func(EventListener)
	dropped int // since the last OnEventsDropped was queued
	closed  bool
	done    chan struct{}

	totalDropped atomic.Uint64
}

func newEventQueue(l EventListener, logger *slog.Logger) *eventQueue {
	q := &eventQueue{listener: l, logger: logger, capacity: eventQueueCapacity, done: make(chan struct{})}
	q.cond.L = &q.mu
	go q.run()
	return q
}

// push queues an event; when the queue is full it drops it and counts it.
func (q *eventQueue) push(ev func(EventListener)) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if len(q.pending) >= q.capacity {
		q.dropped++
		q.totalDropped.Add(1)
		first := q.dropped == 1
		q.mu.Unlock()
		if first {
			q.logger.Warn("Options.EventListener is behind: dropping events", "queued", q.capacity)
		}
		return
	}
	q.queueDroppedLocked()
	q.pending = append(q.pending, ev)
	q.cond.Signal()
	q.mu.Unlock()
}

// queueDroppedLocked queues the notice of the events dropped since the last.
func (q *eventQueue) queueDroppedLocked() {
	if n := q.dropped; n > 0 {
		q.dropped = 0
		q.pending = append(q.pending, func(l EventListener) { l.OnEventsDropped(EventsDroppedInfo{Count: n}) })
	}
}

func (q *eventQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.pending) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.pending) == 0 {
			q.mu.Unlock()
			return
		}
		ev := q.pending[0]
		q.pending[0] = nil
		q.pending = q.pending[1:]
		q.mu.Unlock()
		ev(q.listener)
	}
}

// close delivers the queued events, then stops the goroutine.
func (q *eventQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		q.queueDroppedLocked()
		q.cond.Signal()
	}
	q.mu.Unlock()
	<-q.done
}

// newJobID numbers a flush or compaction for the listener.
func (d *DB) newJobID() int { return int(d.jobIDs.Add(1)) }

// The event helpers do nothing without a listener.

func (d *DB) eventFlushBegin(info FlushInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnFlushBegin(info) })
	}
}

func (d *DB) eventFlushCompleted(info FlushInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnFlushCompleted(info) })
	}
}

func (d *DB) eventCompactionBegin(info CompactionInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnCompactionBegin(info) })
	}
}

func (d *DB) eventCompactionCompleted(info CompactionInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnCompactionCompleted(info) })
	}
}

func (d *DB) eventTableCreated(info TableFileInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnTableFileCreated(info) })
	}
}

func (d *DB) eventTableDeleted(info TableFileInfo) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnTableFileDeleted(info) })
	}
}

// eventBackgroundErrorLocked is called with d.mu held.
func (d *DB) eventBackgroundErrorLocked(reason BackgroundErrorReason, err error) {
	if d.events != nil {
		d.events.push(func(l EventListener) { l.OnBackgroundError(BackgroundErrorInfo{Reason: reason, Err: err}) })
	}
}

// noteWriteStallLocked reports a change of the write stall condition, which
// it works out from the L0 files of the current version and the memtables:
// memFull says the mutable memtable needs replacing. d.mu is held.
func (d *DB) noteWriteStallLocked(memFull bool) {
	if d.events == nil || d.readState.val == nil {
		return
	}
	o := d.mutableOptions()
	l0 := len(d.readState.val.version.Levels[0])
	if o.DisableAutoCompactions {
		l0 = 0 // as makeRoomLocked: the L0 triggers do not stall
	}
	if !memFull {
		// As makeRoomLocked: a memtable is full at the lower of its own
		// size and the current option (SetOptions may have raised it).
		mem := d.mu.mem.mutable
		memFull = mem != nil && mem.ApproximateMemoryUsage() >= min(o.WriteBufferSize, mem.writeBufferSize)
	}
	cond, cause := WriteStallNormal, WriteStallCauseNone
	switch {
	case l0 >= o.Level0StopWritesTrigger:
		cond, cause = WriteStallStopped, WriteStallCauseL0FileCount
	case memFull && len(d.mu.mem.queue) >= o.MaxWriteBufferNumber-1:
		cond, cause = WriteStallStopped, WriteStallCauseMemtableLimit
	case l0 >= o.Level0SlowdownWritesTrigger:
		cond, cause = WriteStallDelayed, WriteStallCauseL0FileCount
	}
	prev := d.mu.stall
	if prev.Condition == cond && prev.Cause == cause {
		return
	}
	info := WriteStallInfo{Condition: cond, Previous: prev.Condition, Cause: cause}
	d.mu.stall = info
	d.events.push(func(l EventListener) { l.OnStallConditionsChanged(info) })
}

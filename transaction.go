package shale

import (
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// OptimisticTxnOptions configure an optimistic transaction
// (BeginOptimisticTransaction); nil or the zero value are RocksDB's
// defaults.
type OptimisticTxnOptions struct {
	// SetSnapshot (set_snapshot) calls SetSnapshot at begin. Default false.
	SetSnapshot bool
}

// Transaction is a set of reads and writes committed atomically: as one
// batch in the WAL, after a conflict check (optimistic, DB.
// BeginOptimisticTransaction) or under row locks (pessimistic,
// TransactionDB.BeginTransaction). Its reads see its own writes. It is not
// safe for concurrent use. Commit or Rollback ends it; any use after that
// returns an error matching ErrInvalidArgument.
type Transaction struct {
	db *DB
	// tdb is the TransactionDB of a pessimistic transaction, nil for an
	// optimistic one.
	tdb *TransactionDB
	wo  WriteOptions
	wb  *WriteBatchWithIndex
	// snapshot is SetSnapshot's (GetSnapshot); guard is the snapshot an
	// optimistic transaction registers at begin, so that no write newer
	// than it can be compacted out of sight of the commit's check
	// (a deletion at the last level is dropped only below every snapshot).
	snapshot *Snapshot
	guard    *Snapshot
	// tracked maps the keys the transaction wrote or read for update to the
	// seqnum they were tracked at: an optimistic commit fails when one was
	// written after it; a pessimistic transaction holds their locks.
	tracked map[string]base.SeqNum
	// savePoints hold, per save point, the keys first tracked since it.
	savePoints [][]string
	done       bool
	// id, lockTimeout and deadlockDetect are a pessimistic transaction's.
	id             uint64
	lockTimeout    time.Duration
	deadlockDetect bool
	deadlockDepth  int
}

// BeginOptimisticTransaction starts an optimistic transaction: it takes no
// locks, and Commit fails with an error matching ErrBusy, writing nothing,
// when a key it wrote or read with GetForUpdate was written by anyone else
// after the transaction tracked it (see Transaction.SetSnapshot). nil
// options are the defaults.
func (d *DB) BeginOptimisticTransaction(wo *WriteOptions, to *OptimisticTxnOptions) *Transaction {
	t := d.newTransaction(wo)
	if !d.closed.Load() && !d.readOnly {
		t.guard = d.NewSnapshot()
	}
	if to != nil && to.SetSnapshot {
		t.SetSnapshot()
	}
	return t
}

func (d *DB) newTransaction(wo *WriteOptions) *Transaction {
	t := &Transaction{db: d, wb: NewWriteBatchWithIndex(), tracked: make(map[string]base.SeqNum)}
	if wo != nil {
		t.wo = *wo
	}
	return t
}

// errTxnDone is the error of a transaction used after Commit or Rollback.
var errTxnDone = base.InvalidArgumentf("shale: transaction already committed or rolled back")

func (t *Transaction) check() error {
	if t.done {
		return errTxnDone
	}
	return t.db.checkOpen()
}

// SetSnapshot takes a snapshot for the transaction (GetSnapshot). Keys
// tracked from then on are checked against it: an optimistic commit fails
// when one was written after it, and a pessimistic transaction's
// GetForUpdate or write of such a key fails with ErrBusy. Reads use it only
// when ReadOptions.Snapshot names it, as in RocksDB. A second call
// replaces it.
func (t *Transaction) SetSnapshot() {
	if t.done || t.db.closed.Load() {
		return
	}
	if t.snapshot != nil {
		t.snapshot.Release()
	}
	t.snapshot = t.db.NewSnapshot()
}

// GetSnapshot returns the snapshot SetSnapshot took, or nil. It is released
// when the transaction ends.
func (t *Transaction) GetSnapshot() *Snapshot { return t.snapshot }

// trackSeq is the seqnum a key tracked now is checked against: the
// snapshot's, else the newest visible seqnum (RocksDB's rule: the
// seqnum when the key is first tracked).
func (t *Transaction) trackSeq() base.SeqNum {
	if t.snapshot != nil {
		return t.snapshot.seq
	}
	return base.SeqNum(t.db.visibleSeq.Load())
}

// noteTracked records key as tracked since the innermost save point.
func (t *Transaction) noteTracked(key string) {
	if n := len(t.savePoints); n > 0 {
		t.savePoints[n-1] = append(t.savePoints[n-1], key)
	}
}

// track makes key part of the transaction's conflict set: for an
// optimistic transaction, at the lower of the seqnum it was first tracked
// at and now; for a pessimistic one, by locking it.
func (t *Transaction) track(key []byte) error {
	if t.tdb != nil {
		return t.lock(key)
	}
	k := string(key)
	seq := t.trackSeq()
	if old, ok := t.tracked[k]; ok {
		t.tracked[k] = min(old, seq)
		return nil
	}
	t.tracked[k] = seq
	t.noteTracked(k)
	return nil
}

// Get returns key's value as the transaction sees it: its own writes over
// the DB, read at ro (ro.Snapshot, if any; else the latest state).
func (t *Transaction) Get(ro *ReadOptions, key []byte) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return t.wb.GetFromBatchAndDB(t.db, ro, key)
}

// GetForUpdate is Get that also tracks key: an optimistic commit then
// fails if anyone else writes key after it was tracked; a pessimistic
// transaction locks key (an error matching ErrTimedOut or ErrDeadlock when
// it cannot; ErrBusy when key was written after SetSnapshot's snapshot).
func (t *Transaction) GetForUpdate(ro *ReadOptions, key []byte) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := t.track(key); err != nil {
		return nil, err
	}
	return t.wb.GetFromBatchAndDB(t.db, ro, key)
}

func (t *Transaction) write(kind base.Kind, key, value []byte, hasValue bool) error {
	if err := t.check(); err != nil {
		return err
	}
	if kind == base.KindMerge && t.db.opts.MergeOperator == nil {
		return ErrNoMergeOperator
	}
	if err := t.track(key); err != nil {
		return err
	}
	t.wb.add(kind, key, value, hasValue)
	return nil
}

// Put sets key to value in the transaction, tracking (or locking) key.
func (t *Transaction) Put(key, value []byte) error {
	return t.write(base.KindSet, key, value, true)
}

// Delete deletes key in the transaction, tracking (or locking) key.
func (t *Transaction) Delete(key []byte) error { return t.write(base.KindDelete, key, nil, false) }

// SingleDelete single-deletes key (Batch.SingleDelete) in the transaction,
// tracking (or locking) key.
func (t *Transaction) SingleDelete(key []byte) error {
	return t.write(base.KindSingleDelete, key, nil, false)
}

// Merge merges operand into key's value in the transaction, tracking (or
// locking) key.
func (t *Transaction) Merge(key, operand []byte) error {
	return t.write(base.KindMerge, key, operand, true)
}

// DeleteRange deletes every key in [start, end) in the transaction; its
// reads stop seeing them at once. It tracks and locks nothing: a range is
// not isolated from concurrent writers (RocksDB's transactions refuse
// DeleteRange; shale offers it atomic but without isolation). Errors as
// DB.DeleteRange.
func (t *Transaction) DeleteRange(start, end []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	if t.db.cmp.Compare(start, end) > 0 {
		return base.InvalidArgumentf("shale: DeleteRange start %q must be before end %q", start, end)
	}
	if t.db.cmp.Compare(start, end) == 0 {
		return nil
	}
	t.wb.add(base.KindRangeDelete, start, end, true)
	return nil
}

// NewIterator returns an iterator over the transaction's writes laid over
// the DB read at ro (NewIteratorWithBase). It sees the writes made before
// it was created (Refresh takes the later ones).
func (t *Transaction) NewIterator(ro *ReadOptions) *Iterator {
	if err := t.check(); err != nil {
		return &Iterator{err: err}
	}
	return t.wb.NewIteratorWithBase(t.db.NewIterator(ro))
}

// GetWriteBatch returns the transaction's indexed batch (read it; write
// through the transaction).
func (t *Transaction) GetWriteBatch() *WriteBatchWithIndex { return t.wb }

// SetSavePoint records the transaction's state: RollbackToSavePoint undoes
// the writes made since, and untracks (unlocks) the keys first tracked
// since. Save points nest.
func (t *Transaction) SetSavePoint() {
	if t.done {
		return
	}
	t.wb.SetSavePoint()
	t.savePoints = append(t.savePoints, nil)
}

// RollbackToSavePoint returns to the innermost save point and removes it;
// an error matching ErrNotFound when there is none.
func (t *Transaction) RollbackToSavePoint() error {
	if t.done {
		return errTxnDone
	}
	n := len(t.savePoints)
	if n == 0 {
		return errNoSavePoint
	}
	if err := t.wb.RollbackToSavePoint(); err != nil {
		return err
	}
	keys := t.savePoints[n-1]
	t.savePoints = t.savePoints[:n-1]
	for _, k := range keys {
		delete(t.tracked, k)
	}
	if t.tdb != nil {
		t.tdb.locks.unlock(t.id, keys)
	}
	return nil
}

// PopSavePoint removes the innermost save point, keeping the writes made
// since; an error matching ErrNotFound when there is none.
func (t *Transaction) PopSavePoint() error {
	if t.done {
		return errTxnDone
	}
	n := len(t.savePoints)
	if n == 0 {
		return errNoSavePoint
	}
	t.wb.popSavePoint()
	keys := t.savePoints[n-1]
	t.savePoints = t.savePoints[:n-1]
	if n > 1 {
		t.savePoints[n-2] = append(t.savePoints[n-2], keys...)
	}
	return nil
}

// Commit writes the transaction's batch atomically (one WAL record), with
// the WriteOptions it began with. An optimistic commit first checks, while
// no other write can commit, that no tracked key was written after it was
// tracked: a conflict returns an error matching ErrBusy and writes
// nothing. Commit ends the transaction whatever it returns (locks and
// snapshot are released); retry with a new one.
func (t *Transaction) Commit() error {
	if err := t.check(); err != nil {
		return err
	}
	defer t.end()
	if t.tdb != nil {
		return t.db.Write(t.wb.batch, &t.wo)
	}
	if len(t.tracked) == 0 {
		return t.db.Write(t.wb.batch, &t.wo)
	}
	return t.db.writeChecked(t.wb.batch, &t.wo, t.checkConflicts)
}

// Rollback discards the transaction's writes and ends it.
func (t *Transaction) Rollback() error {
	if t.done {
		return errTxnDone
	}
	t.end()
	return nil
}

// end releases what the transaction holds.
func (t *Transaction) end() {
	t.done = true
	if t.tdb != nil {
		t.tdb.locks.unlockAll(t.id, t.tracked)
	}
	t.snapshot.Release()
	t.guard.Release()
	t.snapshot, t.guard = nil, nil
	t.tracked = nil
	t.savePoints = nil
}

// checkConflicts is an optimistic commit's check, run as the commit
// queue's leader: every tracked key's newest seqnum, memtables and tables
// alike, must be at most the seqnum it was tracked at.
func (t *Transaction) checkConflicts() error {
	rs := t.db.loadReadState()
	if rs == nil {
		return ErrClosed
	}
	defer rs.unref()
	keys := make([]string, 0, len(t.tracked))
	for k := range t.tracked {
		keys = append(keys, k)
	}
	// In key order: the table probes of neighbouring keys share blocks.
	slices.Sort(keys)
	for _, k := range keys {
		seq := t.tracked[k]
		newest, err := t.db.newestSeq(rs, []byte(k), seq)
		if err != nil {
			return err
		}
		if newest > seq {
			return base.KindErrorf(base.ErrBusy,
				"shale: transaction conflict: key %q was written at seqnum %d, after seqnum %d the transaction tracked it at", k, newest, seq)
		}
	}
	return nil
}

// writeChecked is Write with a check run as the commit queue's leader
// (writer.validate): the check and the write are atomic with respect to
// every other write. An empty batch runs only the check.
func (d *DB) writeChecked(b *Batch, wo *WriteOptions, check func() error) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if b.merges {
		if err := d.recordMergeOperator(); err != nil {
			return err
		}
	}
	b.init()
	w := &b.commit
	w.batch, w.sync, w.disableWAL, w.validate = b, wo.Sync, wo.DisableWAL, check
	w.done, w.err, w.rotated = false, nil, nil
	_, err := d.commit(w)
	w.batch, w.validate = nil, nil
	return err
}

// newestSeq returns the seqnum of the newest write of key in rs: its
// newest point entry (of any kind) or the newest range tombstone covering
// it, whichever is newer; 0 when there is none. Only writes above floor
// matter to the caller: tables whose seqnums are all at or below it are
// not read, and an answer at or below floor means "none above it". Newer
// sources hold newer versions of a key (as Get relies on), so the first
// source with a point entry ends the search, after one bloom-filtered
// probe per table that may hold the key and a newer write: at most the
// cost of a Get, and nothing for tables older than floor.
func (d *DB) newestSeq(rs *readState, key []byte, floor base.SeqNum) (base.SeqNum, error) {
	var maxTomb base.SeqNum
	if _, _, seq, ok := rs.memtableGet(key, base.SeqNumMax, &maxTomb); ok {
		return max(seq, maxTomb), nil
	}
	probe := func(f *manifest.FileMetadata) (bool, base.SeqNum, error) {
		if f.LargestSeq <= floor {
			// Nothing in the file (points or range tombstones, which
			// LargestSeq bounds too) is newer than floor; older files
			// hold older versions still.
			return false, 0, nil
		}
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			return true, 0, err
		}
		defer t.release()
		if t.rangeDels != nil {
			maxTomb = max(maxTomb, t.rangeDels.MaxCoveringSeq(key, base.SeqNumMax))
		}
		_, _, seq, ok, err := t.reader.GetCounted(key, base.SeqNumMax, true, nil, nil)
		if err != nil || !ok {
			return err != nil, 0, err
		}
		return true, seq, nil
	}
	v := rs.version
	for _, f := range v.Levels[0] {
		if fileContains(d.cmp.Compare, f, key) {
			if done, seq, err := probe(f); done {
				return max(seq, maxTomb), err
			}
		}
	}
	for level := 1; level < len(v.Levels); level++ {
		if f := v.FindFile(d.cmp.Compare, level, key); f != nil {
			if done, seq, err := probe(f); done {
				return max(seq, maxTomb), err
			}
		}
	}
	return maxTomb, nil
}

package shale

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// LockNoWait is a lock timeout (TransactionDBOptions, TxnOptions) that
// takes a lock only when it is free, without waiting: RocksDB's 0, which
// in shale's options means the default.
const LockNoWait = time.Duration(1)

// TransactionDBOptions configure a TransactionDB; nil or the zero value
// are RocksDB's defaults.
type TransactionDBOptions struct {
	// TransactionLockTimeout (transaction_lock_timeout) is how long a
	// transaction waits for a row lock unless TxnOptions.LockTimeout says
	// otherwise. Default (0) 1s; negative waits forever; LockNoWait does
	// not wait.
	TransactionLockTimeout time.Duration
	// DefaultLockTimeout (default_lock_timeout) is how long a write made
	// outside transactions (TransactionDB's Put, Write...) waits for its
	// row locks. Default (0) 1s; negative and LockNoWait as above.
	DefaultLockTimeout time.Duration
	// NumStripes (num_stripes) is the number of stripes of the lock table,
	// each with its own mutex. Default (0) 16.
	NumStripes int
}

// TxnOptions configure a pessimistic transaction (BeginTransaction); nil or
// the zero value are the defaults.
type TxnOptions struct {
	// SetSnapshot (set_snapshot) calls SetSnapshot at begin. Default false.
	SetSnapshot bool
	// LockTimeout (lock_timeout) is how long the transaction waits for a
	// row lock. Default (0): TransactionDBOptions.TransactionLockTimeout
	// (RocksDB's -1); negative waits forever (RocksDB's -1 of
	// TransactionDBOptions); LockNoWait does not wait (RocksDB's 0).
	LockTimeout time.Duration
	// DeadlockDetect (deadlock_detect) is accepted for RocksDB-named
	// configuration: shale detects deadlocks unless SkipDeadlockDetect is
	// set (RocksDB's default is not to; see docs/decisions.md).
	DeadlockDetect bool
	// SkipDeadlockDetect turns deadlock detection off for this
	// transaction's waits: a cycle then ends only by a lock timeout.
	SkipDeadlockDetect bool
	// DeadlockDetectDepth (deadlock_detect_depth) is how many waits-for
	// edges a detection follows. Default (0) 50.
	DeadlockDetectDepth int
}

// TransactionDB is a DB with pessimistic transactions: BeginTransaction
// starts one that locks each key it writes or reads with GetForUpdate
// until it ends. Every DB method works on it; its Put, Delete,
// SingleDelete, Merge and Write take the row locks of the keys they write
// (so they wait for transactions holding them), as RocksDB's do. Writes
// made through the embedded DB directly, DeleteRange included, take no
// locks.
type TransactionDB struct {
	*DB
	opts   TransactionDBOptions
	locks  *lockTable
	nextID atomic.Uint64
}

// OpenTransactionDB opens the database in dir as Open does, for
// pessimistic transactions. nil topts are the defaults.
func OpenTransactionDB(dir string, opts *Options, topts *TransactionDBOptions) (*TransactionDB, error) {
	var to TransactionDBOptions
	if topts != nil {
		to = *topts
	}
	if to.NumStripes < 0 {
		return nil, base.InvalidArgumentf("shale: TransactionDBOptions.NumStripes must not be negative, got %d", to.NumStripes)
	}
	if to.NumStripes == 0 {
		to.NumStripes = 16
	}
	if to.TransactionLockTimeout == 0 {
		to.TransactionLockTimeout = time.Second
	}
	if to.DefaultLockTimeout == 0 {
		to.DefaultLockTimeout = time.Second
	}
	db, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &TransactionDB{DB: db, opts: to, locks: newLockTable(to.NumStripes)}, nil
}

// BeginTransaction starts a pessimistic transaction. nil options are the
// defaults.
func (t *TransactionDB) BeginTransaction(wo *WriteOptions, to *TxnOptions) *Transaction {
	txn := t.DB.newTransaction(wo)
	txn.tdb, txn.id = t, t.nextID.Add(1)
	txn.lockTimeout, txn.deadlockDetect, txn.deadlockDepth = t.opts.TransactionLockTimeout, true, 50
	if to != nil {
		if to.LockTimeout != 0 {
			txn.lockTimeout = to.LockTimeout
		}
		txn.deadlockDetect = !to.SkipDeadlockDetect
		if to.DeadlockDetectDepth > 0 {
			txn.deadlockDepth = to.DeadlockDetectDepth
		}
		if to.SetSnapshot {
			txn.SetSnapshot()
		}
	}
	return txn
}

// lock takes key's row lock for a pessimistic transaction and, with a
// snapshot, checks that nobody wrote key after it (ErrBusy, and the lock
// is let go when this call took it).
func (t *Transaction) lock(key []byte) error {
	k := string(key)
	if _, ok := t.tracked[k]; ok {
		return nil
	}
	if err := t.tdb.locks.lock(t.id, k, t.lockTimeout, t.deadlockDetect, t.deadlockDepth); err != nil {
		return err
	}
	if t.snapshot != nil {
		rs := t.db.loadReadState()
		if rs == nil {
			t.tdb.locks.unlock(t.id, []string{k})
			return ErrClosed
		}
		newest, err := t.db.newestSeq(rs, key, t.snapshot.seq)
		rs.unref()
		if err == nil && newest > t.snapshot.seq {
			err = base.KindErrorf(base.ErrBusy,
				"shale: transaction conflict: key %q was written at seqnum %d, after the transaction's snapshot at seqnum %d", key, newest, t.snapshot.seq)
		}
		if err != nil {
			t.tdb.locks.unlock(t.id, []string{k})
			return err
		}
	}
	t.tracked[k] = 0
	t.noteTracked(k)
	return nil
}

// writeLocked writes b under the row locks of its keys, taken in key
// order for a one-off owner and let go after the write.
func (t *TransactionDB) writeLocked(b *Batch, wo *WriteOptions) error {
	if b == nil || b.Empty() {
		return t.DB.Write(b, wo)
	}
	b.init()
	// The header's count is stamped at commit: take the batch's own.
	r := batchReader{data: b.data[batchHeaderLen:], count: b.count}
	var keys []string
	for {
		kind, key, _, ok, malformed := r.next()
		if malformed {
			return base.InvalidArgumentf("shale: TransactionDB.Write: malformed batch")
		}
		if !ok {
			break
		}
		if kind != base.KindRangeDelete && kind != base.KindLogData {
			keys = append(keys, string(key))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	id := t.nextID.Add(1)
	for i, k := range keys {
		if err := t.locks.lock(id, k, t.opts.DefaultLockTimeout, true, 50); err != nil {
			t.locks.unlock(id, keys[:i])
			return err
		}
	}
	err := t.DB.Write(b, wo)
	t.locks.unlock(id, keys)
	return err
}

// Write applies b atomically under the row locks of the keys it writes
// (not of its range deletions), waiting up to
// TransactionDBOptions.DefaultLockTimeout for them.
func (t *TransactionDB) Write(b *Batch, wo *WriteOptions) error { return t.writeLocked(b, wo) }

func (t *TransactionDB) writeOneLocked(kind base.Kind, key, value []byte, hasValue bool, wo *WriteOptions) error {
	b := getBatch()
	b.add(kind, key, value, hasValue)
	err := t.writeLocked(b, wo)
	putBatch(b)
	return err
}

// Put sets key to value under key's row lock.
func (t *TransactionDB) Put(key, value []byte, wo *WriteOptions) error {
	return t.writeOneLocked(base.KindSet, key, value, true, wo)
}

// Delete removes key under key's row lock.
func (t *TransactionDB) Delete(key []byte, wo *WriteOptions) error {
	return t.writeOneLocked(base.KindDelete, key, nil, false, wo)
}

// SingleDelete single-deletes key under key's row lock.
func (t *TransactionDB) SingleDelete(key []byte, wo *WriteOptions) error {
	return t.writeOneLocked(base.KindSingleDelete, key, nil, false, wo)
}

// Merge merges operand into key under key's row lock.
func (t *TransactionDB) Merge(key, operand []byte, wo *WriteOptions) error {
	return t.writeOneLocked(base.KindMerge, key, operand, true, wo)
}

// lockTimeoutError is the error of a lock wait that timed out.
func lockTimeoutError(key string, timeout time.Duration) error {
	if timeout == LockNoWait {
		return base.KindErrorf(base.ErrTimedOut, "shale: lock of key %q is held by another transaction (no wait)", key)
	}
	return base.KindErrorf(base.ErrTimedOut, "shale: lock wait for key %q timed out after %v", key, timeout)
}

// deadlockError is the error of a lock wait that would close a cycle.
func deadlockError(key string) error {
	return base.KindErrorf(base.ErrDeadlock, "shale: deadlock: waiting for the lock of key %q would close a cycle of waiting transactions", key)
}

package shale

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

func openTestTransactionDB(t *testing.T, topts *TransactionDBOptions) *TransactionDB {
	t.Helper()
	opts := testOptions(vfs.NewMem())
	opts.Logger = discardLogger()
	opts.MergeOperator = joinOperator{}
	tdb, err := OpenTransactionDB("/db", opts, topts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tdb.Close() })
	return tdb
}

func wantTxnValue(t *testing.T, db *DB, key, want string) {
	t.Helper()
	v, err := db.Get([]byte(key), nil)
	if want == "" {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %q, %v; want not found", key, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", key, v, err, want)
	}
}

// TestOptimisticTransactionConflicts checks the commit's conflict check
// exactly: a write by anyone else of a tracked key (written, or read with
// GetForUpdate) after it was tracked fails the commit with ErrBusy and
// writes nothing; writes of other keys, of keys read with plain Get, and
// writes before the key was tracked (without a snapshot) do not. The
// newer write is found in the memtable, in a flushed table, and as a
// range deletion.
func TestOptimisticTransactionConflicts(t *testing.T) {
	cases := []struct {
		name string
		// txn runs its first part; other writes; then the txn finishes.
		setSnapshot bool
		first       func(txn *Transaction) error
		other       func(db *DB) error
		conflict    bool
	}{
		{name: "get-for-update then put", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.Put([]byte("k"), []byte("other"), nil) }, conflict: true},
		{name: "get-for-update then delete", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.Delete([]byte("k"), nil) }, conflict: true},
		{name: "get-for-update then merge", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.Merge([]byte("k"), []byte("m"), nil) }, conflict: true},
		{name: "get-for-update then range delete", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.DeleteRange([]byte("j"), []byte("l"), nil) }, conflict: true},
		{name: "get-for-update then put flushed", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error {
				if err := db.Put([]byte("k"), []byte("other"), nil); err != nil {
					return err
				}
				if err := db.Flush(); err != nil {
					return err
				}
				return db.CompactRange(nil, nil)
			}, conflict: true},
		{name: "put then put", first: func(x *Transaction) error { return x.Put([]byte("k"), []byte("t")) },
			other: func(db *DB) error { return db.Put([]byte("k"), []byte("other"), nil) }, conflict: true},
		{name: "get-for-update, other key written", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.Put([]byte("k2"), []byte("other"), nil) }, conflict: false},
		{name: "range delete beside", first: func(x *Transaction) error { _, err := x.GetForUpdate(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.DeleteRange([]byte("k0"), []byte("l"), nil) }, conflict: false},
		{name: "plain get then put", first: func(x *Transaction) error { _, err := x.Get(nil, []byte("k")); return err },
			other: func(db *DB) error { return db.Put([]byte("k"), []byte("other"), nil) }, conflict: false},
		{name: "no snapshot: put before tracking", first: func(x *Transaction) error { return nil },
			other: func(db *DB) error { return db.Put([]byte("k"), []byte("other"), nil) }, conflict: false},
		{name: "snapshot: put before tracking", setSnapshot: true, first: func(x *Transaction) error { return nil },
			other: func(db *DB) error { return db.Put([]byte("k"), []byte("other"), nil) }, conflict: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tdb := openTestTransactionDB(t, nil)
			db := tdb.DB
			must(t, db.Put([]byte("k"), []byte("v0"), nil))
			txn := db.BeginOptimisticTransaction(nil, &OptimisticTxnOptions{SetSnapshot: c.setSnapshot})
			must(t, c.first(txn))
			must(t, c.other(db))
			// The transaction writes k (tracking it now, after the other
			// write, unless tracked before) and a marker.
			must(t, txn.Put([]byte("k"), []byte("txn")))
			must(t, txn.Put([]byte("marker"), []byte("txn")))
			err := txn.Commit()
			if c.conflict {
				if !errors.Is(err, ErrBusy) {
					t.Fatalf("Commit = %v, want ErrBusy", err)
				}
				wantTxnValue(t, db, "marker", "")
			} else {
				must(t, err)
				wantTxnValue(t, db, "marker", "txn")
				wantTxnValue(t, db, "k", "txn")
			}
			if err := txn.Commit(); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("second Commit = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

// TestOptimisticTransactionsRace runs two read-modify-write transactions
// of one key: the second to commit fails; a read-only transaction that
// only read with GetForUpdate is checked too.
func TestOptimisticTransactionsRace(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	db := tdb.DB
	must(t, db.Put([]byte("n"), []byte("0"), nil))
	a := db.BeginOptimisticTransaction(nil, nil)
	b := db.BeginOptimisticTransaction(nil, nil)
	for _, x := range []*Transaction{a, b} {
		if _, err := x.GetForUpdate(nil, []byte("n")); err != nil {
			t.Fatal(err)
		}
		must(t, x.Put([]byte("n"), []byte("1")))
	}
	must(t, a.Commit())
	if err := b.Commit(); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Commit = %v, want ErrBusy", err)
	}
	r := db.BeginOptimisticTransaction(nil, nil)
	if _, err := r.GetForUpdate(nil, []byte("n")); err != nil {
		t.Fatal(err)
	}
	must(t, db.Put([]byte("n"), []byte("2"), nil))
	if err := r.Commit(); !errors.Is(err, ErrBusy) {
		t.Fatalf("read-only Commit = %v, want ErrBusy", err)
	}
}

// TestPessimisticTransactionDeadlock locks two keys in opposite orders
// from two transactions with long lock timeouts: exactly one gets
// ErrDeadlock, at once, and the other gets its lock once that one rolls
// back.
func TestPessimisticTransactionDeadlock(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	to := &TxnOptions{LockTimeout: 5 * time.Second}
	a := tdb.BeginTransaction(nil, to)
	b := tdb.BeginTransaction(nil, to)
	must(t, a.Put([]byte("x"), []byte("a")))
	must(t, b.Put([]byte("y"), []byte("b")))
	errA := make(chan error, 1)
	go func() { errA <- a.Put([]byte("y"), []byte("a")) }()
	waitForLockWaiters(t, tdb, 1)
	errB := b.Put([]byte("x"), []byte("b"))
	if !errors.Is(errB, ErrDeadlock) {
		t.Fatalf("second waiter: %v, want ErrDeadlock", errB)
	}
	select {
	case err := <-errA:
		t.Fatalf("first waiter returned %v while its holder was alive", err)
	case <-time.After(20 * time.Millisecond):
	}
	must(t, b.Rollback())
	if err := <-errA; err != nil {
		t.Fatalf("first waiter after the rollback: %v", err)
	}
	must(t, a.Commit())
	wantTxnValue(t, tdb.DB, "x", "a")
	wantTxnValue(t, tdb.DB, "y", "a")
}

// TestPessimisticTransactionDeadlockUndetected: with detection off, the
// same cycle ends by the lock timeout (ErrTimedOut) of both waiters.
func TestPessimisticTransactionDeadlockUndetected(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	to := &TxnOptions{LockTimeout: 100 * time.Millisecond, SkipDeadlockDetect: true}
	a := tdb.BeginTransaction(nil, to)
	b := tdb.BeginTransaction(nil, to)
	must(t, a.Put([]byte("x"), []byte("a")))
	must(t, b.Put([]byte("y"), []byte("b")))
	errA := make(chan error, 1)
	go func() { errA <- a.Put([]byte("y"), []byte("a")) }()
	waitForLockWaiters(t, tdb, 1)
	if err := b.Put([]byte("x"), []byte("b")); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("b: %v, want ErrTimedOut", err)
	}
	if err := <-errA; !errors.Is(err, ErrTimedOut) {
		t.Fatalf("a: %v, want ErrTimedOut", err)
	}
}

// waitForLockWaiters waits until n owners wait for locks.
func waitForLockWaiters(t *testing.T, tdb *TransactionDB, n int) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(time.Millisecond) {
		tdb.locks.waitMu.Lock()
		got := len(tdb.locks.waits)
		tdb.locks.waitMu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("fewer than %d lock waiters after 10s", n)
}

// TestPessimisticTransactionLockTimeout: a lock held by a transaction
// makes another's GetForUpdate wait its timeout and fail with ErrTimedOut
// (LockNoWait at once), as do TransactionDB's own writes after
// DefaultLockTimeout; a waiter without a timeout gets the lock when the
// holder commits, and reads the committed value.
func TestPessimisticTransactionLockTimeout(t *testing.T) {
	tdb := openTestTransactionDB(t, &TransactionDBOptions{DefaultLockTimeout: 30 * time.Millisecond, TransactionLockTimeout: 40 * time.Millisecond})
	holder := tdb.BeginTransaction(nil, nil)
	must(t, holder.Put([]byte("k"), []byte("held")))

	start := time.Now()
	w := tdb.BeginTransaction(nil, nil) // TransactionLockTimeout
	if _, err := w.GetForUpdate(nil, []byte("k")); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("GetForUpdate = %v, want ErrTimedOut", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("timed out after %v, before the 40ms timeout", d)
	}
	start = time.Now()
	nw := tdb.BeginTransaction(nil, &TxnOptions{LockTimeout: LockNoWait})
	if err := nw.Put([]byte("k"), []byte("x")); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("LockNoWait Put = %v, want ErrTimedOut", err)
	}
	if d := time.Since(start); d > 30*time.Millisecond {
		t.Logf("LockNoWait took %v (loaded machine?)", d)
	}
	if err := tdb.Put([]byte("k"), []byte("x"), nil); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("TransactionDB.Put = %v, want ErrTimedOut", err)
	}
	b := tdb.NewBatch()
	b.Put([]byte("free"), []byte("1"))
	b.Put([]byte("k"), []byte("x"))
	if err := tdb.Write(b, nil); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("TransactionDB.Write = %v, want ErrTimedOut", err)
	}
	wantTxnValue(t, tdb.DB, "free", "")
	// The batch let go of the lock of "free" it had taken.
	must(t, nw.Put([]byte("free"), []byte("nw")))
	must(t, nw.Rollback())

	forever := tdb.BeginTransaction(nil, &TxnOptions{LockTimeout: -1})
	got := make(chan string, 1)
	go func() {
		v, err := forever.GetForUpdate(nil, []byte("k"))
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(v)
	}()
	waitForLockWaiters(t, tdb, 1)
	time.Sleep(60 * time.Millisecond) // past every timeout configured
	must(t, holder.Commit())
	if v := <-got; v != "held" {
		t.Fatalf("waiter read %q, want the holder's committed value", v)
	}
	must(t, forever.Commit())
	must(t, tdb.Put([]byte("k"), []byte("after"), nil))
	wantTxnValue(t, tdb.DB, "k", "after")
}

// TestPessimisticTransactionSnapshotConflict: with SetSnapshot, locking a
// key written after the snapshot fails with ErrBusy (and keeps no lock);
// a key written before it locks fine.
func TestPessimisticTransactionSnapshotConflict(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	must(t, tdb.Put([]byte("before"), []byte("1"), nil))
	txn := tdb.BeginTransaction(nil, &TxnOptions{SetSnapshot: true})
	if txn.GetSnapshot() == nil {
		t.Fatal("GetSnapshot is nil after SetSnapshot")
	}
	must(t, tdb.Put([]byte("after"), []byte("1"), nil))
	if _, err := txn.GetForUpdate(nil, []byte("after")); !errors.Is(err, ErrBusy) {
		t.Fatalf("GetForUpdate of a key written after the snapshot: %v, want ErrBusy", err)
	}
	if err := txn.Put([]byte("after"), []byte("2")); !errors.Is(err, ErrBusy) {
		t.Fatalf("Put of a key written after the snapshot: %v, want ErrBusy", err)
	}
	must(t, tdb.Put([]byte("after"), []byte("3"), &WriteOptions{})) // not locked by txn
	if v, err := txn.GetForUpdate(&ReadOptions{Snapshot: txn.GetSnapshot()}, []byte("before")); err != nil || string(v) != "1" {
		t.Fatalf("GetForUpdate(before) = %q, %v", v, err)
	}
	must(t, txn.Commit())
}

// TestTransactionSavePoints: nested save points roll back writes (reads
// and the batch agree) and, in a pessimistic transaction, the locks first
// taken since the save point; popping keeps the writes.
func TestTransactionSavePoints(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	txn := tdb.BeginTransaction(nil, nil)
	must(t, txn.Put([]byte("a"), []byte("1")))
	txn.SetSavePoint()
	must(t, txn.Put([]byte("a"), []byte("2")))
	must(t, txn.Put([]byte("b"), []byte("2")))
	txn.SetSavePoint()
	must(t, txn.Delete([]byte("a")))
	must(t, txn.Put([]byte("c"), []byte("3")))
	if _, err := txn.Get(nil, []byte("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a after Delete: %v", err)
	}
	must(t, txn.RollbackToSavePoint())
	if v, err := txn.Get(nil, []byte("a")); err != nil || string(v) != "2" {
		t.Fatalf("a after the inner rollback = %q, %v", v, err)
	}
	// c's lock went with the inner save point; b's stays.
	other := tdb.BeginTransaction(nil, &TxnOptions{LockTimeout: LockNoWait})
	must(t, other.Put([]byte("c"), []byte("other")))
	if err := other.Put([]byte("b"), []byte("other")); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("b's lock: %v, want ErrTimedOut", err)
	}
	must(t, other.Rollback())
	must(t, txn.RollbackToSavePoint())
	if v, err := txn.Get(nil, []byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("a after the outer rollback = %q, %v", v, err)
	}
	if err := txn.RollbackToSavePoint(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RollbackToSavePoint without a save point: %v, want ErrNotFound", err)
	}
	txn.SetSavePoint()
	must(t, txn.Put([]byte("d"), []byte("4")))
	must(t, txn.PopSavePoint())
	if txn.GetWriteBatch().Len() != 2 {
		t.Fatalf("batch holds %d writes, want 2 (a=1, d=4)", txn.GetWriteBatch().Len())
	}
	must(t, txn.Commit())
	wantTxnValue(t, tdb.DB, "a", "1")
	wantTxnValue(t, tdb.DB, "b", "")
	wantTxnValue(t, tdb.DB, "c", "")
	wantTxnValue(t, tdb.DB, "d", "4")
	// Every lock went at Commit.
	must(t, tdb.Put([]byte("a"), []byte("x"), &WriteOptions{}))
}

// TestTransactionUseAfterEnd: every call after Commit or Rollback fails
// with ErrInvalidArgument and changes nothing; a rolled-back
// transaction's writes are nowhere; nil options work.
func TestTransactionUseAfterEnd(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	for _, txn := range []*Transaction{tdb.BeginTransaction(nil, nil), tdb.DB.BeginOptimisticTransaction(nil, nil)} {
		must(t, txn.Put([]byte("r"), []byte("x")))
		must(t, txn.Rollback())
		wantTxnValue(t, tdb.DB, "r", "")
		if err := txn.Put([]byte("r"), []byte("y")); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Put after Rollback: %v", err)
		}
		if _, err := txn.Get(nil, []byte("r")); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Get after Rollback: %v", err)
		}
		if err := txn.Commit(); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Commit after Rollback: %v", err)
		}
		if err := txn.Rollback(); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Rollback after Rollback: %v", err)
		}
		it := txn.NewIterator(nil)
		if it.First() || !errors.Is(it.Err(), ErrInvalidArgument) {
			t.Fatalf("iterator after Rollback: %v", it.Err())
		}
		it.Close()
	}
	// Merges need an operator, refused before anything is written.
	db, err := Open("/nomerge", &Options{FS: vfs.NewMem(), CreateIfMissing: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	txn := db.BeginOptimisticTransaction(nil, nil)
	if err := txn.Merge([]byte("k"), []byte("1")); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Merge without an operator: %v", err)
	}
	must(t, txn.Commit())
}

// TestTransactionCommitIsOneWALBatch: a committed transaction is one WAL
// record, whole after a crash (synced) and absent when the crash came
// before its commit.
func TestTransactionCommitIsOneWALBatch(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	tdb, err := OpenTransactionDB("/db", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	seq := tdb.visibleSeq.Load()
	txn := tdb.BeginTransaction(&WriteOptions{Sync: true}, nil)
	for i := range 50 {
		must(t, txn.Put([]byte{'k', byte(i)}, []byte("v")))
	}
	pending := tdb.DB.BeginOptimisticTransaction(nil, nil)
	must(t, pending.Put([]byte("pending"), []byte("v")))
	must(t, txn.Commit())
	if got := tdb.visibleSeq.Load() - seq; got != 50 {
		t.Fatalf("commit took %d seqnums, want 50", got)
	}
	crash := mem.CrashClone()
	db2, err := Open("/db", testOptions(crash))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for i := range 50 {
		wantTxnValue(t, db2, string([]byte{'k', byte(i)}), "v")
	}
	wantTxnValue(t, db2, "pending", "")
	must(t, pending.Rollback())
}

// TestModelTransactions is TestModel with optimistic transactions among
// the operations (opTxn): each one's iterator, its writes over the DB,
// must show what the model shows after applying its writes to a copy, and
// its commit must leave what the model's batch does; with and without
// merges, and with every write skipping the WAL.
func TestModelTransactions(t *testing.T) {
	ops := bySize(3000, 1000, 10000)
	variants := []struct {
		name string
		cfg  dbRunConfig
	}{
		{"base", dbRunConfig{txns: true}},
		{"merges", dbRunConfig{txns: true, merge: joinOperator{}}},
		{"no-wal", dbRunConfig{txns: true, disableWAL: true}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 5), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, v.cfg, func(o *Options) { o.MergeOperator = v.cfg.merge })
			})
		})
	}
}

// TestMetamorphicTransactions is TestMetamorphic with opTxn among the
// operations: transactions' iterators over their own writes, and their
// commits, must answer alike under every option set (data in memtables,
// tables of many shapes, blob files, async reads).
func TestMetamorphicTransactions(t *testing.T) {
	n := bySize(600, 300, 4000)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.txns = true
		runMetamorphicOps(t, seed, generateOpsWith(g, n), metamorphicSets)
	})
}

// TestTransactionCommitFaults: a commit whose WAL sync fails reports the
// error and ends the transaction (its locks let go); the DB refuses writes
// until Resume, and the bank total stays exact live and after a crash. An
// optimistic commit whose conflict check cannot read a table reports that
// error (not a guess: neither success nor ErrBusy) and writes nothing.
func TestTransactionCommitFaults(t *testing.T) {
	mem := vfs.NewMem()
	ffs := errorfs.New(mem, 1)
	opts := testOptions(ffs)
	opts.Logger = discardLogger()
	opts.BlockCacheSize = -1 // every table read reaches the file
	tdb, err := OpenTransactionDB("/db", opts, &TransactionDBOptions{TransactionLockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	const want = 2 * bankInitial
	for i := range 2 {
		must(t, tdb.Put(bankKey(i), []byte(strconv.Itoa(bankInitial)), &WriteOptions{Sync: true}))
	}
	transfer := func(txn *Transaction, amount int) error {
		for i, d := range []int{-amount, amount} {
			v, err := txn.GetForUpdate(nil, bankKey(i))
			if err != nil {
				return err
			}
			n, _ := strconv.Atoi(string(v))
			if err := txn.Put(bankKey(i), []byte(strconv.Itoa(n+d))); err != nil {
				return err
			}
		}
		return nil
	}
	total := func(d *DB) int {
		t.Helper()
		got, err := bankTotal2(d)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	txn := tdb.BeginTransaction(&WriteOptions{Sync: true}, nil)
	must(t, transfer(txn, 10))
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpSync, PathContains: ".log"})
	if err := txn.Commit(); err == nil {
		t.Fatal("a commit whose WAL sync failed reported success")
	}
	ffs.ClearRules()
	if got := total(tdb.DB); got != want {
		t.Fatalf("after the failed commit: total %d, want %d", got, want)
	}
	other := tdb.BeginTransaction(nil, &TxnOptions{LockTimeout: LockNoWait})
	if err := transfer(other, 1); err != nil {
		t.Fatalf("the failed commit kept its locks: %v", err)
	}
	if err := other.Commit(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("commit before Resume: %v, want ErrReadOnly", err)
	}
	must(t, tdb.Resume())
	ok := tdb.BeginTransaction(&WriteOptions{Sync: true}, nil)
	must(t, transfer(ok, 5))
	must(t, ok.Commit())
	if got := total(tdb.DB); got != want {
		t.Fatalf("after Resume: total %d, want %d", got, want)
	}

	// The optimistic check must read a table written after the tracking
	// (older ones it skips by their seqnums), and the read fails.
	opt := tdb.DB.BeginOptimisticTransaction(nil, nil)
	must(t, transfer(opt, 7))
	must(t, opt.Put([]byte("marker"), []byte("1")))
	cur, err := tdb.Get(bankKey(1), nil)
	must(t, err)
	must(t, tdb.Put(bankKey(1), cur, nil)) // a write of the same value
	must(t, tdb.Flush())
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: ".sst"})
	err = opt.Commit()
	ffs.ClearRules()
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("commit whose check could not read: %v, want the read error", err)
	}
	wantTxnValue(t, tdb.DB, "marker", "")
	if got := total(tdb.DB); got != want {
		t.Fatalf("after the failed check: total %d, want %d", got, want)
	}
	crashed, err := Open("/db", testOptions(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	if got := total(crashed); got != want {
		t.Fatalf("crash clone: total %d, want %d", got, want)
	}
}

// bankTotal2 sums the two accounts of TestTransactionCommitFaults.
func bankTotal2(d *DB) (int, error) {
	sum := 0
	for i := range 2 {
		v, err := d.Get(bankKey(i), nil)
		if err != nil {
			return 0, err
		}
		n, _ := strconv.Atoi(string(v))
		sum += n
	}
	return sum, nil
}

// TestOpenTransactionDBOptions: nil and zero options are the defaults
// (RocksDB's 1s timeouts, 16 stripes, detection on, TxnOptions inheriting
// the DB's timeout); a negative stripe count is refused naming the field;
// Open's errors come through.
func TestOpenTransactionDBOptions(t *testing.T) {
	tdb := openTestTransactionDB(t, nil)
	if o := tdb.opts; o.TransactionLockTimeout != time.Second || o.DefaultLockTimeout != time.Second || o.NumStripes != 16 {
		t.Fatalf("defaults: %+v", o)
	}
	txn := tdb.BeginTransaction(nil, &TxnOptions{})
	if txn.lockTimeout != time.Second || !txn.deadlockDetect || txn.deadlockDepth != 50 {
		t.Fatalf("TxnOptions defaults: timeout %v, detect %v, depth %d", txn.lockTimeout, txn.deadlockDetect, txn.deadlockDepth)
	}
	must(t, txn.Rollback())
	_, err := OpenTransactionDB("/other", testOptions(vfs.NewMem()), &TransactionDBOptions{NumStripes: -1})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "NumStripes") {
		t.Fatalf("NumStripes -1: %v", err)
	}
	if _, err := OpenTransactionDB("/missing", &Options{FS: vfs.NewMem()}, nil); err == nil {
		t.Fatal("OpenTransactionDB of a missing DB without CreateIfMissing succeeded")
	}
}

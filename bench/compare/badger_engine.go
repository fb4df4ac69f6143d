package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// badgerEngine runs the workloads through Badger, one transaction per
// operation (db.Update, db.View), as a Badger user writes single keys.
type badgerEngine struct {
	db   *badger.DB
	opts badger.Options
	// dirty says a put or delete may sit in a memtable: flush reopens the
	// DB only then. Atomic: puts may come from several goroutines.
	dirty atomic.Bool
}

// defaultBadgerValueThreshold is Badger's own ValueThreshold (1 MiB in
// v4): values at least that long go to the value log, shorter ones stay in
// the LSM tree.
var defaultBadgerValueThreshold = badger.DefaultOptions("").ValueThreshold

func openBadger(dir string, cfg engineConfig) (engine, error) {
	// Badger needs a block cache for compressed tables and panics without
	// one; say so instead.
	if cfg.cacheSize <= 0 {
		return nil, fmt.Errorf("badger needs --cache_size > 0 with snappy compression, got %d", cfg.cacheSize)
	}
	threshold := cfg.badgerValueThreshold
	if threshold == 0 {
		threshold = defaultBadgerValueThreshold
	}
	opts := badger.DefaultOptions(dir).
		WithMemTableSize(int64(cfg.writeBufferSize)).
		WithBlockSize(4 << 10).
		// Badger's bloom filters are sized by false-positive rate; 10 bits
		// per key gives about 1%, Badger's default.
		WithBloomFalsePositive(0.01).
		WithCompression(options.Snappy).
		// The block cache holds data blocks; IndexCacheSize 0 keeps every
		// table's index and bloom filter in memory outside it, as shale's
		// default (CacheIndexAndFilterBlocks off) does.
		WithBlockCacheSize(cfg.cacheSize).
		WithIndexCacheSize(0).
		WithSyncWrites(false).
		WithValueThreshold(threshold).
		// The workloads write blind single keys and read nothing in their
		// write transactions; neither peer has conflict detection to pay for.
		WithDetectConflicts(false).
		WithLogger(quietBadgerLogger{})
	db, err := badger.Open(opts)
	if err != nil {
		return nil, err
	}
	return &badgerEngine{db: db, opts: opts}, nil
}

func (e *badgerEngine) name() string { return "badger" }

func (e *badgerEngine) put(key, value []byte) error {
	e.dirty.Store(true)
	return e.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) })
}

// putSync is put then DB.Sync: Badger syncs per DB (Options.SyncWrites),
// not per write.
func (e *badgerEngine) putSync(key, value []byte) error {
	if err := e.put(key, value); err != nil {
		return err
	}
	return e.db.Sync()
}

func (e *badgerEngine) delete(key []byte) error {
	e.dirty.Store(true)
	return e.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) })
}

func (e *badgerEngine) newReader() engineReader { return &badgerReader{e: e} }

// badgerReader is one goroutine's reader. It reads through the engine, not
// a *badger.DB of its own, since flush and compactAll reopen the DB.
type badgerReader struct {
	e *badgerEngine
	// value receives the value get reads (reused: no allocation).
	val []byte
}

// get reads the value too (from the value log when it was separated), as
// Pebble's and shale's Get do; Badger's txn.Get alone would only find the
// key. It copies the value out, as every engine's get hands the caller a
// value it owns: item.Value's slice is only valid in the transaction, and
// of a value in the mapped value log it reads no byte unless used.
func (r *badgerReader) get(key []byte) (bool, error) {
	found := false
	err := r.e.db.View(func(txn *badger.Txn) error {
		var err error
		found, err = r.getIn(txn, key)
		return err
	})
	return found, err
}

func (r *badgerReader) value() []byte { return r.val }

// multiGet reads every key in one read transaction, Badger's way of
// reading several keys at one snapshot; it has no MultiGet.
func (r *badgerReader) multiGet(keys [][]byte) (int, error) {
	found := 0
	err := r.e.db.View(func(txn *badger.Txn) error {
		for _, k := range keys {
			ok, err := r.getIn(txn, k)
			if err != nil {
				return err
			}
			if ok {
				found++
			}
		}
		return nil
	})
	return found, err
}

// getIn is get inside the transaction txn.
func (r *badgerReader) getIn(txn *badger.Txn, key []byte) (bool, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.val, err = item.ValueCopy(r.val[:0])
	return err == nil, err
}

// flush puts the memtables into tables, so that the read workloads read
// tables as they do on the peers after their Flush. An open Badger DB has no
// memtable flush: DB.Sync only syncs the memtable's WAL and the value log,
// and would leave the data in the memtable. Close is the one call that
// flushes the memtables (and waits for it), so flush closes and reopens the
// DB, which empties Badger's block cache; readrandom's untimed warm pass
// refills it. With no write since the last flush it does nothing, so a
// seekrandom after readrandom finds the cache as warm as the peers do.
func (e *badgerEngine) flush() error {
	if !e.dirty.Load() {
		return nil
	}
	return e.reopen(e.opts)
}

// reopen closes the DB, which flushes its memtables, and opens it again
// with opts.
func (e *badgerEngine) reopen(closeOpts badger.Options) error {
	if closeOpts.CompactL0OnClose != e.opts.CompactL0OnClose {
		// Options are fixed at Open: reopen with closeOpts first, so that
		// the Close below runs with them.
		if err := e.db.Close(); err != nil {
			return err
		}
		db, err := badger.Open(closeOpts)
		if err != nil {
			return err
		}
		e.db = db
	}
	if err := e.db.Close(); err != nil {
		return err
	}
	e.db = nil
	db, err := badger.Open(e.opts)
	if err != nil {
		return err
	}
	e.db = db
	e.dirty.Store(false)
	return nil
}

// compactAll is the closest Badger has to a full manual compaction; it has
// no compaction of a key range. It closes the DB with CompactL0OnClose,
// which flushes the memtables (as Pebble's Compact and shale's CompactRange
// flush first) and compacts L0 into the base level, and reopens it; then
// Flatten compacts until all tables sit in one level. Flatten alone would
// leave a DB whose tables are all in L0, below L0's compaction trigger, as
// it is, tombstones and all. Compactions into a level that nothing below
// overlaps drop the tombstones. Last, value-log GC runs until it finds no
// file worth rewriting at Badger's recommended discard ratio of 0.5; it can
// never collect the value log file being written.
func (e *badgerEngine) compactAll() error {
	if err := e.reopen(e.opts.WithCompactL0OnClose(true)); err != nil {
		return err
	}
	if err := e.db.Flatten(e.opts.NumCompactors); err != nil {
		return err
	}
	for {
		err := e.db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// newIter iterates keys only (PrefetchValues off): the seek and scan
// workloads read keys, and Pebble's and shale's iterators do not read a
// separated value until asked for it either.
func (e *badgerEngine) newIter() (engineIter, error) {
	txn := e.db.NewTransaction(false)
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	return &badgerIter{txn: txn, it: txn.NewIterator(opts)}, nil
}

func (e *badgerEngine) close() error { return e.db.Close() }

// shape prints Badger's levels; its value log size comes with them.
func (e *badgerEngine) shape() string {
	lsm, vlog := e.db.Size()
	return fmt.Sprintf("%svalue log %d bytes, LSM %d bytes\n", e.db.LevelsToString(), vlog, lsm)
}

type badgerIter struct {
	txn *badger.Txn
	it  *badger.Iterator
	// val holds the value value read last: Badger reads it (from the
	// value log if separated) only when asked, since PrefetchValues is off.
	val []byte
}

func (i *badgerIter) seekGE(key []byte) bool { i.it.Seek(key); return i.it.Valid() }
func (i *badgerIter) next() bool             { i.it.Next(); return i.it.Valid() }
func (i *badgerIter) key() []byte            { return i.it.Item().Key() }

func (i *badgerIter) value() ([]byte, error) {
	var err error
	i.val, err = i.it.Item().ValueCopy(i.val[:0])
	return i.val, err
}

func (i *badgerIter) close() error {
	i.it.Close()
	i.txn.Discard()
	return nil
}

// quietBadgerLogger drops Badger's informational and debug messages, as
// quietLogger does Pebble's, and keeps warnings and errors.
type quietBadgerLogger struct{}

func (quietBadgerLogger) Infof(string, ...any)  {}
func (quietBadgerLogger) Debugf(string, ...any) {}

func (quietBadgerLogger) Warningf(format string, args ...any) {
	fmt.Fprintln(os.Stderr, "badger: warning:", strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}

func (quietBadgerLogger) Errorf(format string, args ...any) {
	fmt.Fprintln(os.Stderr, "badger:", strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}

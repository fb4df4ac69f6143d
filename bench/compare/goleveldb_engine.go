package main

import (
	"errors"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// goleveldbEngine runs the workloads through goleveldb, with writes not
// synced (its journal, the WAL, is always on).
type goleveldbEngine struct {
	db   *leveldb.DB
	dir  string
	opts *opt.Options
	// dirty says a put or delete may sit in the memtable: flush reopens
	// the DB only then. Atomic: puts may come from several goroutines.
	dirty atomic.Bool
}

func openGoleveldb(dir string, cfg engineConfig) (engine, error) {
	opts := &opt.Options{
		BlockCacheCapacity:   int(cfg.cacheSize),
		WriteBuffer:          cfg.writeBufferSize,
		Compression:          opt.SnappyCompression,
		BlockSize:            4 << 10,
		BlockRestartInterval: 16,
	}
	// goleveldb reads a capacity of 0 as its 8 MiB default; -1 is none.
	if cfg.cacheSize <= 0 {
		opts.BlockCacheCapacity = -1
	}
	if cfg.bloomBits > 0 {
		opts.Filter = filter.NewBloomFilter(cfg.bloomBits)
	}
	db, err := leveldb.OpenFile(dir, opts)
	if err != nil {
		return nil, err
	}
	return &goleveldbEngine{db: db, dir: dir, opts: opts}, nil
}

func (e *goleveldbEngine) name() string { return "goleveldb" }

func (e *goleveldbEngine) put(key, value []byte) error {
	e.dirty.Store(true)
	return e.db.Put(key, value, nil)
}

func (e *goleveldbEngine) putSync(key, value []byte) error {
	e.dirty.Store(true)
	return e.db.Put(key, value, &opt.WriteOptions{Sync: true})
}

func (e *goleveldbEngine) delete(key []byte) error {
	e.dirty.Store(true)
	return e.db.Delete(key, nil)
}

// flush puts the memtable into a table. goleveldb has no flush call (its
// CompactRange flushes, then compacts the range too), but its Open writes
// what it replays from the journal to a level-0 table, so flush closes and
// reopens the DB, as the Badger engine does, which empties the block cache;
// readrandom's untimed warm pass refills it.
func (e *goleveldbEngine) flush() error {
	if !e.dirty.Load() {
		return nil
	}
	if err := e.db.Close(); err != nil {
		return err
	}
	db, err := leveldb.OpenFile(e.dir, e.opts)
	if err != nil {
		return err
	}
	e.db = db
	e.dirty.Store(false)
	return nil
}

// compactAll flushes the memtable and compacts every level.
func (e *goleveldbEngine) compactAll() error {
	e.dirty.Store(false)
	return e.db.CompactRange(util.Range{})
}

func (e *goleveldbEngine) newReader() engineReader { return &goleveldbReader{e: e} }

func (e *goleveldbEngine) newIter() (engineIter, error) {
	return &goleveldbIter{it: e.db.NewIterator(nil, nil)}, nil
}

func (e *goleveldbEngine) close() error { return e.db.Close() }

func (e *goleveldbEngine) shape() string {
	stats, err := e.db.GetProperty("leveldb.stats")
	if err != nil {
		return err.Error()
	}
	return stats
}

// goleveldbReader is one goroutine's reader; it reads through the engine,
// since flush reopens the DB.
type goleveldbReader struct {
	e *goleveldbEngine
	// value holds the last value get read. goleveldb's Get returns a new
	// copy each time; there is no call that reads into a caller's buffer.
	val []byte
}

func (r *goleveldbReader) get(key []byte) (bool, error) {
	v, err := r.e.db.Get(key, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.val = v
	return true, nil
}

func (r *goleveldbReader) value() []byte { return r.val }

// multiGet is a loop of get: goleveldb has no MultiGet.
func (r *goleveldbReader) multiGet(keys [][]byte) (int, error) { return getsInLoop(r, keys) }

type goleveldbIter struct{ it iterator.Iterator }

func (i *goleveldbIter) seekGE(key []byte) bool {
	if key == nil {
		return i.it.First()
	}
	return i.it.Seek(key)
}

func (i *goleveldbIter) next() bool             { return i.it.Next() }
func (i *goleveldbIter) key() []byte            { return i.it.Key() }
func (i *goleveldbIter) value() ([]byte, error) { return i.it.Value(), nil }

func (i *goleveldbIter) close() error {
	i.it.Release()
	return i.it.Error()
}

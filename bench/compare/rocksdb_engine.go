//go:build rocksdb

package main

/*
#cgo LDFLAGS: -lrocksdb
#include <stdlib.h>
#include <string.h>
#include <rocksdb/c.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// The rocksdb engine is RocksDB through grocksdb (cgo), built only with
// -tags rocksdb against the system's librocksdb (install-rocksdb.sh).
// grocksdb v1.7.14 wraps RocksDB 7.8's C API, Debian 12's librocksdb-dev.
func init() {
	engineOpeners = append(engineOpeners, namedOpener{"rocksdb", openRocksDB})
}

// rocksdbEngine runs the workloads through RocksDB with writes not synced
// (the WAL on).
type rocksdbEngine struct {
	db    *grocksdb.DB
	cf    *grocksdb.ColumnFamilyHandle // the default column family
	opts  *grocksdb.Options
	table *grocksdb.BlockBasedTableOptions
	cache *grocksdb.Cache // nil without a block cache
	ro    *grocksdb.ReadOptions
	wo    *grocksdb.WriteOptions
	// syncWO is wo with sync on (fillsync).
	syncWO *grocksdb.WriteOptions
	fo     *grocksdb.FlushOptions
}

func openRocksDB(dir string, cfg engineConfig) (engine, error) {
	if err := checkGrocksdbLayout(); err != nil {
		return nil, err
	}
	table := grocksdb.NewDefaultBlockBasedTableOptions()
	table.SetBlockSize(4 << 10)
	table.SetBlockRestartInterval(16)
	if cfg.bloomBits > 0 {
		// RocksDB 7 has only full (whole-table) filters; the "full" in the
		// name is what it builds anyway.
		table.SetFilterPolicy(grocksdb.NewBloomFilterFull(float64(cfg.bloomBits)))
	}
	if cfg.partitionIndexAndFilters {
		// db_bench's --partition_index_and_filters: the partitions go
		// through the block cache, the top levels stay with the table
		// reader (pin_top_level_index_and_filter's default).
		table.SetIndexType(grocksdb.KTwoLevelIndexSearchIndexType)
		table.SetPartitionFilters(true)
		table.SetMetadataBlockSize(4096)
	}
	e := &rocksdbEngine{table: table}
	if cfg.cacheSize > 0 {
		e.cache = grocksdb.NewLRUCache(uint64(cfg.cacheSize))
		table.SetBlockCache(e.cache)
	} else {
		table.SetNoBlockCache(true)
	}
	// Everything else is RocksDB's default: level compaction, two
	// memtables, L0 compaction at 4 files, 2 background jobs, indexes and
	// filters held outside the block cache.
	opts := grocksdb.NewDefaultOptions()
	opts.SetCreateIfMissing(true)
	opts.SetBlockBasedTableFactory(table)
	opts.SetWriteBufferSize(uint64(cfg.writeBufferSize))
	opts.SetCompression(grocksdb.SnappyCompression)
	e.opts = opts
	// Opened with its column family named, for the handle the batched
	// MultiGet needs; RocksDB 7.8's C API has no call returning the
	// default column family's handle.
	db, cfs, err := grocksdb.OpenDbColumnFamilies(opts, dir, []string{"default"}, []*grocksdb.Options{opts})
	if err != nil {
		e.destroyOptions()
		return nil, fmt.Errorf("rocksdb: %w", err)
	}
	e.db, e.cf = db, cfs[0]
	e.ro = grocksdb.NewDefaultReadOptions()
	e.wo = grocksdb.NewDefaultWriteOptions() // sync off, WAL on
	e.syncWO = grocksdb.NewDefaultWriteOptions()
	e.syncWO.SetSync(true)
	e.fo = grocksdb.NewDefaultFlushOptions()
	e.fo.SetWait(true)
	return e, nil
}

func (e *rocksdbEngine) destroyOptions() {
	e.opts.Destroy()
	e.table.Destroy()
	if e.cache != nil {
		e.cache.Destroy()
	}
}

func (e *rocksdbEngine) name() string { return "rocksdb" }

func (e *rocksdbEngine) put(key, value []byte) error { return e.db.Put(e.wo, key, value) }

func (e *rocksdbEngine) putSync(key, value []byte) error { return e.db.Put(e.syncWO, key, value) }

func (e *rocksdbEngine) delete(key []byte) error { return e.db.Delete(e.wo, key) }

func (e *rocksdbEngine) flush() error { return e.db.Flush(e.fo) }

// compactAll is CompactRange over every key, which flushes the memtable
// first, as shale's CompactRange(nil, nil) does.
func (e *rocksdbEngine) compactAll() error {
	e.db.CompactRange(grocksdb.Range{})
	return nil
}

func (e *rocksdbEngine) shape() string { return e.db.GetProperty("rocksdb.levelstats") }

func (e *rocksdbEngine) close() error {
	e.cf.Destroy()
	e.db.Close()
	e.ro.Destroy()
	e.wo.Destroy()
	e.syncWO.Destroy()
	e.fo.Destroy()
	e.destroyOptions()
	return nil
}

func (e *rocksdbEngine) newReader() engineReader { return &rocksdbReader{e: e} }

// rocksdbReader is one goroutine's reader.
type rocksdbReader struct {
	e *rocksdbEngine
	// value receives the value get reads (reused: no allocation).
	val []byte
}

// get reads through GetPinned, which leaves the value where RocksDB has it
// (a block in the cache, or the memtable) until it is copied out, as
// Pebble's Get does.
func (r *rocksdbReader) get(key []byte) (bool, error) {
	h, err := r.e.db.GetPinned(r.e.ro, key)
	if err != nil {
		return false, err
	}
	defer h.Destroy()
	if !h.Exists() {
		return false, nil
	}
	r.val = append(r.val[:0], h.Data()...)
	return true, nil
}

func (r *rocksdbReader) value() []byte { return r.val }

// multiGet is RocksDB's batched MultiGet (rocksdb_batched_multi_get_cf,
// the one db_bench's multireadrandom calls), which looks the keys up level
// by level together. grocksdb v1.7.14 wraps only rocksdb_multi_get, which
// is one Get per key under a shared snapshot, so this calls the C API
// itself. The C API reads its keys through an array of pointers, which cgo
// cannot pass in Go memory: the keys and arrays live in one C allocation
// for the call.
func (r *rocksdbReader) multiGet(keys [][]byte) (int, error) {
	n := len(keys)
	if n == 0 {
		return 0, nil
	}
	keyBytes := 0
	for _, k := range keys {
		keyBytes += len(k)
	}
	const word = C.size_t(unsafe.Sizeof(uintptr(0)))
	// Layout: key pointers, key sizes, value handles, errors, key bytes.
	block := C.malloc(4*C.size_t(n)*word + C.size_t(keyBytes))
	if block == nil {
		return 0, fmt.Errorf("rocksdb: multiGet: out of memory for %d keys", n)
	}
	defer C.free(block)
	keyPtrs := unsafe.Slice((**C.char)(block), n)
	keySizes := unsafe.Slice((*C.size_t)(unsafe.Add(block, n*int(word))), n)
	values := unsafe.Slice((**C.rocksdb_pinnableslice_t)(unsafe.Add(block, 2*n*int(word))), n)
	errs := unsafe.Slice((**C.char)(unsafe.Add(block, 3*n*int(word))), n)
	data := unsafe.Add(block, 4*n*int(word))
	for i, k := range keys {
		keyPtrs[i], keySizes[i] = (*C.char)(data), C.size_t(len(k))
		if len(k) > 0 {
			C.memcpy(data, unsafe.Pointer(&k[0]), C.size_t(len(k)))
		}
		data = unsafe.Add(data, len(k))
	}
	C.rocksdb_batched_multi_get_cf(rawRocksDB(r.e.db), rawReadOptions(r.e.ro), rawColumnFamily(r.e.cf),
		C.size_t(n), &keyPtrs[0], &keySizes[0], &values[0], &errs[0], C.bool(false))
	found := 0
	var firstErr error
	for i := range n {
		if errs[i] != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("rocksdb: MultiGet of %q: %s", keys[i], C.GoString(errs[i]))
			}
			C.rocksdb_free(unsafe.Pointer(errs[i]))
		}
		if values[i] == nil {
			continue
		}
		var size C.size_t
		v := C.rocksdb_pinnableslice_value(values[i], &size)
		// Copied out, as get does; each key's value lands in the one
		// buffer, as shale's MultiGetFunc hands each value to one callback.
		r.val = append(r.val[:0], unsafe.Slice((*byte)(unsafe.Pointer(v)), int(size))...)
		C.rocksdb_pinnableslice_destroy(values[i])
		found++
	}
	return found, firstErr
}

// grocksdb exports no getter for the C handles its DB, ReadOptions and
// ColumnFamilyHandle wrap; in v1.7.14 (pinned in go.mod) each struct starts
// with its handle. checkGrocksdbLayout refuses to run if the structs' sizes
// differ from v1.7.14's, the sign of a grocksdb whose layout may differ too.
func rawRocksDB(db *grocksdb.DB) *C.rocksdb_t { return *(**C.rocksdb_t)(unsafe.Pointer(db)) }

func rawReadOptions(ro *grocksdb.ReadOptions) *C.rocksdb_readoptions_t {
	return *(**C.rocksdb_readoptions_t)(unsafe.Pointer(ro))
}

func rawColumnFamily(cf *grocksdb.ColumnFamilyHandle) *C.rocksdb_column_family_handle_t {
	return *(**C.rocksdb_column_family_handle_t)(unsafe.Pointer(cf))
}

func checkGrocksdbLayout() error {
	const ptr = unsafe.Sizeof(uintptr(0))
	// DB: c, name string, opts; ReadOptions: c and four []byte;
	// ColumnFamilyHandle: c.
	db, ro, cf := unsafe.Sizeof(grocksdb.DB{}), unsafe.Sizeof(grocksdb.ReadOptions{}), unsafe.Sizeof(grocksdb.ColumnFamilyHandle{})
	if db != 4*ptr || ro != 13*ptr || cf != ptr {
		return fmt.Errorf("rocksdb: grocksdb's DB, ReadOptions and ColumnFamilyHandle are %d, %d and %d bytes, not v1.7.14's %d, %d and %d: check rawRocksDB and its neighbours against the new grocksdb",
			db, ro, cf, 4*ptr, 13*ptr, ptr)
	}
	return nil
}

func (e *rocksdbEngine) newIter() (engineIter, error) {
	return &rocksdbIter{it: e.db.NewIterator(e.ro)}, nil
}

type rocksdbIter struct{ it *grocksdb.Iterator }

func (i *rocksdbIter) seekGE(key []byte) bool {
	if key == nil {
		i.it.SeekToFirst()
	} else {
		i.it.Seek(key)
	}
	return i.it.Valid()
}

func (i *rocksdbIter) next() bool { i.it.Next(); return i.it.Valid() }

// key is the iterator's key in RocksDB's memory, valid until it moves.
func (i *rocksdbIter) key() []byte { return i.it.Key().Data() }

func (i *rocksdbIter) value() ([]byte, error) { return i.it.Value().Data(), nil }

func (i *rocksdbIter) close() error {
	err := i.it.Err()
	i.it.Close()
	return err
}

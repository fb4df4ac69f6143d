//go:build cgo

package main

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The handles C holds: each a malloc'd struct with the runtime/cgo.Handle of
// the Go value, so that C never holds a Go pointer. shale.h declares them as
// incomplete types.
typedef struct shale_t { uintptr_t handle; } shale_t;
typedef struct shale_options_t { uintptr_t handle; } shale_options_t;
typedef struct shale_readoptions_t { uintptr_t handle; } shale_readoptions_t;
typedef struct shale_writeoptions_t { uintptr_t handle; } shale_writeoptions_t;
typedef struct shale_writebatch_t { uintptr_t handle; } shale_writebatch_t;
typedef struct shale_iterator_t { uintptr_t handle; } shale_iterator_t;
typedef struct shale_snapshot_t { uintptr_t handle; } shale_snapshot_t;

// cgo cannot spell const; these typedefs give the generated prototypes the
// const qualifiers shale.h declares (a test compiles both headers together).
typedef const char shale_cchar_t;
typedef const char* const shale_ckey_t;
typedef const size_t shale_csize_t;
typedef const shale_options_t shale_coptions_t;
typedef const shale_readoptions_t shale_creadoptions_t;
typedef const shale_writeoptions_t shale_cwriteoptions_t;
typedef const shale_snapshot_t shale_csnapshot_t;
typedef const shale_iterator_t shale_citerator_t;
*/
import "C"

import (
	"errors"
	"runtime/cgo"
	"unsafe"

	"github.com/shaledb/shale"
)

// newHandle wraps v in a malloc'd handle struct (every handle type is one
// uintptr_t) for C to hold until it is destroyed.
func newHandle(v any) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(p) = C.uintptr_t(cgo.NewHandle(v))
	return p
}

// handleValue returns the Go value of a handle; it panics (recovered into
// the caller's error) on a handle that was destroyed.
func handleValue(p unsafe.Pointer) any {
	return cgo.Handle(*(*C.uintptr_t)(p)).Value()
}

// freeHandle releases the Go value and frees the handle struct.
func freeHandle(p unsafe.Pointer) {
	if p == nil {
		return
	}
	cgo.Handle(*(*C.uintptr_t)(p)).Delete()
	C.free(p)
}

// setErr stores err's message in *errptr as a malloc'd string the caller
// frees, freeing the message a previous call left there (RocksDB's
// SaveError). A NULL errptr drops the error.
func setErr(errptr **C.char, err error) {
	if errptr == nil || err == nil {
		return
	}
	if *errptr != nil {
		C.free(unsafe.Pointer(*errptr))
	}
	*errptr = C.CString(err.Error())
}

// recoverInto turns a panic of the export it is deferred in into *errptr.
// It must be deferred directly (recover works only there).
func recoverInto(errptr **C.char) {
	if r := recover(); r != nil {
		setErr(errptr, panicError(r))
	}
}

// withHandle runs set on the value of the handle at p when it holds a T;
// a NULL or destroyed handle, or one of another type, is ignored (the
// option setters return void, as RocksDB's), and so is a panic.
func withHandle[T any](p unsafe.Pointer, set func(T)) {
	defer recoverDropped()
	if p == nil {
		return
	}
	if v, ok := handleValue(p).(T); ok {
		set(v)
	}
}

// recoverDropped swallows a panic of an export that has no way to report
// one (a void setter given a destroyed handle), so that it never unwinds
// into C.
func recoverDropped() {
	_ = recover()
}

// maxBufferLen bounds the length of a key or value C passes (1 TiB): a
// larger one is a caller's bug (a negative length cast to size_t), which
// unsafe.Slice would turn into a panic.
const maxBufferLen = 1 << 40

// cBytes views n bytes of C memory as a slice without copying: valid for
// the duration of the call only. A NULL pointer with a length is an error.
func cBytes(p *C.shale_cchar_t, n C.size_t, what string) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	if p == nil {
		return nil, invalidArg("%s is NULL with length %d", what, uint64(n))
	}
	if uint64(n) > maxBufferLen {
		return nil, invalidArg("%s length %d is larger than %d", what, uint64(n), uint64(maxBufferLen))
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), clampInt(uint64(n))), nil
}

// cString converts a NUL-terminated C string, NULL being an error.
func cString(p *C.shale_cchar_t, what string) (string, error) {
	if p == nil {
		return "", invalidArg("%s is NULL", what)
	}
	return C.GoString((*C.char)(unsafe.Pointer(p))), nil
}

// mallocBytes copies b into C memory the caller frees; never NULL, even for
// an empty value (NULL means not found).
func mallocBytes(b []byte) *C.char {
	return (*C.char)(C.CBytes(b))
}

// dbOf returns the DB of a shale_t.
func dbOf(p *C.shale_t) (*shale.DB, error) {
	if p == nil {
		return nil, invalidArg("db is NULL")
	}
	d, _ := handleValue(unsafe.Pointer(p)).(*shale.DB)
	if d == nil {
		return nil, invalidArg("db is not a shale_t")
	}
	return d, nil
}

// readOptionsOf returns the ReadOptions of a shale_readoptions_t; NULL gives
// the defaults.
func readOptionsOf(p *C.shale_creadoptions_t) (*shale.ReadOptions, error) {
	if p == nil {
		return shale.NewReadOptions(), nil
	}
	r, _ := handleValue(unsafe.Pointer(p)).(*readOptions)
	if r == nil {
		return nil, invalidArg("options is not a shale_readoptions_t")
	}
	ro := r.ro // a copy: the C caller may change its options while we read
	return &ro, nil
}

// writeOptionsOf returns the WriteOptions of a shale_writeoptions_t; NULL
// gives the defaults.
func writeOptionsOf(p *C.shale_cwriteoptions_t) (*shale.WriteOptions, error) {
	if p == nil {
		return &shale.WriteOptions{}, nil
	}
	w, _ := handleValue(unsafe.Pointer(p)).(*shale.WriteOptions)
	if w == nil {
		return nil, invalidArg("options is not a shale_writeoptions_t")
	}
	wo := *w
	return &wo, nil
}

// ---- Options ----

//export shale_options_create
func shale_options_create() *C.shale_options_t {
	return (*C.shale_options_t)(newHandle(newDBOptions()))
}

//export shale_options_destroy
func shale_options_destroy(o *C.shale_options_t) {
	defer recoverDropped()
	freeHandle(unsafe.Pointer(o))
}

// withOptions runs set on the options of o; a NULL or destroyed handle is
// ignored (the setters return void, as RocksDB's).
func withOptions(o *C.shale_options_t, set func(*dbOptions)) { withHandle(unsafe.Pointer(o), set) }

//export shale_options_set_create_if_missing
func shale_options_set_create_if_missing(o *C.shale_options_t, v C.uchar) {
	withOptions(o, func(d *dbOptions) { d.opts.CreateIfMissing = v != 0 })
}

//export shale_options_set_error_if_exists
func shale_options_set_error_if_exists(o *C.shale_options_t, v C.uchar) {
	withOptions(o, func(d *dbOptions) { d.opts.ErrorIfExists = v != 0 })
}

//export shale_options_set_paranoid_checks
func shale_options_set_paranoid_checks(o *C.shale_options_t, v C.uchar) {
	withOptions(o, func(d *dbOptions) { d.opts.ParanoidChecks = v != 0 })
}

//export shale_options_set_write_buffer_size
func shale_options_set_write_buffer_size(o *C.shale_options_t, v C.size_t) {
	withOptions(o, func(d *dbOptions) { d.opts.WriteBufferSize = clampInt(uint64(v)) })
}

//export shale_options_set_max_open_files
func shale_options_set_max_open_files(o *C.shale_options_t, v C.int) {
	withOptions(o, func(d *dbOptions) { d.opts.MaxOpenFiles = int(v) })
}

//export shale_options_set_compression
func shale_options_set_compression(o *C.shale_options_t, v C.int) {
	withOptions(o, func(d *dbOptions) { d.compression = int(v) })
}

//export shale_options_set_disable_auto_compactions
func shale_options_set_disable_auto_compactions(o *C.shale_options_t, v C.int) {
	withOptions(o, func(d *dbOptions) { d.opts.DisableAutoCompactions = v != 0 })
}

//export shale_options_set_enable_blob_files
func shale_options_set_enable_blob_files(o *C.shale_options_t, v C.uchar) {
	withOptions(o, func(d *dbOptions) { d.opts.EnableBlobFiles = v != 0 })
}

//export shale_options_set_min_blob_size
func shale_options_set_min_blob_size(o *C.shale_options_t, v C.uint64_t) {
	withOptions(o, func(d *dbOptions) { d.opts.MinBlobSize = clampInt64(uint64(v)) })
}

//export shale_options_set_block_cache_size
func shale_options_set_block_cache_size(o *C.shale_options_t, v C.size_t) {
	withOptions(o, func(d *dbOptions) { d.setBlockCacheSize(uint64(v)) })
}

//export shale_options_set_bloom_bits_per_key
func shale_options_set_bloom_bits_per_key(o *C.shale_options_t, v C.int) {
	withOptions(o, func(d *dbOptions) { d.setBloomBitsPerKey(int(v)) })
}

// ---- Read options ----

//export shale_readoptions_create
func shale_readoptions_create() *C.shale_readoptions_t {
	return (*C.shale_readoptions_t)(newHandle(newReadOptions()))
}

//export shale_readoptions_destroy
func shale_readoptions_destroy(o *C.shale_readoptions_t) {
	defer recoverDropped()
	freeHandle(unsafe.Pointer(o))
}

// withReadOptions runs set on the options of o, ignoring a NULL handle.
func withReadOptions(o *C.shale_readoptions_t, set func(*readOptions)) {
	withHandle(unsafe.Pointer(o), set)
}

//export shale_readoptions_set_async_io
func shale_readoptions_set_async_io(o *C.shale_readoptions_t, v C.uchar) {
	withReadOptions(o, func(r *readOptions) { r.ro.AsyncIO = v != 0 })
}

//export shale_readoptions_set_fill_cache
func shale_readoptions_set_fill_cache(o *C.shale_readoptions_t, v C.uchar) {
	withReadOptions(o, func(r *readOptions) { r.setFillCache(v != 0) })
}

//export shale_readoptions_set_verify_checksums
func shale_readoptions_set_verify_checksums(o *C.shale_readoptions_t, v C.uchar) {
	withReadOptions(o, func(r *readOptions) { r.ro.VerifyChecksums = v != 0 })
}

//export shale_readoptions_set_snapshot
func shale_readoptions_set_snapshot(o *C.shale_readoptions_t, s *C.shale_csnapshot_t) {
	withReadOptions(o, func(r *readOptions) {
		if s == nil {
			r.ro.Snapshot = nil
			return
		}
		r.ro.Snapshot, _ = handleValue(unsafe.Pointer(s)).(*shale.Snapshot)
	})
}

//export shale_readoptions_set_iterate_upper_bound
func shale_readoptions_set_iterate_upper_bound(o *C.shale_readoptions_t, key *C.shale_cchar_t, keylen C.size_t) {
	withReadOptions(o, func(r *readOptions) {
		b, err := cBytes(key, keylen, "key")
		if err != nil {
			return
		}
		setBound(&r.ro.UpperBound, b, key == nil)
	})
}

//export shale_readoptions_set_iterate_lower_bound
func shale_readoptions_set_iterate_lower_bound(o *C.shale_readoptions_t, key *C.shale_cchar_t, keylen C.size_t) {
	withReadOptions(o, func(r *readOptions) {
		b, err := cBytes(key, keylen, "key")
		if err != nil {
			return
		}
		setBound(&r.ro.LowerBound, b, key == nil)
	})
}

// ---- Write options ----

//export shale_writeoptions_create
func shale_writeoptions_create() *C.shale_writeoptions_t {
	return (*C.shale_writeoptions_t)(newHandle(&shale.WriteOptions{}))
}

//export shale_writeoptions_destroy
func shale_writeoptions_destroy(o *C.shale_writeoptions_t) {
	defer recoverDropped()
	freeHandle(unsafe.Pointer(o))
}

// withWriteOptions runs set on the options of o, ignoring a NULL handle.
func withWriteOptions(o *C.shale_writeoptions_t, set func(*shale.WriteOptions)) {
	withHandle(unsafe.Pointer(o), set)
}

//export shale_writeoptions_set_sync
func shale_writeoptions_set_sync(o *C.shale_writeoptions_t, v C.uchar) {
	withWriteOptions(o, func(w *shale.WriteOptions) { w.Sync = v != 0 })
}

//export shale_writeoptions_disable_WAL
func shale_writeoptions_disable_WAL(o *C.shale_writeoptions_t, disable C.int) {
	withWriteOptions(o, func(w *shale.WriteOptions) { w.DisableWAL = disable != 0 })
}

// ---- Open, close ----

//export shale_open
func shale_open(o *C.shale_coptions_t, name *C.shale_cchar_t, errptr **C.char) (db *C.shale_t) {
	defer recoverInto(errptr)
	if o == nil {
		setErr(errptr, invalidArg("options is NULL"))
		return nil
	}
	dir, err := cString(name, "name")
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	v, _ := handleValue(unsafe.Pointer(o)).(*dbOptions)
	if v == nil {
		setErr(errptr, invalidArg("options is not a shale_options_t"))
		return nil
	}
	opts, err := v.options()
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	d, err := shale.Open(dir, opts)
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	return (*C.shale_t)(newHandle(d))
}

//export shale_close
func shale_close(db *C.shale_t) {
	defer recoverDropped()
	if db == nil {
		return
	}
	if d, ok := handleValue(unsafe.Pointer(db)).(*shale.DB); ok {
		_ = d.Close() // void, as rocksdb_close: nothing to report it through
	}
	freeHandle(unsafe.Pointer(db))
}

// ---- Writes ----

//export shale_put
func shale_put(db *C.shale_t, o *C.shale_cwriteoptions_t, key *C.shale_cchar_t, keylen C.size_t, val *C.shale_cchar_t, vallen C.size_t, errptr **C.char) {
	defer recoverInto(errptr)
	setErr(errptr, func() error {
		d, err := dbOf(db)
		if err != nil {
			return err
		}
		wo, err := writeOptionsOf(o)
		if err != nil {
			return err
		}
		k, err := cBytes(key, keylen, "key")
		if err != nil {
			return err
		}
		v, err := cBytes(val, vallen, "val")
		if err != nil {
			return err
		}
		return d.Put(k, v, wo)
	}())
}

//export shale_delete
func shale_delete(db *C.shale_t, o *C.shale_cwriteoptions_t, key *C.shale_cchar_t, keylen C.size_t, errptr **C.char) {
	defer recoverInto(errptr)
	setErr(errptr, func() error {
		d, err := dbOf(db)
		if err != nil {
			return err
		}
		wo, err := writeOptionsOf(o)
		if err != nil {
			return err
		}
		k, err := cBytes(key, keylen, "key")
		if err != nil {
			return err
		}
		return d.Delete(k, wo)
	}())
}

// writeBatch is what a shale_writebatch_t holds. The batch verbs return void
// (as RocksDB's); an argument error they meet is kept and fails shale_write.
type writeBatch struct {
	b   shale.Batch
	err error
}

//export shale_writebatch_create
func shale_writebatch_create() *C.shale_writebatch_t {
	return (*C.shale_writebatch_t)(newHandle(&writeBatch{}))
}

//export shale_writebatch_destroy
func shale_writebatch_destroy(b *C.shale_writebatch_t) {
	defer recoverDropped()
	freeHandle(unsafe.Pointer(b))
}

// withBatch runs fn on the batch of b, keeping the first error it returns
// (or the panic it raises) for shale_write to report.
func withBatch(b *C.shale_writebatch_t, fn func(*writeBatch) error) {
	defer recoverDropped()
	if b == nil {
		return
	}
	wb, ok := handleValue(unsafe.Pointer(b)).(*writeBatch)
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil && wb.err == nil {
			wb.err = panicError(r)
		}
	}()
	if err := fn(wb); err != nil && wb.err == nil {
		wb.err = err
	}
}

//export shale_writebatch_clear
func shale_writebatch_clear(b *C.shale_writebatch_t) {
	withBatch(b, func(wb *writeBatch) error {
		wb.b.Reset()
		wb.err = nil
		return nil
	})
}

//export shale_writebatch_count
func shale_writebatch_count(b *C.shale_writebatch_t) (n C.int) {
	withBatch(b, func(wb *writeBatch) error {
		n = C.int(wb.b.Len())
		return nil
	})
	return n
}

//export shale_writebatch_put
func shale_writebatch_put(b *C.shale_writebatch_t, key *C.shale_cchar_t, klen C.size_t, val *C.shale_cchar_t, vlen C.size_t) {
	withBatch(b, func(wb *writeBatch) error {
		k, err := cBytes(key, klen, "key")
		if err != nil {
			return err
		}
		v, err := cBytes(val, vlen, "val")
		if err != nil {
			return err
		}
		wb.b.Put(k, v)
		return nil
	})
}

//export shale_writebatch_delete
func shale_writebatch_delete(b *C.shale_writebatch_t, key *C.shale_cchar_t, klen C.size_t) {
	withBatch(b, func(wb *writeBatch) error {
		k, err := cBytes(key, klen, "key")
		if err != nil {
			return err
		}
		wb.b.Delete(k)
		return nil
	})
}

//export shale_writebatch_delete_range
func shale_writebatch_delete_range(b *C.shale_writebatch_t, startKey *C.shale_cchar_t, startKeyLen C.size_t, endKey *C.shale_cchar_t, endKeyLen C.size_t) {
	withBatch(b, func(wb *writeBatch) error {
		s, err := cBytes(startKey, startKeyLen, "start_key")
		if err != nil {
			return err
		}
		e, err := cBytes(endKey, endKeyLen, "end_key")
		if err != nil {
			return err
		}
		wb.b.DeleteRange(s, e)
		return nil
	})
}

//export shale_write
func shale_write(db *C.shale_t, o *C.shale_cwriteoptions_t, b *C.shale_writebatch_t, errptr **C.char) {
	defer recoverInto(errptr)
	setErr(errptr, func() error {
		d, err := dbOf(db)
		if err != nil {
			return err
		}
		wo, err := writeOptionsOf(o)
		if err != nil {
			return err
		}
		if b == nil {
			return invalidArg("batch is NULL")
		}
		wb, _ := handleValue(unsafe.Pointer(b)).(*writeBatch)
		if wb == nil {
			return invalidArg("batch is not a shale_writebatch_t")
		}
		if wb.err != nil {
			return wb.err
		}
		return d.Write(&wb.b, wo)
	}())
}

// ---- Reads ----

//export shale_get
func shale_get(db *C.shale_t, o *C.shale_creadoptions_t, key *C.shale_cchar_t, keylen C.size_t, vallen *C.size_t, errptr **C.char) (val *C.char) {
	defer recoverInto(errptr)
	if vallen != nil {
		*vallen = 0
	}
	d, err := dbOf(db)
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	ro, err := readOptionsOf(o)
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	k, err := cBytes(key, keylen, "key")
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	v, err := d.Get(k, ro)
	if errors.Is(err, shale.ErrNotFound) {
		return nil
	}
	if err != nil {
		setErr(errptr, err)
		return nil
	}
	if vallen != nil {
		*vallen = C.size_t(len(v))
	}
	return mallocBytes(v)
}

//export shale_multi_get
func shale_multi_get(db *C.shale_t, o *C.shale_creadoptions_t, numKeys C.size_t, keysList *C.shale_ckey_t, keysListSizes *C.shale_csize_t, valuesList **C.char, valuesListSizes *C.size_t, errs **C.char) {
	var values, errList []*C.char
	// failAll reports err for every key without a result: the whole call
	// failed (a bad argument, or a recovered panic).
	failAll := func(err error) {
		for i := range errList {
			if values[i] == nil && errList[i] == nil {
				errList[i] = C.CString(err.Error())
			}
		}
	}
	defer func() {
		if r := recover(); r != nil {
			failAll(panicError(r))
		}
	}()
	n := clampInt(uint64(numKeys))
	if n == 0 || valuesList == nil || valuesListSizes == nil || errs == nil {
		return // nowhere to write results: nothing to do
	}
	values = unsafe.Slice(valuesList, n)
	sizes := unsafe.Slice(valuesListSizes, n)
	errList = unsafe.Slice(errs, n)
	for i := range n {
		values[i], sizes[i], errList[i] = nil, 0, nil
	}
	d, err := dbOf(db)
	if err != nil {
		failAll(err)
		return
	}
	ro, err := readOptionsOf(o)
	if err != nil {
		failAll(err)
		return
	}
	if keysList == nil || keysListSizes == nil {
		failAll(invalidArg("keys_list or keys_list_sizes is NULL"))
		return
	}
	ptrs := unsafe.Slice(keysList, n)
	lens := unsafe.Slice(keysListSizes, n)
	keys := make([][]byte, n)
	for i := range n {
		k, err := cBytes((*C.shale_cchar_t)(unsafe.Pointer(ptrs[i])), C.size_t(lens[i]), "keys_list entry")
		if err != nil {
			failAll(err)
			return
		}
		keys[i] = k
	}
	d.MultiGetFunc(keys, ro, func(i int, value []byte, err error) {
		switch {
		case err == nil:
			values[i] = mallocBytes(value)
			sizes[i] = C.size_t(len(value))
		case !errors.Is(err, shale.ErrNotFound):
			errList[i] = C.CString(err.Error())
		}
	})
}

// ---- Snapshots ----

//export shale_create_snapshot
func shale_create_snapshot(db *C.shale_t) (snap *C.shale_csnapshot_t) {
	defer recoverDropped()
	d, err := dbOf(db)
	if err != nil {
		return nil
	}
	return (*C.shale_csnapshot_t)(newHandle(d.NewSnapshot()))
}

//export shale_release_snapshot
func shale_release_snapshot(db *C.shale_t, snap *C.shale_csnapshot_t) {
	defer recoverDropped()
	if snap == nil {
		return
	}
	if s, ok := handleValue(unsafe.Pointer(snap)).(*shale.Snapshot); ok {
		s.Release()
	}
	freeHandle(unsafe.Pointer(snap))
}

// ---- Iterators ----

// cBuffer is C memory an iterator copies its current key or value into:
// what shale_iter_key and shale_iter_value return stays valid until the
// iterator moves or is destroyed, as in RocksDB, and is never Go memory.
type cBuffer struct {
	p   unsafe.Pointer
	cap int
}

// set copies b into the buffer, growing it, and returns it.
func (c *cBuffer) set(b []byte) *C.shale_cchar_t {
	if c.p == nil || len(b) > c.cap {
		C.free(c.p)
		n := max(len(b), 16)
		c.p, c.cap = C.malloc(C.size_t(n)), n
	}
	copy(unsafe.Slice((*byte)(c.p), len(b)), b)
	return (*C.shale_cchar_t)(c.p)
}

func (c *cBuffer) free() {
	C.free(c.p)
	c.p, c.cap = nil, 0
}

// iterator is what a shale_iterator_t holds.
type iterator struct {
	it       *shale.Iterator
	err      error // a recovered panic or an argument error of a verb
	key, val cBuffer
	seekKey  []byte // a copy of the last seek key, which C may free
}

// iterOf returns the iterator of a handle, or nil.
func iterOf(p *C.shale_citerator_t) *iterator {
	if p == nil {
		return nil
	}
	it, _ := handleValue(unsafe.Pointer(p)).(*iterator)
	return it
}

// move runs one positioning verb, keeping a panic as the iterator's error.
func move(p *C.shale_iterator_t, fn func(*iterator)) {
	defer recoverDropped()
	it := iterOf((*C.shale_citerator_t)(p))
	if it == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil && it.err == nil {
			it.err = panicError(r)
		}
	}()
	fn(it)
}

// seekKeyOf copies a seek key from C, recording a bad argument.
func (it *iterator) seekKeyOf(k *C.shale_cchar_t, klen C.size_t) ([]byte, bool) {
	b, err := cBytes(k, klen, "key")
	if err != nil {
		if it.err == nil {
			it.err = err
		}
		return nil, false
	}
	it.seekKey = append(it.seekKey[:0], b...)
	return it.seekKey, true
}

//export shale_create_iterator
func shale_create_iterator(db *C.shale_t, o *C.shale_creadoptions_t) (iter *C.shale_iterator_t) {
	defer recoverDropped()
	d, err := dbOf(db)
	if err != nil {
		return nil
	}
	ro, err := readOptionsOf(o)
	if err != nil {
		return nil
	}
	return (*C.shale_iterator_t)(newHandle(&iterator{it: d.NewIterator(ro)}))
}

//export shale_iter_destroy
func shale_iter_destroy(p *C.shale_iterator_t) {
	defer recoverDropped()
	if it := iterOf((*C.shale_citerator_t)(p)); it != nil {
		_ = it.it.Close() // its error, if any, was Err's before
		it.key.free()
		it.val.free()
	}
	freeHandle(unsafe.Pointer(p))
}

//export shale_iter_valid
func shale_iter_valid(p *C.shale_citerator_t) (valid C.uchar) {
	defer recoverDropped()
	if it := iterOf(p); it != nil && it.err == nil && it.it.Valid() {
		return 1
	}
	return 0
}

//export shale_iter_seek_to_first
func shale_iter_seek_to_first(p *C.shale_iterator_t) {
	move(p, func(it *iterator) { it.it.First() })
}

//export shale_iter_seek_to_last
func shale_iter_seek_to_last(p *C.shale_iterator_t) {
	move(p, func(it *iterator) { it.it.Last() })
}

//export shale_iter_seek
func shale_iter_seek(p *C.shale_iterator_t, k *C.shale_cchar_t, klen C.size_t) {
	move(p, func(it *iterator) {
		if key, ok := it.seekKeyOf(k, klen); ok {
			it.it.Seek(key)
		}
	})
}

//export shale_iter_seek_for_prev
func shale_iter_seek_for_prev(p *C.shale_iterator_t, k *C.shale_cchar_t, klen C.size_t) {
	move(p, func(it *iterator) {
		if key, ok := it.seekKeyOf(k, klen); ok {
			it.it.SeekForPrev(key)
		}
	})
}

//export shale_iter_next
func shale_iter_next(p *C.shale_iterator_t) {
	move(p, func(it *iterator) {
		if it.it.Valid() {
			it.it.Next()
		}
	})
}

//export shale_iter_prev
func shale_iter_prev(p *C.shale_iterator_t) {
	move(p, func(it *iterator) {
		if it.it.Valid() {
			it.it.Prev()
		}
	})
}

//export shale_iter_key
func shale_iter_key(p *C.shale_citerator_t, klen *C.size_t) (key *C.shale_cchar_t) {
	defer recoverDropped()
	if klen != nil {
		*klen = 0
	}
	it := iterOf(p)
	if it == nil || it.err != nil || !it.it.Valid() {
		return nil
	}
	k := it.it.Key()
	if klen != nil {
		*klen = C.size_t(len(k))
	}
	return it.key.set(k)
}

//export shale_iter_value
func shale_iter_value(p *C.shale_citerator_t, vlen *C.size_t) (val *C.shale_cchar_t) {
	defer recoverDropped()
	if vlen != nil {
		*vlen = 0
	}
	it := iterOf(p)
	if it == nil || it.err != nil || !it.it.Valid() {
		return nil
	}
	v := it.it.Value()
	if vlen != nil {
		*vlen = C.size_t(len(v))
	}
	return it.val.set(v)
}

//export shale_iter_get_error
func shale_iter_get_error(p *C.shale_citerator_t, errptr **C.char) {
	defer recoverInto(errptr)
	if p == nil {
		setErr(errptr, invalidArg("iterator is NULL"))
		return
	}
	it := iterOf(p)
	if it == nil {
		setErr(errptr, invalidArg("iterator is not a shale_iterator_t"))
		return
	}
	if it.err != nil {
		setErr(errptr, it.err)
		return
	}
	setErr(errptr, it.it.Err())
}

// ---- Maintenance and properties ----

//export shale_flush
func shale_flush(db *C.shale_t, errptr **C.char) {
	defer recoverInto(errptr)
	d, err := dbOf(db)
	if err != nil {
		setErr(errptr, err)
		return
	}
	setErr(errptr, d.Flush())
}

//export shale_compact_range
func shale_compact_range(db *C.shale_t, startKey *C.shale_cchar_t, startKeyLen C.size_t, limitKey *C.shale_cchar_t, limitKeyLen C.size_t, errptr **C.char) {
	defer recoverInto(errptr)
	setErr(errptr, func() error {
		d, err := dbOf(db)
		if err != nil {
			return err
		}
		// NULL is unbounded on that side, as in RocksDB.
		var start, limit []byte
		if startKey != nil {
			if start, err = cBytes(startKey, startKeyLen, "start_key"); err != nil {
				return err
			}
		}
		if limitKey != nil {
			if limit, err = cBytes(limitKey, limitKeyLen, "limit_key"); err != nil {
				return err
			}
		}
		return d.CompactRange(start, limit)
	}())
}

//export shale_property_value
func shale_property_value(db *C.shale_t, propname *C.shale_cchar_t) (val *C.char) {
	defer recoverDropped()
	d, err := dbOf(db)
	if err != nil {
		return nil
	}
	name, err := cString(propname, "propname")
	if err != nil {
		return nil
	}
	v, ok := d.GetProperty(name)
	if !ok {
		return nil
	}
	return C.CString(v)
}

//export shale_free
func shale_free(ptr unsafe.Pointer) {
	C.free(ptr)
}

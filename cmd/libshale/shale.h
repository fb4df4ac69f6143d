/* shale.h: the C API of shale, an embeddable LSM key-value store.
 *
 * Built from cmd/libshale with
 *     go build -buildmode=c-shared -o libshale.so ./cmd/libshale
 * (or -buildmode=c-archive for libshale.a). The functions follow RocksDB's
 * C API (rocksdb/c.h): the same names with the prefix shale_ instead of
 * rocksdb_, the same arguments, the same ownership rules.
 *
 * Errors: a function that can fail takes `char** errptr` as its last
 * argument. On success *errptr is left as it was. On failure *errptr is set
 * to a malloc'd, NUL-terminated message ("shale: ...") that the caller frees
 * with shale_free; a message already in *errptr (from an earlier call) is
 * freed and replaced. Start with `char* err = NULL;`.
 *
 * Ownership: every pointer a function returns that is not const (values,
 * property values, errors) is malloc'd and freed by the caller with
 * shale_free. Keys and values passed in are copied before the call returns,
 * so the caller may free them at once (iterator bounds too). Handles
 * (shale_t and the options, batch, iterator and snapshot types) are freed
 * by their own destroy, close or release function; a handle must not be
 * used after that. shale_iter_key and shale_iter_value return memory owned
 * by the iterator, valid until it next moves or is destroyed.
 *
 * Threads: a shale_t may be used from many threads at once; an iterator,
 * a write batch and an options object by one thread at a time.
 *
 * See docs/c-api.md for the departures from RocksDB's C API.
 */
#ifndef SHALE_C_H
#define SHALE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shale_t shale_t;
typedef struct shale_options_t shale_options_t;
typedef struct shale_readoptions_t shale_readoptions_t;
typedef struct shale_writeoptions_t shale_writeoptions_t;
typedef struct shale_writebatch_t shale_writebatch_t;
typedef struct shale_iterator_t shale_iterator_t;
typedef struct shale_snapshot_t shale_snapshot_t;

/* Compression types, with RocksDB's numbers. shale writes only these three:
   shale_open fails on any other value given to shale_options_set_compression. */
enum {
  shale_no_compression = 0,
  shale_snappy_compression = 1,
  shale_zstd_compression = 7
};

/* Open and close. */

/* Opens the database in directory name. Returns NULL and sets *errptr on
   failure (for example when it does not exist and create_if_missing is off). */
extern shale_t* shale_open(const shale_options_t* options, const char* name,
                           char** errptr);
/* Closes the database and frees the handle. Iterators and snapshots should
   be destroyed or released first. */
extern void shale_close(shale_t* db);

/* Writes. A NULL write options means the defaults. */

extern void shale_put(shale_t* db, const shale_writeoptions_t* options,
                      const char* key, size_t keylen, const char* val,
                      size_t vallen, char** errptr);
extern void shale_delete(shale_t* db, const shale_writeoptions_t* options,
                         const char* key, size_t keylen, char** errptr);
/* Applies every write of the batch atomically. An argument error met by a
   batch function (a NULL key with a non-zero length) fails the write. */
extern void shale_write(shale_t* db, const shale_writeoptions_t* options,
                        shale_writebatch_t* batch, char** errptr);

/* Reads. A NULL read options means the defaults. */

/* Returns the value of key, malloc'd (free it with shale_free), with its
   length in *vallen; NULL and *vallen 0 when the key is not found (not an
   error: *errptr is untouched). An empty value is a non-NULL pointer. */
extern char* shale_get(shale_t* db, const shale_readoptions_t* options,
                       const char* key, size_t keylen, size_t* vallen,
                       char** errptr);

/* Looks up num_keys keys. values_list, values_list_sizes and errs are
   arrays of num_keys entries allocated by the caller; their previous
   contents are overwritten, not freed. For each key: a found value is
   malloc'd in values_list[i] with its size in values_list_sizes[i] and
   errs[i] is NULL; a missing key leaves values_list[i] and errs[i] NULL;
   an error sets errs[i] to a malloc'd message. The caller frees every
   non-NULL values_list[i] and errs[i] with shale_free. With
   shale_readoptions_set_async_io the blocks of many files are read as one
   batch of concurrent reads. */
extern void shale_multi_get(shale_t* db, const shale_readoptions_t* options,
                            size_t num_keys, const char* const* keys_list,
                            const size_t* keys_list_sizes, char** values_list,
                            size_t* values_list_sizes, char** errs);

/* Iterators. shale_create_iterator returns NULL only for a NULL or invalid db. */
extern shale_iterator_t* shale_create_iterator(
    shale_t* db, const shale_readoptions_t* options);
extern void shale_iter_destroy(shale_iterator_t* iter);
extern unsigned char shale_iter_valid(const shale_iterator_t* iter);
extern void shale_iter_seek_to_first(shale_iterator_t* iter);
extern void shale_iter_seek_to_last(shale_iterator_t* iter);
/* Positions at the first key >= k. */
extern void shale_iter_seek(shale_iterator_t* iter, const char* k,
                            size_t klen);
/* Positions at the last key <= k. */
extern void shale_iter_seek_for_prev(shale_iterator_t* iter, const char* k,
                                     size_t klen);
extern void shale_iter_next(shale_iterator_t* iter);
extern void shale_iter_prev(shale_iterator_t* iter);
/* The current key and value, owned by the iterator: valid until it moves
   or is destroyed. NULL (length 0) when the iterator is not valid. */
extern const char* shale_iter_key(const shale_iterator_t* iter, size_t* klen);
extern const char* shale_iter_value(const shale_iterator_t* iter,
                                    size_t* vlen);
/* Sets *errptr when the iterator met an error (an IO error, corruption, a
   bad argument to a seek); a valid-less iterator without one is at an end. */
extern void shale_iter_get_error(const shale_iterator_t* iter, char** errptr);

/* Snapshots: a read through shale_readoptions_set_snapshot sees exactly
   the writes made before the snapshot was created. */
extern const shale_snapshot_t* shale_create_snapshot(shale_t* db);
extern void shale_release_snapshot(shale_t* db,
                                   const shale_snapshot_t* snapshot);

/* Maintenance. */

/* Flushes the memtable to a table and waits for it. */
extern void shale_flush(shale_t* db, char** errptr);
/* Compacts every key in [start_key, limit_key]; a NULL key is unbounded on
   its side. Unlike rocksdb_compact_range it reports errors. */
extern void shale_compact_range(shale_t* db, const char* start_key,
                                size_t start_key_len, const char* limit_key,
                                size_t limit_key_len, char** errptr);
/* Returns a malloc'd, NUL-terminated value of the property (for example
   "rocksdb.num-files-at-level0" or "rocksdb.stats"), or NULL when the name
   is unknown. Free it with shale_free. */
extern char* shale_property_value(shale_t* db, const char* propname);

/* Write batches. */

extern shale_writebatch_t* shale_writebatch_create(void);
extern void shale_writebatch_destroy(shale_writebatch_t* b);
extern void shale_writebatch_clear(shale_writebatch_t* b);
extern int shale_writebatch_count(shale_writebatch_t* b);
extern void shale_writebatch_put(shale_writebatch_t* b, const char* key,
                                 size_t klen, const char* val, size_t vlen);
extern void shale_writebatch_delete(shale_writebatch_t* b, const char* key,
                                    size_t klen);
/* Deletes every key in [start_key, end_key). */
extern void shale_writebatch_delete_range(shale_writebatch_t* b,
                                          const char* start_key,
                                          size_t start_key_len,
                                          const char* end_key,
                                          size_t end_key_len);

/* Options. shale_options_create gives RocksDB's defaults (create_if_missing
   off, Snappy compression). The setters cannot fail; a value shale cannot
   honour makes shale_open fail, naming the setter. */

extern shale_options_t* shale_options_create(void);
extern void shale_options_destroy(shale_options_t* opt);
extern void shale_options_set_create_if_missing(shale_options_t* opt,
                                                unsigned char v);
extern void shale_options_set_error_if_exists(shale_options_t* opt,
                                              unsigned char v);
extern void shale_options_set_paranoid_checks(shale_options_t* opt,
                                              unsigned char v);
/* 0 keeps the default, 64 MiB. */
extern void shale_options_set_write_buffer_size(shale_options_t* opt,
                                                size_t v);
/* -1 keeps every table open; 0 keeps the default, 1000. */
extern void shale_options_set_max_open_files(shale_options_t* opt, int v);
/* One of shale_no_compression, shale_snappy_compression,
   shale_zstd_compression. */
extern void shale_options_set_compression(shale_options_t* opt, int v);
extern void shale_options_set_disable_auto_compactions(shale_options_t* opt,
                                                       int v);
extern void shale_options_set_enable_blob_files(shale_options_t* opt,
                                                unsigned char v);
extern void shale_options_set_min_blob_size(shale_options_t* opt,
                                            uint64_t v);
/* The block cache capacity in bytes; 0 caches nothing (as an LRU cache of
   capacity 0 in RocksDB). Default 32 MiB. RocksDB sets this through a
   block-based table options object; shale has one flat setter. */
extern void shale_options_set_block_cache_size(shale_options_t* opt,
                                               size_t v);
/* Bloom filter bits per key; 0 or less writes no filter. Default 10.
   (RocksDB: rocksdb_filterpolicy_create_bloom.) */
extern void shale_options_set_bloom_bits_per_key(shale_options_t* opt,
                                                 int v);

extern shale_readoptions_t* shale_readoptions_create(void);
extern void shale_readoptions_destroy(shale_readoptions_t* opt);
/* Reads the blocks of many files concurrently (MultiGet), issues every
   level's block reads before waiting (Seek) and prefetches in the
   background (iterators). Results are the same either way. Default off. */
extern void shale_readoptions_set_async_io(shale_readoptions_t* opt,
                                           unsigned char v);
/* Whether blocks read go into the block cache. Default on. */
extern void shale_readoptions_set_fill_cache(shale_readoptions_t* opt,
                                             unsigned char v);
/* Accepted for RocksDB compatibility: shale always verifies checksums. */
extern void shale_readoptions_set_verify_checksums(shale_readoptions_t* opt,
                                                   unsigned char v);
/* NULL reads the latest state. The snapshot must outlive the reads. */
extern void shale_readoptions_set_snapshot(shale_readoptions_t* opt,
                                           const shale_snapshot_t* snap);
/* Iterator bounds: upper exclusive, lower inclusive. The key is copied;
   NULL clears the bound. */
extern void shale_readoptions_set_iterate_upper_bound(
    shale_readoptions_t* opt, const char* key, size_t keylen);
extern void shale_readoptions_set_iterate_lower_bound(
    shale_readoptions_t* opt, const char* key, size_t keylen);

extern shale_writeoptions_t* shale_writeoptions_create(void);
extern void shale_writeoptions_destroy(shale_writeoptions_t* opt);
/* Syncs the WAL before the write returns. Default off. */
extern void shale_writeoptions_set_sync(shale_writeoptions_t* opt,
                                        unsigned char v);
/* Skips the WAL: the write is lost on a crash before its flush. */
extern void shale_writeoptions_disable_WAL(shale_writeoptions_t* opt,
                                           int disable);

/* Frees a pointer returned by the library (a value, an error message, a
   property value). */
extern void shale_free(void* ptr);

#ifdef __cplusplus
}
#endif

#endif /* SHALE_C_H */

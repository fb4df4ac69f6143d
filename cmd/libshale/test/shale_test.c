/* shale_test.c: the test of shale's C API, run against libshale.so (or
 * linked with libshale.a) by .ci/capi-test.sh, under valgrind.
 *
 *     shale_test DIR [--leak]
 *
 * DIR must not exist (the test creates the database there). Every check
 * that fails prints the line and exits 1. Every value, error string and
 * handle the library returns is freed or destroyed, so a memory checker
 * that reports a definite leak has found one in the library or in the
 * ownership rules of shale.h. --leak forgets to free one value on purpose:
 * the script runs it to show that the checker catches such a leak.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shale.h"

static int checks; /* counted without a lock: only a figure for the log */

#define CHECK(cond)                                                   \
  do {                                                                \
    checks++;                                                         \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                 \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

/* CHECK_NO_ERR fails with the library's message when err is set. */
#define CHECK_NO_ERR(err)                                                  \
  do {                                                                     \
    checks++;                                                              \
    if ((err) != NULL) {                                                   \
      fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__, \
              (err));                                                      \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* key_of writes the i-th key, "key%05d", into buf. */
static size_t key_of(char* buf, int i) {
  return (size_t)snprintf(buf, 32, "key%05d", i);
}

/* value_of writes the i-th value: short for most keys, 300 bytes (so in a
   blob file, min_blob_size being 200) for every seventh. */
static size_t value_of(char* buf, int i, int generation) {
  size_t n = (size_t)snprintf(buf, 32, "v%d-%05d", generation, i);
  if (i % 7 == 0) {
    memset(buf + n, 'a' + i % 26, 300 - n);
    n = 300;
  }
  return n;
}

/* check_get checks that key holds want (NULL: not found). */
static void check_get(shale_t* db, const shale_readoptions_t* ro,
                      const char* key, const char* want, size_t wantlen) {
  char* err = NULL;
  size_t len = 12345;
  char* v = shale_get(db, ro, key, strlen(key), &len, &err);
  CHECK_NO_ERR(err);
  if (want == NULL) {
    CHECK(v == NULL);
    CHECK(len == 0);
    return;
  }
  CHECK(v != NULL);
  CHECK(len == wantlen);
  CHECK(memcmp(v, want, wantlen) == 0);
  shale_free(v);
}

static void test_errors(const char* dir) {
  char* err = NULL;
  shale_options_t* opts = shale_options_create();

  /* A missing database without create_if_missing. */
  shale_t* db = shale_open(opts, dir, &err);
  CHECK(db == NULL);
  CHECK(err != NULL);
  CHECK(strncmp(err, "shale: ", 7) == 0);

  /* A second failure replaces (and frees) the first message: the memory
     checker sees a leak if the library did not free it. */
  shale_options_set_create_if_missing(opts, 1);
  shale_options_set_compression(opts, 4); /* lz4: not written by shale */
  db = shale_open(opts, dir, &err);
  CHECK(db == NULL);
  CHECK(err != NULL);
  CHECK(strstr(err, "shale_options_set_compression") != NULL);
  CHECK(strstr(err, "lz4") != NULL);
  shale_free(err);
  err = NULL;

  /* NULL arguments. */
  db = shale_open(NULL, dir, &err);
  CHECK(db == NULL);
  CHECK(err != NULL && strstr(err, "invalid argument") != NULL);
  shale_free(err);
  err = NULL;
  shale_options_set_compression(opts, shale_zstd_compression);
  db = shale_open(opts, NULL, &err);
  CHECK(db == NULL);
  CHECK(err != NULL && strstr(err, "name is NULL") != NULL);
  shale_free(err);
  err = NULL;
  shale_options_destroy(opts);

  /* A handle that is none of the library's: the Go panic this causes
     (runtime/cgo: an invalid Handle) is recovered and returned as an error,
     never unwound into C. */
  uintptr_t fake[1] = {123456789};
  size_t len = 7;
  char* v = shale_get((shale_t*)fake, NULL, "k", 1, &len, &err);
  CHECK(v == NULL && len == 0);
  CHECK(err != NULL && strstr(err, "panic") != NULL);
  shale_free(err);
  err = NULL;
  shale_put((shale_t*)fake, NULL, "k", 1, "v", 1, &err);
  CHECK(err != NULL && strstr(err, "panic") != NULL);
  shale_free(err);
  err = NULL;
  const char* keys[1] = {"k"};
  size_t key_sizes[1] = {1}, value_sizes[1];
  char* values[1];
  char* errs[1];
  shale_multi_get((shale_t*)fake, NULL, 1, keys, key_sizes, values,
                  value_sizes, errs);
  CHECK(values[0] == NULL && errs[0] != NULL);
  shale_free(errs[0]);
  CHECK(shale_create_iterator((shale_t*)fake, NULL) == NULL);
  CHECK(shale_iter_valid((shale_iterator_t*)fake) == 0);
  shale_iter_get_error((shale_iterator_t*)fake, &err);
  CHECK(err != NULL && strstr(err, "panic") != NULL);
  shale_free(err);
  err = NULL;
}

/* open_db opens dir with the options every part of the test uses. */
static shale_t* open_db(const char* dir, int create) {
  char* err = NULL;
  shale_options_t* opts = shale_options_create();
  shale_options_set_create_if_missing(opts, (unsigned char)create);
  shale_options_set_write_buffer_size(opts, 64 << 10);
  shale_options_set_max_open_files(opts, 50);
  shale_options_set_compression(opts, shale_snappy_compression);
  shale_options_set_enable_blob_files(opts, 1);
  shale_options_set_min_blob_size(opts, 200);
  shale_options_set_block_cache_size(opts, 1 << 20);
  shale_options_set_bloom_bits_per_key(opts, 10);
  shale_t* db = shale_open(opts, dir, &err);
  CHECK_NO_ERR(err);
  CHECK(db != NULL);
  shale_options_destroy(opts);
  return db;
}

static void test_put_get_delete(shale_t* db) {
  char* err = NULL;
  shale_writeoptions_t* wo = shale_writeoptions_create();
  shale_writeoptions_set_sync(wo, 1);
  shale_readoptions_t* ro = shale_readoptions_create();

  shale_put(db, wo, "hello", 5, "world", 5, &err);
  CHECK_NO_ERR(err);
  check_get(db, ro, "hello", "world", 5);
  check_get(db, NULL, "hello", "world", 5); /* NULL options: defaults */
  check_get(db, ro, "missing", NULL, 0);

  /* An empty value is found, as a non-NULL pointer of length 0. */
  shale_put(db, wo, "empty", 5, "", 0, &err);
  CHECK_NO_ERR(err);
  size_t len = 99;
  char* v = shale_get(db, ro, "empty", 5, &len, &err);
  CHECK_NO_ERR(err);
  CHECK(v != NULL && len == 0);
  shale_free(v);

  /* Binary keys and values, NULs included. */
  const char bkey[] = {'b', 0, 'k'};
  const char bval[] = {0, 1, 0, 2};
  shale_put(db, wo, bkey, sizeof bkey, bval, sizeof bval, &err);
  CHECK_NO_ERR(err);
  v = shale_get(db, ro, bkey, sizeof bkey, &len, &err);
  CHECK_NO_ERR(err);
  CHECK(v != NULL && len == sizeof bval && memcmp(v, bval, len) == 0);
  shale_free(v);

  shale_delete(db, wo, "hello", 5, &err);
  CHECK_NO_ERR(err);
  check_get(db, ro, "hello", NULL, 0);
  shale_delete(db, wo, bkey, sizeof bkey, &err);
  CHECK_NO_ERR(err);

  /* A bad argument: a NULL key with a length. */
  shale_put(db, wo, NULL, 3, "x", 1, &err);
  CHECK(err != NULL && strstr(err, "invalid argument") != NULL);
  shale_free(err);
  err = NULL;
  v = shale_get(db, ro, NULL, 3, &len, &err);
  CHECK(v == NULL && err != NULL);
  shale_free(err);
  err = NULL;
  shale_put(db, wo, "k", (size_t)-1, "x", 1, &err); /* a length of -1 */
  CHECK(err != NULL && strstr(err, "invalid argument") != NULL);
  shale_free(err);
  err = NULL;
  shale_put(NULL, wo, "k", 1, "x", 1, &err);
  CHECK(err != NULL && strstr(err, "db is NULL") != NULL);
  shale_free(err);
  err = NULL;

  shale_readoptions_destroy(ro);
  shale_writeoptions_destroy(wo);
}

/* test_batch writes keys 0..999 (generation 1) in one batch, then deletes
   key00010 and the range [key00100, key00200) in a second. */
static void test_batch(shale_t* db) {
  char* err = NULL;
  char k[32], v[512];
  shale_writebatch_t* b = shale_writebatch_create();
  for (int i = 0; i < 1000; i++) {
    size_t kn = key_of(k, i), vn = value_of(v, i, 1);
    shale_writebatch_put(b, k, kn, v, vn);
  }
  CHECK(shale_writebatch_count(b) == 1000);
  shale_write(db, NULL, b, &err);
  CHECK_NO_ERR(err);

  /* A bad argument to a batch verb fails the write and writes nothing. */
  shale_writebatch_clear(b);
  CHECK(shale_writebatch_count(b) == 0);
  shale_writebatch_delete(b, "key00001", 8);
  shale_writebatch_put(b, NULL, 4, "x", 1);
  shale_write(db, NULL, b, &err);
  CHECK(err != NULL && strstr(err, "invalid argument") != NULL);
  shale_free(err);
  err = NULL;
  value_of(v, 1, 1);
  check_get(db, NULL, "key00001", v, value_of(v, 1, 1));

  shale_writebatch_clear(b);
  shale_writebatch_delete(b, "key00010", 8);
  shale_writebatch_delete_range(b, "key00100", 8, "key00200", 8);
  CHECK(shale_writebatch_count(b) == 2);
  shale_write(db, NULL, b, &err);
  CHECK_NO_ERR(err);
  shale_writebatch_destroy(b);

  check_get(db, NULL, "key00010", NULL, 0);
  check_get(db, NULL, "key00150", NULL, 0);
  size_t n = value_of(v, 200, 1);
  check_get(db, NULL, "key00200", v, n);
}

/* live reports whether key i is present after test_batch. */
static int live(int i) { return i != 10 && (i < 100 || i >= 200); }

static void test_flush_compact_properties(shale_t* db) {
  char* err = NULL;
  shale_flush(db, &err);
  CHECK_NO_ERR(err);
  char* p = shale_property_value(db, "rocksdb.num-files-at-level0");
  CHECK(p != NULL);
  free(p); /* shale_free is free; either works */
  CHECK(shale_property_value(db, "rocksdb.no-such-property") == NULL);
  shale_compact_range(db, NULL, 0, NULL, 0, &err);
  CHECK_NO_ERR(err);
  p = shale_property_value(db, "rocksdb.num-files-at-level0");
  CHECK(p != NULL && strcmp(p, "0") == 0);
  shale_free(p);
  p = shale_property_value(db, "rocksdb.estimate-num-keys");
  CHECK(p != NULL && atoi(p) > 0);
  shale_free(p);
  shale_compact_range(NULL, NULL, 0, NULL, 0, &err);
  CHECK(err != NULL);
  shale_free(err);
}

static void test_multi_get(shale_t* db, int async_io, int generation) {
  enum { N = 64 };
  char keybufs[N][32];
  const char* keys[N];
  size_t key_sizes[N];
  char* values[N];
  size_t value_sizes[N];
  char* errs[N];
  for (int i = 0; i < N; i++) {
    int k = i * 17; /* spread over many files; some deleted, some past the end */
    if (i == N - 1) k = 5000;
    key_sizes[i] = key_of(keybufs[i], k);
    keys[i] = keybufs[i];
  }
  shale_readoptions_t* ro = shale_readoptions_create();
  shale_readoptions_set_async_io(ro, (unsigned char)async_io);
  shale_readoptions_set_fill_cache(ro, 0);
  shale_multi_get(db, ro, N, keys, key_sizes, values, value_sizes, errs);
  char want[512];
  for (int i = 0; i < N; i++) {
    int k = i == N - 1 ? 5000 : i * 17;
    CHECK_NO_ERR(errs[i]);
    if (k < 1000 && live(k)) {
      size_t n = value_of(want, k, generation);
      CHECK(values[i] != NULL);
      CHECK(value_sizes[i] == n && memcmp(values[i], want, n) == 0);
      shale_free(values[i]);
    } else {
      CHECK(values[i] == NULL && value_sizes[i] == 0);
    }
  }
  /* A bad argument fails every key. */
  const char* bad_keys[2] = {"key00001", NULL};
  size_t bad_sizes[2] = {8, 8};
  shale_multi_get(db, ro, 2, bad_keys, bad_sizes, values, value_sizes, errs);
  for (int i = 0; i < 2; i++) {
    CHECK(values[i] == NULL && errs[i] != NULL);
    shale_free(errs[i]);
  }
  shale_readoptions_destroy(ro);
}

/* test_iterators scans [key00050, key00300) both ways, with bounds that
   the caller's buffers no longer hold. */
static void test_iterators(shale_t* db, int async_io) {
  char* err = NULL;
  shale_readoptions_t* ro = shale_readoptions_create();
  shale_readoptions_set_async_io(ro, (unsigned char)async_io);
  char* lower = malloc(16);
  char* upper = malloc(16);
  memcpy(lower, "key00050", 8);
  memcpy(upper, "key00300", 8);
  shale_readoptions_set_iterate_lower_bound(ro, lower, 8);
  shale_readoptions_set_iterate_upper_bound(ro, upper, 8);
  memset(lower, 'z', 8); /* the options hold copies */
  memset(upper, 0, 8);
  free(lower);
  free(upper);

  int want_count = 0;
  for (int i = 50; i < 300; i++) want_count += live(i);

  shale_iterator_t* it = shale_create_iterator(db, ro);
  CHECK(it != NULL);
  int count = 0, prev = -1;
  char k[32], v[512];
  for (shale_iter_seek_to_first(it); shale_iter_valid(it); shale_iter_next(it)) {
    size_t kl, vl;
    const char* key = shale_iter_key(it, &kl);
    const char* val = shale_iter_value(it, &vl);
    CHECK(kl == 8 && memcmp(key, "key", 3) == 0);
    int i = atoi(key + 3);
    CHECK(i > prev && i >= 50 && i < 300 && live(i));
    size_t n = value_of(v, i, 1);
    CHECK(vl == n && memcmp(val, v, n) == 0);
    prev = i;
    count++;
  }
  CHECK(count == want_count);
  shale_iter_get_error(it, &err);
  CHECK_NO_ERR(err);

  count = 0;
  prev = 1000;
  for (shale_iter_seek_to_last(it); shale_iter_valid(it); shale_iter_prev(it)) {
    size_t kl;
    const char* key = shale_iter_key(it, &kl);
    int i = atoi(key + 3);
    CHECK(i < prev && i >= 50 && i < 300);
    prev = i;
    count++;
  }
  CHECK(count == want_count);

  /* Seeks: into the deleted range, and before the lower bound. */
  size_t kl;
  key_of(k, 150);
  shale_iter_seek(it, k, 8);
  CHECK(shale_iter_valid(it));
  CHECK(memcmp(shale_iter_key(it, &kl), "key00200", 8) == 0);
  shale_iter_seek_for_prev(it, k, 8);
  CHECK(shale_iter_valid(it));
  CHECK(memcmp(shale_iter_key(it, &kl), "key00099", 8) == 0);
  shale_iter_seek(it, "a", 1);
  CHECK(shale_iter_valid(it));
  CHECK(memcmp(shale_iter_key(it, &kl), "key00050", 8) == 0);
  shale_iter_seek_for_prev(it, "key00049", 8);
  CHECK(!shale_iter_valid(it));
  CHECK(shale_iter_key(it, &kl) == NULL && kl == 0);
  shale_iter_seek(it, "key00300", 8);
  CHECK(!shale_iter_valid(it));
  shale_iter_get_error(it, &err);
  CHECK_NO_ERR(err);

  /* A bad seek key is the iterator's error. */
  shale_iter_seek(it, NULL, 4);
  CHECK(!shale_iter_valid(it));
  shale_iter_get_error(it, &err);
  CHECK(err != NULL && strstr(err, "invalid argument") != NULL);
  shale_free(err);
  shale_iter_destroy(it);
  shale_readoptions_destroy(ro);
}

static void test_snapshots(shale_t* db) {
  char* err = NULL;
  char v[512];
  const shale_snapshot_t* snap = shale_create_snapshot(db);
  CHECK(snap != NULL);
  shale_put(db, NULL, "key00001", 8, "new", 3, &err);
  CHECK_NO_ERR(err);
  shale_delete(db, NULL, "key00002", 8, &err);
  CHECK_NO_ERR(err);

  shale_readoptions_t* ro = shale_readoptions_create();
  shale_readoptions_set_snapshot(ro, snap);
  size_t n = value_of(v, 1, 1);
  check_get(db, ro, "key00001", v, n);
  n = value_of(v, 2, 1);
  check_get(db, ro, "key00002", v, n);
  check_get(db, NULL, "key00001", "new", 3);
  check_get(db, NULL, "key00002", NULL, 0);

  shale_readoptions_set_iterate_upper_bound(ro, "key00003", 8);
  shale_iterator_t* it = shale_create_iterator(db, ro);
  int count = 0;
  for (shale_iter_seek_to_first(it); shale_iter_valid(it); shale_iter_next(it)) {
    size_t kl, vl;
    const char* key = shale_iter_key(it, &kl);
    const char* val = shale_iter_value(it, &vl);
    if (kl == 8 && memcmp(key, "key00001", 8) == 0) {
      n = value_of(v, 1, 1);
      CHECK(vl == n && memcmp(val, v, n) == 0);
    }
    count++;
  }
  CHECK(count == 4); /* "empty", key00000, key00001, key00002 */
  shale_iter_destroy(it);

  shale_readoptions_set_snapshot(ro, NULL);
  check_get(db, ro, "key00002", NULL, 0);
  shale_readoptions_destroy(ro);
  shale_release_snapshot(db, snap);

  /* Put them back as they were, for the checks that follow. */
  n = value_of(v, 1, 1);
  shale_put(db, NULL, "key00001", 8, v, n, &err);
  CHECK_NO_ERR(err);
  n = value_of(v, 2, 1);
  shale_put(db, NULL, "key00002", 8, v, n, &err);
  CHECK_NO_ERR(err);
}

/* thread_writer puts and reads back 200 keys "t<thread>-<i>" of its own on a
   shared shale_t, the way a multi-threaded C program uses the library. */
enum { THREADS = 4, THREAD_KEYS = 200 };
struct thread_arg {
  shale_t* db;
  int id;
  int failed;
};

static void* thread_writer(void* p) {
  struct thread_arg* a = p;
  char k[32], v[32];
  for (int i = 0; i < THREAD_KEYS && !a->failed; i++) {
    char* err = NULL;
    size_t kn = (size_t)snprintf(k, sizeof k, "t%d-%04d", a->id, i);
    size_t vn = (size_t)snprintf(v, sizeof v, "value-%d-%d", a->id, i);
    shale_put(a->db, NULL, k, kn, v, vn, &err);
    size_t len = 0;
    char* got = shale_get(a->db, NULL, k, kn, &len, &err);
    if (err != NULL || got == NULL || len != vn || memcmp(got, v, vn) != 0) {
      a->failed = 1;
    }
    shale_free(got);
    shale_free(err);
  }
  return NULL;
}

static void test_threads(shale_t* db) {
  pthread_t threads[THREADS];
  struct thread_arg args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (struct thread_arg){db, t, 0};
    CHECK(pthread_create(&threads[t], NULL, thread_writer, &args[t]) == 0);
  }
  for (int t = 0; t < THREADS; t++) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(!args[t].failed);
  }
  shale_readoptions_t* ro = shale_readoptions_create();
  shale_readoptions_set_iterate_lower_bound(ro, "t", 1);
  shale_readoptions_set_iterate_upper_bound(ro, "u", 1);
  shale_iterator_t* it = shale_create_iterator(db, ro);
  int count = 0;
  for (shale_iter_seek_to_first(it); shale_iter_valid(it); shale_iter_next(it)) {
    count++;
  }
  CHECK(count == THREADS * THREAD_KEYS);
  shale_iter_destroy(it);
  shale_readoptions_destroy(ro);
}

/* test_reopen checks, after a close, every key test_batch left. */
static void test_reopen(const char* dir, int leak) {
  shale_t* db = open_db(dir, 0);
  char* err = NULL;
  char k[32], v[512];
  for (int i = 0; i < 1000; i++) {
    key_of(k, i);
    size_t len;
    char* got = shale_get(db, NULL, k, strlen(k), &len, &err);
    CHECK_NO_ERR(err);
    if (!live(i)) {
      CHECK(got == NULL);
      continue;
    }
    size_t n = value_of(v, i, 1);
    CHECK(got != NULL && len == n && memcmp(got, v, n) == 0);
    if (leak && i == 500) continue; /* --leak: forget this one */
    shale_free(got);
  }
  test_multi_get(db, 1, 1);
  test_iterators(db, 1);
  shale_close(db);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [--leak]\n", argv[0]);
    return 2;
  }
  const char* dir = argv[1];
  int leak = argc > 2 && strcmp(argv[2], "--leak") == 0;

  test_errors(dir);
  shale_t* db = open_db(dir, 1);
  test_put_get_delete(db);
  test_batch(db);
  test_multi_get(db, 0, 1); /* from the memtable */
  test_flush_compact_properties(db);
  test_multi_get(db, 1, 1); /* from tables and blob files, async */
  test_multi_get(db, 0, 1);
  test_iterators(db, 0);
  test_iterators(db, 1);
  test_snapshots(db);
  test_threads(db);
  shale_close(db);
  test_reopen(dir, leak);
  printf("shale_test: %d checks passed\n", checks);
  return 0;
}

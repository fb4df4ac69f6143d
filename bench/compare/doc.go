// Command compare runs the same workloads through shale, Pebble, Badger,
// goleveldb and (built with -tags rocksdb) RocksDB in one run and prints
// their throughput (or, for deletescan, their times) side by side, with
// shale's ratio to each of the others, then the same as markdown tables
// with each operation's latency percentiles and each engine's peak memory.
//
//	cd bench/compare && go run . [--num 1000000] [--benchmarks fillseq,fillrandom,readrandom,seekrandom]
//	        [--engines shale,pebble,badger,goleveldb[,rocksdb]] [--value_size 100] [--dir DIR]
//	        [--threads N] [--reads N] [--batch_size 8] [--seek_nexts 0] [--report FILE]
//	        [--ycsb_records 500000] [--ycsb_ops N] [--ycsb_fields 10] [--ycsb_field_length 100]
//
// The engines get the same settings wherever they have them: 16-byte
// zero-padded decimal keys, --value_size-byte values (100 by default) that
// compress to about half (as db_bench's), snappy block compression, 4 KiB
// blocks, 10-bit bloom filters (a 1% false-positive rate for Badger), an
// equal block cache (--cache_size), a 64 MiB memtable, the WAL on and no
// sync. Engines run one after the other in --engines order (all workloads on
// one, then all on the next), each in its own fresh directory and its own
// process, so they never compete for the block cache, the heap or the two
// cores. Pebble writes its newest format (FormatNewest), as a new Pebble
// user would.
//
// One process per engine: compare runs itself again for each engine, with
// the same flags and a hidden one naming the engine; that child runs every
// workload on its engine, prints its progress to stderr and its results as
// JSON to stdout, and exits. The parent reads the results, the child's
// peak resident set (on Linux, ru_maxrss of the exited child, in KiB) and
// the bytes the child caused to be written to storage (on Linux,
// write_bytes of /proc/self/io, read once the engine is closed; elsewhere
// both are left out), then measures and removes the engine's directory.
// --cpuprofile FILE writes one profile per engine, FILE.ENGINE.
//
// RocksDB runs through cgo (github.com/linxGnu/grocksdb v1.7.14, for
// RocksDB 7.8) against the system's librocksdb, only in a build with the
// rocksdb tag; without it, --engines rocksdb says to build with the tag:
//
//	cd bench/compare && ./install-rocksdb.sh   # apt-get install librocksdb-dev, if missing
//	go run -tags rocksdb . --engines shale,pebble,badger,goleveldb,rocksdb
//
// (with the tag, --engines defaults to all five). It gets an LRU block
// cache of --cache_size, a 64 MiB write buffer, 4 KiB blocks with a
// restart every 16 keys, a 10-bit full bloom filter, snappy and the WAL on
// without sync; the rest is RocksDB's default (level compaction, two
// memtables, two background jobs, indexes and filters outside the block
// cache). Its get is GetPinned, copied out; multireadrandom's MultiGet is
// RocksDB's batched MultiGet (rocksdb_batched_multi_get_cf, the one
// db_bench calls), reached through the C API since grocksdb wraps only the
// per-key rocksdb_multi_get; flush is Flush (waiting), the full compaction
// CompactRange over every key.
//
// goleveldb (v1) gets BlockCacheCapacity the block cache, WriteBuffer
// 64 MiB, a 10-bit bloom filter, snappy, 4 KiB blocks with a restart every
// 16 keys, and unsynced writes to its journal (always on). Like Badger it
// has no memtable flush on an open DB (its CompactRange flushes, then
// compacts), so the read workloads' flush closes and reopens it (its Open
// writes the replayed journal to a level-0 table), only when something
// was written since; deletescan's full compaction is CompactRange over
// every key. Its Get returns a new copy of each value: it has no call that
// reads into the caller's buffer.
//
// Badger (v4) runs one transaction per operation (DB.Update, DB.View), with
// conflict detection off (the writes are blind, and the peers have none),
// BlockCacheSize the block cache, IndexCacheSize 0 (indexes and blooms held
// in memory outside the cache, as shale's default), MemTableSize 64 MiB and
// ValueThreshold at Badger's default of 1 MiB, so it keeps even issue 13's
// 8 KiB values in its LSM tree unless --badger_value_threshold is lowered.
// Its Get reads the value (from the value log if separated) as the peers'
// Get does; its iterators read keys only (PrefetchValues off), as the seek
// and scan workloads do. Badger has no memtable flush on an open DB, so the
// read workloads' flush closes and reopens it (Close flushes the
// memtables), only when something was written since; the reopen empties
// its block cache, which readrandom's warm pass refills. deletescan's full
// compaction is, for Badger, a close with CompactL0OnClose and a reopen,
// Flatten, then value-log GC at discard ratio 0.5 until it rewrites nothing.
//
// Key-value separation: --shale_blob_files turns on shale's blob files
// (Options.EnableBlobFiles; --shale_min_blob_size sets MinBlobSize, default
// 0: every non-empty value), --shale_blob_gc their garbage collection, to
// compare with Badger's value log, e.g.
//
//	go run . --num 100000 --value_size 8192 --benchmarks fillrandom,readrandom --shale_blob_files --badger_value_threshold 1024
//
// or issue 13's 8 KiB values on all five, shale separating those of 4 KiB
// and more (Pebble, goleveldb and RocksDB keep them in their tables;
// RocksDB's own blob files are not turned on):
//
//	go run -tags rocksdb . --num 100000 --value_size 8192 --benchmarks fillrandom,readrandom --shale_blob_files --shale_min_blob_size 4096
//
// Workloads, in the spirit of db_bench:
//
//	fillseq           write num keys in order into a fresh DB
//	fillrandom        write num random keys (with repeats) into a fresh DB
//	overwrite         write num random keys over the DB a fill left
//	readrandom        warm: Flush, one untimed pass of random reads, then
//	                  num (or --reads) timed random reads by each of --threads goroutines
//	readmissing       readrandom's warm-up, then num timed reads by each of
//	                  --threads goroutines of keys that are not there: a
//	                  written key with "." appended (db_bench's name)
//	multireadrandom   readrandom's warm-up, then num random keys read in
//	                  batches of --batch_size (default 8): shale's MultiGetNoCopy,
//	                  RocksDB's batched MultiGet, one read transaction of
//	                  gets for Badger, a loop of gets for Pebble and
//	                  goleveldb, which have no MultiGet
//	readseq           every key read in order by one iterator (the DB is
//	                  flushed first); it fails on a key out of order
//	seekrandom        num (or --reads) SeekGE to random keys (the DB is flushed first),
//	                  each followed by --seek_nexts Next calls (default 0)
//	readwhilewriting  readrandom while one more goroutine writes random keys
//	                  until the readers are done; only the reads are counted
//	deletescan        issue 12's delete scan: num keys written in order with
//	                  500-byte values, the lowest 90% deleted, then the first 500
//	                  live keys read from the start right after the deletes,
//	                  after --delete_wait seconds idle (default 10) and after a
//	                  full manual compaction; printed as milliseconds per phase
//
// YCSB's core workloads run through go-ycsb (github.com/pingcap/go-ycsb
// v1.0.3) as a library: its core workload generates the operations and
// their keys, its client runs them on --threads threads (2 by default, for
// these workloads only), and each engine is a go-ycsb DB through a small
// adapter over the engine interface (ycsb.go). A record is one key, YCSB's
// ("user" and a hashed number), whose value holds its --ycsb_fields fields
// of --ycsb_field_length random letters (1 KiB by default, as YCSB's),
// encoded with go-ycsb's RowCodec as its own RocksDB and Badger bindings
// encode them; reads decode the fields, an update reads the record, sets
// its field and writes it back (as those bindings do), a scan is a new
// iterator reading and decoding each record's value.
//
//	ycsb_load         YCSB's load phase: --ycsb_records records inserted in
//	                  hashed (random) order into a fresh DB
//	ycsb_a            50% read, 50% update, zipfian
//	ycsb_b            95% read, 5% update, zipfian
//	ycsb_c            100% read, zipfian
//	ycsb_d            95% read, 5% insert, the latest records most
//	ycsb_e            95% scan of 1 to 100 records (uniform), 5% insert,
//	                  zipfian starts
//	ycsb_f            50% read, 50% read-modify-write, zipfian
//
// ycsb_a..ycsb_f each run --ycsb_ops operations (default --ycsb_records)
// over what the workloads before them left, the DB flushed first; on a DB
// that ycsb_load has not written they load it first, untimed. Their ops/s
// and latencies are of YCSB operations (a scan or a read-modify-write is
// one), timed on each thread as the others are. go-ycsb seeds each thread
// from the clock, so two runs pick different keys. Its client prints to
// stdout (where a child sends its report), so the child points os.Stdout
// at stderr. For example:
//
//	go run -tags rocksdb . --num 200000 --ycsb_records 100000 \
//	        --benchmarks fillrandom,readrandom,multireadrandom,ycsb_load,ycsb_a,ycsb_c,ycsb_e
//
// A workload that is not a fill, on a DB that no fill has written, first
// fills it with fillrandom, untimed. Each goroutine of readrandom and
// readwhilewriting has its own reader (with its own value buffer) and its
// own random stream.
//
// The markdown tables (also written to --report FILE) give, per workload and
// engine, ops/s (keys/s for multireadrandom), the p50 and p99 latency of
// one operation in microseconds (of one batch for multireadrandom, of a
// seek and its nexts for seekrandom), from a histogram of every operation
// (one clock read per operation: each one's time runs from the end of the
// one before), and on shale's row its ops/s over the best peer's, naming
// that peer; deletescan's phases in milliseconds, with shale's over the
// fastest peer's; and per engine its process's peak RSS and bytes written,
// and its directory's size.
//
// After the table it prints each engine's directory size once closed after
// its last workload: the files' bytes and the space they take on disk (du;
// Pebble preallocates its WALs). It prints no write amplification, since
// Badger counts no compaction bytes written and shale's and Pebble's
// WriteAmp count different things.
//
// --report FILE.html (a name ending in .html or .htm) writes, instead of
// the markdown, one self-contained HTML page (internal/report) with the
// engines side by side: ops/s per workload and each engine's ratio to
// shale's, latency percentiles (p50, p90, p99, p99.9, max), throughput per
// one-second interval (each goroutine's opTimer counts its operations per
// second since its first; the parent merges them), deletescan's phases,
// the processes' resources and each engine's own account of its LSM.
//
// This program lives in its own module so that Pebble, Badger, goleveldb
// and grocksdb never become dependencies of shale itself; it only measures
// and never changes shale.
package main

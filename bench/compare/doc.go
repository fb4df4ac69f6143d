// Command compare runs the same workloads through shale, Pebble and Badger
// in one run and prints their throughput (or, for deletescan, their times)
// side by side, with shale's ratio to each of the others.
//
//	cd bench/compare && go run . [--num 1000000] [--benchmarks fillseq,fillrandom,readrandom,seekrandom]
//	        [--engines shale,pebble,badger] [--value_size 100] [--dir DIR]
//
// The engines get the same settings wherever they have them: 16-byte
// zero-padded decimal keys, --value_size-byte values (100 by default) that
// compress to about half (as db_bench's), snappy block compression, 4 KiB
// blocks, 10-bit bloom filters (a 1% false-positive rate for Badger), an
// equal block cache (--cache_size), a 64 MiB memtable, the WAL on and no
// sync. Engines run one after the other in --engines order (all workloads on
// one, then all on the next), each in its own fresh directory, so they never
// compete for the block cache or the two cores. Pebble writes its newest
// format (FormatNewest), as a new Pebble user would.
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
// Workloads, in the spirit of db_bench:
//
//	fillseq     write num keys in order into a fresh DB
//	fillrandom  write num random keys (with repeats) into a fresh DB
//	readrandom  warm: Flush, one untimed pass of random reads, then num timed random reads
//	seekrandom  num SeekGE to random keys (the DB is flushed first)
//	deletescan  issue 12's delete scan: num keys written in order with
//	            500-byte values, the lowest 90% deleted, then the first 500
//	            live keys read from the start right after the deletes,
//	            after --delete_wait seconds idle (default 10) and after a
//	            full manual compaction; printed as milliseconds per phase
//
// A read workload on a DB that no fill has written first fills it with
// fillrandom, untimed.
//
// After the table it prints each engine's directory size once closed after
// its last workload: the files' bytes and the space they take on disk (du;
// Pebble preallocates its WALs). It prints no write amplification, since
// Badger counts no compaction bytes written and shale's and Pebble's
// WriteAmp count different things.
//
// This program lives in its own module so that Pebble and Badger never
// become dependencies of shale itself; it only measures and never changes
// shale.
package main

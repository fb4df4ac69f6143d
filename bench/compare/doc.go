// Command compare runs the same workloads through shale and Pebble in one run
// and prints their throughput (or, for deletescan, their times) side by side.
//
//	cd bench/compare && go run . [--num 1000000] [--benchmarks fillseq,fillrandom,readrandom,seekrandom] [--dir DIR]
//
// Both engines get the same settings: 16-byte zero-padded decimal keys,
// 100-byte values that compress to about half (as db_bench's), snappy block
// compression, 10-bit bloom filters, an equal block cache, a 64 MiB memtable,
// the WAL on and no sync. Engines run one after the other (all workloads on
// shale, then all on Pebble), each in its own fresh directory, so they never
// compete for the block cache or the two cores. Pebble writes its newest
// format (FormatNewest), as a new Pebble user would.
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
// This program lives in its own module so that Pebble never becomes a
// dependency of shale itself; it only measures and never changes shale.
package main

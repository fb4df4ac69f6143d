// Command shale is the command-line tool of the shale key-value store.
//
// It owns four things: admin verbs that read and change one database
// directory (put, get, delete, deleterange, ingest, scan), and check, which verifies
// every checksum of every live file without changing anything; bench, a benchmark
// driver whose flags, workloads and output lines follow RocksDB's db_bench so
// that numbers can be compared side by side; and stress, the process-crash
// test, which kills a writing child process again and again and verifies
// the database against an expected-state log (docs/crash-testing.md).
//
//	shale put --db DIR KEY VALUE
//	shale get --db DIR KEY                 # "not found" on stderr, exit 1 when absent
//	shale delete --db DIR KEY
//	shale deleterange --db DIR START END   # removes [START, END)
//	shale ingest --db DIR [--move] FILE... # external tables (SSTFileWriter)
//	shale scan --db DIR [--from K] [--to K] [--limit N] [--reverse]
//	shale check --db DIR                   # exit 1 when damage was found
//	shale bench [--benchmarks fillseq,readrandom,...] [--num N] ...
//	shale bench --benchmarks randread_batch,scan_direct [--env_read_latency_us 500] ...
//	shale stress --db DIR [--kills N] [--duration D] [--seed S] [--sync] [--threads T] ...
//
// The file-layer benchmarks (randread_batch, scan_direct) read their own
// fixtures, a large file and a large database kept in --db/bench-io, which a
// fresh run keeps; they are described in docs/io-benchmarks.md.
//
// With --hex, keys and values are hex-encoded on input and output. scan prints
// one "KEY : VALUE" line per entry, as RocksDB's ldb does.
//
// The read verbs (get, scan, check) change nothing: get and scan open with
// shale.OpenForReadOnly, check opens nothing, so they also work on a
// read-only directory and beside a process that has the database open.
// The writing verbs create a missing database only with --create_if_missing
// (put's default). The admin verbs and bench print a warning on stderr for
// each WAL file whose records an open dropped (a torn or damaged tail).
//
// The tool never reaches below the public API of the root shale package: it
// does not read files of a database directory itself (stress keeps its
// expected-state logs in a directory of its own, beside the database), and
// it removes nothing but a database's own files: bench holds the lock of
// --db for its whole run and removes an existing database with
// shale.DestroyDB, which leaves every other file (bench_dir.go); its default
// directory is a fresh temporary one, removed afterwards; stress wants a
// missing or empty one.
package main

// Command shale is the command-line tool of the shale key-value store.
//
// It owns four things: admin verbs that read and change one database
// directory (put, get, delete, deleterange, ingest, scan), and check, which verifies
// every checksum of every live file without changing anything, and checkpoint,
// which makes an openable copy of a database in a new directory, and backup,
// restore and list_backups, which keep incremental backups of a database in
// a backup directory (shale.BackupEngine); bench, a benchmark
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
//	shale checkpoint --db DIR --to NEWDIR  # NEWDIR must not exist
//	shale backup --db DIR --backup_dir B   # adds a backup to B
//	shale restore --backup_dir B --db DIR [--backup_id N]  # the latest by default
//	shale list_backups --backup_dir B [--verify]
//	shale bench [--benchmarks fillseq,readrandom,...] [--num N] ...
//	shale bench --benchmarks randread_batch,scan_direct [--env_read_latency_us 500] ...
//	shale stress --db DIR [--kills N] [--duration D] [--seed S] [--sync] [--threads T] ...
//
// The ldb and sst_dump verbs, with those tools' names and flags (--db, --hex,
// --key_hex, --value_hex, --from, --to, --max_keys; --merge_operator names
// the database's merge operator where merged keys are read):
//
//	shale dump --db DIR --file F           # portable dump (dumpfile.go); load --db NEW --file F
//	shale idump --db DIR                   # internal entries of the live tables
//	shale manifest_dump --db DIR [--json]  # every version edit, decoded
//	shale dump_wal --walfile F             # every batch, decoded
//	shale sst_dump --file F --command=scan|raw|verify|check [--show_properties]
//	shale list_live_files --db DIR [--json]
//	shale get_property --db DIR NAME [--json]
//	shale compact --db DIR [--from K] [--to K]
//	shale repair --db DIR                  # shale.RepairDB; unreadable files go to DIR/lost/
//
// The file-layer benchmarks (randread_batch, scan_direct) read their own
// fixtures, a large file and a large database kept in --db/bench-io, which a
// fresh run keeps; they are described in docs/io-benchmarks.md.
//
// With --hex, keys and values are hex-encoded on input and output. scan prints
// one "KEY : VALUE" line per entry, as RocksDB's ldb does.
//
// The read verbs (get, scan, check, checkpoint, backup, dump, idump,
// manifest_dump, dump_wal, sst_dump, list_live_files, get_property) change
// nothing in --db: get, scan, checkpoint, backup, dump and get_property open
// with shale.OpenForReadOnly, check and the file-reading verbs open nothing,
// so they also work on a
// read-only directory and beside a process that has the database open.
// The writing verbs create a missing database only with --create_if_missing
// (put's default). The admin verbs and bench print a warning on stderr for
// each WAL file whose records an open dropped (a torn or damaged tail).
//
// Only idump, manifest_dump, dump_wal, sst_dump and list_live_files read
// the files of a database directory themselves, read-only and without the
// lock, through the packages that own the formats, so that they also work
// on a database that does not open; every other verb uses the public API of
// the root shale package (stress keeps its expected-state logs in a
// directory of its own, beside the database). The tool removes nothing but
// a database's own files: restore holds the lock of --db and removes only
// the database files there before it restores; bench holds the lock of
// --db for its whole run and removes an existing database with
// shale.DestroyDB, which leaves every other file (bench_dir.go); its default
// directory is a fresh temporary one, removed afterwards; stress wants a
// missing or empty one.
package main

package main

import (
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cfg := defaultBenchConfig()
	var (
		benchmarks string
		duration   int
		latencyUS  int64
		jitterUS   int64
		cpuProfile string
		statsSecs  int64
		deleteWait float64
		// deletePersistence is --delete_persistence_threshold.
		deletePersistence string
		progress          bool
	)
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Run db_bench-compatible benchmarks",
		Long: `bench runs workloads named as in RocksDB's db_bench and prints one
db_bench-style line per benchmark, e.g.

  fillrandom   :       2.345 micros/op 426401 ops/sec 44.2 MB/s

Without --benchmarks it runs a short suite (` + defaultSuite + `) with
--num 100000 (unless --num is given) on a temporary directory that is removed
afterwards. Keys are zero-padded decimal numbers of exactly --key_size bytes;
values are pseudo-random bytes that compress to about --compression_ratio
of their size (half, by default).

As in db_bench: fillsync writes --num/1000 random entries, each synced
(per thread; a "commits:" line after it gives the writes per commit group
and per WAL sync, as it does for any write benchmark run on --threads);
fill100K writes --num/1000 random entries of 100,000-byte values;
readmissing reads keys that are not there (a key with '.' appended) and
readhot keys of the first 1% of the key space; updaterandom reads and then
writes random keys; readrandomwriterandom does, of every 100 ops of a
thread, --readwritepercent reads first and writes for the rest. The last two
run --reads ops per thread (db_bench's larger of --reads and --writes;
there is no --writes). db_bench's appendrandom is not here: it is the
baseline of merges (mergerandom), and shale has no merge operator yet.
--open_files (max_open_files) bounds the table files kept open; -1, the
default as in db_bench, keeps every table open, and 0 takes shale's own
default of 1000 (RocksDB raises values below 20 to 20; shale takes any bound).
--statistics prints each benchmark's own counts (db_bench prints the whole
run's once, at the end).

--db DIR: bench holds the lock of DIR (created if missing) for the whole
run, so that while it runs a second bench, or any program opening the
database, is refused; a bench started while another process has the
database open is refused and changes nothing. Unless --use_existing_db,
a database already in DIR is destroyed first, and again before each
benchmark that wants a fresh one (` + freshDBBenchmarks() + `), as
shale.DestroyDB does: only the database's own files go (tables, blob
files, WALs, MANIFEST, CURRENT, OPTIONS, LOG files); every other file and
subdirectory in DIR stays, ` + benchIODir + ` among them. The database stays
in DIR after the run. Without --db, the run uses a fresh temporary
directory and removes it afterwards.

Two benchmarks measure the file layer and print one line per mode:
randread_batch (random 4 KiB reads, --multiread_batch_size per batch, from a
--file_size file: a pread loop vs concurrent preads vs one io_uring batch)
and scan_direct (full scans of a --scan_db_size database with direct reads
and readahead off, with a 32-block readahead, and buffered from a cold page
cache). Their fixtures stay in --db/` + benchIODir + ` and are reused.
--env_read_latency_us, --env_read_jitter_us and --env_read_bandwidth_mb run
everything over a simulated slow device (package vfs/latencyfs). See
docs/io-benchmarks.md.

The async read path (docs/async-io.md): multireadrandom reads --reads keys
per thread in batches of --batch_size (MultiGet with --multiread_batched,
else a loop of Get; ops count keys, the histogram times batches).
fillseqdeterministic builds a fresh LSM of a fixed shape: every level of
--num_levels holds keys from the whole key space, and L0 four files (use
--disable_auto_compactions to keep the shape). asyncio compares, in
interleaved rounds on the current database, multireadrandom with AsyncIO off,
on with --optimize_multiget_for_io=false and on with true, and seekrandom
with --seek_nexts (default 65536 here) off and on; then the same with
everything in the block cache.

deletescan is the delete scan of issue 12: on a fresh database it writes
--num keys in order (zero-padded numbers: one prefix, in key order), with
--value_size 500 unless the flag is given, deletes the lowest 90% one by
one, and times reading the first 500 live keys from the start with a new
iterator, right after the deletes and again after --delete_wait seconds of
idle time (background compactions may run), printing each time with the
iterator's internal_delete_skipped_count (tombstones stepped over) and
internal_key_skipped_count. It runs with the run's options, with the
seed's deletion-triggered compaction collector added
(NewCompactOnDeletionCollectorFactory(1000000, 1000, 0): a table is marked
for compaction once 1,000 of 1,000,000 consecutive entries are
deletions), with a full CompactRange after the deletes (the first scan
right after it), and with shale's delete handling off (aware-off:
DisableDeleteAwareCompaction, MemtableOpScanFlushTrigger -1). After each
scan it times 10,000 point lookups of deleted keys (us/op).

secondarydelete measures secondary-attribute range deletes (issue 12 item
5): on a fresh database per variant it writes --num entries of a time
series (the key an id, the value an 8-byte big-endian timestamp growing
with each entry, then --value_size-8 bytes), deletes the older half by
timestamp with one DeleteBySecondaryRange (Options.SecondaryDeleteKey reads
the timestamp) or, as a RocksDB user would, by iterating over everything
and deleting each old key, and times each delete and a full scan after it,
right away and once background compactions are idle, with the blocks the
scan read. It runs with the ids written in order and shuffled.

Prefix seeks (docs/decisions.md, Prefix seek): --prefix_size N gives the
database a fixed prefix extractor of N bytes, as in db_bench, and
--keys_per_prefix K makes key number k start with the decimal prefix number
k mod (--num / K) (db_bench writes both numbers in binary).
--memtable_bloom_size_ratio gives memtables a prefix bloom, and
--prefix_same_as_start and --total_order_seek are the iterators' read
options. prefixscan (shale's; db_bench's closest is seekrandom with
--prefix_same_as_start) seeks each op to a random prefix with
PrefixSameAsStart and reads all of its keys (at most --seek_nexts when
positive); with --total_order_seek it reads the same keys in total order,
stopping at the first key of another prefix itself, without the prefix
filters; with --seek_missing_prefix it seeks prefixes no key has.

--report FILE writes one self-contained HTML page (inline SVG, no network)
with each benchmark's throughput per one-second interval, its latency
percentiles (p50, p90, p99, p99.9, max; --report records latencies as
--histogram does), the bytes written (WAL, flushes, compactions), flushes,
compactions and write stalls over the run, sampled from DB.Metrics once a
second, and the LSM's shape at the end. On a terminal, bench draws one
progress line per benchmark on stderr (done/total ops, ops/s, ETA),
redrawn in place; --progress=false turns it off, and it is never drawn
when stdout or stderr is not a terminal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			if flags.Changed("benchmarks") {
				cfg.benchmarks = splitList(benchmarks)
			} else if !flags.Changed("num") {
				cfg.num = 100000
			}
			cfg.duration = time.Duration(duration) * time.Second
			cfg.envReadLatency = time.Duration(latencyUS) * time.Microsecond
			cfg.envReadJitter = time.Duration(jitterUS) * time.Microsecond
			cfg.useDirectReadsSet = flags.Changed("use_direct_reads")
			cfg.compressionSet = flags.Changed("compression_type")
			cfg.seekNextsSet = flags.Changed("seek_nexts")
			cfg.statsInterval = time.Duration(statsSecs) * time.Second
			cfg.readsSet = flags.Changed("reads")
			cfg.valueSizeSet = flags.Changed("value_size")
			cfg.deleteWait = time.Duration(deleteWait * float64(time.Second))
			dp, dpErr := parseSecondsOrDuration("--delete_persistence_threshold", deletePersistence)
			if dpErr != nil {
				return dpErr
			}
			cfg.deletePersistence = dp
			cfg.progressOut = progressWriter(cmd, progress)
			if benchConfigHook != nil {
				benchConfigHook(cfg)
				return nil
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			_, err := runBenchmarks(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&benchmarks, "benchmarks", defaultSuite,
		"comma-separated list of: "+knownBenchmarks)
	f.Int64Var(&cfg.num, "num", cfg.num, "number of keys (and of writes per thread)")
	f.Int64Var(&cfg.reads, "reads", cfg.reads, "number of reads per thread (-1 = --num)")
	f.IntVar(&cfg.keySize, "key_size", cfg.keySize, "size of each key in bytes")
	f.IntVar(&cfg.valueSize, "value_size", cfg.valueSize, "size of each value in bytes")
	f.IntVar(&cfg.threads, "threads", cfg.threads, "number of concurrent threads, each doing the benchmark's operations (readers, for readwhilewriting)")
	f.IntVar(&cfg.batchSize, "batch_size", cfg.batchSize, "entries per write batch; keys per batch of multireadrandom")
	f.IntVar(&cfg.seekNexts, "seek_nexts", cfg.seekNexts, "Next calls after each Seek in seekrandom")
	f.StringVar(&cfg.db, "db", "", "database directory, locked for the run; a database in it is destroyed first unless --use_existing_db, other files are kept (see above; default: a fresh temporary directory, removed afterwards)")
	f.BoolVar(&cfg.useExistingDB, "use_existing_db", false, "use the database in --db as it is; skip fillseq/fillrandom")
	f.StringVar(&cfg.compression, "compression_type", cfg.compression, "block compression: snappy, zstd or none")
	f.IntVar(&cfg.bloomBits, "bloom_bits", cfg.bloomBits, "bloom filter bits per key (<= 0 = no filter)")
	f.Int64Var(&cfg.cacheSize, "cache_size", cfg.cacheSize, "block cache size in bytes (<= 0 = no cache)")
	f.IntVar(&cfg.writeBufferSize, "write_buffer_size", cfg.writeBufferSize, "memtable size in bytes")
	f.BoolVar(&cfg.sync, "sync", false, "sync the WAL on every write")
	f.BoolVar(&cfg.walBackgroundWrites, "wal_background_writes", false, "let writes without --sync return before the WAL has them (Options.WALBackgroundWrites: faster, but a process crash may lose the last writes)")
	f.BoolVar(&cfg.disableAutoComp, "disable_auto_compactions", false, "turn off automatic compactions")
	f.BoolVar(&cfg.histogram, "histogram", false, "print the latency histogram of each benchmark, per operation type, as db_bench does")
	f.Int64Var(&cfg.seed, "seed", 0, "seed of the key choice (0 = from the clock; the seed used is printed)")
	f.IntVar(&duration, "duration", 0, "seconds each random benchmark runs (0 = use --num/--reads)")
	f.IntVar(&cfg.blockSize, "block_size", cfg.blockSize, "uncompressed size of SST data blocks in bytes")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	f.StringVar(&cfg.report, "report", "", "write an HTML report with plots (throughput per second, latency percentiles, bytes written, compactions, LSM shape) to this file")
	f.BoolVar(&progress, "progress", true, progressFlagUsage)

	// The file layer: latency injection, direct IO, readahead, io_uring.
	f.Int64Var(&latencyUS, "env_read_latency_us", 0, "delay every file read by this many microseconds (a simulated remote device; 0 = none)")
	f.Int64Var(&jitterUS, "env_read_jitter_us", 0, "spread --env_read_latency_us uniformly by +- this many microseconds")
	f.Int64Var(&cfg.envReadBandwidthMB, "env_read_bandwidth_mb", 0, "share this read bandwidth, in MiB/s, among all file reads (0 = unlimited)")
	f.BoolVar(&cfg.mmapRead, "mmap_read", false, "read SST and blob files through memory mappings (Options.AllowMmapReads, db_bench's --mmap_read)")
	f.BoolVar(&cfg.mmapWrite, "mmap_write", false, "write WALs through shared memory mappings (Options.AllowMmapWrites, db_bench's --mmap_write): no system call per write, still process-crash durable")
	f.BoolVar(&cfg.useDirectReads, "use_direct_reads", false, "read SST files with direct IO (O_DIRECT); randread_batch reads with direct IO unless this is set to false")
	f.BoolVar(&cfg.useDirectIOForFlush, "use_direct_io_for_flush_and_compaction", false, "write SST files with direct IO")
	f.Int64Var(&cfg.readaheadSize, "readahead_size", 0, "bytes iterators read ahead from each table (ReadOptions.ReadaheadSize; 0 = automatic)")
	f.Int64Var(&cfg.maxAutoReadaheadSize, "max_auto_readahead_size", cfg.maxAutoReadaheadSize, "cap of automatic iterator readahead in bytes (0 = no automatic readahead)")
	f.Int64Var(&cfg.bytesPerSync, "bytes_per_sync", 0, "start writeback of SST files every this many bytes (0 = off)")
	f.Int64Var(&cfg.rateLimiterBytesPerSec, "rate_limiter_bytes_per_sec", 0, "bound flush and compaction writes to this many bytes per second (0 = no limit)")
	f.BoolVar(&cfg.disableIOUring, "disable_io_uring", false, "read batches with concurrent preads instead of io_uring")
	f.BoolVar(&cfg.ioUringSQPoll, "io_uring_sqpoll", false, "give the io_uring a kernel thread polling its submission queue (costs a core)")
	f.BoolVar(&cfg.ioStats, "io_stats", false, "print the DB's IO metrics (Metrics().IO) after each benchmark")
	f.Int64Var(&cfg.fileSize, "file_size", cfg.fileSize, "size in bytes of randread_batch's file (kept in --db/"+benchIODir+" and reused)")
	f.Int64Var(&cfg.scanDBSize, "scan_db_size", cfg.scanDBSize, "minimum size in bytes of scan_direct's database (kept in --db/"+benchIODir+" and reused)")
	f.IntVar(&cfg.multireadBatchSize, "multiread_batch_size", cfg.multireadBatchSize, "reads per batch in randread_batch")

	// The async read path: MultiGet, async iterators, statistics.
	f.BoolVar(&cfg.asyncIO, "async_io", false, "read with ReadOptions.AsyncIO (MultiGet and iterators)")
	f.BoolVar(&cfg.optimizeMultiGetForIO, "optimize_multiget_for_io", cfg.optimizeMultiGetForIO, "with --async_io, let MultiGet read several levels at once (false sets ReadOptions.MultiGetOneLevelAtATime)")
	f.BoolVar(&cfg.multireadBatched, "multiread_batched", false, "multireadrandom reads each batch with one MultiGet (false: a loop of Get, as db_bench)")
	f.Int64Var(&cfg.multireadStride, "multiread_stride", 0, "keys of a multireadrandom batch are start + i*stride from a random start (0 = random keys)")
	f.BoolVar(&cfg.statistics, "statistics", false, "collect Options.Statistics and print its tickers and histograms after each benchmark")
	f.IntVar(&cfg.numLevels, "num_levels", cfg.numLevels, "number of LSM levels (Options.NumLevels)")

	// db_bench's most used flags: the LSM shape, the write path, the data.
	f.Int64Var(&cfg.targetFileSizeBase, "target_file_size_base", cfg.targetFileSizeBase, "target size in bytes of the tables compactions write")
	f.Int64Var(&cfg.maxBytesForLevelBase, "max_bytes_for_level_base", cfg.maxBytesForLevelBase, "target size in bytes of the base level")
	f.Float64Var(&cfg.maxBytesForLevelMultiplier, "max_bytes_for_level_multiplier", cfg.maxBytesForLevelMultiplier, "size ratio of adjacent levels")
	f.IntVar(&cfg.level0FileNumCompactionTrigger, "level0_file_num_compaction_trigger", cfg.level0FileNumCompactionTrigger, "L0 files that start a compaction into the base level")
	f.IntVar(&cfg.level0SlowdownWritesTrigger, "level0_slowdown_writes_trigger", cfg.level0SlowdownWritesTrigger, "L0 files at which writes are slowed down")
	f.IntVar(&cfg.level0StopWritesTrigger, "level0_stop_writes_trigger", cfg.level0StopWritesTrigger, "L0 files at which writes stop until a compaction")
	f.IntVar(&cfg.maxBackgroundJobs, "max_background_jobs", cfg.maxBackgroundJobs, "most flushes and compactions running at once")
	f.IntVar(&cfg.maxWriteBufferNumber, "max_write_buffer_number", cfg.maxWriteBufferNumber, "most memtables, the one being written included; writes wait while all are full")
	f.BoolVar(&cfg.disableWAL, "disable_wal", false, "write without the WAL (WriteOptions.DisableWAL): a crash loses the writes not yet flushed")
	f.IntVar(&cfg.openFiles, "open_files", cfg.openFiles, "max_open_files: the most table files kept open; -1 keeps every table open, 0 is shale's default (1000)")
	f.BoolVar(&cfg.cacheIndexAndFilterBlocks, "cache_index_and_filter_blocks", false, "keep the index and filter blocks of tables in the block cache, charged to --cache_size and evictable (false: held by each open table)")
	f.IntVar(&cfg.indexType, "index_type", 0, "table index: 0 = one index block per table (binary search), 2 = index partitions under a top-level index, read through the block cache (db_bench's numbers)")
	f.BoolVar(&cfg.partitionIndexAndFilters, "partition_index_and_filters", false, "partitioned index and filters: --index_type=2 with the filters cut into partitions too")
	f.IntVar(&cfg.metadataBlockSize, "metadata_block_size", 0, "target size of an index partition in bytes (0: 4096)")
	f.BoolVar(&cfg.pinL0FilterAndIndexBlocks, "pin_l0_filter_and_index_blocks_in_cache", false, "with --cache_index_and_filter_blocks, keep the index and filter blocks of L0 tables pinned in the cache while the table is open")
	f.Float64Var(&cfg.compressionRatio, "compression_ratio", cfg.compressionRatio, "values compress to about this fraction of their size (1 or more: incompressible)")
	f.Int64Var(&statsSecs, "stats_interval_seconds", 0, "print, every this many seconds, the ops and ops/sec of the running benchmark's last interval and of all of it on stderr (0 = never)")
	f.BoolVar(&cfg.useExistingKeys, "use_existing_keys", false, "with --use_existing_db: read the database's keys first and use them instead of generated keys (their count becomes --num)")
	f.IntVar(&cfg.readWritePercent, "readwritepercent", cfg.readWritePercent, "readrandomwriterandom: percent of the ops that are reads")
	f.Float64Var(&deleteWait, "delete_wait", cfg.deleteWait.Seconds(), "deletescan: seconds of idle time between the deletes and the second scan")
	f.StringVar(&cfg.mergeOperator, "merge_operator", "", "the merge operator (db_bench's names): uint64add (8-byte little-endian counters; mergerandom then writes 8-byte operands) or stringappend (\",\" between values); empty: none")
	f.BoolVar(&cfg.enableBlobFiles, "enable_blob_files", false, "write values of at least --min_blob_size bytes to blob files (key-value separation)")
	f.BoolVar(&cfg.blobWriteSeparation, "enable_blob_write_separation", false, "with --enable_blob_files, write values to blob files as they are written (the WAL holds blob indexes) instead of at flush (Options.EnableBlobWriteSeparation)")
	f.Int64Var(&cfg.minBlobSize, "min_blob_size", 0, "smallest value written to a blob file (0 = every non-empty value)")
	f.Int64Var(&cfg.blobFileSize, "blob_file_size", cfg.blobFileSize, "size at which a blob file is finished and another started")
	f.StringVar(&cfg.blobCompression, "blob_compression_type", cfg.blobCompression, "blob value compression: snappy, zstd or none")
	f.BoolVar(&cfg.enableBlobGC, "enable_blob_garbage_collection", false, "let compactions relocate the live values of the oldest blob files")
	f.Float64Var(&cfg.blobGCAgeCutoff, "blob_garbage_collection_age_cutoff", cfg.blobGCAgeCutoff, "fraction of blob files, oldest first, that garbage collection relocates")
	f.Float64Var(&cfg.blobGCForce, "blob_garbage_collection_force_threshold", cfg.blobGCForce, "garbage ratio of the oldest blob files past which their tables are compacted (1 = off)")
	f.Int64Var(&cfg.blobGCMaxRelocation, "blob_garbage_collection_max_relocation_bytes", cfg.blobGCMaxRelocation, "live blob bytes one automatic compaction relocates at most (0 = --blob_file_size, negative = no bound, as RocksDB)")
	f.IntVar(&cfg.blobFileStartLevel, "blob_file_starting_level", 0, "first level whose outputs separate values into blob files")
	f.Int64Var(&cfg.blobCacheSize, "blob_cache_size", 0, "bytes of a blob value cache apart from the block cache (0 = share the block cache)")
	f.StringVar(&deletePersistence, "delete_persistence_threshold", "0", "deleted data leaves every file within this time (Options.DeletePersistenceThreshold): seconds, or a Go duration such as 1m30s (0 = off)")

	// Prefix seeks (bench_prefix.go).
	f.IntVar(&cfg.prefixSize, "prefix_size", 0, "give the database a fixed prefix extractor of this many bytes (Options.PrefixExtractor; 0 = none)")
	f.Int64Var(&cfg.keysPerPrefix, "keys_per_prefix", 0, "keys start with a --prefix_size prefix: key number k with prefix number k mod (--num / this) (0 = plain keys)")
	f.Float64Var(&cfg.memtableBloomSizeRatio, "memtable_bloom_size_ratio", 0, "give memtables a prefix bloom of this fraction of --write_buffer_size (Options.MemtablePrefixBloomSizeRatio; 0 = none)")
	f.BoolVar(&cfg.prefixSameAsStart, "prefix_same_as_start", false, "iterators read only the keys of their seek key's prefix (ReadOptions.PrefixSameAsStart; prefixscan always does)")
	f.BoolVar(&cfg.totalOrderSeek, "total_order_seek", false, "iterators read in total order, consulting no prefix filter (ReadOptions.TotalOrderSeek)")
	f.BoolVar(&cfg.wholeKeyFiltering, "whole_key_filtering", cfg.wholeKeyFiltering, "keep whole keys in the bloom filters beside the prefixes (Options.WholeKeyFiltering; false: prefixes only)")
	f.BoolVar(&cfg.seekMissingPrefix, "seek_missing_prefix", false, "prefixscan seeks prefixes no key has (with --keys_per_prefix: a prefix number whose last digit is ':', between two written prefixes)")
	return cmd
}

// benchConfigHook, when set (by tests), receives the parsed configuration
// instead of running the benchmarks.
var benchConfigHook func(benchConfig)

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

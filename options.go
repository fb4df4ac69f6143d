package shale

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// Compression is the block compression of SSTs.
type Compression = sstable.Compression

// The compressions. RocksDB's default is snappy when it is available.
const (
	NoCompression     = sstable.NoCompression
	SnappyCompression = sstable.SnappyCompression
	ZstdCompression   = sstable.ZstdCompression
)

// Comparer defines the order of user keys; see base.Comparer.
type Comparer = base.Comparer

// DefaultComparer orders keys bytewise (RocksDB's BytewiseComparator).
var DefaultComparer = base.DefaultComparer

// Options configure a DB. A zero field takes the default named in its comment;
// names follow RocksDB's options where one exists.
type Options struct {
	// CreateIfMissing creates the DB when dir holds none. Default false, as
	// RocksDB's create_if_missing; Open with nil Options sets it to true.
	CreateIfMissing bool
	// ErrorIfExists fails Open when a DB already exists. Default false.
	ErrorIfExists bool
	// WriteBufferSize is the size of a memtable before it is flushed.
	// Default 64 MiB (write_buffer_size).
	WriteBufferSize int
	// MaxWriteBufferNumber is the most memtables (mutable + immutable) kept;
	// writes stop while that many wait for a flush. Default 2.
	MaxWriteBufferNumber int
	// Level0FileNumCompactionTrigger: L0 files that trigger a compaction. Default 4.
	Level0FileNumCompactionTrigger int
	// Level0SlowdownWritesTrigger: L0 files at which writes are slowed. Default 20.
	Level0SlowdownWritesTrigger int
	// Level0StopWritesTrigger: L0 files at which writes stop. Default 36.
	Level0StopWritesTrigger int
	// TargetFileSizeBase is the target size of compaction outputs. Default 64 MiB.
	TargetFileSizeBase int64
	// TargetFileSizeMultiplier multiplies the target size of compaction
	// outputs once per level below the base level
	// (target_file_size_multiplier). Default 1: one size for every level.
	TargetFileSizeMultiplier int
	// MaxBytesForLevelBase is the target size of the base level. Default 256 MiB.
	MaxBytesForLevelBase int64
	// MaxBytesForLevelMultiplier is the size ratio of adjacent levels. Default 10.
	MaxBytesForLevelMultiplier float64
	// LevelCompactionDynamicLevelBytes sizes levels from the last one up
	// (level_compaction_dynamic_level_bytes). Default true, as RocksDB >= 8.4.
	// Set DisableDynamicLevelBytes to turn it off.
	LevelCompactionDynamicLevelBytes bool
	// DisableDynamicLevelBytes turns LevelCompactionDynamicLevelBytes off
	// (needed because a zero bool cannot mean "default true").
	DisableDynamicLevelBytes bool
	// NumLevels is the number of levels. Default 7.
	NumLevels int
	// MaxBackgroundJobs bounds concurrent flushes and compactions. Default 2.
	MaxBackgroundJobs int
	// BlockSize is the uncompressed size of SST data blocks (block_size):
	// any size from 1 byte to 256 MiB, as RocksDB takes any. Default 4 KiB.
	BlockSize int
	// BlockRestartInterval: keys between restart points in a block. Default 16.
	BlockRestartInterval int
	// BloomBitsPerKey sizes the full-file bloom filter. Default 10; a
	// negative value disables filters.
	BloomBitsPerKey int
	// IndexType is the index of the tables written from now on:
	// BinarySearchIndex (the zero value, RocksDB's default kBinarySearch),
	// one index block per table that its reader keeps in memory, or
	// TwoLevelIndexSearch, index partitions of about MetadataBlockSize
	// bytes under a small top-level index, the partitions read through
	// the block cache, so that index memory stays bounded by the cache as
	// the database grows (RocksDB's index_type). A table is read as it
	// was written, whatever this says now.
	IndexType IndexType
	// PartitionFilters, with TwoLevelIndexSearch, cuts each table's filter
	// into partitions, one per index partition, read through the block
	// cache (RocksDB's partition_filters). Default false; Open refuses it
	// without TwoLevelIndexSearch.
	PartitionFilters bool
	// MetadataBlockSize is the target size of an index partition (RocksDB's
	// metadata_block_size). Default 4096; only used with
	// TwoLevelIndexSearch.
	MetadataBlockSize int
	// BlockCacheSize is the block cache capacity in bytes. Default 32 MiB
	// (RocksDB's default LRU cache); a negative value disables the cache.
	BlockCacheSize int64
	// MaxOpenFiles bounds the table files (and, once they exist, blob
	// files) kept open (max_open_files). Default 1000; -1 keeps every
	// file open once read. Past the bound, files not read lately are
	// closed (CLOCK, an approximation of least recently used) and opened
	// again when read; a file an iterator, Get, MultiGet or compaction is
	// reading stays open until it is done, past the bound if need be. The
	// bound counts only these files: RocksDB subtracts 10 for the DB's
	// other files and raises values below 20 to 20, shale takes any value
	// from 1. A DB opened with OpenForReadOnly keeps every table open
	// whatever this says, as -1.
	MaxOpenFiles int
	// CacheIndexAndFilterBlocks puts the tables' index and filter blocks in
	// the block cache (cache_index_and_filter_blocks): charged to
	// BlockCacheSize, evicted like data blocks, and read from the table
	// again when next needed. Default false: each open table holds its own
	// (Metrics().TableReadersMem counts them). Without a block cache it
	// changes nothing. A block larger than one cache shard's part of the
	// capacity (the cache has 16 shards or more) stays with its table, as
	// when off. Size the cache to hold the index and filter blocks of the
	// tables being read: when they outgrow it, most reads load them again
	// and run many times slower than with this off (docs/decisions.md,
	// Tables, has measurements).
	CacheIndexAndFilterBlocks bool
	// PinL0FilterAndIndexBlocksInCache, with CacheIndexAndFilterBlocks,
	// keeps the index and filter blocks of L0 tables in the cache for as
	// long as the table stays open (pin_l0_filter_and_index_blocks_in_cache):
	// still charged to the cache, never evicted. Whether a table is in L0
	// is decided when it is opened, as in RocksDB. Default false.
	PinL0FilterAndIndexBlocksInCache bool
	// Compression of SST blocks. Default (the zero value) SnappyCompression.
	Compression Compression
	// Comparer orders user keys. Default DefaultComparer.
	Comparer *Comparer
	// MergeOperator resolves the operands of Merge (merge_operator).
	// Default nil: Merge is refused. Its Name is recorded in the MANIFEST
	// at the first Merge; opening the database again under another name is
	// an error.
	MergeOperator MergeOperator
	// CompactionFilter (compaction_filter), shared by every compaction,
	// decides the fate of the entries compactions keep that no snapshot
	// sees. Default nil. It takes precedence over CompactionFilterFactory,
	// as in RocksDB.
	CompactionFilter CompactionFilter
	// CompactionFilterFactory (compaction_filter_factory) makes a filter
	// for each compaction. Default nil.
	CompactionFilterFactory CompactionFilterFactory
	// FileChecksumGenFactory (file_checksum_gen_factory) makes the
	// generator of the whole-file checksum of every table and blob file the
	// DB writes, recorded in the MANIFEST with the generator's name.
	// Default nil: CRC-32C (NewFileChecksumGenCrc32cFactory; RocksDB's
	// default is none). NoFileChecksums records none. Validate asks it for
	// one generator (empty FileName) to check its name is not reserved.
	FileChecksumGenFactory FileChecksumGenFactory
	// DisableAutoCompactions turns off automatic compactions. Default false.
	DisableAutoCompactions bool
	// FS is the file system. Default vfs.Default (the OS).
	FS vfs.FS
	// Logger receives the event log. Default: a text log in the DB's LOG file.
	Logger *slog.Logger
	// MaxManifestFileSize rotates the MANIFEST past this size. Default 64 MiB
	// (max_manifest_file_size is 1 GiB in RocksDB; smaller keeps replay fast).
	MaxManifestFileSize int64
	// WALRecoveryMode chooses how damage in the WAL is handled at Open.
	// Default TolerateCorruptedTailRecords.
	WALRecoveryMode WALRecoveryMode
	// ParanoidChecks turns on expensive checks (paranoid_checks): at Open
	// every live table is opened and its size checked against the
	// MANIFEST, and every table a flush or compaction writes is read back
	// and verified block by block before it is installed (a failure is a
	// background error). Default false, since a zero bool must be the
	// default: what RocksDB's default paranoid mode does, shale always does
	// (every block read from disk is checksummed, damage in the MANIFEST
	// or mid-WAL fails Open, and a background error stops writes).
	ParanoidChecks bool

	// UseDirectReads reads SST (and blob) files with direct IO, bypassing
	// the OS page cache (use_direct_reads): O_DIRECT on Linux, F_NOCACHE on
	// macOS, FILE_FLAG_NO_BUFFERING on Windows. shale then does its own
	// readahead. Open fails, naming this option, on a file system that
	// refuses direct IO. Default false.
	UseDirectReads bool
	// UseDirectIOForFlushAndCompaction writes (and reads, for compaction)
	// SSTs with direct IO (use_direct_io_for_flush_and_compaction). Default
	// false.
	UseDirectIOForFlushAndCompaction bool
	// AllowMmapReads maps SST and blob files read-only when the file cache
	// opens them, and reads their blocks and values by copying from the
	// mapping instead of with a read call (allow_mmap_reads): no system
	// call per read of data in the page cache, which pays most for large
	// values read at random. Blocks and values are still checksummed and
	// cached as usual, and a file system that cannot map a file (a
	// wrapping one, such as a fault injector) is read as without it. A device error
	// under a mapping is a SIGBUS rather than an error returned, as with
	// every mmap reader. Incompatible with UseDirectReads. Default false.
	AllowMmapReads bool
	// AllowMmapWrites writes the WAL through a shared, writable memory
	// mapping of its file (allow_mmap_writes, which RocksDB applies to
	// every file it writes; shale to WALs, tables being written in large
	// blocks already): a write without Sync is copied into the page cache
	// with no system call, and still survives a crash of the process, as
	// without the option. Syncs, power loss and recovery are unchanged (a
	// WAL reads as zeros past its last record until it is closed). Each
	// 4 MiB of WAL is reserved with fallocate before it is mapped, so a full
	// disk is an error; on a file system without fallocate it can instead
	// fault the process at the copy, as with any mmap writer. Default false.
	AllowMmapWrites bool
	// MaxAutoReadaheadSize caps the automatic readahead of iterators, which
	// starts at 8 KiB on the third sequential block read of a file (the
	// second with ReadOptions.AsyncIO, which then prefetches windows of
	// this size) and doubles up to this (max_auto_readahead_size). Default 256 KiB; a
	// negative value turns automatic readahead off.
	MaxAutoReadaheadSize int64
	// BytesPerSync starts writeback of SST files every this many bytes
	// written (bytes_per_sync), so a flush or compaction does not end in one
	// huge fsync. Default 1 MiB (RocksDB's recommended setting; RocksDB's
	// own default is off); a negative value turns it off.
	BytesPerSync int64
	// DisableIOUring makes the async read path use concurrent positional
	// reads instead of io_uring on Linux. Default false.
	DisableIOUring bool
	// IOUringSQPoll gives the io_uring a kernel thread that polls its
	// submission queue, saving a system call per batch at the cost of a
	// busy core. Default false.
	IOUringSQPoll bool
	// WALBackgroundWrites lets a write without Sync return before its WAL
	// record is handed to the OS: a background goroutine writes it within
	// microseconds, many commits per write system call (Pebble's behaviour).
	// Small writes get much faster, but a crash of the process may lose the
	// last writes acknowledged without Sync. Default false: such a write
	// has reached the OS when it returns (RocksDB's behaviour, with
	// manual_wal_flush off), so only a power loss can take it.
	WALBackgroundWrites bool
	// Statistics, when set, collects the DB's tickers and latency
	// histograms (RocksDB's statistics): see NewStatistics. Several DBs may
	// share one; it then counts them all (closed ones included), while each
	// DB's Metrics keep counting only its own reads. Default nil: nothing is collected, and the read path does
	// not read the clock.
	Statistics *Statistics

	// Lock, when set, is the directory's lock taken with LockDirectory: Open
	// and DestroyDB use it instead of taking the lock themselves, and Close
	// leaves it held. It must be the lock of the directory being opened.
	Lock *Lock
	// AvoidFlushDuringShutdown makes Close skip the flush of writes made
	// with WriteOptions.DisableWAL (avoid_flush_during_shutdown): they are
	// lost. Default false: Close flushes them. Writes that went to the WAL
	// are never flushed by Close; the next Open replays them.
	AvoidFlushDuringShutdown bool
	// KeepLogFileNum is how many old LOG files (LOG.old.<time>) are kept
	// (keep_log_file_num). Default 1000.
	KeepLogFileNum int
	// MaxLogFileSize starts a new LOG file once the current one reaches
	// this many bytes (max_log_file_size). Default 0: only at Open.
	MaxLogFileSize int64

	// TablePropertiesCollectorFactories make the property collectors of
	// every table a flush or compaction writes
	// (table_properties_collector_factories): each factory makes one
	// collector per table, which sees every entry and adds user properties
	// to the table's properties block (GetPropertiesOfAllTables reads them
	// back). A table whose collector answers NeedCompact is marked for
	// compaction, which the MANIFEST records, and is compacted first (see
	// DisableDeleteAwareCompaction for the order).
	// NewCompactOnDeletionCollectorFactory makes RocksDB's
	// CompactOnDeletionCollector. Default none. The OPTIONS file names them
	// but cannot bring them back: ParseOptionsFile leaves this empty.
	TablePropertiesCollectorFactories []TablePropertiesCollectorFactory

	// Delete-aware compaction. Without any collector, shale compacts
	// tables for their tombstones on its own (Pebble's tombstone-density
	// compactions): a data block is tombstone-dense when it holds at least
	// NumDeletionsThreshold point tombstones or when they take at least
	// DeletionSizeRatioThreshold of its bytes, and a table whose share of
	// dense blocks reaches TombstoneDenseCompactionThreshold is compacted
	// into the next level, where its tombstones meet what they delete and
	// go (already above the last level when nothing older lies below:
	// Statistics counts them under TickerCompactionOptimizedDelDropObsolete).
	// The counts are taken when a table is written. Such compactions, and
	// those of tables marked by TablePropertiesCollectorFactories, run as
	// soon as a background slot is free, before compactions by level score
	// while their table's level scores below 1 and alternately with them
	// otherwise; with Level0SlowdownWritesTrigger L0 files, L0 goes first.
	// Besides, a last-level table whose tombstones are all older than the
	// oldest snapshot is rewritten in place to drop them when they are more
	// than a tenth of its entries (or its range tombstones delete a tenth of
	// its size), and level scores count each table's size plus the bytes
	// its tombstones are estimated to delete (RocksDB's
	// compensated_file_size).

	// TombstoneDenseCompactionThreshold is the share of a table's data
	// blocks that must be tombstone-dense for the table to be compacted
	// (Pebble's TombstoneDenseCompactionThreshold). Default 0.10; a
	// negative value turns tombstone-density compactions off; at most 1.
	TombstoneDenseCompactionThreshold float64
	// NumDeletionsThreshold is the number of point tombstones (Delete,
	// SingleDelete) that makes a data block tombstone-dense (Pebble's
	// NumDeletionsThreshold). Default 100; a negative value turns this
	// test off.
	NumDeletionsThreshold int
	// DeletionSizeRatioThreshold is the share of a data block's
	// uncompressed bytes taken by point tombstones that makes it
	// tombstone-dense (Pebble's DeletionSizeRatioThreshold). Default 0.5; a
	// negative value turns this test off; at most 1.
	DeletionSizeRatioThreshold float64
	// DisableDeleteAwareCompaction turns off what shale does about
	// tombstones on its own: no tombstone-density compactions, no in-place
	// rewrites of last-level tables for their tombstones, and level scores
	// by plain table sizes, as before delete-aware compaction existed.
	// Tables marked by TablePropertiesCollectorFactories are still compacted
	// first, and tombstones are still dropped wherever nothing older can lie
	// below. Default false.
	DisableDeleteAwareCompaction bool

	// MaxSequentialSkipInIterations is how many entries of one user key an
	// iterator move steps over in a row, versions of a key it has already
	// decided or versions newer than its snapshot, before it seeks past
	// the rest instead (max_sequential_skip_in_iterations). Default 8; a
	// negative value seeks at the first such entry, as RocksDB's 0 does.
	// It changes how fast, never what, an iterator reads. A run of deleted
	// keys is not a run of one key: every deleted key is visited (and
	// counted in PerfContext.InternalDeleteSkippedCount).
	MaxSequentialSkipInIterations int
	// MemtableOpScanFlushTrigger flushes the mutable memtable when one
	// iterator move (First, Seek, Next...) steps over more than this many
	// of its entries (memtable_op_scan_flush_trigger): a long run of
	// tombstones or overwritten versions that every scan of it would pass
	// again, and that only a flush, then compaction, removes. Default
	// 1000; negative turns it off (RocksDB's 0). It never changes what an
	// iterator reads.
	MemtableOpScanFlushTrigger int
	// DeletePersistenceThreshold bounds how long deleted data stays in the
	// database's files (Lethe's FADE; RocksDB has no such option): every
	// point and range tombstone reaches the bottom level within this time
	// of being written, so the values it deletes (every version of the key
	// older than the tombstone) are gone from every table, WAL and blob
	// file by then. The threshold is split over the levels a tombstone
	// passes (L0, the base level down to the bottom level) in proportion
	// to their sizes, as Lethe does; a memtable holding a tombstone is
	// flushed at half of L0's share, and a table whose oldest tombstone
	// outlives its level's share is compacted before any other work. With
	// blob files (EnableBlobFiles, or blob files left from when it was on)
	// the levels share nine tenths of the threshold, and a blob file
	// holding a value a compaction dropped is rewritten (its live values
	// relocated, whatever the blob GC options, and the file deleted) once
	// the tombstone that deleted the value is nine tenths of the threshold
	// old, or, for a value dropped as overwritten and never deleted, nine
	// tenths of the threshold after the compaction dropping it: overwrites
	// are not bounded from their write, since nothing carries an overwrite
	// down the levels (delete the key first to have its old value bound).
	// The bound is met when compactions are picked: it is exceeded by the
	// time they take to run and to wait for a background slot. A snapshot that still sees deleted data keeps it, and the bound
	// holds from the snapshot's release; time while the DB is closed counts,
	// and tombstones replayed from a WAL at Open (whose write time the WAL
	// does not record) are taken to be due at once. DisableAutoCompactions
	// suspends the bound (memtables are still flushed in time).
	// Metrics().DeletePersistence reports how it is kept. Default 0: off
	// (tombstones are still dated, so turning it on later counts from the
	// writes).
	DeletePersistenceThreshold time.Duration
	// TTL (ttl), in seconds, when positive: a table above the last level
	// whose oldest data (FileMetadata.OldestAncesterTime) is older than
	// this is compacted into the next level once no compaction by size or
	// for tombstones is due, so data moves down (and what it overwrites
	// or deletes goes) within about TTL times the levels. Checked whenever
	// compactions are picked. Default 0: off (RocksDB's default is 30
	// days; shale leaves it to the user).
	TTL uint64
	// PeriodicCompactionSeconds (periodic_compaction_seconds), when
	// positive: a table written longer ago than this is compacted (into the
	// next level, or rewritten in place in the last level), after TTL
	// compactions, so that every table is rewritten at least that often.
	// Default 0: off.
	PeriodicCompactionSeconds uint64
	// Clock tells the time for DeletePersistenceThreshold and the tombstone
	// dates it counts from, and for TTL and PeriodicCompactionSeconds and
	// the table times they count from (see Clock). Default SystemClock.
	Clock Clock
	// SecondaryDeleteKey extracts the secondary attribute (a timestamp,
	// say) of an entry, for DB.DeleteBySecondaryRange (Lethe's KiWi idea;
	// RocksDB has no such option): ok false means the entry has none and is
	// never deleted by attribute. It is called on Set values only (Merge
	// operands and blob references have no attribute), from reads, flushes
	// and compactions concurrently; it must be fast, must not retain key or
	// value, and must return the same for the same entry in every Open of
	// the database. A database holding live secondary tombstones refuses to
	// open without it. Default nil: DeleteBySecondaryRange fails. Not in the
	// OPTIONS file (a function, like Clock).
	SecondaryDeleteKey func(key, value []byte) (attr uint64, ok bool)
	// EventListener is told of flushes, compactions, table files created
	// and deleted, write stall changes and background errors (RocksDB's
	// listeners), from a goroutine of the DB's own, in order, and never so
	// that a slow listener holds up writes (see EventListener). Default nil:
	// none. Not in the OPTIONS file.
	EventListener EventListener
	// RateLimiter bounds the bytes per second flushes and compactions write
	// to tables and blob files, flushes first (RocksDB's rate_limiter,
	// NewGenericRateLimiter); several DBs may share one. WAL, MANIFEST and
	// OPTIONS writes are not limited. Close stops the table writes waiting
	// for tokens (their jobs fail, leaving the data in the WAL or the input
	// tables), except the flush of writes that skipped the WAL, which it
	// waits for. Default nil: no limit. Not in the OPTIONS file.
	RateLimiter *RateLimiter

	// Key-value separation (blob files). Every one of these but
	// BlobCacheSize can change while the DB is open (SetOptions): each
	// flush and compaction reads them when it starts.

	// EnableBlobFiles (enable_blob_files) writes the values of at least
	// MinBlobSize bytes that flushes and compactions output to blob files,
	// leaving a blob index in the table. Values already in blob files stay
	// there when it is turned off. Values are kept inline while
	// SecondaryDeleteKey is set (it reads Set values, which a blob index is
	// not). Default false.
	EnableBlobFiles bool
	// EnableBlobWriteSeparation (enable_blob_write_separation, shale's own)
	// separates values when they are written instead of when they are
	// flushed: the commit path appends each Set value of at least
	// MinBlobSize bytes to a blob file of the mutable memtable, and the WAL
	// and memtable hold its blob index, so the value is written once
	// instead of twice (WAL, then flush). It takes effect with
	// EnableBlobFiles and BlobFileStartingLevel 0. A synced write keeps
	// its values in the WAL (its flush separates them), so that it syncs
	// one file, not two, unless unsynced writes before it left their blob
	// file unsynced. Default false.
	EnableBlobWriteSeparation bool
	// MinBlobSize (min_blob_size) is the smallest value that goes to a blob
	// file. Default 0: every non-empty value, as in RocksDB.
	MinBlobSize int64
	// BlobFileSize (blob_file_size) is the size at which a flush or
	// compaction finishes its blob file and starts another. Default 256 MiB.
	BlobFileSize int64
	// BlobCompression (blob_compression_type) compresses the values of
	// blob files written from now on; each value records its own. Default
	// (the zero value) NoCompression, RocksDB's default.
	BlobCompression Compression
	// EnableBlobGarbageCollection (enable_blob_garbage_collection) lets
	// compactions relocate the live values of the oldest blob files, so
	// that those files turn into garbage as a whole and are deleted
	// (blob_gc.go). Default false.
	EnableBlobGarbageCollection bool
	// BlobGarbageCollectionAgeCutoff (blob_garbage_collection_age_cutoff) is
	// the fraction of blob files, oldest first, whose values GC relocates,
	// from 0 to 1. Default (0) 0.25.
	BlobGarbageCollectionAgeCutoff float64
	// BlobGarbageCollectionForceThreshold
	// (blob_garbage_collection_force_threshold) is the garbage ratio of the
	// oldest blob files past which compactions of the tables referencing
	// them are forced, from 0 to 1. Default (0) 1.0, which is off.
	BlobGarbageCollectionForceThreshold float64
	// BlobGarbageCollectionOffPeakWindow, "HH:MM-HH:MM" in UTC (as RocksDB's
	// daily_offpeak_time_utc: "23:30-04:00" spans midnight, "00:00-23:59"
	// is the whole day), is when automatic compactions relocate blob
	// values; outside it they leave them, except compactions forced by
	// BlobGarbageCollectionForceThreshold. Manual compactions always
	// relocate. Default "": no window, relocation at any time.
	BlobGarbageCollectionOffPeakWindow string
	// BlobGarbageCollectionMaxRelocationBytes bounds the live blob bytes one
	// automatic compaction relocates (no RocksDB counterpart: RocksDB
	// relocates every value of the old files a compaction meets). The old
	// files stay on disk until the compaction installs its copy, so an
	// unbounded relocation adds up to the live bytes of the oldest
	// BlobGarbageCollectionAgeCutoff of the files at once; bounded, the
	// files with the most garbage go first (compact.BlobGCSelection). One
	// file's share may exceed it. Manual compactions are not bounded.
	// Default (0) BlobFileSize: one compaction's copy is about one blob
	// file, whatever the database's size. Negative: no bound, as RocksDB.
	BlobGarbageCollectionMaxRelocationBytes int64
	// BlobCompactionReadaheadSize (blob_compaction_readahead_size) is the
	// readahead of compactions reading blob files front to back (GC).
	// Default (0) 2 MiB, not RocksDB's 0: such a read visits every record of
	// a file in order, and a window as large as compaction_readahead_size's
	// makes one read of many small records instead of one read each.
	// Negative turns readahead off.
	BlobCompactionReadaheadSize int64
	// BlobFileStartingLevel (blob_file_starting_level) is the first level
	// whose outputs separate values: flushes (to L0) write blob files only
	// when it is 0, and compactions into this level or deeper separate the
	// values still inline. Default 0.
	BlobFileStartingLevel int
	// BlobCacheSize (blob_cache) is the capacity of a cache of blob values
	// apart from the block cache, in bytes. Default 0: blob values are
	// cached in the block cache. Fixed at Open.
	BlobCacheSize int64
	// PrepopulateBlobCache (prepopulate_blob_cache, kFlushOnly) puts the
	// values a flush writes to blob files into the blob cache, as hot data.
	// Default false.
	PrepopulateBlobCache bool

	// Prefix seeks (docs/decisions.md, Prefix seek). Each of these can
	// change while the DB is open (SetOptions): tables record the
	// extractor they were written with, memtables and iterators keep the
	// options they were made with.

	// PrefixExtractor (prefix_extractor, RocksDB's SliceTransform) gives
	// keys a prefix: the bloom filter of every table written from now on
	// also holds the prefixes of its keys (when BloomBitsPerKey leaves it
	// a filter), memtables may keep a prefix bloom
	// (MemtablePrefixBloomSizeRatio), and an iterator with
	// ReadOptions.PrefixSameAsStart reads only the keys of its seek key's
	// prefix, skipping every table and memtable whose prefix filter rules
	// it out. NewFixedPrefixTransform and NewCappedPrefixTransform make
	// RocksDB's transforms; a program may supply its own (see
	// SliceTransform for what it must promise). A table's prefix filter is
	// used only by an extractor of the name the table records, so a
	// change of extractor (or none) never gives wrong answers: older
	// tables are just not skipped. Default nil: no prefixes.
	PrefixExtractor SliceTransform
	// WholeKeyFiltering (whole_key_filtering) keeps whole keys in the
	// bloom filters of tables beside their prefixes; false, with a
	// PrefixExtractor, writes filters of prefixes only (smaller), which
	// point lookups then probe with the key's prefix (a key outside the
	// extractor's domain, or a table of another extractor, is not
	// filtered). Without a PrefixExtractor filters always hold whole keys.
	// Default true; since a zero bool cannot mean true, set
	// DisableWholeKeyFiltering to turn it off.
	WholeKeyFiltering bool
	// DisableWholeKeyFiltering turns WholeKeyFiltering off.
	DisableWholeKeyFiltering bool
	// MemtablePrefixBloomSizeRatio (memtable_prefix_bloom_size_ratio),
	// with a PrefixExtractor, gives each memtable made from now on a bloom
	// filter of the prefixes of its keys, of this fraction of
	// WriteBufferSize in bytes, which prefix seeks consult to skip the
	// memtable. Values above 0.25 are taken as 0.25, as RocksDB does.
	// Default 0: none.
	MemtablePrefixBloomSizeRatio float64
}

// maxMemtablePrefixBloomSizeRatio is where RocksDB clamps
// memtable_prefix_bloom_size_ratio.
const maxMemtablePrefixBloomSizeRatio = 0.25

// defaultBlobFileSize is Options.BlobFileSize's default (RocksDB's).
const defaultBlobFileSize = 256 * mib

// defaultBlobCompactionReadahead is Options.BlobCompactionReadaheadSize's
// default.
const defaultBlobCompactionReadahead = 2 * mib

const (
	kib = 1 << 10
	mib = 1 << 20
)

// EnsureDefaults fills zero fields with their defaults and returns o (a new
// Options when o is nil, with CreateIfMissing set).
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{CreateIfMissing: true}
	}
	if o.WriteBufferSize == 0 {
		o.WriteBufferSize = 64 * mib
	}
	if o.MaxWriteBufferNumber == 0 {
		o.MaxWriteBufferNumber = 2
	}
	if o.Level0FileNumCompactionTrigger == 0 {
		o.Level0FileNumCompactionTrigger = 4
	}
	if o.Level0SlowdownWritesTrigger == 0 {
		o.Level0SlowdownWritesTrigger = 20
	}
	if o.Level0StopWritesTrigger == 0 {
		o.Level0StopWritesTrigger = 36
	}
	if o.TargetFileSizeBase == 0 {
		o.TargetFileSizeBase = 64 * mib
	}
	if o.TargetFileSizeMultiplier == 0 {
		o.TargetFileSizeMultiplier = 1
	}
	if o.MaxBytesForLevelBase == 0 {
		o.MaxBytesForLevelBase = 256 * mib
	}
	if o.MaxBytesForLevelMultiplier == 0 {
		o.MaxBytesForLevelMultiplier = 10
	}
	o.LevelCompactionDynamicLevelBytes = !o.DisableDynamicLevelBytes
	if o.NumLevels == 0 {
		o.NumLevels = 7
	}
	if o.MaxBackgroundJobs == 0 {
		o.MaxBackgroundJobs = 2
	}
	if o.BlockSize == 0 {
		o.BlockSize = 4 * kib
	}
	if o.BlockRestartInterval == 0 {
		o.BlockRestartInterval = 16
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = 10
	}
	if o.MetadataBlockSize == 0 {
		o.MetadataBlockSize = 4 * kib
	}
	if o.BlockCacheSize == 0 {
		o.BlockCacheSize = 32 * mib
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = 1000
	}
	if o.Compression == sstable.DefaultCompression {
		o.Compression = SnappyCompression
	}
	if o.Comparer == nil {
		o.Comparer = DefaultComparer
	} else if o.Comparer.Separator == nil || o.Comparer.Successor == nil {
		// Index keys then simply keep the full user key.
		c := *o.Comparer
		if c.Separator == nil {
			c.Separator = func(dst, a, _ []byte) []byte { return append(dst, a...) }
		}
		if c.Successor == nil {
			c.Successor = func(dst, a []byte) []byte { return append(dst, a...) }
		}
		o.Comparer = &c
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.MaxManifestFileSize == 0 {
		o.MaxManifestFileSize = 64 * mib
	}
	if o.MaxAutoReadaheadSize == 0 {
		o.MaxAutoReadaheadSize = 256 * kib
	}
	if o.BytesPerSync == 0 {
		o.BytesPerSync = mib
	}
	if o.KeepLogFileNum == 0 {
		o.KeepLogFileNum = 1000
	}
	if o.TombstoneDenseCompactionThreshold == 0 {
		o.TombstoneDenseCompactionThreshold = compact.DefaultTombstoneDenseCompactionThreshold
	}
	if o.NumDeletionsThreshold == 0 {
		o.NumDeletionsThreshold = sstable.DefaultNumDeletionsThreshold
	}
	if o.DeletionSizeRatioThreshold == 0 {
		o.DeletionSizeRatioThreshold = sstable.DefaultDeletionSizeRatioThreshold
	}
	switch {
	case o.MaxSequentialSkipInIterations == 0:
		o.MaxSequentialSkipInIterations = 8
	case o.MaxSequentialSkipInIterations < 0:
		o.MaxSequentialSkipInIterations = -1
	}
	switch {
	case o.MemtableOpScanFlushTrigger == 0:
		o.MemtableOpScanFlushTrigger = DefaultMemtableOpScanFlushTrigger
	case o.MemtableOpScanFlushTrigger < 0:
		o.MemtableOpScanFlushTrigger = -1
	}
	if o.Clock == nil {
		o.Clock = SystemClock
	}
	if o.BlobFileSize == 0 {
		o.BlobFileSize = defaultBlobFileSize
	}
	if o.BlobCompression == sstable.DefaultCompression {
		o.BlobCompression = NoCompression
	}
	if o.BlobGarbageCollectionAgeCutoff == 0 {
		o.BlobGarbageCollectionAgeCutoff = 0.25
	}
	if o.BlobGarbageCollectionForceThreshold == 0 {
		o.BlobGarbageCollectionForceThreshold = 1
	}
	if o.BlobCompactionReadaheadSize == 0 {
		o.BlobCompactionReadaheadSize = defaultBlobCompactionReadahead
	}
	o.WholeKeyFiltering = !o.DisableWholeKeyFiltering
	if o.MemtablePrefixBloomSizeRatio > maxMemtablePrefixBloomSizeRatio {
		o.MemtablePrefixBloomSizeRatio = maxMemtablePrefixBloomSizeRatio
	}
	return o
}

// DefaultMemtableOpScanFlushTrigger is Options.MemtableOpScanFlushTrigger's
// default.
const DefaultMemtableOpScanFlushTrigger = 1000

// maxBlockSize bounds Options.BlockSize: a block is cut once it reaches the
// size, so with its last entry it stays far below block.MaxLen.
const maxBlockSize = 256 << 20

// maxSequentialSkip returns MaxSequentialSkipInIterations as RocksDB counts
// it (0 for a negative value).
func (o *Options) maxSequentialSkip() int { return max(o.MaxSequentialSkipInIterations, 0) }

// Validate checks the options after EnsureDefaults; its errors name the field.
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error {
		return base.InvalidArgumentf(format, args...)
	}
	if err := validateFileChecksumFactory(o.FileChecksumGenFactory); err != nil {
		return err
	}
	switch {
	case o.MergeOperator != nil && o.SecondaryDeleteKey != nil:
		// A secondary tombstone judges a Set by its attribute; merged
		// onto, the value it judged is gone, and whether a compaction
		// merged it first would change what the tombstone deletes.
		return bad("Options.MergeOperator and Options.SecondaryDeleteKey cannot both be set: secondary tombstones apply to Set values, which merges change")
	case o.AllowMmapReads && o.UseDirectReads:
		return bad("Options.AllowMmapReads and Options.UseDirectReads cannot both be set: a mapping reads through the page cache, which direct reads bypass")
	case o.WriteBufferSize < 4*kib:
		return bad("Options.WriteBufferSize must be at least 4 KiB, got %d", o.WriteBufferSize)
	case o.WriteBufferSize > 1<<30:
		return bad("Options.WriteBufferSize must be at most 1 GiB, got %d", o.WriteBufferSize)
	case o.MaxWriteBufferNumber < 2:
		return bad("Options.MaxWriteBufferNumber must be at least 2, got %d", o.MaxWriteBufferNumber)
	case o.Level0FileNumCompactionTrigger < 1:
		return bad("Options.Level0FileNumCompactionTrigger must be positive, got %d", o.Level0FileNumCompactionTrigger)
	case o.Level0SlowdownWritesTrigger < o.Level0FileNumCompactionTrigger:
		return bad("Options.Level0SlowdownWritesTrigger (%d) must be >= Level0FileNumCompactionTrigger (%d)",
			o.Level0SlowdownWritesTrigger, o.Level0FileNumCompactionTrigger)
	case o.Level0StopWritesTrigger < o.Level0SlowdownWritesTrigger:
		return bad("Options.Level0StopWritesTrigger (%d) must be >= Level0SlowdownWritesTrigger (%d)",
			o.Level0StopWritesTrigger, o.Level0SlowdownWritesTrigger)
	case o.TargetFileSizeBase < 4*kib:
		return bad("Options.TargetFileSizeBase must be at least 4 KiB, got %d", o.TargetFileSizeBase)
	case o.MaxBytesForLevelBase < 4*kib:
		return bad("Options.MaxBytesForLevelBase must be at least 4 KiB, got %d", o.MaxBytesForLevelBase)
	case !(o.MaxBytesForLevelMultiplier >= 2 && o.MaxBytesForLevelMultiplier <= 1000): // NaN fails too
		return bad("Options.MaxBytesForLevelMultiplier must be between 2 and 1000, got %g", o.MaxBytesForLevelMultiplier)
	case o.NumLevels < 2 || o.NumLevels > manifest.NumLevelsMax:
		return bad("Options.NumLevels must be between 2 and %d, got %d", manifest.NumLevelsMax, o.NumLevels)
	case o.MaxBackgroundJobs < 1 || o.MaxBackgroundJobs > 64:
		return bad("Options.MaxBackgroundJobs must be between 1 and 64, got %d", o.MaxBackgroundJobs)
	case o.BlockSize < 1 || o.BlockSize > maxBlockSize:
		return bad("Options.BlockSize must be between 1 byte and 256 MiB, got %d", o.BlockSize)
	case o.BlockRestartInterval < 1 || o.BlockRestartInterval > 1024:
		return bad("Options.BlockRestartInterval must be between 1 and 1024, got %d", o.BlockRestartInterval)
	case o.BloomBitsPerKey > 64:
		return bad("Options.BloomBitsPerKey must be at most 64, got %d", o.BloomBitsPerKey)
	case o.IndexType != BinarySearchIndex && o.IndexType != TwoLevelIndexSearch:
		return bad("Options.IndexType must be BinarySearchIndex or TwoLevelIndexSearch, got %d", uint64(o.IndexType))
	case o.PartitionFilters && o.IndexType != TwoLevelIndexSearch:
		return bad("Options.PartitionFilters needs Options.IndexType = TwoLevelIndexSearch (filter partitions are indexed by the top-level index)")
	case o.MetadataBlockSize < 1 || o.MetadataBlockSize > maxBlockSize:
		return bad("Options.MetadataBlockSize must be between 1 byte and 256 MiB, got %d", o.MetadataBlockSize)
	case o.MaxOpenFiles < -1:
		return bad("Options.MaxOpenFiles must be positive, or -1 to keep every file open, got %d", o.MaxOpenFiles)
	case o.Compression != NoCompression && o.Compression != SnappyCompression && o.Compression != ZstdCompression:
		return bad("Options.Compression must be none, snappy or zstd, got %d", int(o.Compression))
	case o.Comparer.Compare == nil || o.Comparer.Name == "":
		return bad("Options.Comparer must have a Name and a Compare function")
	case o.MaxManifestFileSize < kib:
		return bad("Options.MaxManifestFileSize must be at least 1 KiB, got %d", o.MaxManifestFileSize)
	case o.WALRecoveryMode < TolerateCorruptedTailRecords || o.WALRecoveryMode > SkipAnyCorruptedRecords:
		return bad("Options.WALRecoveryMode is not a known mode: %d", int(o.WALRecoveryMode))
	case o.KeepLogFileNum < 0:
		return bad("Options.KeepLogFileNum must be >= 0, got %d", o.KeepLogFileNum)
	case o.MaxLogFileSize < 0:
		return bad("Options.MaxLogFileSize must be >= 0, got %d", o.MaxLogFileSize)
	case o.MaxAutoReadaheadSize > 64*mib:
		return bad("Options.MaxAutoReadaheadSize must be at most 64 MiB, got %d", o.MaxAutoReadaheadSize)
	case o.TombstoneDenseCompactionThreshold > 1 || math.IsNaN(o.TombstoneDenseCompactionThreshold):
		return bad("Options.TombstoneDenseCompactionThreshold must be at most 1 (negative turns it off), got %g", o.TombstoneDenseCompactionThreshold)
	case o.DeletionSizeRatioThreshold > 1 || math.IsNaN(o.DeletionSizeRatioThreshold):
		return bad("Options.DeletionSizeRatioThreshold must be at most 1 (negative turns it off), got %g", o.DeletionSizeRatioThreshold)
	case o.DeletePersistenceThreshold < 0:
		return bad("Options.DeletePersistenceThreshold must be >= 0 (0 turns it off), got %v", o.DeletePersistenceThreshold)
	case o.RateLimiter != nil && o.RateLimiter.BytesPerSecond() <= 0:
		return bad("Options.RateLimiter must have a positive rate (NewGenericRateLimiter), got %d bytes per second (nil means no limit)", o.RateLimiter.BytesPerSecond())
	case o.MinBlobSize < 0:
		return bad("Options.MinBlobSize must be >= 0, got %d", o.MinBlobSize)
	case o.BlobFileSize < 0:
		return bad("Options.BlobFileSize must be positive, got %d", o.BlobFileSize)
	case o.BlobCompression != NoCompression && o.BlobCompression != SnappyCompression && o.BlobCompression != ZstdCompression:
		return bad("Options.BlobCompression must be none, snappy or zstd, got %d", int(o.BlobCompression))
	case !(o.BlobGarbageCollectionAgeCutoff >= 0 && o.BlobGarbageCollectionAgeCutoff <= 1):
		return bad("Options.BlobGarbageCollectionAgeCutoff must be between 0 and 1, got %g", o.BlobGarbageCollectionAgeCutoff)
	case !(o.BlobGarbageCollectionForceThreshold >= 0 && o.BlobGarbageCollectionForceThreshold <= 1):
		return bad("Options.BlobGarbageCollectionForceThreshold must be between 0 and 1, got %g", o.BlobGarbageCollectionForceThreshold)
	case o.BlobFileStartingLevel < 0:
		return bad("Options.BlobFileStartingLevel must be >= 0, got %d", o.BlobFileStartingLevel)
	case o.BlobCacheSize < 0:
		return bad("Options.BlobCacheSize must be >= 0 (0 shares the block cache), got %d", o.BlobCacheSize)
	case o.PrefixExtractor != nil && o.PrefixExtractor.Name() == "":
		return bad("Options.PrefixExtractor must have a Name: tables record it to know whose prefixes their filters hold")
	case !(o.MemtablePrefixBloomSizeRatio >= 0): // NaN fails too
		return bad("Options.MemtablePrefixBloomSizeRatio must be between 0 and 0.25, got %g", o.MemtablePrefixBloomSizeRatio)
	}
	for i, f := range o.TablePropertiesCollectorFactories {
		if f == nil {
			return bad("Options.TablePropertiesCollectorFactories[%d] is nil", i)
		}
	}
	for _, s := range optionSpecs {
		if s.validate != nil {
			if err := s.validate(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// optionsFileFields lists what the OPTIONS file records, by RocksDB name, in
// optionSpecs' order.
func (o *Options) optionsFileFields() [][2]string {
	fields := make([][2]string, len(optionSpecs))
	for i, s := range optionSpecs {
		fields[i] = [2]string{s.name, s.format(o)}
	}
	return fields
}

// collectorNames lists the factories' names for the OPTIONS file, in
// brackets and separated by "; " (empty brackets for none).
func collectorNames(fs []TablePropertiesCollectorFactory) string {
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		if f != nil {
			names = append(names, f.Name())
		}
	}
	return "[" + strings.Join(names, "; ") + "]"
}

// encodeOptionsFile renders the OPTIONS file: an INI-like text RocksDB users
// can read, parsed back by ParseOptionsFile.
func (o *Options) encodeOptionsFile() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# shale options, written at Open and by DB.SetOptions\n[Version]\n  shale_version=%s\n  go_version=%s\n\n[CFOptions \"default\"]\n", Version, runtime.Version())
	for _, kv := range o.optionsFileFields() {
		fmt.Fprintf(&b, "  %s=%s\n", kv[0], kv[1])
	}
	b.WriteString(optionsChecksumLine(b.Bytes()))
	return b.Bytes()
}

// optionsChecksumPrefix starts the last line of an OPTIONS file, a comment
// (so INI readers skip it) holding the CRC-32C of every byte before it: an
// OPTIONS file is text, so without it a changed digit would still parse.
const optionsChecksumPrefix = "# crc32c="

// optionsChecksumLine returns the checksum line that ends an OPTIONS file
// whose other bytes are body.
func optionsChecksumLine(body []byte) string {
	return fmt.Sprintf("%s%08x\n", optionsChecksumPrefix, checksum.CRC32C(body))
}

// verifyOptionsChecksum checks that data ends with the checksum line of the
// bytes before it, byte for byte, so truncation (which loses the line or its
// newline) and any change of the body or of the line are found.
func verifyOptionsChecksum(data []byte) error {
	i := bytes.LastIndex(data, []byte("\n"+optionsChecksumPrefix))
	if i < 0 {
		return errors.New("no checksum line at its end (truncated, or written by a shale that did not record one; reopening the DB writes a new OPTIONS file)")
	}
	if got, want := string(data[i+1:]), optionsChecksumLine(data[:i+1]); got != want {
		return fmt.Errorf("checksum line %q, want %q", strings.TrimSpace(got), strings.TrimSpace(want))
	}
	return nil
}

// ParseOptionsFile reads an OPTIONS file written by Open back into Options.
// Keys it does not know are ignored, so newer files still parse. Besides what
// shale writes it takes RocksDB's spellings of values: a size suffix k, m, g
// or t (either case) on integers, as 64M, and RocksDB's compression names
// (kNoCompression, kSnappyCompression, kZSTD).
func ParseOptionsFile(data []byte) (*Options, error) {
	o := &Options{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, base.InvalidArgumentf("shale: OPTIONS line without '=': %q", line)
		}
		if err := o.setOptionsFileField(k, v); err != nil {
			return nil, base.InvalidArgumentf("shale: OPTIONS %s=%s: %v", k, v, err)
		}
	}
	if err := sc.Err(); err != nil {
		// bufio.ErrTooLong: a line longer than the scanner's 64 KiB.
		return nil, base.InvalidArgumentf("shale: reading OPTIONS file: %v", err)
	}
	return o, nil
}

// setOptionsFileField sets the option named k from v as optionSpecs parses
// it; a name it does not know changes nothing.
func (o *Options) setOptionsFileField(k, v string) error {
	if s, ok := optionSpecsByName[k]; ok {
		return s.parse(o, v)
	}
	return nil
}

// WriteOptions control a single write.
type WriteOptions struct {
	// Sync makes the write durable (fsync of the WAL) before it returns.
	Sync bool
	// DisableWAL skips the WAL: the write is lost if the process crashes
	// before its memtable is flushed.
	DisableWAL bool
}

// ReadOptions control a single read or iterator.
type ReadOptions struct {
	// Snapshot reads the DB as of the snapshot; nil reads the latest state.
	Snapshot *Snapshot
	// LowerBound is the inclusive lower bound of an iterator (nil = none).
	LowerBound []byte
	// UpperBound is the exclusive upper bound of an iterator (nil = none).
	UpperBound []byte
	// FillCache adds blocks read to the block cache. Default (zero) false
	// would surprise RocksDB users, so SkipFillCache is the switch; FillCache
	// is kept for RocksDB-named configuration and forces filling when true.
	FillCache bool
	// SkipFillCache keeps blocks read by this call out of the block cache.
	SkipFillCache bool
	// VerifyChecksums (verify_checksums) is accepted for RocksDB-named
	// configuration and changes nothing: shale verifies the checksum of
	// every block it reads from disk, for Get, MultiGet, iterators and
	// compactions alike, whatever this field says. Blocks served from the
	// block cache were verified when they were read; DB.VerifyChecksum
	// re-reads every block from disk.
	VerifyChecksums bool
	// ReadaheadSize makes an iterator read ahead this many bytes at a time
	// from each table it scans, from the first block read (readahead_size).
	// Default 0: automatic readahead (see Options.MaxAutoReadaheadSize).
	ReadaheadSize int64
	// AsyncIO (async_io) turns on the async read path for MultiGet and
	// iterators: MultiGet reads the blocks of many files as one batch of
	// concurrent reads, a Seek issues the block reads of every level before
	// waiting for any, and iterators prefetch the next readahead window in
	// the background. Results are the same either way. Default false.
	AsyncIO bool
	// OptimizeMultiGetForIO (optimize_multiget_for_io), with AsyncIO, lets
	// MultiGet read files of several levels at once. That is the default
	// (RocksDB's true) whatever this field says, since a zero bool cannot
	// mean true: MultiGetOneLevelAtATime is the switch that turns it off,
	// and this field, kept for RocksDB-named configuration, forces it on
	// when true.
	OptimizeMultiGetForIO bool
	// MultiGetOneLevelAtATime, with AsyncIO, keeps a MultiGet's concurrent
	// reads within one level at a time, for less CPU (RocksDB's
	// optimize_multiget_for_io false); ignored when OptimizeMultiGetForIO
	// is true. Default false: the levels are read at once.
	MultiGetOneLevelAtATime bool
	// PerfContext, when set, receives the counts of the work done by the
	// calls made with these ReadOptions: Get, MultiGet and MultiGetFunc add
	// theirs when they return, an iterator when it is closed. Calls that
	// share one PerfContext must not run concurrently.
	PerfContext *PerfContext
	// PrefixSameAsStart (prefix_same_as_start) puts an iterator of a DB
	// with a PrefixExtractor in prefix mode: a Seek or SeekForPrev (and
	// SeekLT) to a key in the extractor's domain reads only the keys of
	// that key's prefix, skipping the tables and memtables whose prefix
	// filters rule it out, and the iterator becomes invalid at the first
	// key, either way, without the prefix. First and Last position in
	// total order, and confine the moves that follow to the prefix of the
	// key they land on. A seek key outside the domain seeks in total order.
	// Unlike RocksDB's prefix mode, results are always those of a total
	// order iteration cut at the prefix's end (docs/decisions.md, Prefix
	// seek). Default false: total order.
	PrefixSameAsStart bool
	// TotalOrderSeek (total_order_seek) turns prefix mode off whatever
	// PrefixSameAsStart says: every iterator move is in total order, and
	// no prefix filter is consulted. Default false.
	TotalOrderSeek bool

	// Deadline (deadline) is the absolute time by which a Get, a MultiGet
	// or MultiGetFunc, or one iterator step (Seek*, First, Last, Next,
	// Prev) must finish: one that cannot returns an error matching
	// ErrTimedOut (MultiGet: for each key not answered in time; an
	// iterator: through Err, the iterator invalid), having released what
	// it held. A deadline already past fails at once, without IO. What is
	// and is not bounded: docs/decisions.md, Read deadlines. Default zero:
	// none.
	Deadline time.Time
	// IOTimeout (io_timeout) bounds each file read of such a call, from
	// when it starts; a read that cannot finish in time fails the call as
	// Deadline does. Default 0: none (negative is none too).
	IOTimeout time.Duration
}

// NewReadOptions returns ReadOptions with RocksDB's defaults. It reads as
// the zero ReadOptions and a nil *ReadOptions do; it sets
// OptimizeMultiGetForIO, RocksDB's default, which they take too.
func NewReadOptions() *ReadOptions { return &ReadOptions{OptimizeMultiGetForIO: true} }

func (ro *ReadOptions) asyncIO() bool { return ro != nil && ro.AsyncIO }

func (ro *ReadOptions) perfContext() *PerfContext {
	if ro == nil {
		return nil
	}
	return ro.PerfContext
}

func (ro *ReadOptions) fillCache() bool {
	return ro == nil || ro.FillCache || !ro.SkipFillCache
}

// Version is the shale release.
const Version = "0.1.0"

// IndexType is a table's index layout (RocksDB's
// BlockBasedTableOptions::IndexType, with its numbers).
type IndexType = sstable.IndexType

// The index types of Options.IndexType.
const (
	// BinarySearchIndex is one index block per table (kBinarySearch).
	BinarySearchIndex = sstable.BinarySearchIndex
	// TwoLevelIndexSearch is a partitioned index (kTwoLevelIndexSearch).
	TwoLevelIndexSearch = sstable.TwoLevelIndexSearch
)

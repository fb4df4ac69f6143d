package shale

import (
	"fmt"
	"strings"
	"time"

	"github.com/shaledb/shale/vfs/latencyfs"
)

// metaOptionSet is one configuration the metamorphic test runs its
// operation sequence under: Options changes on top of testOptions, how every
// write and read is issued, and the file system.
type metaOptionSet struct {
	name string
	set  func(*Options)
	cfg  dbRunConfig
	// osFS runs on the operating system's file system in a temporary
	// directory instead of an in-memory one.
	osFS bool
}

// metamorphicSets are the option sets the metamorphic test compares: the
// same operations must give the same answers whatever the memtable and block
// sizes, compression, filters, cache (and whether index and filter blocks
// live in it), level shape, job count, sync, WAL, direct IO, readahead,
// async read engine or delete-aware compaction policy.
var metamorphicSets = []metaOptionSet{
	{name: "base", set: func(o *Options) {}},
	{name: "tiny-memtable-nocompression", set: func(o *Options) {
		o.WriteBufferSize = 4 << 10
		o.TargetFileSizeBase = 4 << 10
		o.MaxBytesForLevelBase = 16 << 10
		o.Compression = NoCompression
	}},
	{name: "large-memtable-zstd", set: func(o *Options) {
		o.WriteBufferSize = 1 << 20
		o.TargetFileSizeBase = 64 << 10
		o.Compression = ZstdCompression
	}},
	{name: "big-blocks-nobloom", set: func(o *Options) {
		o.BlockSize = 64 << 10
		o.BlockRestartInterval = 128
		o.BloomBitsPerKey = -1
	}},
	{name: "300-byte-blocks", set: func(o *Options) {
		o.BlockSize = 300 // not a power of two, and many blocks per table
	}},
	{name: "nocache-restart1-snappy", set: func(o *Options) {
		o.BlockCacheSize = -1
		o.BlockRestartInterval = 1
		o.Compression = SnappyCompression
	}},
	{name: "3-static-levels", set: func(o *Options) {
		o.NumLevels = 3
		o.DisableDynamicLevelBytes = true
	}},
	{name: "7-static-levels", set: func(o *Options) {
		o.NumLevels = 7
		o.DisableDynamicLevelBytes = true
		o.MaxBytesForLevelBase = 8 << 10
		o.MaxBytesForLevelMultiplier = 2
	}},
	{name: "max-open-files-4-nocache", set: func(o *Options) {
		// Many small tables read through 4 open files, every block from
		// the file: tables are evicted and opened again all the time, and
		// an evicted table an iterator still reads must stay readable.
		o.MaxOpenFiles = 4
		o.WriteBufferSize = 4 << 10
		o.TargetFileSizeBase = 4 << 10
		o.BlockCacheSize = -1
	}},
	{name: "cache-index-filter-small-cache", set: func(o *Options) {
		// Index and filter blocks live in a block cache that data blocks
		// keep pushing them out of; they are read again on demand.
		o.CacheIndexAndFilterBlocks = true
		o.BlockCacheSize = 64 << 10
	}},
	{name: "cache-index-filter-pin-l0-small-cache", set: func(o *Options) {
		// The same with L0 tables' index and filter pinned, and 4 open
		// files, so pinned readers are closed and opened again.
		o.CacheIndexAndFilterBlocks = true
		o.PinL0FilterAndIndexBlocksInCache = true
		o.BlockCacheSize = 64 << 10
		o.MaxOpenFiles = 4
	}},
	{name: "1-job", set: func(o *Options) { o.MaxBackgroundJobs = 1 }},
	{name: "6-jobs", set: func(o *Options) {
		o.MaxBackgroundJobs = 6
		o.MaxWriteBufferNumber = 4
	}},
	{name: "no-auto-compactions", set: func(o *Options) { o.DisableAutoCompactions = true }},
	{name: "sync-every-write", set: func(o *Options) {}, cfg: dbRunConfig{sync: syncAlways}},
	{name: "sync-never", set: func(o *Options) {}, cfg: dbRunConfig{sync: syncNever}},
	{name: "disable-wal", set: func(o *Options) {}, cfg: dbRunConfig{disableWAL: true}},
	{name: "wal-background-writes", set: func(o *Options) { o.WALBackgroundWrites = true }},
	{name: "paranoid-checks", set: func(o *Options) { o.ParanoidChecks = true }},
	{name: "direct-io", set: func(o *Options) {
		o.UseDirectReads = true
		o.UseDirectIOForFlushAndCompaction = true
	}},
	{name: "readahead-8k", set: func(o *Options) { o.MaxAutoReadaheadSize = 8 << 10 }},
	{name: "readahead-fixed-32k", set: func(o *Options) {}, cfg: dbRunConfig{readaheadSize: 32 << 10}},
	{name: "readahead-off", set: func(o *Options) { o.MaxAutoReadaheadSize = -1 }},
	{name: "async-io", set: func(o *Options) {}, cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true}},
	{name: "async-io-single-level", set: func(o *Options) {}, cfg: dbRunConfig{asyncIO: true}},
	{name: "async-io-latency-nocache", set: func(o *Options) {
		// Reads that take time, so async reads really are in flight while
		// the read path goes on.
		o.FS = latencyfs.New(o.FS, latencyfs.Options{ReadLatency: 20 * time.Microsecond, ReadJitter: 20 * time.Microsecond, Seed: 1})
		o.BlockCacheSize = -1
	}, cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true}},
	{name: "async-io-direct-readahead-32k", set: func(o *Options) {
		o.UseDirectReads = true
	}, cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true, readaheadSize: 32 << 10}},
	// Delete-aware compaction (deleteAwareVariants): a deletion
	// collector, a collector marking every table, aggressive
	// tombstone-density compactions, and the built-in policy off.
	{name: "deletion-collector", set: deleteAwareVariants[0].set},
	{name: "marks-every-table", set: deleteAwareVariants[1].set},
	{name: "tombstone-dense-aggressive", set: deleteAwareVariants[2].set},
	{name: "delete-aware-off", set: deleteAwareVariants[3].set},
	// Iterators seek past a run of versions of one key after this many of
	// them (MaxSequentialSkipInIterations): at the first (RocksDB's 0),
	// after 1 and after 2; every other set has the default, 8.
	{name: "max-skip-0", set: func(o *Options) { o.MaxSequentialSkipInIterations = -1 }},
	{name: "max-skip-1", set: func(o *Options) { o.MaxSequentialSkipInIterations = 1 }},
	{name: "max-skip-2-tiny-memtable", set: func(o *Options) {
		// Versions of a key spread over many small tables and levels.
		o.MaxSequentialSkipInIterations = 2
		o.WriteBufferSize = 4 << 10
		o.TargetFileSizeBase = 4 << 10
	}},
	// Iterators ask for the memtable's flush after a move steps over more
	// than 2 of its entries (MemtableOpScanFlushTrigger), or never.
	{name: "scan-flush-trigger-2", set: func(o *Options) { o.MemtableOpScanFlushTrigger = 2 }},
	{name: "scan-flush-off", set: func(o *Options) { o.MemtableOpScanFlushTrigger = -1 }},
	{name: "delete-persistence-fake-clock", set: func(o *Options) {
		// A clock that moves 1 ms at every reading against a 20 ms
		// threshold: memtables are flushed and tables compacted at their
		// deadlines all the time, timers firing as the DB works.
		o.DeletePersistenceThreshold = 20 * time.Millisecond
		o.Clock = newFakeClock(time.Millisecond)
	}},
	{name: "delete-persistence-real-clock-tiny", set: func(o *Options) {
		// A 30 ms threshold on the real clock over a deep tree of tiny
		// tables, whose many levels share it.
		o.DeletePersistenceThreshold = 30 * time.Millisecond
		o.WriteBufferSize = 4 << 10
		o.TargetFileSizeBase = 4 << 10
		o.MaxBytesForLevelBase = 16 << 10
		o.MaxBytesForLevelMultiplier = 2
	}},
	// TTL and periodic compactions firing all the time on a fake clock
	// (setAgedCompactionTestOptions).
	{name: "ttl-periodic-fake-clock", set: setAgedCompactionTestOptions},
	{name: "secondary-delete-key", set: func(o *Options) {
		// Attributes collected and recorded for every table; the
		// sequences of TestMetamorphic hold no secondary delete, so
		// nothing changes (TestMetamorphicSecondaryDelete runs them).
		o.SecondaryDeleteKey = modelSecondaryKey
	}},
	// SetOptions changes random mutable options before some operations.
	{name: "set-options-mid-run", set: func(o *Options) {}, cfg: dbRunConfig{setOptions: true, setOptionsSeed: 1}},
	// Key-value separation: values in blob files, read by every kind of
	// read, passed through compactions, their files deleted once no table
	// references them.
	{name: "blob-files-tiny", set: setBlobTinyTestOptions},
	// Values separated at commit: the WAL and memtables hold blob indexes.
	{name: "blob-write-separation-tiny", set: withBlobWriteSeparation(setBlobTinyTestOptions)},
	{name: "blob-write-separation-gc-sync-every-write", set: func(o *Options) {
		setBlobWriteSeparationTestOptions(o)
		setBlobGCTestOptions(o)
	}, cfg: dbRunConfig{sync: syncAlways}},
	{name: "blob-files-min-100-zstd-4-files-nocache", set: func(o *Options) {
		// Inline and separated values mixed; blob files and tables
		// evicted from 4 open files and read again, every value from disk.
		setBlobTestOptions(o)
		o.MinBlobSize = 100
		o.BlobCompression = ZstdCompression
		o.MaxOpenFiles = 4
		o.BlockCacheSize = -1
	}},
	{name: "blob-files-starting-level-1", set: func(o *Options) {
		// Flushes keep values inline; compactions into L1 and below
		// separate them.
		setBlobTestOptions(o)
		o.BlobFileStartingLevel = 1
	}},
	{name: "blob-files-async-io", set: setBlobTestOptions, cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true}},
	{name: "blob-files-paranoid-checks", set: func(o *Options) {
		setBlobTestOptions(o)
		o.ParanoidChecks = true
	}},
	{name: "blob-files-set-options-mid-run", set: setBlobTestOptions, cfg: dbRunConfig{setOptions: true, setOptionsSeed: 2}},
	// Blob files dated by their garbage and rewritten at their delete
	// persistence deadlines all the time.
	{name: "blob-files-delete-persistence-fake-clock", set: setBlobDeletePersistenceTestOptions},
	// Garbage collection: compactions relocate the values of the oldest
	// blob files (all of them), and tables referencing files half garbage
	// are compacted on purpose.
	{name: "blob-gc-cutoff-1-force-0.5", set: func(o *Options) {
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
	}},
	{name: "blob-gc-forced-only", set: func(o *Options) {
		// Outside the off-peak window: only compactions forced for files
		// a fifth garbage relocate.
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.BlobGarbageCollectionAgeCutoff = 0.5
		o.BlobGarbageCollectionForceThreshold = 0.2
		o.BlobGarbageCollectionOffPeakWindow = offPeakWindowAvoiding(time.Now())
	}},
	{name: "blob-gc-min-100-readahead-1k-set-options", set: func(o *Options) {
		// Relocated values of 100 bytes or more go to new blob files, and
		// after blob files are turned off (SetOptions mid-run) back inline.
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.MinBlobSize = 100
		o.BlobGarbageCollectionAgeCutoff = 0.5
		o.BlobCompactionReadaheadSize = 1024
	}, cfg: dbRunConfig{setOptions: true, setOptionsSeed: 3}},
	// A prefix extractor: filters of prefixes only (point lookups probe
	// the key's prefix), memtable prefix blooms. The sequences of
	// TestMetamorphic make no prefix-mode iterators, so every read is in
	// total order (TestMetamorphicPrefixSeek makes them).
	{name: "prefix-extractor-prefixes-only", set: func(o *Options) {
		o.PrefixExtractor = NewFixedPrefixTransform(modelPrefixLen)
		o.DisableWholeKeyFiltering = true
		o.MemtablePrefixBloomSizeRatio = 0.1
	}},
	{name: "osfs", set: func(o *Options) {}, osFS: true},
	{name: "osfs-mmap-writes", set: func(o *Options) {
		// WALs written through shared mappings, across windows and
		// reopens (the tiny memtable rotates them often).
		o.AllowMmapWrites = true
		o.WriteBufferSize = 4 << 10
	}, osFS: true},
	{name: "osfs-blob-files-direct", set: func(o *Options) {
		// Blob values read with direct IO (aligned reads of records).
		setBlobTestOptions(o)
		o.UseDirectReads = true
		o.UseDirectIOForFlushAndCompaction = true
	}, osFS: true},
	{name: "osfs-blob-gc-direct", set: func(o *Options) {
		// Relocation reads old blob files through direct-IO handles.
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.UseDirectIOForFlushAndCompaction = true
	}, osFS: true},
	{name: "mmap-reads-blob-files", set: func(o *Options) {
		// Tables and blob files read through MemFS mappings (views of
		// their bytes).
		setBlobTestOptions(o)
		o.AllowMmapReads = true
	}},
	{name: "osfs-mmap-reads-blob-gc", set: func(o *Options) {
		// Real mappings, of files that GC deletes while readers may hold
		// them mapped.
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.AllowMmapReads = true
	}, osFS: true},
	{name: "osfs-no-iouring-direct", set: func(o *Options) {
		o.DisableIOUring = true
		o.UseDirectReads = true
		o.UseDirectIOForFlushAndCompaction = true
	}, osFS: true},
	{name: "osfs-async-io-direct", set: func(o *Options) {
		o.UseDirectReads = true
	}, osFS: true, cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true}},

	// Whole-file checksums (issue 16, item 4): a custom factory records
	// its own function for every table and blob file (tiny memtables, so
	// flushes and compactions write many), and every reopen verifies them
	// all; the default factory is verified the same way.
	{name: "custom-file-checksums-blob-files", set: func(o *Options) {
		setBlobTestOptions(o)
		o.WriteBufferSize = 4 << 10
		o.TargetFileSizeBase = 4 << 10
		o.FileChecksumGenFactory = &testFileChecksumFactory{}
	}, cfg: dbRunConfig{verifyFileChecksums: true}},
	{name: "default-file-checksums-verified", set: func(o *Options) {},
		cfg: dbRunConfig{verifyFileChecksums: true}},
	{name: "osfs-file-checksums-direct", set: func(o *Options) {
		// Tables and blob files written with direct IO (aligned writes
		// of buffered bytes) on the OS file system: the checksum of the
		// bytes written must be that of the file.
		setBlobTestOptions(o)
		o.UseDirectIOForFlushAndCompaction = true
	}, osFS: true, cfg: dbRunConfig{verifyFileChecksums: true}},

	// Bounded blob GC relocation (issue 13, blob targets): tiny memtables
	// so that automatic compactions run; with a bound of one byte every
	// compaction relocates one old file and owes the others
	// (blob-gc-continued compactions); unbounded as RocksDB.
	{name: "blob-gc-relocation-bound-1", set: func(o *Options) {
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.WriteBufferSize = 4 << 10
		o.BlobGarbageCollectionMaxRelocationBytes = 1
	}},
	{name: "blob-gc-relocation-unbounded", set: func(o *Options) {
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.WriteBufferSize = 4 << 10
		o.BlobGarbageCollectionMaxRelocationBytes = -1
	}},
	// Partitioned index and filters (issue 14, item 6): tiny data blocks
	// and partitions (many partitions per table), with the partitions
	// evicted all the time from a small cache, the top level in the cache,
	// prefix-only filters, and the batched async MultiGet path.
	{name: "partitioned-index-filters-tiny", set: setPartitionedTestOptions},
	{name: "partitioned-index-filters-small-cache-cached-top", set: func(o *Options) {
		setPartitionedTestOptions(o)
		o.CacheIndexAndFilterBlocks = true
		o.BlockCacheSize = 16 << 10
	}},
	{name: "partitioned-index-only-nocache", set: func(o *Options) {
		setPartitionedTestOptions(o)
		o.PartitionFilters = false
		o.BlockCacheSize = -1
	}},
	{name: "partitioned-filters-prefixes-only", set: func(o *Options) {
		setPartitionedTestOptions(o)
		o.PrefixExtractor = NewFixedPrefixTransform(modelPrefixLen)
		o.DisableWholeKeyFiltering = true
	}},
	{name: "partitioned-index-filters-async-io", set: setPartitionedTestOptions,
		cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true}},
}

// setPartitionedTestOptions turns on partitioned index and filters with
// small blocks and partitions, so that tables have many partitions.
func setPartitionedTestOptions(o *Options) {
	o.IndexType = TwoLevelIndexSearch
	o.PartitionFilters = true
	o.MetadataBlockSize = 64
	o.BlockSize = 256
}

// describe lists what the set changes from testOptions, for failure reports.
func (s metaOptionSet) describe() string {
	base := testOptions(nil).EnsureDefaults()
	o := testOptions(nil)
	s.set(o)
	o.EnsureDefaults()
	baseFields := map[string]string{}
	for _, kv := range base.optionsFileFields() {
		baseFields[kv[0]] = kv[1]
	}
	var diffs []string
	for _, kv := range o.optionsFileFields() {
		if baseFields[kv[0]] != kv[1] {
			diffs = append(diffs, kv[0]+"="+kv[1])
		}
	}
	switch s.cfg.sync {
	case syncAlways:
		diffs = append(diffs, "WriteOptions.Sync=true on every write")
	case syncNever:
		diffs = append(diffs, "WriteOptions.Sync=false on every write")
	}
	if s.cfg.disableWAL {
		diffs = append(diffs, "WriteOptions.DisableWAL=true")
	}
	if s.cfg.asyncIO {
		diffs = append(diffs, fmt.Sprintf("ReadOptions.AsyncIO=true, MultiGetOneLevelAtATime=%v", !s.cfg.optimizeMultiGet))
	}
	if s.cfg.setOptions {
		diffs = append(diffs, fmt.Sprintf("SetOptions of random mutable options before some operations (seed %d)", s.cfg.setOptionsSeed))
	}
	if s.cfg.readaheadSize != 0 {
		diffs = append(diffs, fmt.Sprintf("ReadOptions.ReadaheadSize=%d", s.cfg.readaheadSize))
	}
	fs := "MemFS"
	if s.osFS {
		fs = "OS file system"
	}
	if len(diffs) == 0 {
		return fmt.Sprintf("%s on %s: testOptions unchanged", s.name, fs)
	}
	return fmt.Sprintf("%s on %s: testOptions with %s", s.name, fs, strings.Join(diffs, ", "))
}

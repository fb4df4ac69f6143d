package shale

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
)

// optionSpec is one option of the OPTIONS file, by its (RocksDB's) name:
// how the file writes and reads it, what it adds to Validate, and whether
// SetOptions may change it while the DB is open and what that takes. An
// option joins the OPTIONS file, ParseOptionsFile and SetOptions with one
// entry in optionSpecs (beside its Options field and its default in
// EnsureDefaults).
type optionSpec struct {
	name string
	// field is the Options field the option sets (Validate's errors name
	// fields; TestOptionSpecsCoverOptions checks it).
	field string
	// format renders the value as the OPTIONS file writes it; parse sets it
	// from such a value (the OPTIONS file's, or a SetOptions call's).
	format func(o *Options) string
	parse  func(o *Options, value string) error
	// validate, when set, checks what Validate's own checks leave out
	// (Open and SetOptions both run it, through Validate).
	validate func(o *Options) error
	// immutable, when not empty, is why the option cannot change while the
	// DB is open; SetOptions refuses it with this reason.
	immutable string
	// apply, when set, is what a change of the option needs beyond what
	// every SetOptions does (swap the options, replace the picker's, wake
	// stalled writers, schedule background work). It runs under d.mu after
	// the new options are published; prev are the old ones.
	apply func(d *DB, prev *Options)
}

// optionSpecs are the options of the OPTIONS file, in the file's order.
// Mutable options are read through DB.mutableOptions (set_options.go); an
// immutable one says why it cannot change.
var optionSpecs = []optionSpec{
	// Write path and memtables. A changed write_buffer_size applies to the
	// mutable memtable at once when lowered (the next write rotates it if
	// it holds that much) and from the next memtable when raised (the
	// current one was sized for the old value: it rotates at the smaller
	// of the two).
	intOption("write_buffer_size", "WriteBufferSize", func(o *Options) *int { return &o.WriteBufferSize }),
	intOption("max_write_buffer_number", "MaxWriteBufferNumber", func(o *Options) *int { return &o.MaxWriteBufferNumber }),
	// L0 triggers: the picker's, and the write stalls'.
	intOption("level0_file_num_compaction_trigger", "Level0FileNumCompactionTrigger", func(o *Options) *int { return &o.Level0FileNumCompactionTrigger }),
	intOption("level0_slowdown_writes_trigger", "Level0SlowdownWritesTrigger", func(o *Options) *int { return &o.Level0SlowdownWritesTrigger }),
	intOption("level0_stop_writes_trigger", "Level0StopWritesTrigger", func(o *Options) *int { return &o.Level0StopWritesTrigger }),
	// Level shape and compaction outputs: read by each pick.
	int64Option("target_file_size_base", "TargetFileSizeBase", func(o *Options) *int64 { return &o.TargetFileSizeBase }),
	withValidate(intOption("target_file_size_multiplier", "TargetFileSizeMultiplier", func(o *Options) *int { return &o.TargetFileSizeMultiplier }),
		func(o *Options) error {
			if o.TargetFileSizeMultiplier < 1 {
				return base.InvalidArgumentf("Options.TargetFileSizeMultiplier must be positive, got %d", o.TargetFileSizeMultiplier)
			}
			return nil
		}),
	int64Option("max_bytes_for_level_base", "MaxBytesForLevelBase", func(o *Options) *int64 { return &o.MaxBytesForLevelBase }),
	floatOption("max_bytes_for_level_multiplier", "MaxBytesForLevelMultiplier", func(o *Options) *float64 { return &o.MaxBytesForLevelMultiplier }),
	{
		name: "level_compaction_dynamic_level_bytes", field: "LevelCompactionDynamicLevelBytes",
		format: func(o *Options) string { return strconv.FormatBool(o.LevelCompactionDynamicLevelBytes) },
		parse: func(o *Options, v string) (err error) {
			o.LevelCompactionDynamicLevelBytes, err = strconv.ParseBool(v)
			o.DisableDynamicLevelBytes = !o.LevelCompactionDynamicLevelBytes
			return err
		},
		immutable: "it moves the base level, so data placed under one level shape would wait for compactions of the other; RocksDB takes it only at Open too",
	},
	immutable(intOption("num_levels", "NumLevels", func(o *Options) *int { return &o.NumLevels }),
		"the version, the MANIFEST and the picker are sized by it"),
	// Background work. Lowering max_background_jobs lets running
	// compactions finish and starts no new one past the new budget.
	intOption("max_background_jobs", "MaxBackgroundJobs", func(o *Options) *int { return &o.MaxBackgroundJobs }),
	// Tables written from now on; each table records its own block size,
	// restart interval, filter and compression, so readers need no option.
	intOption("block_size", "BlockSize", func(o *Options) *int { return &o.BlockSize }),
	intOption("block_restart_interval", "BlockRestartInterval", func(o *Options) *int { return &o.BlockRestartInterval }),
	intOption("bloom_bits_per_key", "BloomBitsPerKey", func(o *Options) *int { return &o.BloomBitsPerKey }),
	// Partitioned index and filters: chosen at Open (PartitionFilters
	// depends on IndexType, which SetOptions, one option at a time, could
	// not keep consistent); each table records its own index type, so
	// reopening with other values reads every table.
	{
		name: "index_type", field: "IndexType",
		format: func(o *Options) string { return o.IndexType.String() },
		parse: func(o *Options, v string) error {
			switch v {
			case "kBinarySearch", "0":
				o.IndexType = BinarySearchIndex
			case "kTwoLevelIndexSearch", "2":
				o.IndexType = TwoLevelIndexSearch
			default:
				return fmt.Errorf("index_type %q: shale has kBinarySearch and kTwoLevelIndexSearch", v)
			}
			return nil
		},
		immutable: "chosen at Open; each table records its own index",
	},
	immutable(boolOption("partition_filters", "PartitionFilters", func(o *Options) *bool { return &o.PartitionFilters }),
		"chosen at Open with index_type"),
	immutable(intOption("metadata_block_size", "MetadataBlockSize", func(o *Options) *int { return &o.MetadataBlockSize }),
		"chosen at Open with index_type"),
	// Table readers and the caches: fixed for each reader when it opens.
	immutable(int64Option("block_cache_size", "BlockCacheSize", func(o *Options) *int64 { return &o.BlockCacheSize }),
		"the block cache is made at Open"),
	immutable(intOption("max_open_files", "MaxOpenFiles", func(o *Options) *int { return &o.MaxOpenFiles }),
		"the file cache is sized at Open"),
	immutable(boolOption("cache_index_and_filter_blocks", "CacheIndexAndFilterBlocks", func(o *Options) *bool { return &o.CacheIndexAndFilterBlocks }),
		"each open table reader decided it when it opened"),
	immutable(boolOption("pin_l0_filter_and_index_blocks_in_cache", "PinL0FilterAndIndexBlocksInCache", func(o *Options) *bool { return &o.PinL0FilterAndIndexBlocksInCache }),
		"each open table reader decided it when it opened"),
	{
		name: "compression", field: "Compression",
		format: func(o *Options) string { return o.Compression.String() },
		parse: func(o *Options, v string) (err error) {
			if c, ok := rocksDBCompressions[v]; ok {
				o.Compression = c
				return nil
			}
			o.Compression, err = sstable.ParseCompression(v)
			return err
		},
	},
	{
		name: "comparator", field: "Comparer",
		format: func(o *Options) string { return o.Comparer.Name },
		parse: func(o *Options, v string) error {
			if v != DefaultComparer.Name {
				return fmt.Errorf("comparer %q must be supplied by the program", v)
			}
			return nil
		},
		immutable: "it orders every key in every file",
	},
	{
		name: "merge_operator", field: "MergeOperator",
		format: func(o *Options) string {
			if o.MergeOperator == nil {
				return "nullptr" // RocksDB's word for none
			}
			return o.MergeOperator.Name()
		},
		parse: func(o *Options, v string) error {
			switch {
			case v == "nullptr" || v == "":
				o.MergeOperator = nil
			case o.MergeOperator != nil && o.MergeOperator.Name() == v:
			case v == UInt64AddOperator.Name():
				o.MergeOperator = UInt64AddOperator
			}
			// Any other name is an operator the program supplies: the
			// field stays as it is (the MANIFEST checks the name at Open).
			return nil
		},
		immutable: "the operands already written were written under it",
	},
	namedObjectOption("compaction_filter", "CompactionFilter", func(o *Options) interface{ Name() string } {
		if o.CompactionFilter == nil {
			return nil
		}
		return o.CompactionFilter
	}),
	namedObjectOption("compaction_filter_factory", "CompactionFilterFactory", func(o *Options) interface{ Name() string } {
		if o.CompactionFilterFactory == nil {
			return nil
		}
		return o.CompactionFilterFactory
	}),
	{
		name: "file_checksum_gen_factory", field: "FileChecksumGenFactory",
		format: func(o *Options) string { return fileChecksumFactory(o).Name() },
		parse: func(o *Options, v string) error {
			switch {
			case v == "nullptr":
				o.FileChecksumGenFactory = NoFileChecksums
			case v == fileChecksumCrc32cFactoryName || v == "":
				o.FileChecksumGenFactory = nil
			}
			// Any other name is a factory the program supplies: the field
			// stays as it is.
			return nil
		},
		immutable: "it is an object the program supplies at Open",
	},
	boolOption("disable_auto_compactions", "DisableAutoCompactions", func(o *Options) *bool { return &o.DisableAutoCompactions }),
	// The database's files, and Open's work.
	immutable(int64Option("max_manifest_file_size", "MaxManifestFileSize", func(o *Options) *int64 { return &o.MaxManifestFileSize }),
		"the version set takes it at Open"),
	{
		name: "wal_recovery_mode", field: "WALRecoveryMode",
		format: func(o *Options) string { return strconv.Itoa(int(o.WALRecoveryMode)) },
		parse: func(o *Options, v string) error {
			n, err := parseOptionInt(v)
			o.WALRecoveryMode = WALRecoveryMode(n)
			return err
		},
		immutable: "it is used only by Open's WAL replay",
	},
	immutable(boolOption("paranoid_checks", "ParanoidChecks", func(o *Options) *bool { return &o.ParanoidChecks }),
		"Open's checks depend on it; RocksDB takes it only at Open too"),
	immutable(boolOption("use_direct_reads", "UseDirectReads", func(o *Options) *bool { return &o.UseDirectReads }),
		"files are opened with or without direct IO, which Open probes"),
	immutable(boolOption("use_direct_io_for_flush_and_compaction", "UseDirectIOForFlushAndCompaction", func(o *Options) *bool { return &o.UseDirectIOForFlushAndCompaction }),
		"files are opened with or without direct IO, which Open probes"),
	immutable(boolOption("allow_mmap_reads", "AllowMmapReads", func(o *Options) *bool { return &o.AllowMmapReads }),
		"files are mapped, or not, when the file cache opens them"),
	immutable(int64Option("max_auto_readahead_size", "MaxAutoReadaheadSize", func(o *Options) *int64 { return &o.MaxAutoReadaheadSize }),
		"each open table reader took it when it opened"),
	int64Option("bytes_per_sync", "BytesPerSync", func(o *Options) *int64 { return &o.BytesPerSync }),
	immutable(boolOption("disable_io_uring", "DisableIOUring", func(o *Options) *bool { return &o.DisableIOUring }),
		"the async reader is made at Open"),
	immutable(boolOption("io_uring_sqpoll", "IOUringSQPoll", func(o *Options) *bool { return &o.IOUringSQPoll }),
		"the async reader is made at Open"),
	immutable(boolOption("wal_background_writes", "WALBackgroundWrites", func(o *Options) *bool { return &o.WALBackgroundWrites }),
		"it decides what a write without Sync promises, for the life of the WAL writer"),
	immutable(boolOption("allow_mmap_writes", "AllowMmapWrites", func(o *Options) *bool { return &o.AllowMmapWrites }),
		"each WAL writer takes it when it is made"),
	// Read by Close (after any SetOptions under way has returned).
	boolOption("avoid_flush_during_shutdown", "AvoidFlushDuringShutdown", func(o *Options) *bool { return &o.AvoidFlushDuringShutdown }),
	// Delete-aware compaction: the counts of tables written from now on,
	// and every later pick.
	floatOption("tombstone_dense_compaction_threshold", "TombstoneDenseCompactionThreshold", func(o *Options) *float64 { return &o.TombstoneDenseCompactionThreshold }),
	intOption("num_deletions_threshold", "NumDeletionsThreshold", func(o *Options) *int { return &o.NumDeletionsThreshold }),
	floatOption("deletion_size_ratio_threshold", "DeletionSizeRatioThreshold", func(o *Options) *float64 { return &o.DeletionSizeRatioThreshold }),
	boolOption("disable_delete_aware_compaction", "DisableDeleteAwareCompaction", func(o *Options) *bool { return &o.DisableDeleteAwareCompaction }),
	{
		name: "table_properties_collectors", field: "TablePropertiesCollectorFactories",
		format: func(o *Options) string { return collectorNames(o.TablePropertiesCollectorFactories) },
		// Names only: a factory is code the program supplies.
		parse:     func(*Options, string) error { return nil },
		immutable: "collector factories are code the program passes to Open",
	},
	// Iterators created from now on. RocksDB's 0 (shale's 0 would mean the
	// default) is written and read as 0: seek at once, and no scan flush.
	{
		name: "max_sequential_skip_in_iterations", field: "MaxSequentialSkipInIterations",
		format: func(o *Options) string { return strconv.Itoa(o.maxSequentialSkip()) },
		parse:  nonPositiveOff(func(o *Options) *int { return &o.MaxSequentialSkipInIterations }),
	},
	{
		name: "memtable_op_scan_flush_trigger", field: "MemtableOpScanFlushTrigger",
		format: func(o *Options) string { return strconv.Itoa(max(o.MemtableOpScanFlushTrigger, 0)) },
		parse:  nonPositiveOff(func(o *Options) *int { return &o.MemtableOpScanFlushTrigger }),
	},
	// Delete persistence: the deadlines of every table and memtable are
	// computed from it when needed, so a change moves them all; tombstones
	// are dated whether it is on or not. Turning it on arms the timer (the
	// scheduling pass of every SetOptions does), turning it off stops it.
	{
		name: "delete_persistence_threshold", field: "DeletePersistenceThreshold",
		format: func(o *Options) string { return o.DeletePersistenceThreshold.String() },
		parse: func(o *Options, v string) (err error) {
			o.DeletePersistenceThreshold, err = time.ParseDuration(v)
			return err
		},
		apply: func(d *DB, _ *Options) {
			if d.mutableOptions().DeletePersistenceThreshold <= 0 {
				d.stopDeadlineTimerLocked()
			}
		},
	},
	// TTL and periodic compactions: read by each pick.
	uint64Option("ttl", "TTL", func(o *Options) *uint64 { return &o.TTL }),
	uint64Option("periodic_compaction_seconds", "PeriodicCompactionSeconds", func(o *Options) *uint64 { return &o.PeriodicCompactionSeconds }),
	// Key-value separation: each flush and compaction reads these when it
	// starts, as in RocksDB, where all but blob_cache are mutable.
	boolOption("enable_blob_files", "EnableBlobFiles", func(o *Options) *bool { return &o.EnableBlobFiles }),
	boolOption("enable_blob_write_separation", "EnableBlobWriteSeparation", func(o *Options) *bool { return &o.EnableBlobWriteSeparation }),
	int64Option("min_blob_size", "MinBlobSize", func(o *Options) *int64 { return &o.MinBlobSize }),
	int64Option("blob_file_size", "BlobFileSize", func(o *Options) *int64 { return &o.BlobFileSize }),
	{
		name: "blob_compression_type", field: "BlobCompression",
		format: func(o *Options) string { return o.BlobCompression.String() },
		parse: func(o *Options, v string) (err error) {
			if c, ok := rocksDBCompressions[v]; ok {
				o.BlobCompression = c
				return nil
			}
			o.BlobCompression, err = sstable.ParseCompression(v)
			return err
		},
	},
	boolOption("enable_blob_garbage_collection", "EnableBlobGarbageCollection", func(o *Options) *bool { return &o.EnableBlobGarbageCollection }),
	floatOption("blob_garbage_collection_age_cutoff", "BlobGarbageCollectionAgeCutoff", func(o *Options) *float64 { return &o.BlobGarbageCollectionAgeCutoff }),
	floatOption("blob_garbage_collection_force_threshold", "BlobGarbageCollectionForceThreshold", func(o *Options) *float64 { return &o.BlobGarbageCollectionForceThreshold }),
	{
		name: "blob_garbage_collection_off_peak_window", field: "BlobGarbageCollectionOffPeakWindow",
		format: func(o *Options) string { return o.BlobGarbageCollectionOffPeakWindow },
		parse: func(o *Options, v string) error {
			o.BlobGarbageCollectionOffPeakWindow = v
			return nil
		},
		validate: func(o *Options) error {
			if _, err := parseOffPeakWindow(o.BlobGarbageCollectionOffPeakWindow); err != nil {
				return base.InvalidArgumentf("Options.BlobGarbageCollectionOffPeakWindow: %v", err)
			}
			return nil
		},
	},
	int64Option("blob_garbage_collection_max_relocation_bytes", "BlobGarbageCollectionMaxRelocationBytes", func(o *Options) *int64 { return &o.BlobGarbageCollectionMaxRelocationBytes }),
	int64Option("blob_compaction_readahead_size", "BlobCompactionReadaheadSize", func(o *Options) *int64 { return &o.BlobCompactionReadaheadSize }),
	intOption("blob_file_starting_level", "BlobFileStartingLevel", func(o *Options) *int { return &o.BlobFileStartingLevel }),
	immutable(int64Option("blob_cache", "BlobCacheSize", func(o *Options) *int64 { return &o.BlobCacheSize }),
		"the blob cache is made at Open, as the block cache is"),
	boolOption("prepopulate_blob_cache", "PrepopulateBlobCache", func(o *Options) *bool { return &o.PrepopulateBlobCache }),
	// Prefix seeks: each table written from now on records the extractor
	// its filter holds prefixes of, each memtable made from now on and
	// each iterator keeps the values it was made with, so a change never
	// mixes two extractors' prefixes.
	{
		name: "prefix_extractor", field: "PrefixExtractor",
		format: func(o *Options) string { return prefixExtractorName(o.PrefixExtractor) },
		parse: func(o *Options, v string) error {
			t, known, err := base.ParseSliceTransform(v)
			if !known {
				return fmt.Errorf("prefix extractor %q must be supplied by the program (shale knows rocksdb.FixedPrefix.<n> and rocksdb.CappedPrefix.<n>)", v)
			}
			o.PrefixExtractor = t
			return err
		},
	},
	{
		name: "whole_key_filtering", field: "WholeKeyFiltering",
		format: func(o *Options) string { return strconv.FormatBool(o.WholeKeyFiltering) },
		parse: func(o *Options, v string) (err error) {
			o.WholeKeyFiltering, err = strconv.ParseBool(v)
			o.DisableWholeKeyFiltering = !o.WholeKeyFiltering
			return err
		},
	},
	floatOption("memtable_prefix_bloom_size_ratio", "MemtablePrefixBloomSizeRatio", func(o *Options) *float64 { return &o.MemtablePrefixBloomSizeRatio }),
}

// Options fields the OPTIONS file does not record have no name, so
// SetOptions cannot change them: CreateIfMissing and ErrorIfExists (Open
// only), FS, Logger, Statistics, Lock, Clock, SecondaryDeleteKey,
// EventListener and RateLimiter (objects and functions; a rate limiter's
// rate changes through its SetBytesPerSecond), DisableDynamicLevelBytes (level_compaction_dynamic_level_
// bytes) and DisableWholeKeyFiltering (whole_key_filtering), and
// KeepLogFileNum and MaxLogFileSize (the LOG file, opened at Open).

// optionSpecsByName finds optionSpecs' entries by name.
var optionSpecsByName = func() map[string]*optionSpec {
	m := make(map[string]*optionSpec, len(optionSpecs))
	for i := range optionSpecs {
		m[optionSpecs[i].name] = &optionSpecs[i]
	}
	return m
}()

// withValidate returns s with its check for Validate.
func withValidate(s optionSpec, validate func(*Options) error) optionSpec {
	s.validate = validate
	return s
}

// immutable returns s marked immutable for reason.
func immutable(s optionSpec, reason string) optionSpec {
	s.immutable = reason
	return s
}

func intOption(name, field string, p func(*Options) *int) optionSpec {
	return optionSpec{name: name, field: field,
		format: func(o *Options) string { return strconv.Itoa(*p(o)) },
		parse: func(o *Options, v string) error {
			n, err := parseOptionInt(v)
			if err == nil && (n > math.MaxInt || n < math.MinInt) {
				err = fmt.Errorf("%s does not fit in an int", v)
			}
			*p(o) = int(n)
			return err
		}}
}

func int64Option(name, field string, p func(*Options) *int64) optionSpec {
	return optionSpec{name: name, field: field,
		format: func(o *Options) string { return strconv.FormatInt(*p(o), 10) },
		parse: func(o *Options, v string) (err error) {
			*p(o), err = parseOptionInt(v)
			return err
		}}
}

func uint64Option(name, field string, p func(*Options) *uint64) optionSpec {
	return optionSpec{name: name, field: field,
		format: func(o *Options) string { return strconv.FormatUint(*p(o), 10) },
		parse: func(o *Options, v string) (err error) {
			*p(o), err = strconv.ParseUint(v, 10, 64)
			return err
		}}
}

func boolOption(name, field string, p func(*Options) *bool) optionSpec {
	return optionSpec{name: name, field: field,
		format: func(o *Options) string { return strconv.FormatBool(*p(o)) },
		parse: func(o *Options, v string) (err error) {
			*p(o), err = strconv.ParseBool(v)
			return err
		}}
}

func floatOption(name, field string, p func(*Options) *float64) optionSpec {
	return optionSpec{name: name, field: field,
		format: func(o *Options) string { return strconv.FormatFloat(*p(o), 'g', -1, 64) },
		parse: func(o *Options, v string) (err error) {
			*p(o), err = strconv.ParseFloat(v, 64)
			return err
		}}
}

// nonPositiveOff parses an int option whose 0 (RocksDB's "off" or "at once")
// is shale's -1, since shale's 0 means the default.
func nonPositiveOff(p func(*Options) *int) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := parseOptionInt(v)
		if err == nil && n > math.MaxInt {
			err = fmt.Errorf("%s does not fit in an int", v)
		}
		*p(o) = int(n)
		if err == nil && n <= 0 {
			*p(o) = -1
		}
		return err
	}
}

// rocksDBCompressions are RocksDB's names of the compressions shale has, as
// its OPTIONS files and SetOptions calls spell them.
var rocksDBCompressions = map[string]Compression{
	"kNoCompression":     NoCompression,
	"kSnappyCompression": SnappyCompression,
	"kZSTD":              ZstdCompression,
}

// parseOptionInt parses an integer option value, with RocksDB's size
// suffixes: k, m, g or t (either case) multiply by 2^10, 2^20, 2^30, 2^40.
func parseOptionInt(v string) (int64, error) {
	shift := 0
	if n := len(v); n > 1 {
		switch v[n-1] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		case 't', 'T':
			shift = 40
		}
		if shift > 0 {
			v = v[:n-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || shift == 0 {
		return n, err
	}
	if n > math.MaxInt64>>shift || n < math.MinInt64>>shift {
		return 0, fmt.Errorf("%s with its size suffix overflows 64 bits", v)
	}
	return n << shift, nil
}

// namedObjectOption records the name of an object the program supplies
// (a compaction filter or its factory): written as RocksDB writes it, and
// read back without changing the field, which a name cannot rebuild.
func namedObjectOption(name, field string, get func(*Options) interface{ Name() string }) optionSpec {
	return optionSpec{
		name: name, field: field,
		format: func(o *Options) string {
			if obj := get(o); obj != nil {
				return obj.Name()
			}
			return "nullptr"
		},
		parse:     func(*Options, string) error { return nil },
		immutable: "it is an object the program supplies at Open",
	}
}

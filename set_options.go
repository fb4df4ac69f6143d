package shale

import (
	"slices"
	"strings"

	"github.com/shaledb/shale/internal/base"
)

// Options that change while the DB is open (DB.SetOptions, RocksDB's
// DB::SetOptions and DB::SetDBOptions in one call).
//
// The DB keeps two views of its options. d.opts is what Open settled on, and
// is read only for the options below marked immutable. The mutable ones are
// read through d.mutableOptions(): one atomic load of a pointer to a whole
// Options that is never modified once published. SetOptions copies it,
// changes the copy, validates it as Open does, writes the OPTIONS file from
// it, and publishes it under d.mu. A reader that loads the pointer once sees
// a consistent set of values, and the write path (makeRoomLocked) and
// iterator creation pay one atomic load; Get and MultiGet read no mutable
// option. Whatever reads a mutable option keeps the pointer it loaded for
// the rest of its work: a flush or compaction already running finishes with
// the values it started with.

// optionSpec is one entry of optionSpecs: what SetOptions may do with one
// option of the OPTIONS file.
type optionSpec struct {
	// field is the Options field the option sets (named in errors of
	// Validate, which name fields).
	field string
	// immutable, when not empty, is why the option cannot change while the
	// DB is open; SetOptions refuses it with this reason.
	immutable string
	// apply, when set, is what the option needs done beyond the swap of
	// the options and the common work of every call (the picker's options
	// replaced, stalled writers woken, background work scheduled). It runs
	// under d.mu after the new options are published; prev are the old.
	apply func(d *DB, prev *Options)
}

// optionSpecs is the registry of every option the OPTIONS file records, by
// the file's (RocksDB's) name: parsing is setOptionsFileField's, the same as
// ParseOptionsFile's; validation is Options.Validate, the same as Open's; and
// the entry says whether SetOptions may change the option and what applying
// it takes. TestOptionSpecsCoverOptionsFile checks that it and the OPTIONS
// file name the same options.
//
// The blob options of issue 13 join here with one entry each when their
// Options fields and OPTIONS lines exist: enable_blob_files, min_blob_size,
// blob_file_size, blob_compression_type, enable_blob_garbage_collection,
// blob_garbage_collection_age_cutoff, blob_garbage_collection_force_threshold,
// blob_compaction_readahead_size, blob_file_starting_level (all mutable in
// RocksDB: flushes and compactions read them per job) and
// prepopulate_blob_cache (mutable too).
var optionSpecs = map[string]optionSpec{
	// Write path and memtables. A changed write_buffer_size applies to the
	// mutable memtable at once when lowered (the next write rotates it if
	// it holds that much) and from the next memtable when raised (the
	// current one was sized for the old value: it rotates at the smaller
	// of the two).
	"write_buffer_size":       {field: "WriteBufferSize"},
	"max_write_buffer_number": {field: "MaxWriteBufferNumber"},

	// L0 triggers: the picker's and the write stalls'.
	"level0_file_num_compaction_trigger": {field: "Level0FileNumCompactionTrigger"},
	"level0_slowdown_writes_trigger":     {field: "Level0SlowdownWritesTrigger"},
	"level0_stop_writes_trigger":         {field: "Level0StopWritesTrigger"},

	// Level shape and compaction outputs: read by each pick.
	"target_file_size_base":          {field: "TargetFileSizeBase"},
	"target_file_size_multiplier":    {field: "TargetFileSizeMultiplier"},
	"max_bytes_for_level_base":       {field: "MaxBytesForLevelBase"},
	"max_bytes_for_level_multiplier": {field: "MaxBytesForLevelMultiplier"},
	"level_compaction_dynamic_level_bytes": {field: "LevelCompactionDynamicLevelBytes",
		immutable: "it moves the base level, so data placed under one level shape would wait for compactions of the other; RocksDB takes it only at Open too"},
	"num_levels": {field: "NumLevels", immutable: "the version, the MANIFEST and the picker are sized by it"},

	// Background work. Lowering max_background_jobs lets running
	// compactions finish and starts no new one past the new budget.
	"max_background_jobs":      {field: "MaxBackgroundJobs"},
	"disable_auto_compactions": {field: "DisableAutoCompactions"},

	// Tables written from now on; each table records its own block size,
	// restart interval, filter and compression, so readers need no option.
	"block_size":             {field: "BlockSize"},
	"block_restart_interval": {field: "BlockRestartInterval"},
	"bloom_bits_per_key":     {field: "BloomBitsPerKey"},
	"compression":            {field: "Compression"},
	"bytes_per_sync":         {field: "BytesPerSync"},

	// Table readers and the caches: fixed for each reader when it opens.
	"block_cache_size": {field: "BlockCacheSize", immutable: "the block cache is made at Open"},
	"max_open_files":   {field: "MaxOpenFiles", immutable: "the file cache is sized at Open"},
	"cache_index_and_filter_blocks": {field: "CacheIndexAndFilterBlocks",
		immutable: "each open table reader decided it when it opened"},
	"pin_l0_filter_and_index_blocks_in_cache": {field: "PinL0FilterAndIndexBlocksInCache",
		immutable: "each open table reader decided it when it opened"},
	"max_auto_readahead_size": {field: "MaxAutoReadaheadSize",
		immutable: "each open table reader took it when it opened"},

	// The database's identity and files.
	"comparator":             {field: "Comparer", immutable: "it orders every key in every file"},
	"max_manifest_file_size": {field: "MaxManifestFileSize", immutable: "the version set takes it at Open"},
	"wal_recovery_mode":      {field: "WALRecoveryMode", immutable: "it is used only by Open's WAL replay"},
	"paranoid_checks":        {field: "ParanoidChecks", immutable: "Open's checks depend on it; RocksDB takes it only at Open too"},
	"use_direct_reads": {field: "UseDirectReads",
		immutable: "files are opened with or without direct IO, which Open probes"},
	"use_direct_io_for_flush_and_compaction": {field: "UseDirectIOForFlushAndCompaction",
		immutable: "files are opened with or without direct IO, which Open probes"},
	"disable_io_uring": {field: "DisableIOUring", immutable: "the async reader is made at Open"},
	"io_uring_sqpoll":  {field: "IOUringSQPoll", immutable: "the async reader is made at Open"},
	"wal_background_writes": {field: "WALBackgroundWrites",
		immutable: "it decides what a write without Sync promises, for the life of the WAL writer"},
	// Read by Close (after any SetOptions under way has returned).
	"avoid_flush_during_shutdown": {field: "AvoidFlushDuringShutdown"},
	"table_properties_collectors": {field: "TablePropertiesCollectorFactories",
		immutable: "collector factories are code the program passes to Open"},

	// Delete-aware compaction: the counts of tables written from now on,
	// and every later pick.
	"tombstone_dense_compaction_threshold": {field: "TombstoneDenseCompactionThreshold"},
	"num_deletions_threshold":              {field: "NumDeletionsThreshold"},
	"deletion_size_ratio_threshold":        {field: "DeletionSizeRatioThreshold"},
	"disable_delete_aware_compaction":      {field: "DisableDeleteAwareCompaction"},

	// Iterators created from now on.
	"max_sequential_skip_in_iterations": {field: "MaxSequentialSkipInIterations"},
	"memtable_op_scan_flush_trigger":    {field: "MemtableOpScanFlushTrigger"},

	// Delete persistence: the deadlines of every table and memtable are
	// computed from it when needed, so a change moves them all; tombstones
	// are dated whether it is on or not. Turning it on arms the timer (the
	// scheduling pass of every call does), turning it off stops it.
	"delete_persistence_threshold": {field: "DeletePersistenceThreshold",
		apply: func(d *DB, _ *Options) {
			if d.mutableOptions().DeletePersistenceThreshold <= 0 {
				d.stopDeadlineTimerLocked()
			}
		}},
}

// Options fields the OPTIONS file does not record have no name, so
// SetOptions cannot change them: CreateIfMissing and ErrorIfExists (Open
// only), FS, Logger, Statistics, Lock, Clock and SecondaryDeleteKey (objects
// and functions), DisableDynamicLevelBytes (level_compaction_dynamic_level_
// bytes), and KeepLogFileNum and MaxLogFileSize (the LOG file, opened at
// Open).

// mutableOptions returns the current options: read the options SetOptions
// may change only through it (see above). The result must not be modified.
func (d *DB) mutableOptions() *Options { return d.liveOpts.Load() }

// GetOptions returns the options the DB runs with (RocksDB's GetOptions):
// those given to Open with their defaults filled in, and the changes of
// SetOptions since.
func (d *DB) GetOptions() Options {
	o := *d.mutableOptions()
	o.TablePropertiesCollectorFactories = slices.Clone(o.TablePropertiesCollectorFactories)
	return o
}

// SetOptions changes options of the open DB by their RocksDB names, as
// RocksDB's DB::SetOptions (and SetDBOptions), e.g.
// {"disable_auto_compactions": "true"} for a bulk load. It changes all of
// them or none: an unknown name, an option that cannot change while open
// (the error says why), or a value that does not parse or that Open would
// refuse returns an error naming the option and changes nothing. Values are
// read as ParseOptionsFile reads them: a zero value takes the option's
// default, as a zero Options field does, except that 0 turns
// memtable_op_scan_flush_trigger off and makes
// max_sequential_skip_in_iterations seek at once, as in RocksDB. On success
// the new values apply to the
// flushes, compactions, writes and iterators that start afterwards (the
// running ones finish with the old ones; write_buffer_size applies to the
// mutable memtable when lowered and from the next memtable when raised;
// re-enabling auto compactions schedules the work that waits), and the
// OPTIONS file is rewritten (temp file, sync, rename, directory sync) before
// SetOptions returns. If writing it fails, SetOptions returns the error and
// the DB keeps running with its old options. Open does not read the OPTIONS
// file: a program that wants the changes after a reopen opens with
// GetOptions (or ParseOptionsFile of the newest OPTIONS file), as with
// RocksDB's LoadLatestOptions.
func (d *DB) SetOptions(opts map[string]string) error {
	if d.readOnly {
		return errOpenedReadOnly
	}
	if len(opts) == 0 {
		return base.InvalidArgumentf("shale: SetOptions: no option given")
	}
	names := make([]string, 0, len(opts))
	for name := range opts {
		names = append(names, name)
	}
	slices.Sort(names)

	d.setOptionsMu.Lock()
	defer d.setOptionsMu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	prev := d.mutableOptions()
	next := *prev
	for _, name := range names {
		spec, ok := optionSpecs[name]
		value := strings.TrimSpace(opts[name])
		switch {
		case !ok:
			return base.InvalidArgumentf("shale: SetOptions: unknown option %q", name)
		case spec.immutable != "":
			return base.InvalidArgumentf("shale: SetOptions: %s cannot change while the DB is open: %s", name, spec.immutable)
		}
		if err := next.setOptionsFileField(name, value); err != nil {
			return base.InvalidArgumentf("shale: SetOptions: %s=%s: %s", name, value, strings.TrimPrefix(err.Error(), "shale: "))
		}
	}
	next.EnsureDefaults()
	if err := next.Validate(); err != nil {
		return base.InvalidArgumentf("shale: SetOptions: %s: %v", blame(names, opts, err), err)
	}

	num, err := d.writeOptionsFile(&next)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.liveOpts.Store(&next)
	d.picker.SetOptions(d.compactOptions())
	for _, name := range names {
		if apply := optionSpecs[name].apply; apply != nil {
			apply(d, prev)
		}
	}
	// Writers stalled on a bound that moved look again; new work is
	// scheduled for the new triggers (and auto compactions turned on).
	d.mu.compact.cond.Broadcast()
	d.maybeScheduleLocked()
	d.mu.Unlock()

	old := d.optionsFileNum
	d.optionsFileNum = num
	d.removeOptionsFile(old)
	attrs := make([]any, 0, 2*len(names))
	for _, name := range names {
		attrs = append(attrs, name, strings.TrimSpace(opts[name]))
	}
	d.logger.Info("options changed", attrs...)
	return nil
}

// blame names the options of a SetOptions call that a Validate error is
// about: those whose field it names, else every option of the call.
func blame(names []string, opts map[string]string, err error) string {
	var all, named []string
	for _, name := range names {
		kv := name + "=" + strings.TrimSpace(opts[name])
		all = append(all, kv)
		if strings.Contains(err.Error(), "Options."+optionSpecs[name].field+" ") {
			named = append(named, kv)
		}
	}
	if len(named) == 0 {
		named = all
	}
	return strings.Join(named, ", ")
}

// removeOptionsFile removes the OPTIONS file a SetOptions replaced; a failure
// only leaves it for the sweep of the next Open.
func (d *DB) removeOptionsFile(num base.FileNum) {
	if num == 0 {
		return
	}
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeOptions, num))
	if err := d.fs.Remove(name); err != nil {
		d.logger.Warn("removing the replaced OPTIONS file failed", "file", name, "err", err)
	}
}

// maxCompactions bounds concurrent compactions, from MaxBackgroundJobs as
// RocksDB splits it; one flush may run besides.
func (d *DB) maxCompactions() int {
	n := d.mutableOptions().MaxBackgroundJobs
	return max(1, n-max(1, n/4))
}

package prometheus

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shaledb/shale"
)

// scalarSpec is one metric of DB.Metrics with no label: field is the path of
// the Metrics field it reports (TestCollectorCoversEveryMetricsField checks
// that value reads that field and that every field has a metric).
type scalarSpec struct {
	name, help, field string
	typ               prometheus.ValueType
	value             func(m *shale.Metrics) float64
}

// levelSpec is one per-level metric (label level): field is the path of the
// LevelMetrics field it reports.
type levelSpec struct {
	name, help, field string
	value             func(l *shale.LevelMetrics) float64
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// levelSpecs are the per-level gauges.
var levelSpecs = []levelSpec{
	{"shale_level_files", "Tables in the level.", "NumFiles", func(l *shale.LevelMetrics) float64 { return float64(l.NumFiles) }},
	{"shale_level_size_bytes", "Bytes of the level's tables.", "Size", func(l *shale.LevelMetrics) float64 { return float64(l.Size) }},
	{"shale_level_compaction_score", "Compaction score of the level: 1 or more means it needs compaction.", "Score", func(l *shale.LevelMetrics) float64 { return l.Score }},
	{"shale_level_entries", "Entries in the level's tables.", "NumEntries", func(l *shale.LevelMetrics) float64 { return float64(l.NumEntries) }},
	{"shale_level_deletions", "Point tombstones in the level's tables.", "NumDeletions", func(l *shale.LevelMetrics) float64 { return float64(l.NumDeletions) }},
	{"shale_level_range_deletions", "Range tombstones in the level's tables.", "NumRangeDeletions", func(l *shale.LevelMetrics) float64 { return float64(l.NumRangeDeletions) }},
}

// scalarSpecs are the metrics of DB.Metrics without a label, in the order of
// the Metrics fields.
var scalarSpecs = []scalarSpec{
	{"shale_memtable_size_bytes", "Bytes used by the mutable and immutable memtables.", "MemtableSize", gauge, func(m *shale.Metrics) float64 { return float64(m.MemtableSize) }},
	{"shale_memtables", "Mutable and immutable memtables.", "MemtableCount", gauge, func(m *shale.Metrics) float64 { return float64(m.MemtableCount) }},
	{"shale_flushes_total", "Memtable flushes.", "Flush.Count", counter, func(m *shale.Metrics) float64 { return float64(m.Flush.Count) }},
	{"shale_flush_written_bytes_total", "Bytes of tables and blob files written by flushes.", "Flush.BytesWritten", counter, func(m *shale.Metrics) float64 { return float64(m.Flush.BytesWritten) }},
	{"shale_scan_flushes_total", "Memtable flushes asked for by iterators (Options.MemtableOpScanFlushTrigger); shale_flushes_total includes them.", "ScanFlushes", counter, func(m *shale.Metrics) float64 { return float64(m.ScanFlushes) }},
	{"shale_compactions_total", "Compactions.", "Compact.Count", counter, func(m *shale.Metrics) float64 { return float64(m.Compact.Count) }},
	{"shale_compaction_trivial_moves_total", "Compactions that moved a table to another level without rewriting it.", "Compact.TrivialMoves", counter, func(m *shale.Metrics) float64 { return float64(m.Compact.TrivialMoves) }},
	{"shale_compaction_read_bytes_total", "Bytes read by compactions.", "Compact.BytesRead", counter, func(m *shale.Metrics) float64 { return float64(m.Compact.BytesRead) }},
	{"shale_compaction_written_bytes_total", "Bytes of tables and blob files written by compactions.", "Compact.BytesWritten", counter, func(m *shale.Metrics) float64 { return float64(m.Compact.BytesWritten) }},
	{"shale_wal_written_bytes_total", "Bytes written to the WAL.", "WAL.BytesWritten", counter, func(m *shale.Metrics) float64 { return float64(m.WAL.BytesWritten) }},
	{"shale_wal_syncs_total", "Commit groups that synced the WAL.", "WAL.Syncs", counter, func(m *shale.Metrics) float64 { return float64(m.WAL.Syncs) }},
	{"shale_wal_file_syncs_total", "fdatasync calls on WAL files (one may carry several synced commit groups).", "WAL.FileSyncs", counter, func(m *shale.Metrics) float64 { return float64(m.WAL.FileSyncs) }},
	{"shale_commit_groups_total", "Commit groups: one WAL write each.", "Commit.Groups", counter, func(m *shale.Metrics) float64 { return float64(m.Commit.Groups) }},
	{"shale_commit_batches_total", "Writes (batches) carried by the commit groups.", "Commit.Batches", counter, func(m *shale.Metrics) float64 { return float64(m.Commit.Batches) }},
	{"shale_user_written_bytes_total", "Bytes of the batches committed.", "UserBytesWritten", counter, func(m *shale.Metrics) float64 { return float64(m.UserBytesWritten) }},
	{"shale_write_amplification", "Flush and compaction bytes written per user byte written.", "WriteAmp", gauge, func(m *shale.Metrics) float64 { return m.WriteAmp }},
	{"shale_write_stall_slowdowns_total", "Writes slowed down by a write stall.", "Stall.Slowdowns", counter, func(m *shale.Metrics) float64 { return float64(m.Stall.Slowdowns) }},
	{"shale_write_stall_stops_total", "Writes stopped by a write stall.", "Stall.Stops", counter, func(m *shale.Metrics) float64 { return float64(m.Stall.Stops) }},
	{"shale_write_stall_seconds_total", "Time writes spent slowed down or stopped.", "Stall.Duration", counter, func(m *shale.Metrics) float64 { return seconds(m.Stall.Duration) }},
	{"shale_block_cache_hits_total", "Block cache hits.", "BlockCache.Hits", counter, func(m *shale.Metrics) float64 { return float64(m.BlockCache.Hits) }},
	{"shale_block_cache_misses_total", "Block cache misses.", "BlockCache.Misses", counter, func(m *shale.Metrics) float64 { return float64(m.BlockCache.Misses) }},
	{"shale_block_cache_usage_bytes", "Bytes held by the block cache.", "BlockCache.Size", gauge, func(m *shale.Metrics) float64 { return float64(m.BlockCache.Size) }},
	{"shale_block_cache_capacity_bytes", "Capacity of the block cache.", "BlockCache.Capacity", gauge, func(m *shale.Metrics) float64 { return float64(m.BlockCache.Capacity) }},
	{"shale_block_cache_pinned_usage_bytes", "Bytes of the block cache that cannot be evicted.", "BlockCache.PinnedSize", gauge, func(m *shale.Metrics) float64 { return float64(m.BlockCache.PinnedSize) }},
	{"shale_table_readers_memory_bytes", "Memory the open table readers hold outside the block cache (estimate-table-readers-mem).", "TableReadersMem", gauge, func(m *shale.Metrics) float64 { return float64(m.TableReadersMem) }},
	{"shale_file_cache_open_files", "Table files open now.", "FileCache.Open", gauge, func(m *shale.Metrics) float64 { return float64(m.FileCache.Open) }},
	{"shale_file_cache_capacity_files", "Bound on the open table files (Options.MaxOpenFiles); 0 for none.", "FileCache.Capacity", gauge, func(m *shale.Metrics) float64 { return float64(m.FileCache.Capacity) }},
	{"shale_file_cache_opens_total", "Table files opened.", "FileCache.Opens", counter, func(m *shale.Metrics) float64 { return float64(m.FileCache.Opens) }},
	{"shale_file_cache_evictions_total", "Table files closed to keep the open files bound.", "FileCache.Evictions", counter, func(m *shale.Metrics) float64 { return float64(m.FileCache.Evictions) }},
	{"shale_snapshots", "Snapshots not yet released.", "NumSnapshots", gauge, func(m *shale.Metrics) float64 { return float64(m.NumSnapshots) }},
	{"shale_iterators", "Iterators not yet closed.", "NumIterators", gauge, func(m *shale.Metrics) float64 { return float64(m.NumIterators) }},
	{"shale_table_tombstones", "Point tombstones stored in tables.", "Tombstones", gauge, func(m *shale.Metrics) float64 { return float64(m.Tombstones) }},
	{"shale_blob_files", "Live blob files.", "Blob.Files", gauge, func(m *shale.Metrics) float64 { return float64(m.Blob.Files) }},
	{"shale_blob_files_size_bytes", "Bytes of the live blob files on disk.", "Blob.Size", gauge, func(m *shale.Metrics) float64 { return float64(m.Blob.Size) }},
	{"shale_blob_records_bytes", "Bytes of the records of the live blob files.", "Blob.TotalBytes", gauge, func(m *shale.Metrics) float64 { return float64(m.Blob.TotalBytes) }},
	{"shale_blob_garbage_bytes", "Bytes of blob records no table references any more.", "Blob.GarbageBytes", gauge, func(m *shale.Metrics) float64 { return float64(m.Blob.GarbageBytes) }},
	{"shale_blob_reads_total", "Reads of blob values from blob files.", "Blob.Reads", counter, func(m *shale.Metrics) float64 { return float64(m.Blob.Reads) }},
	{"shale_blob_read_bytes_total", "Bytes read from blob files for values.", "Blob.BytesRead", counter, func(m *shale.Metrics) float64 { return float64(m.Blob.BytesRead) }},
	{"shale_blob_cache_hits_total", "Blob values found in the blob cache.", "Blob.CacheHits", counter, func(m *shale.Metrics) float64 { return float64(m.Blob.CacheHits) }},
	{"shale_blob_gc_relocated_values_total", "Values blob garbage collection moved to new blob files or back inline.", "Blob.Relocated", counter, func(m *shale.Metrics) float64 { return float64(m.Blob.Relocated) }},
	{"shale_blob_gc_relocated_bytes_total", "Bytes in the old blob files of the values garbage collection moved.", "Blob.BytesRelocated", counter, func(m *shale.Metrics) float64 { return float64(m.Blob.BytesRelocated) }},
	{"shale_async_reads_total", "Read requests sent through the async reader.", "IO.ReadsSubmitted", counter, func(m *shale.Metrics) float64 { return float64(m.IO.ReadsSubmitted) }},
	{"shale_async_read_bytes_total", "Bytes returned by the async reader's reads.", "IO.BytesRead", counter, func(m *shale.Metrics) float64 { return float64(m.IO.BytesRead) }},
	{"shale_io_uring_enters_total", "io_uring_enter calls that submitted reads.", "IO.IOUringEnters", counter, func(m *shale.Metrics) float64 { return float64(m.IO.IOUringEnters) }},
	{"shale_io_uring_sqes_total", "Submission queue entries of those calls.", "IO.IOUringSQEs", counter, func(m *shale.Metrics) float64 { return float64(m.IO.IOUringSQEs) }},
	{"shale_readahead_issued_bytes_total", "Bytes read ahead.", "IO.ReadaheadBytesIssued", counter, func(m *shale.Metrics) float64 { return float64(m.IO.ReadaheadBytesIssued) }},
	{"shale_readahead_used_bytes_total", "Bytes read ahead that a reader then used.", "IO.ReadaheadBytesUsed", counter, func(m *shale.Metrics) float64 { return float64(m.IO.ReadaheadBytesUsed) }},
	{"shale_direct_reads_total", "Reads of files opened with direct IO.", "IO.DirectReads", counter, func(m *shale.Metrics) float64 { return float64(m.IO.DirectReads) }},
	{"shale_table_block_reads_total", "Table blocks read from files rather than found in the block cache.", "IO.BlockReads", counter, func(m *shale.Metrics) float64 { return float64(m.IO.BlockReads) }},
	{"shale_table_reads_total", "Read calls made to table files.", "IO.TableReads", counter, func(m *shale.Metrics) float64 { return float64(m.IO.TableReads) }},
	{"shale_table_read_bytes_total", "Bytes those read calls returned.", "IO.TableBytesRead", counter, func(m *shale.Metrics) float64 { return float64(m.IO.TableBytesRead) }},
	{"shale_recovery_dropped_records", "WAL records Open dropped (a torn or damaged tail, or records the WAL recovery mode skipped).", "Recovery.DroppedRecords", gauge, func(m *shale.Metrics) float64 { return float64(m.Recovery.DroppedRecords) }},
	{"shale_recovery_dropped_bytes", "Bytes of the WAL records Open dropped.", "Recovery.DroppedBytes", gauge, func(m *shale.Metrics) float64 { return float64(m.Recovery.DroppedBytes) }},
	{"shale_secondary_delete_live_tombstones", "Live secondary tombstones (DeleteBySecondaryRange).", "SecondaryDelete.LiveTombstones", gauge, func(m *shale.Metrics) float64 { return float64(m.SecondaryDelete.LiveTombstones) }},
	{"shale_secondary_delete_dropped_files_total", "Compaction inputs dropped whole, unread, for secondary tombstones.", "SecondaryDelete.DroppedFiles", counter, func(m *shale.Metrics) float64 { return float64(m.SecondaryDelete.DroppedFiles) }},
	{"shale_secondary_delete_skipped_blocks_total", "Data blocks of compaction inputs dropped unread for secondary tombstones.", "SecondaryDelete.SkippedBlocks", counter, func(m *shale.Metrics) float64 { return float64(m.SecondaryDelete.SkippedBlocks) }},
	{"shale_secondary_delete_dropped_entries_total", "Sets flushes and compactions dropped for secondary tombstones.", "SecondaryDelete.DroppedEntries", counter, func(m *shale.Metrics) float64 { return float64(m.SecondaryDelete.DroppedEntries) }},
	{"shale_secondary_delete_converted_entries_total", "Sets flushes and compactions turned into point Deletes for secondary tombstones.", "SecondaryDelete.ToDelete", counter, func(m *shale.Metrics) float64 { return float64(m.SecondaryDelete.ToDelete) }},
	{"shale_delete_persistence_threshold_seconds", "Options.DeletePersistenceThreshold; 0 when off.", "DeletePersistence.Threshold", gauge, func(m *shale.Metrics) float64 { return seconds(m.DeletePersistence.Threshold) }},
	{"shale_delete_persistence_oldest_tombstone_age_seconds", "Age of the oldest tombstone in a table or memtable; 0 when there is none.", "DeletePersistence.OldestTombstoneAge", gauge, func(m *shale.Metrics) float64 { return seconds(m.DeletePersistence.OldestTombstoneAge) }},
	{"shale_delete_persistence_files_past_deadline", "Tables and blob files past their delete persistence deadline.", "DeletePersistence.FilesPastTTL", gauge, func(m *shale.Metrics) float64 { return float64(m.DeletePersistence.FilesPastTTL) }},
	{"shale_delete_persistence_memtables_past_deadline", "Memtables past their delete persistence deadline.", "DeletePersistence.MemtablesPastTTL", gauge, func(m *shale.Metrics) float64 { return float64(m.DeletePersistence.MemtablesPastTTL) }},
	{"shale_delete_persistence_memtable_deadline_seconds", "The memtables' share of the delete persistence threshold; 0 when off.", "DeletePersistence.MemtableTTL", gauge, func(m *shale.Metrics) float64 { return seconds(m.DeletePersistence.MemtableTTL) }},
	{"shale_delete_persistence_blob_deadline_seconds", "Age of its oldest garbage at which a blob file is past its deadline; 0 when off.", "DeletePersistence.BlobTTL", gauge, func(m *shale.Metrics) float64 { return seconds(m.DeletePersistence.BlobTTL) }},
	{"shale_event_listener_dropped_events_total", "Events Options.EventListener lost by falling too far behind.", "DroppedEvents", counter, func(m *shale.Metrics) float64 { return float64(m.DroppedEvents) }},
}

// tickerSpec names one ticker of Statistics.
type tickerSpec struct {
	name, help string
	typ        prometheus.ValueType
}

// tickerSpecs are the tickers' Prometheus names. A ticker missing here (one
// added to shale later) is exported under a name made from its own
// (tickerName). They are prefixed shale_statistics_: a Statistics may be
// shared by several DBs, and counts for all of them.
var tickerSpecs = map[shale.Ticker]tickerSpec{
	shale.TickerBlockReads:     {"shale_statistics_block_reads_total", "Data blocks read from files.", counter},
	shale.TickerBytesRead:      {"shale_statistics_block_read_bytes_total", "Bytes read from table files.", counter},
	shale.TickerBlockCacheHits: {"shale_statistics_block_cache_hits_total", "Data blocks found in the block cache.", counter},
	shale.TickerAsyncReads:     {"shale_statistics_async_reads_total", "Reads submitted by the async read path.", counter},
	shale.TickerReadsCoalesced: {"shale_statistics_reads_coalesced_total", "Blocks that shared a read with an adjacent block.", counter},
	shale.TickerPrefetchHits:   {"shale_statistics_prefetch_hits_total", "Blocks served from readahead or prefetch buffers.", counter},
	// Read ahead minus used so far: it falls when a reader uses bytes read
	// ahead earlier, so it is a gauge, not a counter.
	shale.TickerPrefetchWastedBytes:                {"shale_statistics_prefetch_unused_bytes", "Bytes read ahead and not used (so far).", gauge},
	shale.TickerBloomChecks:                        {"shale_statistics_bloom_filter_checks_total", "Bloom filter probes.", counter},
	shale.TickerBloomUseful:                        {"shale_statistics_bloom_filter_useful_total", "Bloom filter probes that ruled a table out.", counter},
	shale.TickerMultiGetKeysFound:                  {"shale_statistics_multiget_keys_found_total", "MultiGet keys found.", counter},
	shale.TickerMultiGetKeysRead:                   {"shale_statistics_multiget_keys_read_total", "MultiGet keys asked for.", counter},
	shale.TickerFileReads:                          {"shale_statistics_file_reads_total", "Read calls made to table files.", counter},
	shale.TickerCompactionKeyDropNewerEntry:        {"shale_statistics_compaction_key_drop_newer_entry_total", "Entries flushes and compactions dropped because a newer version hid them.", counter},
	shale.TickerCompactionKeyDropObsolete:          {"shale_statistics_compaction_key_drop_obsolete_total", "Tombstones flushes and compactions dropped because nothing older can exist below.", counter},
	shale.TickerCompactionKeyDropRangeDel:          {"shale_statistics_compaction_key_drop_range_del_total", "Entries flushes and compactions dropped because a range tombstone deleted them.", counter},
	shale.TickerCompactionOptimizedDelDropObsolete: {"shale_statistics_compaction_optimized_del_drop_obsolete_total", "Tombstones dropped above the last level.", counter},
	shale.TickerNumberOfReseeksInIteration:         {"shale_statistics_iteration_reseeks_total", "Seeks iterators made instead of stepping over versions of one key.", counter},
	shale.TickerBlobFileBytesRead:                  {"shale_statistics_blob_file_read_bytes_total", "Bytes of blob files read for values.", counter},
	shale.TickerBlobFileReads:                      {"shale_statistics_blob_file_reads_total", "Read calls of blob files for values.", counter},
	shale.TickerBlobCacheHits:                      {"shale_statistics_blob_cache_hits_total", "Blob values found in the blob cache.", counter},
	shale.TickerBlobFileBytesWritten:               {"shale_statistics_blob_file_written_bytes_total", "Bytes of blob files written by flushes and compactions.", counter},
	shale.TickerBlobGCNumKeysRelocated:             {"shale_statistics_blob_gc_relocated_keys_total", "Values blob garbage collection relocated.", counter},
	shale.TickerBlobGCBytesRelocated:               {"shale_statistics_blob_gc_relocated_bytes_total", "Bytes in the old blob files of the values garbage collection relocated.", counter},
	shale.TickerNumberMergeFailures:                {"shale_statistics_merge_failures_total", "Merges whose operator failed.", counter},
	shale.TickerBloomPrefixChecked:                 {"shale_statistics_bloom_filter_prefix_checks_total", "Prefix filter probes by iterators' prefix seeks.", counter},
	shale.TickerBloomPrefixUseful:                  {"shale_statistics_bloom_filter_prefix_useful_total", "Prefix filter probes that ruled a table out.", counter},
}

// tickerName returns the Prometheus name, help and type of ticker t.
func tickerName(t shale.Ticker) (name, help string, typ prometheus.ValueType) {
	if s, ok := tickerSpecs[t]; ok {
		return s.name, s.help, s.typ
	}
	// "shale.foo.bar" -> "shale_statistics_foo_bar_total".
	n := strings.TrimPrefix(t.String(), "shale.")
	return "shale_statistics_" + snake(n) + "_total", "Statistics ticker " + t.String() + ".", counter
}

// histogramSpecs are the histograms' Prometheus names (summaries in
// seconds); one missing here is named after its own name (histogramName).
var histogramSpecs = map[shale.HistogramType]struct{ name, help string }{
	shale.HistogramGetMicros:      {"shale_statistics_get_duration_seconds", "Latency of Get."},
	shale.HistogramMultiGetMicros: {"shale_statistics_multiget_duration_seconds", "Latency of MultiGet."},
	shale.HistogramSeekMicros:     {"shale_statistics_seek_duration_seconds", "Latency of iterator seeks."},
	shale.HistogramNextMicros:     {"shale_statistics_next_duration_seconds", "Latency of iterator Next and Prev."},
}

// histogramName returns the Prometheus name and help of histogram h.
func histogramName(h shale.HistogramType) (name, help string) {
	if s, ok := histogramSpecs[h]; ok {
		return s.name, s.help
	}
	// "db.foo.micros" -> "shale_statistics_foo_duration_seconds".
	n := strings.TrimSuffix(strings.TrimPrefix(h.String(), "db."), ".micros")
	return "shale_statistics_" + snake(n) + "_duration_seconds", "Statistics histogram " + h.String() + "."
}

// snake turns a dotted or dashed name into snake_case of [a-z0-9_].
func snake(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

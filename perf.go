package shale

import (
	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/dbiter"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/sstable"
)

// PerfContext counts the work of reads, per call rather than per DB
// (RocksDB's perf context): set ReadOptions.PerfContext, or ask an
// Iterator for its Stats. Blocks found in the block cache cost no IO;
// everything else was read from a file.
type PerfContext struct {
	// BlockReads counts data blocks read from files, BlockReadBytes the
	// bytes of the file reads made, and BlockCacheHits the data blocks
	// found in the block cache.
	BlockReads, BlockReadBytes, BlockCacheHits uint64
	// AsyncReads counts reads submitted through the async read path, and
	// ReadsCoalesced the blocks that shared a read with an adjacent block.
	AsyncReads, ReadsCoalesced uint64
	// PrefetchHits counts blocks served from a readahead window or prefetch
	// buffer; PrefetchWastedBytes the bytes read ahead and never used.
	PrefetchHits, PrefetchWastedBytes uint64
	// BloomChecks counts bloom filter probes, BloomUseful those that ruled
	// a table out without reading it.
	BloomChecks, BloomUseful uint64
	// MultiGetKeysFound counts MultiGet keys that were found.
	MultiGetKeysFound uint64
	// BlobReadCount (blob_read_count) counts reads of blob files for
	// values, BlobReadBytes (blob_read_byte) their bytes, and
	// BlobCacheHitCount (blob_cache_hit_count) the blob values found in
	// the blob cache instead. They are not in the Block counters.
	BlobReadCount, BlobReadBytes, BlobCacheHitCount uint64

	// The internal entries reads passed over, with the meanings of RocksDB's
	// counters of the same names. Iterators count them as they move:
	//
	// InternalKeySkippedCount (internal_key_skipped_count) counts entries
	// the reader sees that a move stepped over: the current key's entry on
	// Next, older versions of a key already decided (the versions a
	// tombstone hides included, the tombstone itself not), and, moving
	// backward, every visible entry of each key passed.
	//
	// InternalDeleteSkippedCount (internal_delete_skipped_count) counts the
	// deleted keys a move passed: each key whose newest visible entry is a
	// Delete or SingleDelete counts once, however many older versions it
	// hides (moving backward, every tombstone of the key passed counts).
	// Keys deleted by range tombstones are not counted here: the merge
	// skips their entries before they are looked at (see
	// InternalRangeDelReseekCount). Get and MultiGet, where RocksDB counts
	// nothing, count one for each key they find deleted, by a point
	// tombstone or a range tombstone over its newest version.
	//
	// InternalRecentSkippedCount (internal_recent_skipped_count) counts
	// entries stepped over because they are newer than the iterator's
	// snapshot.
	//
	// InternalRangeDelReseekCount (internal_range_del_reseek_count) counts
	// the seeks of the merge's sources past entries a newer source's range
	// tombstone deletes: one per source moved by each jump.
	//
	// A long run of versions of one key is seeked past rather than stepped
	// through (Options.MaxSequentialSkipInIterations), so these counts
	// are of the entries actually passed one by one. Get and MultiGet
	// read the deciding entry of each key directly and so count no skipped
	// keys.
	InternalKeySkippedCount, InternalDeleteSkippedCount, InternalRecentSkippedCount, InternalRangeDelReseekCount uint64

	// PrefixBloomChecks counts the probes of tables' prefix filters by
	// the seeks of iterators in prefix mode (ReadOptions.PrefixSameAsStart;
	// RocksDB's rocksdb.bloom.filter.prefix.checked), PrefixBloomUseful
	// those that ruled a table out, so that the seek read none of its
	// blocks (rocksdb.bloom.filter.prefix.useful). A level's files that
	// their bounds rule out are not probed and not counted.
	PrefixBloomChecks, PrefixBloomUseful uint64
	// MemtablePrefixBloomChecks counts the probes of memtables' prefix
	// blooms (Options.MemtablePrefixBloomSizeRatio) by such seeks,
	// MemtablePrefixBloomUseful those that ruled a memtable out: RocksDB's
	// bloom_memtable_miss_count, and bloom_memtable_hit_count is the
	// difference.
	MemtablePrefixBloomChecks, MemtablePrefixBloomUseful uint64
}

// addMemtableBloom adds the probes of memtable prefix blooms c to p (p may
// be nil).
func (p *PerfContext) addMemtableBloom(c memtable.BloomCounts) {
	if p == nil {
		return
	}
	p.MemtablePrefixBloomChecks += c.Checks
	p.MemtablePrefixBloomUseful += c.Useful
}

// addIterCounts adds the counts of an iterator's moves to p (p may be nil).
func (p *PerfContext) addIterCounts(s dbiter.Stats, rangeDelReseeks uint64) {
	if p == nil {
		return
	}
	p.InternalKeySkippedCount += s.KeySkipped
	p.InternalDeleteSkippedCount += s.DeleteSkipped
	p.InternalRecentSkippedCount += s.RecentSkipped
	p.InternalRangeDelReseekCount += rangeDelReseeks
}

// addBlobStats adds the counts of blob value reads s to p (p may be nil).
func (p *PerfContext) addBlobStats(s *blob.ReadStats) {
	if p == nil {
		return
	}
	p.BlobReadCount += s.FileReads.Load()
	p.BlobReadBytes += s.BytesRead.Load()
	p.BlobCacheHitCount += s.CacheHits.Load()
}

// addReadStats adds the counts of s to p (p may be nil).
func (p *PerfContext) addReadStats(s *sstable.ReadStats) {
	if p == nil {
		return
	}
	p.BlockReads += s.BlockReads.Load()
	p.BlockReadBytes += s.BytesRead.Load()
	p.BlockCacheHits += s.CacheHits.Load()
	p.AsyncReads += s.AsyncReads.Load()
	p.ReadsCoalesced += s.ReadsCoalesced.Load()
	p.PrefetchHits += s.PrefetchHits.Load()
	if issued, used := s.ReadaheadBytesIssued.Load(), s.ReadaheadBytesUsed.Load(); issued > used {
		p.PrefetchWastedBytes += issued - used
	}
	p.BloomChecks += s.BloomChecks.Load()
	p.BloomUseful += s.BloomUseful.Load()
	p.PrefixBloomChecks += s.PrefixChecks.Load()
	p.PrefixBloomUseful += s.PrefixUseful.Load()
}

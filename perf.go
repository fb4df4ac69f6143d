package shale

import "github.com/shaledb/shale/sstable"

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
}

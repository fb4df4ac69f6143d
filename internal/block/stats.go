package block

import (
	"sync/atomic"

	"github.com/shaledb/shale/internal/readahead"
)

// ReadStats counts the block reads of Files. Its counters are atomics: many
// Files and iterators add to one ReadStats. Blocks found in the cache are
// counted only in CacheHits.
type ReadStats struct {
	// BlockReads counts blocks loaded from the file, whether by their own
	// read or from a readahead window.
	BlockReads atomic.Uint64
	// FileReads counts read calls made to the files (single blocks,
	// readahead windows, and each part of a split window), and BytesRead
	// the bytes they returned.
	FileReads, BytesRead atomic.Uint64
	// DirectReads counts those of FileReads made to files opened with
	// direct IO.
	DirectReads atomic.Uint64
	// ReadaheadBytesIssued counts the bytes read into readahead windows,
	// ReadaheadBytesUsed those of them that blocks were served from.
	ReadaheadBytesIssued, ReadaheadBytesUsed atomic.Uint64

	// The counters below serve the async read path (ReadOptions.AsyncIO)
	// and the DB's Statistics.

	// CacheHits counts data blocks found in the block cache.
	CacheHits atomic.Uint64
	// AsyncReads counts read requests the read path submitted through the
	// AsyncReader: MultiGet batches, first phases of two-phase seeks and
	// background prefetches (readahead windows split into parts count in
	// FileReads, not here).
	AsyncReads atomic.Uint64
	// ReadsCoalesced counts data blocks that were read by one request
	// together with an adjacent block instead of by a request of their own.
	ReadsCoalesced atomic.Uint64
	// PrefetchHits counts data blocks served from a readahead window or a
	// prefetch buffer.
	PrefetchHits atomic.Uint64
}

// Add adds every counter of o to s.
func (s *ReadStats) Add(o *ReadStats) {
	s.BlockReads.Add(o.BlockReads.Load())
	s.FileReads.Add(o.FileReads.Load())
	s.BytesRead.Add(o.BytesRead.Load())
	s.DirectReads.Add(o.DirectReads.Load())
	s.ReadaheadBytesIssued.Add(o.ReadaheadBytesIssued.Load())
	s.ReadaheadBytesUsed.Add(o.ReadaheadBytesUsed.Load())
	s.CacheHits.Add(o.CacheHits.Load())
	s.AsyncReads.Add(o.AsyncReads.Load())
	s.ReadsCoalesced.Add(o.ReadsCoalesced.Load())
	s.PrefetchHits.Add(o.PrefetchHits.Load())
}

// AddReadahead adds the counters a readahead state took since the last
// call; direct says whether its file is read with direct IO.
func (s *ReadStats) AddReadahead(c readahead.Counters, direct bool) {
	if c == (readahead.Counters{}) {
		return
	}
	s.FileReads.Add(c.Reads)
	s.BytesRead.Add(c.BytesRead)
	if direct {
		s.DirectReads.Add(c.Reads)
	}
	s.ReadaheadBytesIssued.Add(c.BytesIssued)
	s.ReadaheadBytesUsed.Add(c.BytesUsed)
	s.PrefetchHits.Add(c.Hits)
	s.AsyncReads.Add(c.AsyncReads)
}

// AddRequest counts one read request that returned n bytes (n < 0 counts
// as none): a direct-IO one when direct, one submitted through the
// AsyncReader when async; coalesced is the number of blocks it read beyond
// its first.
func (s *ReadStats) AddRequest(n int, direct, async bool, coalesced int) {
	s.FileReads.Add(1)
	s.BytesRead.Add(uint64(max(n, 0)))
	if direct {
		s.DirectReads.Add(1)
	}
	if async {
		s.AsyncReads.Add(1)
	}
	s.ReadsCoalesced.Add(uint64(coalesced))
}

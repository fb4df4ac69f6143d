package sstable

import (
	"sync/atomic"

	"github.com/shaledb/shale/internal/readahead"
)

// ReadStats counts the file reads of Readers (ReaderOptions.Stats). Its
// counters are atomics: many Readers and iterators add to one ReadStats.
// Blocks found in the cache are not counted here.
type ReadStats struct {
	// BlockReads counts blocks loaded from the file, whether by their own
	// read or from a readahead window.
	BlockReads atomic.Uint64
	// FileReads counts read calls made to table files (single blocks,
	// readahead windows, and each part of a split window), and BytesRead
	// the bytes they returned.
	FileReads, BytesRead atomic.Uint64
	// DirectReads counts those of FileReads made to files opened with
	// direct IO.
	DirectReads atomic.Uint64
	// ReadaheadBytesIssued counts the bytes read into readahead windows,
	// ReadaheadBytesUsed those of them that blocks were served from.
	ReadaheadBytesIssued, ReadaheadBytesUsed atomic.Uint64
}

// discardStats receives the counts of Readers opened without Stats, so the
// read path never checks for nil.
var discardStats ReadStats

// addReadahead adds the counters a readahead state took since the last
// call; direct says whether its file is read with direct IO.
func (s *ReadStats) addReadahead(c readahead.Counters, direct bool) {
	if c.Reads == 0 && c.BytesUsed == 0 {
		return
	}
	s.FileReads.Add(c.Reads)
	s.BytesRead.Add(c.BytesRead)
	if direct {
		s.DirectReads.Add(c.Reads)
	}
	s.ReadaheadBytesIssued.Add(c.BytesIssued)
	s.ReadaheadBytesUsed.Add(c.BytesUsed)
}

package sstable

import (
	"sync/atomic"

	"github.com/shaledb/shale/internal/block"
)

// ReadStats counts the file reads of Readers (ReaderOptions.Stats): the
// block layer's counters (block.ReadStats) and the bloom filter probes.
// Its counters are atomics: many Readers and iterators add to one
// ReadStats. Blocks found in the cache are counted only in CacheHits.
type ReadStats struct {
	block.ReadStats
	// BloomChecks counts bloom filter probes by Get and MultiGet;
	// BloomUseful those that ruled the key out (no table lookup).
	BloomChecks, BloomUseful atomic.Uint64
	// ReadersMem is a gauge, not a counter: the bytes that the open Readers
	// counting here hold outside the block cache (index and filter when
	// the Reader holds them, properties, range tombstones, the Reader
	// itself), RocksDB's estimate-table-readers-mem. NewReader adds a
	// Reader's, Close takes them back.
	ReadersMem atomic.Int64
}

// Add adds every counter of o to s (not the gauge ReadersMem).
func (s *ReadStats) Add(o *ReadStats) {
	s.ReadStats.Add(&o.ReadStats)
	s.BloomChecks.Add(o.BloomChecks.Load())
	s.BloomUseful.Add(o.BloomUseful.Load())
}

// discardStats receives the counts of Readers opened without Stats, so the
// read path never checks for nil.
var discardStats ReadStats

// blockStats is the block layer's part of s, nil when s is.
func blockStats(s *ReadStats) *block.ReadStats {
	if s == nil {
		return nil
	}
	return &s.ReadStats
}

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
	// BloomUseful those that ruled the key out (no table lookup). Readers
	// do not add to them: the callers of ProbeBloom count their probes in
	// BloomCounts and add those once per call (AddBloom).
	BloomChecks, BloomUseful atomic.Uint64
	// ReadersMem is a gauge, not a counter: the bytes that the open Readers
	// counting here hold outside the block cache (index and filter when
	// the Reader holds them, properties, range tombstones, the Reader
	// itself), RocksDB's estimate-table-readers-mem. NewReader adds a
	// Reader's, Close takes them back.
	ReadersMem atomic.Int64
	// PrefixChecks counts the prefix filter probes of iterators' prefix
	// seeks (SeekPrefixGE), PrefixUseful those that ruled the table out,
	// so that the seek read nothing of it (RocksDB's
	// rocksdb.bloom.filter.prefix.checked and .useful). Only the
	// iterator's IterOptions.Stats receive them.
	PrefixChecks, PrefixUseful atomic.Uint64
}

// Add adds every counter of o to s (not the gauge ReadersMem).
func (s *ReadStats) Add(o *ReadStats) {
	s.ReadStats.Add(&o.ReadStats)
	s.BloomChecks.Add(o.BloomChecks.Load())
	s.BloomUseful.Add(o.BloomUseful.Load())
	s.PrefixChecks.Add(o.PrefixChecks.Load())
	s.PrefixUseful.Add(o.PrefixUseful.Load())
}

// BloomCounts counts the bloom filter probes of one caller, for one
// goroutine (plain integers, not atomics): ProbeBloom adds to them and the
// caller adds them to the ReadStats it reports into once per call
// (AddBloom). Counting each probe in a ReadStats shared by every reader
// made concurrent point lookups contend on its counter words.
type BloomCounts struct{ Checks, Useful uint64 }

// AddBloom adds c to s's bloom counters.
func (s *ReadStats) AddBloom(c BloomCounts) {
	if c.Checks != 0 {
		s.BloomChecks.Add(c.Checks)
	}
	if c.Useful != 0 {
		s.BloomUseful.Add(c.Useful)
	}
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

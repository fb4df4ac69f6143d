package shale

import (
	"time"

	"github.com/shaledb/shale/sstable"
)

// Ticker names one counter of Statistics.
type Ticker int

// The tickers. Their names (Ticker.String) follow RocksDB's where RocksDB
// has the same counter.
const (
	TickerBlockReads          Ticker = iota // data blocks read from files
	TickerBytesRead                         // bytes read from table files
	TickerBlockCacheHits                    // data blocks found in the block cache
	TickerAsyncReads                        // reads submitted by the async read path
	TickerReadsCoalesced                    // blocks that shared a read with an adjacent block
	TickerPrefetchHits                      // blocks served from readahead/prefetch buffers
	TickerPrefetchWastedBytes               // bytes read ahead and never used
	TickerBloomChecks                       // bloom filter probes
	TickerBloomUseful                       // probes that ruled a table out
	TickerMultiGetKeysFound                 // MultiGet keys found
	TickerMultiGetKeysRead                  // MultiGet keys asked for
	numTickers
)

// HistogramType names one latency histogram of Statistics.
type HistogramType int

// The histograms, in microseconds (RocksDB's names).
const (
	HistogramGetMicros      HistogramType = iota // db.get.micros
	HistogramMultiGetMicros                      // db.multiget.micros
	HistogramSeekMicros                          // db.seek.micros
	HistogramNextMicros                          // db.next.micros
	numHistograms
)

// HistogramData summarizes one histogram, in microseconds.
type HistogramData struct {
	Count                        uint64
	Average, P50, P95, P99, P100 float64
}

// Statistics collects tickers and latency histograms of the DBs whose
// Options name it (Options.Statistics). It is safe for concurrent use.
type Statistics struct {
	// tables is the ReadStats every table reader of the DBs adds to; the
	// table tickers are read from it.
	tables sstable.ReadStats
	// TODO(issue 5): histograms and the tickers not in tables.
}

// NewStatistics returns an empty Statistics.
func NewStatistics() *Statistics { return &Statistics{} }

// record adds one latency, measured from start, to histogram h; s may be
// nil (then it does nothing, and callers do not read the clock either).
func (s *Statistics) record(h HistogramType, start time.Time) {
	if s == nil {
		return
	}
	_ = time.Since(start)
}

// add adds n to ticker t; s may be nil.
func (s *Statistics) add(t Ticker, n uint64) {
	if s == nil {
		return
	}
}

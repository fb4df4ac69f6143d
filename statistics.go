package shale

import (
	"fmt"
	"github.com/shaledb/shale/blob"
	"math"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/internal/monotime"
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
	TickerFileReads                         // read calls made to table files
	// TickerCompactionKeyDropNewerEntry counts entries flushes and
	// compactions dropped because a newer version of the key hid them
	// from every snapshot (RocksDB's COMPACTION_KEY_DROP_NEWER_ENTRY).
	TickerCompactionKeyDropNewerEntry
	// TickerCompactionKeyDropObsolete counts tombstones (Delete and
	// SingleDelete) flushes and compactions dropped because no older
	// version of their key can exist below the output: those dropped at
	// the last level plus TickerCompactionOptimizedDelDropObsolete
	// (RocksDB's COMPACTION_KEY_DROP_OBSOLETE).
	TickerCompactionKeyDropObsolete
	// TickerCompactionKeyDropRangeDel counts entries dropped because a
	// range tombstone deleted them (COMPACTION_KEY_DROP_RANGE_DEL).
	TickerCompactionKeyDropRangeDel
	// TickerCompactionOptimizedDelDropObsolete counts the tombstones of
	// TickerCompactionKeyDropObsolete dropped early: by a flush or a
	// compaction whose output is above the last level
	// (COMPACTION_OPTIMIZED_DEL_DROP_OBSOLETE).
	TickerCompactionOptimizedDelDropObsolete
	// TickerNumberOfReseeksInIteration counts the seeks iterators made
	// instead of stepping over a run of versions of one key
	// (Options.MaxSequentialSkipInIterations), added when the iterator
	// closes (RocksDB's NUMBER_OF_RESEEKS_IN_ITERATION).
	TickerNumberOfReseeksInIteration
	// The blob tickers (Options.EnableBlobFiles; RocksDB's BLOB_DB_*):
	// bytes and read calls of blob files read for values, blob values
	// found in the blob cache, bytes of blob files written by flushes and
	// compactions, and the values garbage collection relocated with their
	// bytes in the old files.
	TickerBlobFileBytesRead
	TickerBlobFileReads
	TickerBlobCacheHits
	TickerBlobFileBytesWritten
	TickerBlobGCNumKeysRelocated
	TickerBlobGCBytesRelocated
	// TickerNumberMergeFailures counts the merges whose operator failed,
	// in reads and in flushes and compactions (RocksDB's
	// NUMBER_MERGE_FAILURES).
	TickerNumberMergeFailures
	// TickerBloomPrefixChecked counts the probes of tables' prefix filters
	// by iterators' prefix seeks, TickerBloomPrefixUseful those that ruled
	// a table out, added when the iterator closes (RocksDB's
	// BLOOM_FILTER_PREFIX_CHECKED and BLOOM_FILTER_PREFIX_USEFUL).
	TickerBloomPrefixChecked
	TickerBloomPrefixUseful
	numTickers
)

// tickerNames are the names of the tickers, in Ticker order.
var tickerNames = [numTickers]string{
	TickerBlockReads:          "shale.block.read.count",
	TickerBytesRead:           "shale.block.read.bytes",
	TickerBlockCacheHits:      "shale.block.cache.hit",
	TickerAsyncReads:          "shale.async.read.count",
	TickerReadsCoalesced:      "shale.read.coalesced",
	TickerPrefetchHits:        "shale.prefetch.hits",
	TickerPrefetchWastedBytes: "shale.prefetched.bytes.discarded",
	TickerBloomChecks:         "shale.bloom.filter.checked",
	TickerBloomUseful:         "shale.bloom.filter.useful",
	TickerMultiGetKeysFound:   "shale.number.multiget.keys.found",
	TickerMultiGetKeysRead:    "shale.number.multiget.keys.read",
	TickerFileReads:           "shale.file.read.count",

	TickerCompactionKeyDropNewerEntry:        "shale.compaction.key.drop.new",
	TickerCompactionKeyDropObsolete:          "shale.compaction.key.drop.obsolete",
	TickerCompactionKeyDropRangeDel:          "shale.compaction.key.drop.range_del",
	TickerCompactionOptimizedDelDropObsolete: "shale.compaction.optimized.del.drop.obsolete",
	TickerNumberOfReseeksInIteration:         "shale.number.reseeks.iteration",
	TickerBlobFileBytesRead:                  "shale.blobdb.blob.file.bytes.read",
	TickerBlobFileReads:                      "shale.blobdb.blob.file.reads",
	TickerBlobCacheHits:                      "shale.blob.cache.hit",
	TickerBlobFileBytesWritten:               "shale.blobdb.blob.file.bytes.written",
	TickerBlobGCNumKeysRelocated:             "shale.blobdb.gc.num.keys.relocated",
	TickerBlobGCBytesRelocated:               "shale.blobdb.gc.bytes.relocated",
	TickerNumberMergeFailures:                "shale.number.merge.failures",
	TickerBloomPrefixChecked:                 "shale.bloom.filter.prefix.checked",
	TickerBloomPrefixUseful:                  "shale.bloom.filter.prefix.useful",
}

// String returns the ticker's name, e.g. "shale.block.cache.hit".
func (t Ticker) String() string {
	if t < 0 || t >= numTickers {
		return fmt.Sprintf("Ticker(%d)", int(t))
	}
	return tickerNames[t]
}

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

var histogramNames = [numHistograms]string{
	HistogramGetMicros:      "db.get.micros",
	HistogramMultiGetMicros: "db.multiget.micros",
	HistogramSeekMicros:     "db.seek.micros",
	HistogramNextMicros:     "db.next.micros",
}

// String returns the histogram's name, e.g. "db.get.micros".
func (h HistogramType) String() string {
	if h < 0 || h >= numHistograms {
		return fmt.Sprintf("HistogramType(%d)", int(h))
	}
	return histogramNames[h]
}

// HistogramData summarizes one histogram, in microseconds. The percentiles
// are within 1% of the exact ones (see latencyHistogram); Average and P100
// are exact up to the nanosecond.
type HistogramData struct {
	Count                        uint64
	Average, P50, P95, P99, P100 float64
	// Sum is the total of the recorded values, in microseconds.
	Sum float64
}

// Statistics collects tickers and latency histograms of the DBs whose
// Options name it (Options.Statistics). It is safe for concurrent use.
type Statistics struct {
	// tables holds the table read counts of the DBs that were closed; the
	// table tickers are its counts plus those of every open DB (live).
	tables readCounts
	// mu guards live: the table read counts of the open DBs using s. Each
	// DB counts into its own ReadStats (its Metrics().IO), so the read
	// path adds once and a DB's Metrics hold only its own reads.
	mu   sync.Mutex
	live map[*readCounts]struct{}
	// base holds the table counts (closed and open DBs) at the last Reset;
	// the table tickers report the counts since. Guarded by mu; nil before
	// the first Reset. The open DBs' ReadStats are their Metrics().IO, so
	// Reset cannot zero them.
	base *readCounts
	// tickers holds the tickers not read from tables (indexed by Ticker;
	// the table ones stay zero here).
	tickers [numTickers]atomic.Uint64
	hists   [numHistograms]latencyHistogram
}

// NewStatistics returns an empty Statistics.
func NewStatistics() *Statistics { return &Statistics{} }

// record adds one latency, measured from start (a monotime.Now: time.Now
// on Windows moves by clock ticks, and most ops recorded 0), to histogram
// h; s may be nil (then it does nothing, and callers do not read the clock
// either).
func (s *Statistics) record(h HistogramType, start time.Time) {
	if s != nil {
		s.recordDuration(h, monotime.Since(start))
	}
}

// recordDuration adds latency d to histogram h; s may be nil.
func (s *Statistics) recordDuration(h HistogramType, d time.Duration) {
	if s == nil {
		return
	}
	s.hists[h].record(d)
}

// readCounts are the read counts of one DB's file cache: its tables'
// (Metrics().IO) and its blob files' (Metrics().Blob).
type readCounts struct {
	tables sstable.ReadStats
	blobs  blob.ReadStats
}

// Add adds every counter of o to c.
func (c *readCounts) Add(o *readCounts) {
	c.tables.Add(&o.tables)
	c.blobs.Add(&o.blobs)
}

// attach adds the table read counts of an opening DB to the table tickers.
func (s *Statistics) attach(rs *readCounts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		s.live = make(map[*readCounts]struct{})
	}
	s.live[rs] = struct{}{}
}

// detach keeps the counts of a closing DB in s.tables and stops reading
// rs; calling it again, or for a DB never attached, does nothing.
func (s *Statistics) detach(rs *readCounts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[rs]; ok {
		delete(s.live, rs)
		s.tables.Add(rs)
	}
}

// tableCount returns one table counter (load picks it) summed over the
// closed and the open DBs.
func (s *Statistics) tableCount(load func(*readCounts) *atomic.Uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := load(&s.tables).Load()
	for rs := range s.live {
		n += load(rs).Load()
	}
	if s.base != nil {
		// Counters only grow, and detach moves a DB's counts from live to
		// tables, so the sum never falls below the base.
		n -= min(n, load(s.base).Load())
	}
	return n
}

// Reset sets every ticker and histogram back to zero (RocksDB's
// Statistics::Reset), for example between two benchmarks. The DBs'
// Metrics are not changed. Records made while Reset runs may be kept or
// dropped.
func (s *Statistics) Reset() {
	if s == nil {
		return
	}
	s.mu.Lock()
	base := new(readCounts)
	base.Add(&s.tables)
	for rs := range s.live {
		base.Add(rs)
	}
	s.base = base
	s.mu.Unlock()
	for i := range s.tickers {
		s.tickers[i].Store(0)
	}
	for i := range s.hists {
		s.hists[i].reset()
	}
}

// add adds n to ticker t; s may be nil. The table tickers are counted by
// the table readers (s.tables); add must not be used for them.
func (s *Statistics) add(t Ticker, n uint64) {
	if s == nil {
		return
	}
	s.tickers[t].Add(n)
}

// TickerCount returns the current value of ticker t (RocksDB's
// getTickerCount); 0 for a nil Statistics or an unknown ticker.
func (s *Statistics) TickerCount(t Ticker) uint64 {
	if s == nil || t < 0 || t >= numTickers {
		return 0
	}
	var load func(*readCounts) *atomic.Uint64
	switch t {
	case TickerBlockReads:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.BlockReads }
	case TickerBytesRead:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.BytesRead }
	case TickerBlockCacheHits:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.CacheHits }
	case TickerAsyncReads:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.AsyncReads }
	case TickerReadsCoalesced:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.ReadsCoalesced }
	case TickerPrefetchHits:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.PrefetchHits }
	case TickerPrefetchWastedBytes:
		// Used is loaded first: both only grow, and used never exceeds
		// issued, so a later issued is at least the used loaded here.
		used := s.tableCount(func(r *readCounts) *atomic.Uint64 { return &r.tables.ReadaheadBytesUsed })
		issued := s.tableCount(func(r *readCounts) *atomic.Uint64 { return &r.tables.ReadaheadBytesIssued })
		if issued < used {
			return 0
		}
		return issued - used
	case TickerBloomChecks:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.BloomChecks }
	case TickerBloomUseful:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.BloomUseful }
	case TickerBloomPrefixChecked:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.PrefixChecks }
	case TickerBloomPrefixUseful:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.PrefixUseful }
	case TickerFileReads:
		load = func(r *readCounts) *atomic.Uint64 { return &r.tables.FileReads }
	case TickerBlobFileBytesRead:
		load = func(r *readCounts) *atomic.Uint64 { return &r.blobs.BytesRead }
	case TickerBlobFileReads:
		load = func(r *readCounts) *atomic.Uint64 { return &r.blobs.FileReads }
	case TickerBlobCacheHits:
		load = func(r *readCounts) *atomic.Uint64 { return &r.blobs.CacheHits }
	}
	if load != nil {
		return s.tableCount(load)
	}
	return s.tickers[t].Load()
}

// Histogram returns the summary of histogram h; the zero HistogramData for
// a nil Statistics, an unknown histogram or one with nothing recorded.
func (s *Statistics) Histogram(h HistogramType) HistogramData {
	if s == nil || h < 0 || h >= numHistograms {
		return HistogramData{}
	}
	return s.hists[h].data()
}

// String renders every ticker and histogram, one per line, like RocksDB's
// statistics dump:
//
//	shale.block.cache.hit COUNT : 12
//	db.get.micros P50 : 3.1 P95 : 9.0 P99 : 12.2 P100 : 40.0 COUNT : 100 SUM : 450
func (s *Statistics) String() string {
	var b strings.Builder
	for t := Ticker(0); t < numTickers; t++ {
		fmt.Fprintf(&b, "%s COUNT : %d\n", t, s.TickerCount(t))
	}
	for h := HistogramType(0); h < numHistograms; h++ {
		d := s.Histogram(h)
		fmt.Fprintf(&b, "%s P50 : %f P95 : %f P99 : %f P100 : %f COUNT : %d SUM : %d\n",
			h, d.P50, d.P95, d.P99, d.P100, d.Count, uint64(math.Round(d.Sum)))
	}
	return b.String()
}

// latencyHistogram is a log-linear histogram of nanosecond latencies that
// many goroutines record into without a lock: each power of two is split
// into 2^histSubBits equal buckets, each an atomic counter. A value v >= 2^k
// (k = histSubBits) falls in a bucket of width 2^(e-k) where 2^e <= v, so a
// percentile reported as its bucket's midpoint is within 2^-(k+1) of the
// value (0.8% for k = 6, and exact below 2^k ns). record costs one atomic
// add to the bucket and one to the sum, plus a CAS when the maximum grows;
// the count is the sum of the buckets, read only by data.
type latencyHistogram struct {
	buckets [histBuckets]atomic.Uint64
	sum     atomic.Uint64 // nanoseconds
	max     atomic.Uint64 // nanoseconds
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	// Values below histSub have a bucket each; every exponent e in
	// [histSubBits, 63] has histSub buckets.
	histBuckets = histSub + (64-histSubBits)*histSub
)

// histBucket returns the bucket of v.
func histBucket(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // e >= histSubBits
	sub := (v >> (e - histSubBits)) & (histSub - 1)
	return histSub + (e-histSubBits)*histSub + int(sub)
}

// histBucketRange returns the smallest value of bucket i and its width.
func histBucketRange(i int) (lo, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	e := (i-histSub)/histSub + histSubBits
	sub := uint64((i - histSub) % histSub)
	width = 1 << (e - histSubBits)
	return (histSub + sub) * width, width
}

// reset empties the histogram.
func (h *latencyHistogram) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.sum.Store(0)
	h.max.Store(0)
}

func (h *latencyHistogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	h.buckets[histBucket(v)].Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// data summarizes the histogram. Records made while it runs may be counted
// partly (in a bucket but not yet in the sum); the summary stays
// consistent in itself: percentiles come from one pass over the buckets.
func (h *latencyHistogram) data() HistogramData {
	var counts [histBuckets]uint64
	var count uint64
	for i := range h.buckets {
		c := h.buckets[i].Load()
		counts[i] = c
		count += c
	}
	if count == 0 {
		return HistogramData{}
	}
	maxNs := h.max.Load()
	sumNs := h.sum.Load()
	const us = 1e3
	d := HistogramData{Count: count, Sum: float64(sumNs) / us, Average: float64(sumNs) / us / float64(count)}
	// percentile returns the midpoint of the bucket holding the value of
	// rank ceil(q*count), capped by the maximum (the last bucket's midpoint
	// may lie above it).
	percentile := func(q float64) float64 {
		rank := uint64(math.Ceil(q * float64(count)))
		rank = max(rank, 1)
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= rank {
				lo, width := histBucketRange(i)
				// Capped even at 0: a record in flight may have added
				// to its bucket but not yet to the maximum.
				mid := min(float64(lo)+float64(width-1)/2, float64(maxNs))
				return mid / us
			}
		}
		return float64(maxNs) / us
	}
	d.P50, d.P95, d.P99 = percentile(0.50), percentile(0.95), percentile(0.99)
	d.P100 = float64(maxNs) / us
	// A record in flight may be in the sum and the maximum but not yet in
	// its bucket (or the other way round): keep the summary ordered.
	d.Average = min(d.Average, d.P100)
	return d
}

package shale

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/vfs"
)

// histRelErr is the bound latencyHistogram promises for percentiles.
const histRelErr = 1.0 / (2 << histSubBits)

func TestHistBuckets(t *testing.T) {
	// Every bucket's range maps back to it, and buckets tile the values.
	var next uint64
	for i := 0; i < histBuckets; i++ {
		lo, width := histBucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if histBucket(lo) != i || histBucket(lo+width-1) != i {
			t.Fatalf("bucket %d [%d, +%d) maps to %d and %d", i, lo, width, histBucket(lo), histBucket(lo+width-1))
		}
		if lo >= histSub && float64(width)/2 > histRelErr*float64(lo) {
			t.Fatalf("bucket %d [%d, +%d): half width above the error bound", i, lo, width)
		}
		next = lo + width
	}
	if next != 0 { // the last bucket ends at 2^64, which wraps
		t.Fatalf("buckets end at %d, want 2^64", next)
	}
	if got := histBucket(math.MaxUint64); got != histBuckets-1 {
		t.Fatalf("histBucket(max) = %d", got)
	}
}

// exactPercentile returns the value of rank ceil(q*n) of sorted (as the
// histogram defines percentiles).
func exactPercentile(sorted []time.Duration, q float64) float64 {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return float64(sorted[rank-1]) / 1e3
}

func TestHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() time.Duration{
		"constant":    func() time.Duration { return 1234 * time.Microsecond },
		"uniform":     func() time.Duration { return time.Duration(rng.Int64N(int64(100 * time.Millisecond))) },
		"exponential": func() time.Duration { return time.Duration(rng.ExpFloat64() * 500e3) },
		"bimodal": func() time.Duration {
			if rng.IntN(100) < 97 {
				return time.Duration(50+rng.IntN(10)) * time.Microsecond
			}
			return time.Duration(20+rng.IntN(10)) * time.Millisecond
		},
		"tiny": func() time.Duration { return time.Duration(rng.IntN(100)) }, // exact buckets
	}
	for name, gen := range dists {
		t.Run(name, func(t *testing.T) {
			s := NewStatistics()
			vals := make([]time.Duration, 20000)
			var sum time.Duration
			for i := range vals {
				vals[i] = gen()
				sum += vals[i]
				s.recordDuration(HistogramSeekMicros, vals[i])
			}
			slices.Sort(vals)
			d := s.Histogram(HistogramSeekMicros)
			if d.Count != uint64(len(vals)) {
				t.Fatalf("Count = %d, want %d", d.Count, len(vals))
			}
			if want := float64(sum) / 1e3 / float64(len(vals)); math.Abs(d.Average-want) > 1e-6*want+1e-9 {
				t.Fatalf("Average = %v, want %v", d.Average, want)
			}
			if want := float64(vals[len(vals)-1]) / 1e3; d.P100 != want {
				t.Fatalf("P100 = %v, want %v", d.P100, want)
			}
			for _, c := range []struct {
				q   float64
				got float64
			}{{0.5, d.P50}, {0.95, d.P95}, {0.99, d.P99}} {
				want := exactPercentile(vals, c.q)
				if math.Abs(c.got-want) > histRelErr*want+1e-9 {
					t.Errorf("P%v = %v, want %v within %.2f%%", c.q*100, c.got, want, 100*histRelErr)
				}
			}
			if other := s.Histogram(HistogramGetMicros); other != (HistogramData{}) {
				t.Fatalf("db.get.micros got records of db.seek.micros: %+v", other)
			}
		})
	}
}

// TestStatisticsNil checks that a nil Statistics, the default, can be used
// everywhere the read path uses it.
func TestStatisticsNil(t *testing.T) {
	var s *Statistics
	s.record(HistogramGetMicros, time.Now())
	s.recordDuration(HistogramNextMicros, time.Second)
	s.add(TickerMultiGetKeysFound, 3)
	if s.TickerCount(TickerMultiGetKeysFound) != 0 || s.Histogram(HistogramGetMicros) != (HistogramData{}) {
		t.Fatal("nil Statistics reports data")
	}
	if got := s.String(); !strings.Contains(got, "shale.block.cache.hit COUNT : 0") {
		t.Fatalf("nil String() = %q", got)
	}
	// Unknown tickers and histograms are reported as zero, not a panic.
	s = NewStatistics()
	if s.TickerCount(-1) != 0 || s.TickerCount(numTickers) != 0 || s.Histogram(numHistograms).Count != 0 {
		t.Fatal("unknown ticker or histogram has data")
	}
	if Ticker(99).String() != "Ticker(99)" || HistogramType(-1).String() != "HistogramType(-1)" {
		t.Fatal("unknown names")
	}
}

func TestStatisticsNames(t *testing.T) {
	seen := map[string]bool{}
	for tk := Ticker(0); tk < numTickers; tk++ {
		n := tk.String()
		if !strings.HasPrefix(n, "shale.") || seen[n] {
			t.Fatalf("ticker %d: name %q empty, not shale.*, or taken", tk, n)
		}
		seen[n] = true
	}
	want := []string{"db.get.micros", "db.multiget.micros", "db.seek.micros", "db.next.micros"}
	for h := HistogramType(0); h < numHistograms; h++ {
		if h.String() != want[h] {
			t.Fatalf("histogram %d = %q, want %q", h, h, want[h])
		}
	}
}

// TestStatisticsTickers checks that the table tickers come from the
// ReadStats the table readers add to, and the others from add.
func TestStatisticsTickers(t *testing.T) {
	s := NewStatistics()
	ts := &s.tables.tables
	ts.BlockReads.Add(1)
	ts.BytesRead.Add(2)
	ts.CacheHits.Add(3)
	ts.AsyncReads.Add(4)
	ts.ReadsCoalesced.Add(5)
	ts.PrefetchHits.Add(6)
	ts.ReadaheadBytesIssued.Add(100)
	ts.ReadaheadBytesUsed.Add(30)
	ts.BloomChecks.Add(8)
	ts.BloomUseful.Add(9)
	ts.FileReads.Add(12)
	s.add(TickerMultiGetKeysFound, 10)
	s.add(TickerMultiGetKeysRead, 11)
	s.add(TickerMultiGetKeysRead, 1)
	s.add(TickerCompactionKeyDropNewerEntry, 13)
	s.add(TickerCompactionKeyDropObsolete, 14)
	s.add(TickerCompactionKeyDropRangeDel, 15)
	s.add(TickerCompactionOptimizedDelDropObsolete, 16)
	s.add(TickerNumberOfReseeksInIteration, 17)
	bs := &s.tables.blobs
	bs.BytesRead.Add(18)
	bs.FileReads.Add(19)
	bs.CacheHits.Add(20)
	bs.BlockReads.Add(99) // no ticker
	s.add(TickerBlobFileBytesWritten, 21)
	s.add(TickerBlobGCNumKeysRelocated, 22)
	s.add(TickerBlobGCBytesRelocated, 23)
	ts.PrefixChecks.Add(24)
	ts.PrefixUseful.Add(25)
	s.add(TickerNumberMergeFailures, 26)
	want := map[Ticker]uint64{
		TickerBlockReads: 1, TickerBytesRead: 2, TickerBlockCacheHits: 3, TickerAsyncReads: 4,
		TickerReadsCoalesced: 5, TickerPrefetchHits: 6, TickerPrefetchWastedBytes: 70,
		TickerBloomChecks: 8, TickerBloomUseful: 9, TickerMultiGetKeysFound: 10,
		TickerMultiGetKeysRead: 12, TickerFileReads: 12,
		TickerCompactionKeyDropNewerEntry: 13, TickerCompactionKeyDropObsolete: 14,
		TickerCompactionKeyDropRangeDel: 15, TickerCompactionOptimizedDelDropObsolete: 16,
		TickerNumberOfReseeksInIteration: 17,
		TickerBlobFileBytesRead:          18, TickerBlobFileReads: 19, TickerBlobCacheHits: 20,
		TickerBlobFileBytesWritten: 21, TickerBlobGCNumKeysRelocated: 22, TickerBlobGCBytesRelocated: 23,
		TickerBloomPrefixChecked: 24, TickerBloomPrefixUseful: 25, TickerNumberMergeFailures: 26,
	}
	if len(want) != int(numTickers) {
		t.Fatalf("test covers %d tickers of %d", len(want), numTickers)
	}
	for tk, n := range want {
		if got := s.TickerCount(tk); got != n {
			t.Errorf("%s = %d, want %d", tk, got, n)
		}
	}
	s.recordDuration(HistogramGetMicros, 3*time.Microsecond)
	s.recordDuration(HistogramGetMicros, 5*time.Microsecond)
	out := s.String()
	for _, line := range []string{
		"shale.prefetched.bytes.discarded COUNT : 70\n",
		"shale.number.multiget.keys.read COUNT : 12\n",
		"db.get.micros P50 : 2.991500 P95 : 5.000000 P99 : 5.000000 P100 : 5.000000 COUNT : 2 SUM : 8\n",
		"db.next.micros P50 : 0.000000 P95 : 0.000000 P99 : 0.000000 P100 : 0.000000 COUNT : 0 SUM : 0\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("String() lacks %q:\n%s", line, out)
		}
	}
	if n := strings.Count(out, "\n"); n != int(numTickers)+int(numHistograms) {
		t.Errorf("String() has %d lines, want %d", n, int(numTickers)+int(numHistograms))
	}
}

// TestStatisticsConcurrent records from many goroutines while others read;
// under -race it checks the lock-free paths, and the totals must add up.
func TestStatisticsConcurrent(t *testing.T) {
	s := NewStatistics()
	const writers, per = 4, 5000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			d := s.Histogram(HistogramNextMicros)
			if d.Count > 0 && (d.P50 > d.P95 || d.P95 > d.P99 || d.P99 > d.P100) {
				t.Errorf("percentiles out of order: %+v", d)
				return
			}
			_ = s.String()
		}
	})
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				s.recordDuration(HistogramNextMicros, time.Duration(1+(w*per+i)%1000)*time.Microsecond)
				s.add(TickerMultiGetKeysRead, 1)
				s.record(HistogramGetMicros, time.Now())
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	d := s.Histogram(HistogramNextMicros)
	if d.Count != writers*per || s.TickerCount(TickerMultiGetKeysRead) != writers*per {
		t.Fatalf("count %d, ticker %d; want %d", d.Count, s.TickerCount(TickerMultiGetKeysRead), writers*per)
	}
	if d.P100 != 1000 {
		t.Fatalf("P100 = %v, want 1000", d.P100)
	}
	if g := s.Histogram(HistogramGetMicros); g.Count != writers*per {
		t.Fatalf("db.get.micros count %d, want %d", g.Count, writers*per)
	}
}

// TestStatisticsDB checks that a DB with Options.Statistics counts its table
// reads there, and that two DBs sharing one Statistics add up.
func TestStatisticsDB(t *testing.T) {
	s := NewStatistics()
	var dbs []*DB
	for i := range 2 {
		o := testOptions(vfs.NewMem())
		o.Statistics = s
		o.BlockCacheSize = -1 // every Get reads its block from the file
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for k := range 50 {
			if err := db.Put(fmt.Appendf(nil, "k%03d", k), []byte{byte(i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	before := s.TickerCount(TickerBlockReads)
	for _, db := range dbs {
		if _, err := db.Get([]byte("k007"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.TickerCount(TickerBlockReads) - before; got < 2 {
		t.Fatalf("two Gets from files of two DBs added %d block reads, want >= 2", got)
	}
	// Each DB's Metrics count its own reads; the Statistics all of them.
	var sum uint64
	for _, db := range dbs {
		sum += db.Metrics().IO.BlockReads
	}
	if sum != s.TickerCount(TickerBlockReads) {
		t.Fatalf("Metrics().IO.BlockReads of the two DBs sum to %d, Statistics %d", sum, s.TickerCount(TickerBlockReads))
	}
	if s.TickerCount(TickerBytesRead) == 0 || s.TickerCount(TickerFileReads) == 0 {
		t.Fatalf("no bytes or file reads counted:\n%s", s)
	}
}

// BenchmarkStatisticsRecord measures record, which the read path calls per
// Get, Seek and Next when Statistics is set.
func BenchmarkStatisticsRecord(b *testing.B) {
	s := NewStatistics()
	b.Run("serial", func(b *testing.B) {
		d := 3 * time.Microsecond
		for i := 0; b.Loop(); i++ {
			s.recordDuration(HistogramNextMicros, d+time.Duration(i&1023))
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			d := 3 * time.Microsecond
			for i := 0; pb.Next(); i++ {
				s.recordDuration(HistogramNextMicros, d+time.Duration(i&1023))
			}
		})
	})
	b.Run("with-clock", func(b *testing.B) {
		for b.Loop() {
			s.record(HistogramNextMicros, monotime.Now())
		}
	})
}

// TestHistogramPartialRecord: data() run between the bucket add and the max
// update of a concurrent first record (the max still 0) must not report
// percentiles above P100.
func TestHistogramPartialRecord(t *testing.T) {
	var h latencyHistogram
	h.buckets[histBucket(5000)].Add(1) // record's first step only
	d := h.data()
	if d.P50 > d.P100 || d.P99 > d.P100 {
		t.Fatalf("percentiles above P100: %+v", d)
	}
}

// TestStatisticsReset: after Reset every ticker and histogram counts from
// zero, table tickers included (they are read from the DBs' ReadStats,
// which Reset must leave alone), and later counts add up again.
func TestStatisticsReset(t *testing.T) {
	s := NewStatistics()
	s.tables.tables.BlockReads.Add(7)
	s.tables.tables.ReadaheadBytesIssued.Add(100)
	s.tables.tables.ReadaheadBytesUsed.Add(30)
	open := new(readCounts) // an open DB's counts
	s.attach(open)
	open.tables.BlockReads.Add(5)
	s.add(TickerMultiGetKeysRead, 3)
	s.recordDuration(HistogramGetMicros, 4*time.Microsecond)

	s.Reset()
	for tk := Ticker(0); tk < numTickers; tk++ {
		if got := s.TickerCount(tk); got != 0 {
			t.Errorf("after Reset %s = %d, want 0", tk, got)
		}
	}
	for h := HistogramType(0); h < numHistograms; h++ {
		if d := s.Histogram(h); d != (HistogramData{}) {
			t.Errorf("after Reset %s = %+v, want empty", h, d)
		}
	}
	if got := open.tables.BlockReads.Load(); got != 5 {
		t.Fatalf("Reset changed the DB's own counts (Metrics().IO): BlockReads %d, want 5", got)
	}

	open.tables.BlockReads.Add(2)
	s.detach(open) // closing moves its counts into s.tables
	s.tables.tables.ReadaheadBytesIssued.Add(50)
	s.tables.tables.ReadaheadBytesUsed.Add(10)
	s.add(TickerMultiGetKeysRead, 1)
	s.recordDuration(HistogramGetMicros, 6*time.Microsecond)
	for tk, want := range map[Ticker]uint64{TickerBlockReads: 2, TickerPrefetchWastedBytes: 40, TickerMultiGetKeysRead: 1} {
		if got := s.TickerCount(tk); got != want {
			t.Errorf("after Reset and more reads %s = %d, want %d", tk, got, want)
		}
	}
	if d := s.Histogram(HistogramGetMicros); d.Count != 1 || d.P100 != 6 {
		t.Errorf("db.get.micros after Reset and one Get: %+v, want count 1, P100 6", d)
	}
	var nilStats *Statistics
	nilStats.Reset() // a nil Statistics does nothing, as its other methods
}

// TestStatisticsHistogramsTimeShortOps checks that Gets and iterator steps
// of a few microseconds record latencies above 0: timed with time.Now, they
// recorded 0 on Windows (its monotonic clock moves by clock ticks), and the
// median of every histogram was 0 under Wine.
func TestStatisticsHistogramsTimeShortOps(t *testing.T) {
	s := NewStatistics()
	o := testOptions(vfs.NewMem())
	o.Statistics = s
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 2000
	for k := range n {
		if err := db.Put(fmt.Appendf(nil, "k%05d", k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	for k := range n {
		if _, err := db.Get(fmt.Appendf(nil, "k%05d", k), nil); err != nil {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []HistogramType{HistogramGetMicros, HistogramNextMicros} {
		d := s.Histogram(h)
		if d.Count < n-1 || d.P50 <= 0 || d.Sum <= 0 {
			t.Errorf("%s after %d short ops: count %d, P50 %vµs, sum %vµs; want every op timed above 0", h, n, d.Count, d.P50, d.Sum)
		}
	}
}

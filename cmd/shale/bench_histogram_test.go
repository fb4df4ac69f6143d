package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestDBBenchBucketLimits: the bucket limits are RocksDB's
// HistogramBucketMapper's.
func TestDBBenchBucketLimits(t *testing.T) {
	want := "1 2 3 4 6 10 15 22 34 51 76 110 170 250 380 580 870 1300 1900 2900 4400 6600 9900 14000 22000 33000 50000 75000 110000"
	if got := strings.Trim(fmt.Sprint(dbBenchBucketLimits[:29]), "[]"); got != want {
		t.Fatalf("limits start\n%s\nwant\n%s", got, want)
	}
	for i := 1; i < len(dbBenchBucketLimits); i++ {
		if dbBenchBucketLimits[i] <= dbBenchBucketLimits[i-1] {
			t.Fatalf("limit %d (%d) does not exceed the one before (%d)", i, dbBenchBucketLimits[i], dbBenchBucketLimits[i-1])
		}
	}
	for _, c := range []struct {
		ns     int64
		bucket int
	}{{1, 0}, {1000, 0}, {1001, 1}, {2000, 1}, {2001, 2}, {9999, 5}, {10000, 5}, {10001, 6}, {3_600_000_000_000, 54}} { // an hour, the most recorded: (2.8e9, 4.3e9] µs
		if got := dbBenchBucket(c.ns); got != c.bucket {
			t.Errorf("%d ns in bucket %d, want %d", c.ns, got, c.bucket)
		}
	}
}

// TestDBBenchHistogramText checks the text against db_bench's format for
// latencies worked out by hand: 0.8, 1.5, 1.5, 2.9 and 9 µs.
func TestDBBenchHistogramText(t *testing.T) {
	h := newLatencyHistogram()
	for _, ns := range []int64{800, 1500, 1500, 2900, 9000} {
		if err := h.RecordValue(ns); err != nil {
			t.Fatal(err)
		}
	}
	// The histogram keeps 3 digits: 2900 ns stands for 2900-2901 (mean
	// 2901), 9000 ns for 9000-9007 (mean 9004, max 9007).
	want := "Count: 5 Average: 3.1410  StdDev: 3.01\n" +
		"Min: 0  Median: 1.5000  Max: 9\n" +
		"Percentiles: P50: 1.50 P75: 2.90 P99: 9.01 P99.9: 9.01 P99.99: 9.01\n" +
		"------------------------------------------------------\n" +
		"[       0,       1 ]        1  20.000%  20.000% ####\n" +
		"(       1,       2 ]        2  40.000%  60.000% ########\n" +
		"(       2,       3 ]        1  20.000%  80.000% ####\n" +
		"(       6,      10 ]        1  20.000% 100.000% ####\n"
	if got := dbBenchHistogram(h); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	empty := "Count: 0 Average: 0.0000  StdDev: 0.00\nMin: 0  Median: 0.0000  Max: 0\n" +
		"Percentiles: P50: 0.00 P75: 0.00 P99: 0.00 P99.9: 0.00 P99.99: 0.00\n" +
		"------------------------------------------------------\n"
	if got := dbBenchHistogram(newLatencyHistogram()); got != empty {
		t.Fatalf("empty histogram:\n%s\nwant\n%s", got, empty)
	}
}

// dbBenchHistogramRE matches one histogram of --histogram's output.
var dbBenchHistogramRE = regexp.MustCompile(`Microseconds per (\w+):\n` +
	`Count: (\d+) Average: \d+\.\d{4}  StdDev: \d+\.\d{2}\n` +
	`Min: \d+  Median: \d+\.\d{4}  Max: \d+\n` +
	`Percentiles: P50: \d+\.\d\d P75: \d+\.\d\d P99: \d+\.\d\d P99\.9: \d+\.\d\d P99\.99: \d+\.\d\d\n` +
	`-{54}\n` +
	`((?:[\[(] +\d+, +\d+ \] +\d+ +\d+\.\d{3}% +\d+\.\d{3}% #*\n)+)\n`)

// TestBenchHistogramOutput: a run with --histogram prints, after each
// benchmark's line, db_bench's histogram of each of its operation types;
// the bucket counts add up to the count, and the last cumulative share is
// 100%.
func TestBenchHistogramOutput(t *testing.T) {
	cfg := tinyConfig(t, "fillseq,readrandom,seekrandom,deleterandom,flush")
	cfg.histogram = true
	_, out, _ := runBenchOutput(t, cfg)
	var ops []string
	for _, m := range dbBenchHistogramRE.FindAllStringSubmatch(out, -1) {
		ops = append(ops, m[1]+" "+m[2])
		var sum int
		rows := strings.Split(strings.TrimSuffix(m[3], "\n"), "\n")
		for _, row := range rows {
			var n int
			fmt.Sscanf(row[strings.Index(row, "]")+1:], "%d", &n)
			sum += n
		}
		if fmt.Sprint(sum) != m[2] {
			t.Errorf("%s: buckets hold %d of %s", m[1], sum, m[2])
		}
		if !strings.Contains(rows[len(rows)-1], " 100.000% ") {
			t.Errorf("%s: last row %q does not end at 100%%", m[1], rows[len(rows)-1])
		}
	}
	if got, want := strings.Join(ops, ", "), "write 400, read 400, seek 400, delete 400, op 1"; got != want {
		t.Errorf("histograms: %s\nwant %s\n%s", got, want, out)
	}
	if strings.Count(out, "Microseconds per ") != 5 {
		t.Errorf("histograms the pattern did not match:\n%s", out)
	}
}

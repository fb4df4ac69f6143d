package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
)

var plotRE = regexp.MustCompile(`data-plot="([^"]*)" data-points="(\d+)"`)

// reportPlots returns the plots of a report page and their point counts.
func reportPlots(t *testing.T, html string) map[string]int {
	t.Helper()
	plots := map[string]int{}
	for _, m := range plotRE.FindAllStringSubmatch(html, -1) {
		n, _ := strconv.Atoi(m[2])
		plots[m[1]] = n
	}
	return plots
}

// TestBenchReportHasDataInEveryPlot runs a small bench with --report and
// checks the page: a throughput chart per benchmark with a point per
// second of a timed benchmark, five latency percentiles per benchmark, the
// write counters over the run, the LSM shape, and no histogram printed
// (--report records latencies without --histogram's output).
func TestBenchReportHasDataInEveryPlot(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "report.html")
	out, errOut, err := run(t, "bench", "--db", filepath.Join(dir, "db"), "--num", "3000", "--seed", "3",
		"--write_buffer_size", "65536", "--benchmarks", "fillrandom,readrandom,compact", "--duration", "2",
		"--report", path)
	if err != nil {
		t.Fatalf("bench: %v\n%s%s", err, out, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	plots := reportPlots(t, html)
	for _, name := range []string{"throughput-0-fillrandom", "throughput-1-readrandom", "throughput-2-compact",
		"latency", "bytes-written", "compactions", "l0-files", "shape-files", "shape-bytes"} {
		if plots[name] == 0 {
			t.Errorf("plot %s: %d points (plots: %v)", name, plots[name], plots)
		}
	}
	// fillrandom and readrandom ran 2 s each: a point per second.
	for _, name := range []string{"throughput-0-fillrandom", "throughput-1-readrandom"} {
		if plots[name] < 2 {
			t.Errorf("%s has %d points over a 2 s run, want at least 2", name, plots[name])
		}
	}
	if got, want := plots["latency"], 3*len(latencyPercentiles); got != want {
		t.Errorf("latency bars = %d, want %d (5 percentiles of 3 benchmarks)", got, want)
	}
	if plots["shape-files"] != 7 {
		t.Errorf("shape-files has %d bars, want one per level (7)", plots["shape-files"])
	}
	// Flushes happened (64 KiB memtables): the flushed bytes grew.
	if !strings.Contains(html, "flushes") {
		t.Errorf("no flush series")
	}
	if strings.Contains(out, "Percentiles:") {
		t.Errorf("--report printed histograms without --histogram:\n%s", out)
	}
	if !strings.Contains(errOut, "report written to "+path) {
		t.Errorf("stderr does not name the report: %q", errOut)
	}
}

// TestBenchReportToABadPathFailsBeforeRunning checks that an unwritable
// --report stops bench before its first benchmark, naming the flag.
func TestBenchReportToABadPathFailsBeforeRunning(t *testing.T) {
	dir := testdir.New(t)
	out, _, err := run(t, "bench", "--db", filepath.Join(dir, "db"), "--num", "100", "--benchmarks", "fillrandom",
		"--report", filepath.Join(dir, "no-such-dir", "r.html"))
	if err == nil || !strings.Contains(err.Error(), "--report") {
		t.Fatalf("err = %v, want one naming --report", err)
	}
	if strings.Contains(out, "fillrandom") {
		t.Errorf("bench ran before failing:\n%s", out)
	}
}

// TestBenchReportIsRemovedWhenTheRunFails checks that a run that fails
// leaves no half-written report.
func TestBenchReportIsRemovedWhenTheRunFails(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "r.html")
	// readrandom with --use_existing_db on a directory without a database
	// fails at open.
	_, _, err := run(t, "bench", "--db", filepath.Join(dir, "db"), "--num", "100", "--benchmarks", "readrandom",
		"--use_existing_db", "--report", path)
	if err == nil {
		t.Fatal("bench on a missing database with --use_existing_db succeeded")
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Errorf("the report of a failed run is still there (stat: %v)", serr)
	}
}

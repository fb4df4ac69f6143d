package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// childTestEnv, set in a test's environment, makes the test binary act as
// compare when mainErr re-executes it as a child process.
const childTestEnv = "SHALE_COMPARE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childTestEnv) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestMainErrRunsEachEngineInAChild runs two engines end to end, each in
// its own process, and checks the markdown tables on stdout and in
// --report: a row per engine and workload, and each engine's peak RSS. The
// YCSB workloads' go-ycsb prints to stdout, which must not reach the
// child's report.
func TestMainErrRunsEachEngineInAChild(t *testing.T) {
	t.Setenv(childTestEnv, "1")
	report := filepath.Join(t.TempDir(), "report.md")
	var out, progress bytes.Buffer
	args := []string{"--num", "2000", "--benchmarks", "fillseq,readseq,readwhilewriting,ycsb_load,ycsb_e", "--engines", "shale,goleveldb",
		"--threads", "2", "--ycsb_records", "2000", "--cache_size", "1048576", "--report", report}
	if err := mainErr(args, &out, &progress); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), string(md)) {
		t.Fatalf("stdout does not end with the report:\n%s\nreport:\n%s", out.String(), md)
	}
	for _, row := range []string{"| fillseq | shale |", "| readseq | goleveldb |", "| readwhilewriting (2 readers) | shale |",
		"| ycsb_load (2000 records of 10×100 B; 2 threads) | goleveldb |", "| ycsb_e (95% scan of 1-100, 5% insert, zipfian; 2 threads) | shale |"} {
		if !strings.Contains(string(md), row) {
			t.Errorf("report has no row %q:\n%s", row, md)
		}
	}
	if !strings.Contains(string(md), "(goleveldb) |") {
		t.Errorf("shale's rows name no best peer:\n%s", md)
	}
	if strings.Contains(progress.String(), "LSM after") || !strings.Contains(progress.String(), "goleveldb readseq") {
		t.Errorf("progress:\n%s", progress.String())
	}
	if runtime.GOOS == "linux" {
		for _, e := range []string{"shale", "goleveldb"} {
			if strings.Contains(string(md), "| "+e+" | - |") {
				t.Errorf("no peak RSS for %s:\n%s", e, md)
			}
		}
	}
}

// TestUsageHidesChildFlag checks that --help lists the flags but not the
// one compare passes only to its children.
func TestUsageHidesChildFlag(t *testing.T) {
	var out, progress bytes.Buffer
	if err := mainErr([]string{"--help"}, &out, &progress); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if u := progress.String(); strings.Contains(u, childEngineFlag) || !strings.Contains(u, "--seek_nexts int") {
		t.Fatalf("usage:\n%s", u)
	}
}

// TestResultJSONRoundTrip checks that a result crosses from a child to
// its parent unchanged.
func TestResultJSONRoundTrip(t *testing.T) {
	r := result{ops: 5, found: 4, writes: 3, elapsed: 2e9, p50: 1500, p99: 9000, phases: []phase{{"after deletes", 7e6}}}
	got := r.toJSON().result()
	if got.ops != r.ops || got.found != r.found || got.writes != r.writes || got.elapsed != r.elapsed ||
		got.p50 != r.p50 || got.p99 != r.p99 || len(got.phases) != 1 || got.phases[0] != r.phases[0] {
		t.Fatalf("round trip: %+v, want %+v", got, r)
	}
}

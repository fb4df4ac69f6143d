package main

import (
	"bytes"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var benchLineRE = regexp.MustCompile(`^([a-z]+) +: +\d+\.\d{3} micros/op \d+ ops/sec( \d+\.\d MB/s)?( \(\d+ of \d+ found\))?$`)

// TestBenchCommandPrintsEveryBenchmark runs every benchmark through the
// cobra command and checks each prints one well-formed db_bench line.
func TestBenchCommandPrintsEveryBenchmark(t *testing.T) {
	names := []string{"fillseq", "fillrandom", "overwrite", "readrandom", "readseq", "readreverse",
		"seekrandom", "deleterandom", "readwhilewriting", "flush", "compact", "stats"}
	db := filepath.Join(testdir.New(t), "db")
	out, _, err := run(t, "bench", "--db", db, "--num", "300", "--threads", "2", "--seek_nexts", "3",
		"--benchmarks", strings.Join(names, ","), "--seed", "7", "--histogram")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	printed := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := benchLineRE.FindStringSubmatch(line); m != nil {
			if _, dup := printed[m[1]]; dup {
				t.Errorf("benchmark %s printed twice", m[1])
			}
			printed[m[1]] = line
		} else if strings.Contains(line, "micros/op") {
			t.Errorf("malformed line %q", line)
		}
	}
	for _, n := range names {
		line, ok := printed[n]
		switch {
		case n == "stats":
			if ok {
				t.Errorf("stats printed a benchmark line %q", line)
			}
		case !ok:
			t.Errorf("no line for %s in output:\n%s", n, out)
		case n == "readrandom" || n == "seekrandom" || n == "readwhilewriting":
			if !strings.Contains(line, " found)") {
				t.Errorf("%s line lacks the found count: %q", n, line)
			}
		case n == "fillseq" || n == "readseq":
			// A run shorter than the clock's tick (Windows) measures 0 s
			// and prints no rate.
			if !strings.Contains(line, " MB/s") && !strings.Contains(line, " 0 ops/sec") {
				t.Errorf("%s line lacks MB/s: %q", n, line)
			}
		}
	}
	if got, want := strings.Count(out, "Percentiles: P50: "), len(names)-1; got != want {
		t.Errorf("--histogram printed %d percentile lines, want %d", got, want)
	}
	if _, err := os.Stat(filepath.Join(db, "CURRENT")); err != nil {
		t.Errorf("--db given: the database should stay: %v", err)
	}
}

func TestBenchDefaultsRemoveTempDir(t *testing.T) {
	tmp := testdir.New(t)
	t.Setenv("TMPDIR", tmp)
	out, _, err := run(t, "bench", "--num", "200")
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	for _, n := range strings.Split(defaultSuite, ",") {
		if !regexp.MustCompile(`(?m)^` + n + ` +: `).MatchString(out) {
			t.Errorf("default suite did not run %s:\n%s", n, out)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("temporary directory left behind: %v", entries)
	}
}

// runQuiet runs the runner directly, returning results by name.
func runQuiet(t *testing.T, cfg benchConfig) map[string]benchResult {
	t.Helper()
	var out bytes.Buffer
	res, err := runBenchmarks(&out, &out, cfg)
	if err != nil {
		t.Fatalf("runBenchmarks(%v): %v\n%s", cfg.benchmarks, err, out.String())
	}
	m := map[string]benchResult{}
	for _, r := range res {
		m[r.name] = r
	}
	return m
}

func tinyConfig(t *testing.T, benchmarks string) benchConfig {
	cfg := defaultBenchConfig()
	cfg.benchmarks = splitList(benchmarks)
	cfg.num = 400
	cfg.db = filepath.Join(testdir.New(t), "db")
	cfg.seed = 12345
	cfg.progressEvery = 0
	cfg.writeBufferSize = 64 << 10 // flushes happen even at this size
	return cfg
}

// TestBenchCountsMatchModel checks the ops and found counts against what the
// key choices must produce, replaying the benchmarks' random sources.
func TestBenchCountsMatchModel(t *testing.T) {
	cfg := tinyConfig(t, "fillseq,readrandom,readseq,readreverse,seekrandom,deleterandom,readseq,flush,readrandom")
	n := cfg.num
	res := runQuiet(t, cfg)
	if r := res["fillseq"]; r.ops != n || r.bytes != n*int64(cfg.keySize+cfg.valueSize) {
		t.Errorf("fillseq: ops %d bytes %d", r.ops, r.bytes)
	}
	for _, name := range []string{"readreverse", "seekrandom"} {
		r := res[name]
		if r.ops != n {
			t.Errorf("%s: ops %d, want %d", name, r.ops, n)
		}
	}
	if r := res["seekrandom"]; r.found != n || r.reads != n {
		t.Errorf("seekrandom after fillseq: found %d of %d, want all %d", r.found, r.reads, n)
	}
	// deleterandom is benchmark 5; count the distinct keys it deleted.
	rng := benchRNG(cfg.seed, 5, 0)
	deleted := map[int64]bool{}
	for i := int64(0); i < n; i++ {
		deleted[rng.Int64N(n)] = true
	}
	live := n - int64(len(deleted))
	// The second readseq (the map keeps the last result of a name) sees
	// only the live keys; the final readrandom finds exactly the live ones
	// among its picks.
	if r := res["readseq"]; r.ops != live {
		t.Errorf("readseq after deleterandom: %d entries, want %d", r.ops, live)
	}
	rng = benchRNG(cfg.seed, 8, 0)
	var wantFound int64
	for i := int64(0); i < n; i++ {
		if !deleted[rng.Int64N(n)] {
			wantFound++
		}
	}
	if r := res["readrandom"]; r.found != wantFound || r.reads != n {
		t.Errorf("readrandom after deletes: found %d of %d, want %d of %d", r.found, r.reads, wantFound, n)
	}
}

// TestBenchBatchesAndThreads checks fillrandom with batches on two threads
// writes exactly the keys its random sources chose.
func TestBenchBatchesAndThreads(t *testing.T) {
	cfg := tinyConfig(t, "fillrandom,readseq")
	cfg.threads = 2
	cfg.batchSize = 7
	cfg.compression = "zstd"
	res := runQuiet(t, cfg)
	keys := map[int64]bool{}
	for th := 0; th < 2; th++ {
		rng := benchRNG(cfg.seed, 0, th)
		for i := int64(0); i < cfg.num; i++ {
			keys[rng.Int64N(cfg.num)] = true
		}
	}
	if r := res["fillrandom"]; r.ops != 2*cfg.num {
		t.Errorf("fillrandom ops %d, want %d", r.ops, 2*cfg.num)
	}
	// readseq runs on both threads, each seeing every key.
	if r := res["readseq"]; r.ops != 2*int64(len(keys)) {
		t.Errorf("readseq saw %d entries over 2 threads, want 2*%d", r.ops, len(keys))
	}
}

func TestBenchUseExistingDB(t *testing.T) {
	cfg := tinyConfig(t, "fillseq")
	runQuiet(t, cfg)
	cfg.benchmarks = splitList("fillrandom,readrandom")
	cfg.useExistingDB = true
	var out bytes.Buffer
	res, err := runBenchmarks(&out, &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].name != "readrandom" || res[0].found != cfg.num {
		t.Fatalf("want fillrandom skipped and readrandom finding all %d keys, got %+v", cfg.num, res)
	}
	if !strings.Contains(out.String(), "fillrandom   : skipped (--use_existing_db is true)") {
		t.Errorf("no skip notice in %q", out.String())
	}
}

func TestBenchConfigErrors(t *testing.T) {
	cases := []struct {
		edit func(c *benchConfig)
		want string
	}{
		{func(c *benchConfig) { c.benchmarks = []string{"fillseq", "nosuch"} }, `unknown benchmark "nosuch"`},
		{func(c *benchConfig) { c.num, c.keySize = 1001, 3 }, "--key_size 3 is too small"},
		{func(c *benchConfig) { c.threads = 0 }, "--threads"},
		{func(c *benchConfig) { c.compression = "lz5" }, "--compression_type"},
		{func(c *benchConfig) { c.db, c.useExistingDB = "", true }, "--use_existing_db needs --db"},
	}
	for _, c := range cases {
		cfg := tinyConfig(t, "fillseq")
		c.edit(&cfg)
		_, err := runBenchmarks(&bytes.Buffer{}, &bytes.Buffer{}, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v", c.want, err)
		}
	}
}

func TestResultLine(t *testing.T) {
	r := benchResult{name: "fillrandom", ops: 1000, bytes: 1000 * 116, elapsed: 2345000}
	want := "fillrandom   :       2.345 micros/op 426439 ops/sec 47.2 MB/s"
	if got := r.line(); got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	r = benchResult{name: "readrandom", ops: 10, reads: 10, found: 4, elapsed: 1000}
	if got := r.line(); !strings.HasSuffix(got, " (4 of 10 found)") || !benchLineRE.MatchString(got) {
		t.Errorf("line = %q", got)
	}
	if got := (&benchResult{name: "flush"}).line(); !benchLineRE.MatchString(got) {
		t.Errorf("zero result line %q is malformed", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProgressLines(t *testing.T) {
	var progress syncBuffer
	r := &benchRunner{cfg: benchConfig{progressEvery: time.Millisecond}, progress: &progress}
	r.done.Store(50000)
	stop := r.startProgress()
	for i := 0; i < 5000 && !strings.Contains(progress.String(), "\n"); i++ {
		time.Sleep(time.Millisecond)
	}
	stop()
	first, _, _ := strings.Cut(progress.String(), "\n")
	if first != "... 50000 ops" {
		t.Fatalf("progress line %q, want %q", first, "... 50000 ops")
	}
	n := len(progress.String())
	time.Sleep(5 * time.Millisecond)
	if len(progress.String()) != n {
		t.Fatal("progress kept printing after stop")
	}
}

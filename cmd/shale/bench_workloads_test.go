package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
)

// workloadLineRE matches a db_bench line with any of the messages of the
// benchmarks of issue 10.
var workloadLineRE = regexp.MustCompile(`^([a-zA-Z0-9]+) +: +\d+\.\d{3} micros/op \d+ ops/sec( \d+\.\d MB/s)?` +
	`( \(\d+ of \d+ found\)| \( updates:\d+ found:\d+\)| \( reads:\d+ writes:\d+ total:\d+ found:\d+\))?$`)

// runBenchOutput runs cfg and returns the results in order and the output.
func runBenchOutput(t *testing.T, cfg benchConfig) (results []benchResult, out, progress string) {
	t.Helper()
	var o, p bytes.Buffer
	res, err := runBenchmarks(&o, &p, cfg)
	if err != nil {
		t.Fatalf("runBenchmarks(%v): %v\n%s%s", cfg.benchmarks, err, o.String(), p.String())
	}
	return res, o.String(), p.String()
}

// distinctPicks returns the distinct keys of n draws from [0, space) of
// the random source of thread 0 of benchmark number bench.
func distinctPicks(seed int64, bench int, space, n int64) map[int64]bool {
	rng := benchRNG(seed, bench, 0)
	keys := map[int64]bool{}
	for range n {
		keys[rng.Int64N(space)] = true
	}
	return keys
}

// TestBenchWorkloadsPrintLines runs every benchmark of issue 10 through the
// command on two threads with --histogram: one well-formed line each, and
// a histogram per operation type (two for readrandomwriterandom).
func TestBenchWorkloadsPrintLines(t *testing.T) {
	names := []string{"fillsync", "fill100K", "fillseq", "readmissing", "readhot", "updaterandom", "readrandomwriterandom"}
	db := filepath.Join(testdir.New(t), "db")
	out, _, err := run(t, "bench", "--db", db, "--num", "2000", "--threads", "2", "--seed", "3", "--histogram",
		"--benchmarks", strings.Join(names, ","))
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	printed := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := workloadLineRE.FindStringSubmatch(line); m != nil {
			if _, dup := printed[m[1]]; dup {
				t.Errorf("%s printed twice", m[1])
			}
			printed[m[1]] = line
		} else if strings.Contains(line, "micros/op") {
			t.Errorf("malformed line %q", line)
		}
	}
	for _, n := range names {
		if _, ok := printed[n]; !ok {
			t.Errorf("no line for %s in:\n%s", n, out)
		}
	}
	for _, c := range []struct {
		bench, suffix string
	}{
		{"readmissing", " (0 of 4000 found)"},
		{"readhot", " (4000 of 4000 found)"},
		{"updaterandom", " ( updates:4000 found:4000)"},
	} {
		if !strings.HasSuffix(printed[c.bench], c.suffix) {
			t.Errorf("%s line %q, want it to end in %q", c.bench, printed[c.bench], c.suffix)
		}
	}
	// fillsync, fill100K, fillseq: write; readmissing, readhot: read;
	// updaterandom: update; readrandomwriterandom: read and write.
	for op, want := range map[string]int{"write": 4, "read": 3, "update": 1} {
		if got := strings.Count(out, "Microseconds per "+op+":\n"); got != want {
			t.Errorf("%d histograms of %s ops, want %d", got, op, want)
		}
	}
}

// TestBenchFillSyncAndFill100K: both write --num/1000 random keys of
// [0, --num/1000), fillsync syncing each write, fill100K with 100,000-byte
// values; the benchmarks after them are back to --num and --value_size.
func TestBenchFillSyncAndFill100K(t *testing.T) {
	cfg := tinyConfig(t, "fillsync,stats,readseq,fill100K,readseq,overwrite")
	cfg.num = 3000
	res, out, _ := runBenchOutput(t, cfg)
	if len(res) != 5 {
		t.Fatalf("%d results, want 5", len(res))
	}
	kv := int64(cfg.keySize + cfg.valueSize)
	if r := res[0]; r.name != "fillsync" || r.ops != 3 || r.bytes != 3*kv {
		t.Errorf("fillsync: ops %d bytes %d, want 3 and %d", r.ops, r.bytes, 3*kv)
	}
	m := regexp.MustCompile(`WAL: [^,\n]* in (\d+) syncs`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no WAL syncs in the stats output:\n%s", out)
	}
	if syncs, _ := strconv.Atoi(m[1]); syncs < 3 {
		t.Errorf("fillsync's database synced its WAL %d times for 3 writes", syncs)
	}
	if r, want := res[1], int64(len(distinctPicks(cfg.seed, 0, 3, 3))); r.ops != want {
		t.Errorf("readseq after fillsync: %d entries, want %d", r.ops, want)
	}
	big := int64(cfg.keySize + fill100KValueSize)
	if r := res[2]; r.name != "fill100K" || r.ops != 3 || r.bytes != 3*big {
		t.Errorf("fill100K: ops %d bytes %d, want 3 and %d", r.ops, r.bytes, 3*big)
	}
	distinct := int64(len(distinctPicks(cfg.seed, 3, 3, 3)))
	if r := res[3]; r.ops != distinct || r.bytes != distinct*big {
		t.Errorf("readseq after fill100K: %d entries of %d bytes, want %d of %d", r.ops, r.bytes, distinct, distinct*big)
	}
	if r := res[4]; r.name != "overwrite" || r.ops != cfg.num || r.bytes != cfg.num*kv {
		t.Errorf("overwrite after fill100K: ops %d bytes %d, want --num %d of --value_size", r.ops, r.bytes, cfg.num)
	}
}

// TestBeginBenchmarkRestoresConfig: the per-benchmark settings hold for the
// benchmark only.
func TestBeginBenchmarkRestoresConfig(t *testing.T) {
	cfg := tinyConfig(t, "fill100K")
	cfg.num = 5000
	r := &benchRunner{cfg: cfg}
	restore, err := r.beginBenchmark(benchSpecs["fill100K"])
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.num != 5 || r.cfg.valueSize != fill100KValueSize || len(r.values) < 2*fill100KValueSize || r.wo.Sync {
		t.Errorf("fill100K: num %d, value size %d, %d value bytes, sync %v", r.cfg.num, r.cfg.valueSize, len(r.values), r.wo.Sync)
	}
	restore()
	if r.cfg.num != 5000 || r.cfg.valueSize != cfg.valueSize {
		t.Errorf("after fill100K: num %d, value size %d, want %d and %d", r.cfg.num, r.cfg.valueSize, cfg.num, cfg.valueSize)
	}
	restore, err = r.beginBenchmark(benchSpecs["fillsync"])
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.num != 5 || !r.wo.Sync || r.wo.DisableWAL {
		t.Errorf("fillsync: num %d, WriteOptions %+v", r.cfg.num, *r.wo)
	}
	restore()
	if _, err := r.beginBenchmark(benchSpecs["readrandom"]); err != nil {
		t.Fatal(err)
	}
	if r.wo.Sync {
		t.Error("readrandom after fillsync still syncs its writes")
	}
}

// TestBenchDisableWAL: --disable_wal writes nothing to the WAL.
func TestBenchDisableWAL(t *testing.T) {
	for _, off := range []bool{false, true} {
		cfg := tinyConfig(t, "fillseq,stats")
		cfg.disableWAL = off
		cfg.writeBufferSize = 4 << 20 // no flush: the writes are in the memtable
		_, out, _ := runBenchOutput(t, cfg)
		m := regexp.MustCompile(`WAL: ([^,\n]*) in \d+ syncs`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no WAL line in:\n%s", out)
		}
		if empty := m[1] == "0 B"; empty != off {
			t.Errorf("--disable_wal=%v: the WAL holds %s", off, m[1])
		}
	}
}

// TestBenchReadMissing: readmissing finds none of the keys it reads, on a
// database that holds every key of the key space.
func TestBenchReadMissing(t *testing.T) {
	cfg := tinyConfig(t, "fillseq,readmissing,readrandom")
	res := runQuiet(t, cfg)
	if r := res["readmissing"]; r.ops != cfg.num || r.reads != cfg.num || r.found != 0 {
		t.Errorf("readmissing: ops %d, found %d of %d; want %d, 0 of %d", r.ops, r.found, r.reads, cfg.num, cfg.num)
	}
	if r := res["readrandom"]; r.found != cfg.num {
		t.Errorf("readrandom after it found %d of %d: the database lost keys", r.found, r.reads)
	}
}

// TestBenchReadHot: readhot reads only the first 1% of the key space. On a
// database holding exactly those keys it finds all it reads, where
// readrandom finds about 1%, exactly the picks that fell there.
func TestBenchReadHot(t *testing.T) {
	cfg := tinyConfig(t, "fillseq")
	cfg.num = 10
	runQuiet(t, cfg)
	cfg.benchmarks = []string{"readhot", "readrandom"}
	cfg.useExistingDB = true
	cfg.num, cfg.reads = 1000, 300
	res := runQuiet(t, cfg)
	if r := res["readhot"]; r.found != 300 || r.reads != 300 {
		t.Errorf("readhot: found %d of %d, want all 300", r.found, r.reads)
	}
	rng := benchRNG(cfg.seed, 1, 0)
	var hot int64
	for range 300 {
		if rng.Int64N(1000) < 10 {
			hot++
		}
	}
	if r := res["readrandom"]; r.found != hot {
		t.Errorf("readrandom: found %d, want the %d picks below 10", r.found, hot)
	}
}

// TestBenchUpdateRandom: on an empty database, updaterandom's first update
// of a key finds nothing and every later one finds the value written
// before, so its writes are visible to its reads and to readseq after it.
func TestBenchUpdateRandom(t *testing.T) {
	cfg := tinyConfig(t, "updaterandom,readseq")
	res := runQuiet(t, cfg)
	distinct := int64(len(distinctPicks(cfg.seed, 0, cfg.num, cfg.num)))
	r := res["updaterandom"]
	kv := int64(cfg.keySize + cfg.valueSize)
	if r.ops != cfg.num || r.found != cfg.num-distinct || r.bytes != (cfg.num+r.found)*kv {
		t.Errorf("updaterandom: ops %d found %d bytes %d; want %d, %d, %d", r.ops, r.found, r.bytes,
			cfg.num, cfg.num-distinct, (cfg.num+cfg.num-distinct)*kv)
	}
	if want := "( updates:400 found:" + strconv.FormatInt(cfg.num-distinct, 10) + ")"; !strings.HasSuffix(r.line(), want) {
		t.Errorf("line %q lacks %q", r.line(), want)
	}
	if got := res["readseq"].ops; got != distinct {
		t.Errorf("readseq after updaterandom: %d entries, want %d", got, distinct)
	}
}

// TestBenchReadRandomWriteRandom: of every 100 ops of a thread the first
// --readwritepercent read, the rest write; reads find exactly the keys
// written before them. Reads and writes have their own histograms.
func TestBenchReadRandomWriteRandom(t *testing.T) {
	cfg := tinyConfig(t, "readrandomwriterandom")
	cfg.num = 450
	cfg.readWritePercent = 70
	cfg.histogram = true
	res, out, _ := runBenchOutput(t, cfg)
	rng := benchRNG(cfg.seed, 0, 0)
	written := map[int64]bool{}
	var reads, found int64
	for i := range cfg.num {
		k := rng.Int64N(cfg.num)
		if i%100 < 70 {
			reads++
			if written[k] {
				found++
			}
		} else {
			written[k] = true
		}
	}
	if reads != 4*70+50 {
		t.Fatalf("model: %d reads", reads)
	}
	r := res[0]
	if r.ops != cfg.num || r.reads != reads || r.found != found {
		t.Errorf("ops %d, reads %d, found %d; want %d, %d, %d", r.ops, r.reads, r.found, cfg.num, reads, found)
	}
	want := "( reads:330 writes:120 total:450 found:" + strconv.FormatInt(found, 10) + ")"
	if !strings.HasSuffix(r.line(), want) {
		t.Errorf("line %q lacks %q", r.line(), want)
	}
	if got := r.hists[opRead].TotalCount(); got != 330 {
		t.Errorf("read histogram holds %d ops, want 330", got)
	}
	if got := r.hists[opWrite].TotalCount(); got != 120 {
		t.Errorf("write histogram holds %d ops, want 120", got)
	}
	for _, h := range []string{"Microseconds per read:\nCount: 330 ", "Microseconds per write:\nCount: 120 "} {
		if !strings.Contains(out, h) {
			t.Errorf("output lacks %q:\n%s", h, out)
		}
	}

	// Per thread, on two threads; all reads, and all writes.
	for _, c := range []struct{ pct, threads, reads int64 }{{25, 2, 2 * (4*25 + 25)}, {100, 1, 450}, {0, 1, 0}} {
		cfg := tinyConfig(t, "readrandomwriterandom")
		cfg.num = 450
		cfg.readWritePercent = int(c.pct)
		cfg.threads = int(c.threads)
		r := runQuiet(t, cfg)["readrandomwriterandom"]
		if r.ops != c.threads*450 || r.reads != c.reads {
			t.Errorf("--readwritepercent %d on %d threads: %d ops, %d reads; want %d, %d", c.pct, c.threads, r.ops, r.reads, c.threads*450, c.reads)
		}
	}
}

// TestBenchUseExistingKeys: with --use_existing_keys the benchmarks use the
// keys the database holds, whatever their form, and their count as --num
// (and as --reads, unless --reads was given).
func TestBenchUseExistingKeys(t *testing.T) {
	cfg := tinyConfig(t, "readrandom,readmissing,multireadrandom,updaterandom,readhot")
	keys := []string{"apple", "banana", "cherry", "a key longer than --key_size"}
	db, err := shale.Open(cfg.db, &shale.Options{CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := db.Put([]byte(k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.useExistingDB, cfg.useExistingKeys = true, true
	cfg.num = 1000 // replaced by the number of keys
	results, _, progress := runBenchOutput(t, cfg)
	if !strings.Contains(progress, "--use_existing_keys: 4 keys read from the database") {
		t.Errorf("no notice of the keys read:\n%s", progress)
	}
	want := map[string][2]int64{ // found, reads
		"readrandom": {4, 4}, "readmissing": {0, 4}, "multireadrandom": {4, 4}, "updaterandom": {4, 4}, "readhot": {4, 4},
	}
	for _, r := range results {
		if w := want[r.name]; r.found != w[0] || r.reads != w[1] {
			t.Errorf("%s: found %d of %d, want %d of %d", r.name, r.found, r.reads, w[0], w[1])
		}
	}

	cfg.benchmarks = []string{"readrandom"}
	cfg.reads, cfg.readsSet = 50, true
	if r := runQuiet(t, cfg)["readrandom"]; r.found != 50 || r.reads != 50 {
		t.Errorf("--reads 50: found %d of %d, want 50 of 50", r.found, r.reads)
	}

	none := tinyConfig(t, "readrandom")
	d, err := shale.Open(none.db, &shale.Options{CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	none.useExistingDB, none.useExistingKeys = true, true
	if _, err := runBenchmarks(&bytes.Buffer{}, &bytes.Buffer{}, none); err == nil ||
		!strings.Contains(err.Error(), "--use_existing_keys: the database in --db holds no keys") {
		t.Errorf("empty database: got %v", err)
	}
}

// TestBenchStatisticsPerBenchmark: --statistics prints each benchmark's own
// counts, not the run's so far.
func TestBenchStatisticsPerBenchmark(t *testing.T) {
	cfg := tinyConfig(t, "fillseq,readrandom,readrandom")
	cfg.num = 200
	cfg.statistics = true
	_, out, _ := runBenchOutput(t, cfg)
	var gets []string
	for _, m := range regexp.MustCompile(`(?m)^db\.get\.micros .* COUNT : (\d+) SUM`).FindAllStringSubmatch(out, -1) {
		gets = append(gets, m[1])
	}
	if got := strings.Join(gets, " "); got != "0 200 200" {
		t.Errorf("db.get.micros counts after each benchmark: %s, want 0 200 200\n%s", got, out)
	}
}

// TestBenchCompressionRatio: the values compress to about
// --compression_ratio of their size (1 and more: not at all), and the
// header says so.
func TestBenchCompressionRatio(t *testing.T) {
	for _, ratio := range []float64{0.2, 0.5, 1, 3} {
		cfg := tinyConfig(t, "fillrandom")
		cfg.compressionRatio = ratio
		r := &benchRunner{cfg: cfg}
		if _, err := r.beginBenchmark(benchSpecs["fillrandom"]); err != nil {
			t.Fatal(err)
		}
		got := float64(len(snappy.Encode(nil, r.values))) / float64(len(r.values))
		if want := min(ratio, 1); got < want-0.1 || got > want+0.15 {
			t.Errorf("--compression_ratio %g: the values compress to %.2f of their size", ratio, got)
		}
	}
	cfg := tinyConfig(t, "fillseq")
	cfg.compressionRatio = 0.2
	_, out, _ := runBenchOutput(t, cfg)
	if !strings.Contains(out, "Values:      100 bytes each (20 bytes after compression)\n") {
		t.Errorf("header:\n%s", out)
	}
}

// TestStatsIntervalLine: the line db_bench prints per
// --stats_interval_seconds.
func TestStatsIntervalLine(t *testing.T) {
	now := time.Date(2025, 1, 2, 15, 4, 5, 0, time.Local)
	got := statsIntervalLine(now, "thread 0", 1000, 5000, time.Second, 4*time.Second)
	want := "2025/01/02-15:04:05 ... thread 0: (1000,5000) ops and (1000.0,1250.0) ops/second in (1.000000,4.000000) seconds"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

var statsIntervalRE = regexp.MustCompile(`^\d{4}/\d\d/\d\d-\d\d:\d\d:\d\d \.\.\. (thread 0|threads 0-1): \((\d+),(\d+)\) ops and \(\d+\.\d,\d+\.\d\) ops/second in \(\d+\.\d{6},\d+\.\d{6}\) seconds$`)

// TestBenchStatsIntervalDuringRun: while a benchmark runs, the interval
// lines come (on stderr), their totals grow and add up the intervals, and
// they replace the "... N ops" progress lines.
func TestBenchStatsIntervalDuringRun(t *testing.T) {
	cfg := tinyConfig(t, "fillseq")
	cfg.num = 200
	runQuiet(t, cfg)
	cfg.benchmarks = []string{"readrandom"}
	cfg.useExistingDB = true
	cfg.threads = 2
	cfg.duration = 300 * time.Millisecond
	cfg.statsInterval = 40 * time.Millisecond
	cfg.progressEvery = 10 * time.Millisecond
	res, _, progress := runBenchOutput(t, cfg)
	var lines, last int64
	for _, line := range strings.Split(strings.TrimSpace(progress), "\n") {
		m := statsIntervalRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unexpected line on stderr %q", line)
			continue
		}
		if m[1] != "threads 0-1" {
			t.Errorf("line %q does not name both threads", line)
		}
		ops, _ := strconv.ParseInt(m[2], 10, 64)
		total, _ := strconv.ParseInt(m[3], 10, 64)
		if total < last || ops != total-last {
			t.Errorf("after a total of %d, an interval of %d ops and a total of %d", last, ops, total)
		}
		lines++
		last = total
	}
	if lines < 3 {
		t.Fatalf("%d interval lines in 300 ms every 40 ms:\n%s", lines, progress)
	}
	if last == 0 || last > res[0].ops {
		t.Errorf("last total %d, readrandom did %d ops", last, res[0].ops)
	}
}

// TestBenchFillSyncReportsWritesPerSync: fillsync from several threads
// prints its commit groups and WAL syncs on a line after its own (which
// stays db_bench's), and the counts add up: every
// thread's writes are counted, no group has more writes than threads, and
// no group needs more than one WAL sync.
func TestBenchFillSyncReportsWritesPerSync(t *testing.T) {
	cfg := tinyConfig(t, "fillsync")
	cfg.num, cfg.threads = 5000, 4
	res, out, _ := runBenchOutput(t, cfg)
	if len(res) != 1 || res[0].ops != 20 {
		t.Fatalf("results %+v, want one fillsync of 4×5 writes", res)
	}
	m := regexp.MustCompile(`(?m)^fillsync +: commits: (\d+) writes in (\d+) groups, [0-9.]+ per group; (\d+) WAL syncs, [0-9.]+ writes per sync$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no commits line after fillsync's:\n%s", out)
	}
	writes, _ := strconv.Atoi(m[1])
	groups, _ := strconv.Atoi(m[2])
	syncs, _ := strconv.Atoi(m[3])
	if writes != 20 || groups < 5 || groups > 20 || syncs < 1 || syncs > groups+1 {
		t.Errorf("%d writes in %d groups with %d syncs, want 20 writes in 5..20 groups, at most one sync each", writes, groups, syncs)
	}
}

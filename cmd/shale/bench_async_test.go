package main

import (
	"bytes"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

func TestBenchAsyncFlags(t *testing.T) {
	cfg := parseBench(t, "--async_io", "--optimize_multiget_for_io=false", "--readahead_size", "65536",
		"--multiread_batched", "--batch_size", "8", "--multiread_stride", "3", "--statistics",
		"--num_levels", "4", "--disable_auto_compactions", "--seek_nexts", "10")
	got := fmt.Sprintf("%v %v %v %v %v %v %v %v %v %v %v", cfg.asyncIO, cfg.optimizeMultiGetForIO, cfg.readaheadSize,
		cfg.multireadBatched, cfg.batchSize, cfg.multireadStride, cfg.statistics, cfg.numLevels, cfg.disableAutoComp,
		cfg.seekNexts, cfg.seekNextsSet)
	if want := "true false 65536 true 8 3 true 4 true 10 true"; got != want {
		t.Fatalf("parsed %s, want %s", got, want)
	}
	if ro := cfg.readOptions(); !ro.AsyncIO || ro.OptimizeMultiGetForIO || !ro.MultiGetOneLevelAtATime || ro.ReadaheadSize != 65536 {
		t.Fatalf("ReadOptions %+v do not carry the flags", ro)
	}
	r := &benchRunner{cfg: cfg, fs: vfs.Default, stats: shale.NewStatistics()}
	o, err := r.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.NumLevels != 4 || o.Statistics != r.stats || !o.DisableAutoCompactions {
		t.Fatalf("Options: NumLevels %d, Statistics %p (want %p), DisableAutoCompactions %v", o.NumLevels, o.Statistics, r.stats, o.DisableAutoCompactions)
	}

	// db_bench's defaults.
	cfg = parseBench(t)
	got = fmt.Sprintf("%v %v %v %v %v %v %v", cfg.asyncIO, cfg.optimizeMultiGetForIO, cfg.multireadBatched,
		cfg.multireadStride, cfg.statistics, cfg.numLevels, cfg.seekNextsSet)
	if want := "false true false 0 false 7 false"; got != want {
		t.Fatalf("defaults %s, want %s", got, want)
	}

	for _, c := range []struct{ flag, value, want string }{
		{"--num_levels", "1", "--num_levels must be at least 2"},
		{"--multiread_stride", "-1", "--multiread_stride must be >= 0"},
	} {
		_, _, err := run(t, "bench", "--benchmarks", "fillseq", "--num", "10", c.flag, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: err %v, want %q", c.flag, c.value, err, c.want)
		}
	}
	out, _, err := run(t, "bench", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"multireadrandom", "fillseqdeterministic", "asyncio", "--async_io", "--multiread_stride", "--num_levels", "--statistics"} {
		if !strings.Contains(out, name) {
			t.Errorf("help does not mention %s", name)
		}
	}
}

// TestMultiReadRandomCounts checks multireadrandom's ops, found and batch
// counts against a replay of its random source, after deletes, with
// MultiGet and with a loop of Get.
func TestMultiReadRandomCounts(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			cfg := tinyConfig(t, "fillseq,deleterandom,multireadrandom")
			cfg.batchSize = 7
			cfg.reads = 300
			cfg.multireadBatched = batched
			cfg.histogram = true
			res := runQuiet(t, cfg)
			n := cfg.num
			rng := benchRNG(cfg.seed, 1, 0)
			deleted := map[int64]bool{}
			for i := int64(0); i < n; i++ {
				deleted[rng.Int64N(n)] = true
			}
			// deleterandom wrote in batches of 7 with the same picks.
			rng = benchRNG(cfg.seed, 2, 0)
			var wantFound int64
			for i := int64(0); i < cfg.reads; i++ {
				if !deleted[rng.Int64N(n)] {
					wantFound++
				}
			}
			r := res["multireadrandom"]
			if r.ops != cfg.reads || r.reads != cfg.reads || r.found != wantFound {
				t.Errorf("ops %d, found %d of %d; want %d, %d of %d", r.ops, r.found, r.reads, cfg.reads, wantFound, cfg.reads)
			}
			if got, want := r.hist.TotalCount(), (cfg.reads+6)/7; got != want {
				t.Errorf("histogram has %d values, want one per batch: %d", got, want)
			}
		})
	}
}

func TestMultiReadStride(t *testing.T) {
	cfg := tinyConfig(t, "fillseq")
	cfg.multireadStride = 5
	r := &benchRunner{cfg: cfg}
	th := &benchThread{rng: benchRNG(1, 0, 0), runner: r}
	keys := newBatchKeys(4, cfg.keySize)
	for range 100 {
		th.fillBatchKeys(keys)
		first, _ := strconv.ParseInt(string(keys[0]), 10, 64)
		for i, k := range keys {
			got, err := strconv.ParseInt(string(k), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if want := (first + int64(i)*5) % cfg.num; got != want || len(k) != cfg.keySize {
				t.Fatalf("key %d of a stride-5 batch is %q, want %d", i, k, want)
			}
		}
		if first > cfg.num-15 {
			t.Fatalf("start %d leaves no room for the batch", first)
		}
	}
	// The whole benchmark finds every key with a stride too.
	cfg = tinyConfig(t, "fillseq,multireadrandom")
	cfg.multireadStride, cfg.batchSize, cfg.multireadBatched = 3, 8, true
	if res := runQuiet(t, cfg)["multireadrandom"]; res.found != cfg.num || res.ops != cfg.num {
		t.Fatalf("stride multireadrandom found %d of %d, want all %d", res.found, res.ops, cfg.num)
	}
}

func TestDeterministicRuns(t *testing.T) {
	var got []string
	for _, run := range deterministicRuns(4) {
		got = append(got, fmt.Sprintf("L%d:%d", run.level, run.weight))
	}
	if want := "L3:60 L2:32 L1:16 L0:8 L0:4 L0:2 L0:1"; strings.Join(got, " ") != want {
		t.Fatalf("runs %v, want %s", got, want)
	}
	runs := deterministicRuns(7)
	if len(runs) != 10 || runs[0].level != 6 || runs[0].weight != 480 || runs[5].weight != 16 {
		t.Fatalf("7 levels: %+v", runs)
	}
	// The hash shares keys out in proportion to the weights.
	runs = deterministicRuns(4)
	counts := make([]int, len(runs))
	const n = 123000
	for k := range int64(n) {
		counts[detOwner(runs, 123, k)]++
	}
	for i, run := range runs {
		want := float64(n) * float64(run.weight) / 123
		if d := float64(counts[i]) - want; d > 0.1*want || d < -0.1*want {
			t.Errorf("run %d (weight %d) got %d keys, want about %.0f", i, run.weight, counts[i], want)
		}
	}
}

// TestFillSeqDeterministic builds the shape and checks every level holds
// exactly the keys the hash gave it, and that the read benchmarks find all.
func TestFillSeqDeterministic(t *testing.T) {
	cfg := tinyConfig(t, "fillseqdeterministic,readrandom,multireadrandom,seekrandom")
	cfg.num = 3000
	cfg.numLevels = 4
	cfg.disableAutoComp = true
	cfg.multireadBatched = true
	cfg.batchSize = 8
	cfg.writeBufferSize = 4 << 20
	var out bytes.Buffer
	results, err := runBenchmarks(&out, &out, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	res := map[string]benchResult{}
	for _, r := range results {
		res[r.name] = r
	}
	if r := res["fillseqdeterministic"]; r.ops != cfg.num {
		t.Errorf("fillseqdeterministic ops %d, want %d", r.ops, cfg.num)
	}
	for _, name := range []string{"readrandom", "multireadrandom", "seekrandom"} {
		if r := res[name]; r.found != cfg.num || r.reads != cfg.num {
			t.Errorf("%s found %d of %d, want all %d", name, r.found, r.reads, cfg.num)
		}
	}
	if !regexp.MustCompile(`fillseqdeterministic : shape L0 4 files [0-9.]+ MiB, L1 1 file [0-9.]+ MiB, L2 1 file [0-9.]+ MiB, L3 1 file [0-9.]+ MiB\n`).MatchString(out.String()) {
		t.Errorf("no shape line with 4 L0 files and one file per level:\n%s", out.String())
	}

	runs := deterministicRuns(4)
	want := make([]uint64, 4)
	for k := range cfg.num {
		want[runs[detOwner(runs, 123, k)].level]++
	}
	db, err := shale.Open(cfg.db, &shale.Options{NumLevels: 4, DisableAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for l, lm := range db.Metrics().Levels {
		if lm.NumEntries != want[l] {
			t.Errorf("L%d holds %d entries, want %d", l, lm.NumEntries, want[l])
		}
	}
}

var asyncModeRE = regexp.MustCompile(`^asyncio : (cached )?([a-z-]+) +: +\d+ ops/sec +[0-9.]+ MB/s  us/(batch|seek) P50 +[0-9.]+ P95 +[0-9.]+ P99 +[0-9.]+  file reads/(batch|seek) [0-9.]+ async submits \d+ \((\d+) of (\d+) found\)$`)

// TestAsyncIOSuiteTiny runs fillseqdeterministic and the asyncio suite on a
// tiny database through the command, over a latency FS, and checks the
// output's shape: every mode in both phases, finding every key, and the
// ratio lines.
func TestAsyncIOSuiteTiny(t *testing.T) {
	defer func(d time.Duration) { asyncioCachedRound = d }(asyncioCachedRound)
	asyncioCachedRound = 20 * time.Millisecond
	db := filepath.Join(testdir.New(t), "db")
	out, _, err := run(t, "bench", "--db", db, "--benchmarks", "fillseqdeterministic,asyncio,readrandom",
		"--num", "2000", "--reads", "240", "--key_size", "32", "--value_size", "64", "--num_levels", "4",
		"--disable_auto_compactions", "--batch_size", "8", "--threads", "2", "--seek_nexts", "40",
		"--env_read_latency_us", "20", "--cache_size", "65536", "--seed", "3", "--statistics")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	modes := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "asyncio : ") {
			continue
		}
		m := asyncModeRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		modes[m[1]+m[2]]++
		if !strings.HasPrefix(m[2], "seek") && m[5] != m[6] {
			t.Errorf("multiget mode did not find every key: %q", line)
		}
		if m[1] == "" && strings.HasPrefix(m[2], "multiget") && m[6] != "480" { // 240 keys per thread, 2 threads; the cached phase is timed
			t.Errorf("multiget mode read %s keys, want 480: %q", m[6], line)
		}
	}
	for _, name := range []string{"multiget-off", "multiget-async-level", "multiget-async-multilevel", "seek-off", "seek-async"} {
		for _, prefix := range []string{"", "cached "} {
			if modes[prefix+name] != 1 {
				t.Errorf("mode %q printed %d times", prefix+name, modes[prefix+name])
			}
		}
	}
	for _, want := range []string{
		"asyncio : shape L0 4 files",
		"asyncio : latency FS 20us",
		"asyncio : multiget ops/sec vs off: async-level ",
		"asyncio : scan MB/s async/off ",
		"asyncio : cached throughput on/off: multiget async-multilevel ",
		"seekrandom with 40 nexts",
		"STATISTICS:\nshale.block.read.count COUNT : ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The database was reopened after the cached phase: readrandom runs on it.
	if !regexp.MustCompile(`(?m)^readrandom +: .* \(480 of 480 found\)$`).MatchString(out) {
		t.Errorf("readrandom after asyncio did not find all its keys:\n%s", out)
	}
}

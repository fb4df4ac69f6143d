package main

import (
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// parseBench parses bench flags without running anything.
func parseBench(t *testing.T, args ...string) benchConfig {
	t.Helper()
	var got *benchConfig
	benchConfigHook = func(c benchConfig) { got = &c }
	defer func() { benchConfigHook = nil }()
	if _, _, err := run(t, append([]string{"bench"}, args...)...); err != nil {
		t.Fatalf("bench %v: %v", args, err)
	}
	if got == nil {
		t.Fatal("the configuration hook was not called")
	}
	return *got
}

func TestBenchIOFlagsToOptions(t *testing.T) {
	cfg := parseBench(t, "--env_read_latency_us", "500", "--env_read_jitter_us", "50", "--env_read_bandwidth_mb", "100",
		"--use_direct_reads", "--use_direct_io_for_flush_and_compaction", "--readahead_size", "65536",
		"--max_auto_readahead_size", "131072", "--bytes_per_sync", "2097152", "--disable_io_uring", "--io_uring_sqpoll",
		"--io_stats", "--file_size", "8388608", "--scan_db_size", "4194304", "--multiread_batch_size", "16",
		"--block_size", "8192", "--compression_type", "zstd", "--seed", "9")
	want := benchConfig{
		envReadLatency: 500 * time.Microsecond, envReadJitter: 50 * time.Microsecond, envReadBandwidthMB: 100,
		useDirectReads: true, useDirectReadsSet: true, useDirectIOForFlush: true, readaheadSize: 65536,
		maxAutoReadaheadSize: 131072, bytesPerSync: 2 << 20, disableIOUring: true, ioUringSQPoll: true, ioStats: true,
		fileSize: 8 << 20, scanDBSize: 4 << 20, multireadBatchSize: 16, blockSize: 8192, compressionSet: true,
	}
	gotIO := fmt.Sprintf("%v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v",
		cfg.envReadLatency, cfg.envReadJitter, cfg.envReadBandwidthMB, cfg.useDirectReads, cfg.useDirectReadsSet,
		cfg.useDirectIOForFlush, cfg.readaheadSize, cfg.maxAutoReadaheadSize, cfg.bytesPerSync, cfg.disableIOUring,
		cfg.ioUringSQPoll, cfg.ioStats, cfg.fileSize, cfg.scanDBSize, cfg.multireadBatchSize, cfg.blockSize, cfg.compressionSet)
	wantIO := fmt.Sprintf("%v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v",
		want.envReadLatency, want.envReadJitter, want.envReadBandwidthMB, want.useDirectReads, want.useDirectReadsSet,
		want.useDirectIOForFlush, want.readaheadSize, want.maxAutoReadaheadSize, want.bytesPerSync, want.disableIOUring,
		want.ioUringSQPoll, want.ioStats, want.fileSize, want.scanDBSize, want.multireadBatchSize, want.blockSize, want.compressionSet)
	if gotIO != wantIO {
		t.Fatalf("parsed\n%s\nwant\n%s", gotIO, wantIO)
	}

	r := &benchRunner{cfg: cfg, fs: benchFS(&cfg)}
	o, err := r.options()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"UseDirectReads", o.UseDirectReads, true},
		{"UseDirectIOForFlushAndCompaction", o.UseDirectIOForFlushAndCompaction, true},
		{"MaxAutoReadaheadSize", o.MaxAutoReadaheadSize, int64(131072)},
		{"BytesPerSync", o.BytesPerSync, int64(2 << 20)},
		{"DisableIOUring", o.DisableIOUring, true},
		{"IOUringSQPoll", o.IOUringSQPoll, true},
		{"BlockSize", o.BlockSize, 8192},
		{"Compression", o.Compression, shale.ZstdCompression},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("Options.%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	l, ok := o.FS.(*latencyfs.FS)
	if !ok {
		t.Fatalf("Options.FS is %T, want a *latencyfs.FS", o.FS)
	}
	if lo := l.Options(); lo.ReadLatency != 500*time.Microsecond || lo.ReadJitter != 50*time.Microsecond ||
		lo.ReadBandwidth != 100<<20 || lo.WriteLatency != 0 || lo.Seed != 9 {
		t.Errorf("latency options %+v", lo)
	}

	// Defaults, and db_bench's zeros meaning "off".
	cfg = parseBench(t)
	r = &benchRunner{cfg: cfg, fs: benchFS(&cfg)}
	if o, err = r.options(); err != nil {
		t.Fatal(err)
	}
	if o.FS != vfs.Default || o.UseDirectReads || o.UseDirectIOForFlushAndCompaction || o.DisableIOUring || o.IOUringSQPoll ||
		o.MaxAutoReadaheadSize != 256<<10 || o.BytesPerSync != -1 || o.BlockSize != 4096 || cfg.useDirectReadsSet ||
		cfg.compressionSet || cfg.fileSize != 1<<30 || cfg.scanDBSize != 1<<30 || cfg.multireadBatchSize != 64 || cfg.readaheadSize != 0 {
		t.Errorf("defaults: options %+v, config %+v", o, cfg)
	}
	cfg = parseBench(t, "--max_auto_readahead_size", "0", "--use_direct_reads=false", "--env_read_bandwidth_mb", "10")
	r = &benchRunner{cfg: cfg, fs: benchFS(&cfg)}
	if o, err = r.options(); err != nil {
		t.Fatal(err)
	}
	if o.MaxAutoReadaheadSize != -1 || !cfg.useDirectReadsSet || cfg.useDirectReads {
		t.Errorf("--max_auto_readahead_size 0: %d; use_direct_reads set %v value %v", o.MaxAutoReadaheadSize, cfg.useDirectReadsSet, cfg.useDirectReads)
	}
	if _, ok := o.FS.(*latencyfs.FS); !ok {
		t.Errorf("a bandwidth cap alone should wrap the FS, got %T", o.FS)
	}
}

func TestBenchIOFlagValidation(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--env_read_latency_us", "100", "--env_read_jitter_us", "200"}, "--env_read_jitter_us 200 must not exceed"},
		{[]string{"--env_read_latency_us", "-1"}, "must be >= 0"},
		{[]string{"--file_size", "100"}, "--file_size must be at least 4096"},
		{[]string{"--multiread_batch_size", "0"}, "--multiread_batch_size must be positive"},
		{[]string{"--readahead_size", "-5"}, "--readahead_size must be >= 0"},
	}
	for _, c := range cases {
		args := append([]string{"bench", "--db", filepath.Join(testdir.New(t), "db"), "--benchmarks", "randread_batch"}, c.args...)
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want error containing %q, got %v", c.args, c.want, err)
		}
	}
}

var (
	randReadLineRE = regexp.MustCompile(`(?m)^randread_batch : (sequential|concurrent|batch) +reader=(\S+) +(\d+) reads/s  us/batch p50 +[\d.]+ p99 +[\d.]+  syscalls/read ([\d.]+) +([\d.]+)x sequential$`)
	scanLineRE     = regexp.MustCompile(`(?m)^scan_direct : (direct-readahead-off|direct-readahead-32|buffered-cold) +: (?:skipped: .+| *[\d.]+ s +[\d.]+ MB/s (\d+) entries IO: reader=\S+ reads=\d+ .*)$`)
)

// TestBenchIOBenchmarks runs randread_batch and scan_direct at a tiny size,
// on the local file system and then on the latency FS, and checks their
// output lines, the reuse of their fixtures, and the reads the latency FS
// saw.
func TestBenchIOBenchmarks(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	args := []string{"bench", "--db", db, "--file_size", "1048576", "--scan_db_size", "262144", "--num", "256",
		"--multiread_batch_size", "32", "--seed", "3", "--io_stats"}
	out, errOut, err := run(t, append(args, "--benchmarks", "fillseq,randread_batch,scan_direct")...)
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, errOut)
	}
	checkIOOutput(t, out)
	if !strings.Contains(errOut, "randread_batch : writing 1 MiB") || !strings.Contains(errOut, "scan_direct : writing 2260 entries") {
		t.Errorf("fixtures were not built:\n%s", errOut)
	}
	for _, b := range []string{"fillseq", "randread_batch", "scan_direct"} {
		if !regexp.MustCompile(`(?m)^` + b + ` +: DB IO: reader=`).MatchString(out) {
			t.Errorf("--io_stats printed no IO line for %s:\n%s", b, out)
		}
	}

	// Again, over a latency FS: the fixtures are reused (fillseq's fresh
	// database keeps them), and every read goes through the latency FS.
	out, errOut, err = run(t, append(args, "--benchmarks", "fillseq,randread_batch,scan_direct", "--env_read_latency_us", "20")...)
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, errOut)
	}
	checkIOOutput(t, out)
	if !strings.Contains(errOut, "randread_batch : reusing") || !strings.Contains(errOut, "scan_direct : reusing") {
		t.Errorf("fixtures were not reused:\n%s", errOut)
	}
	if !strings.Contains(out, "Env:         read latency 20us +- 0us, read bandwidth unlimited") {
		t.Errorf("no Env header:\n%s", out)
	}
	// 256 reads in each of three modes, then the scans' reads.
	m := regexp.MustCompile(`(?m)^randread_batch : latency FS delayed (\d+) reads`).FindStringSubmatch(out)
	if m == nil || m[1] != "768" {
		t.Errorf("latency FS line %v, want 768 reads delayed:\n%s", m, out)
	}
}

func checkIOOutput(t *testing.T, out string) {
	t.Helper()
	modes := randReadLineRE.FindAllStringSubmatch(out, -1)
	if len(modes) != 3 {
		t.Fatalf("%d randread_batch mode lines, want 3:\n%s", len(modes), out)
	}
	for i, name := range []string{"sequential", "concurrent", "batch"} {
		m := modes[i]
		if m[1] != name || m[3] == "0" {
			t.Errorf("mode line %d: %q", i, m[0])
		}
		if name == "sequential" && (m[2] != "pread" || m[5] != "1.00") {
			t.Errorf("sequential line %q", m[0])
		}
		if name == "concurrent" && m[2] != "portable" {
			t.Errorf("concurrent mode must use the portable reader: %q", m[0])
		}
		if m[2] != "io_uring" && m[4] != "1.000" {
			t.Errorf("pread modes make one syscall per read: %q", m[0])
		}
	}
	if !strings.Contains(out, "randread_batch : 1 MiB file, ") || !strings.Contains(out, "256 reads of 4 KiB in batches of 32") {
		t.Errorf("randread_batch header missing:\n%s", out)
	}
	scans := scanLineRE.FindAllStringSubmatch(out, -1)
	if len(scans) != 3 {
		t.Fatalf("%d scan_direct mode lines, want 3:\n%s", len(scans), out)
	}
	for _, s := range scans {
		if s[1] == "buffered-cold" && s[2] == "" {
			t.Errorf("the buffered scan must always run: %q", s[0])
		}
		if s[2] != "" && s[2] != "2260" {
			t.Errorf("scan saw %s entries, want the 2260 written: %q", s[2], s[0])
		}
	}
	if !regexp.MustCompile(`(?m)^scan_direct : readahead speedup \(off time / on time\) (n/a|[\d.]+x), direct-readahead-32 time / buffered-cold time (n/a|[\d.]+x)$`).MatchString(out) {
		t.Errorf("scan_direct ratio line missing:\n%s", out)
	}
	if strings.Contains(out, "micros/op") && regexp.MustCompile(`(?m)^(randread_batch|scan_direct) .*micros/op`).MatchString(out) {
		t.Errorf("file-layer benchmarks printed a db_bench line:\n%s", out)
	}
}

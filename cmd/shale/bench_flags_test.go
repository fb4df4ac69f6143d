package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale"
)

// TestBenchDBBenchFlagsReachOptions: db_bench's LSM, write-path and data
// flags parse into the configuration and from there reach shale.Options,
// the WriteOptions and the value generator.
func TestBenchDBBenchFlagsReachOptions(t *testing.T) {
	cfg := parseBench(t, "--target_file_size_base", "8388608", "--max_bytes_for_level_base", "33554432",
		"--max_bytes_for_level_multiplier", "8.5", "--level0_file_num_compaction_trigger", "3",
		"--level0_slowdown_writes_trigger", "9", "--level0_stop_writes_trigger", "17",
		"--max_background_jobs", "5", "--max_write_buffer_number", "4", "--disable_wal",
		"--open_files", "500", "--compression_ratio", "0.25", "--stats_interval_seconds", "7",
		"--use_existing_keys", "--use_existing_db", "--readwritepercent", "35", "--reads", "12",
		"--rate_limiter_bytes_per_sec", "1048576")
	got := fmt.Sprintf("%d %d %g %d %d %d %d %d %v %d %g %v %v %d %d %v", cfg.targetFileSizeBase, cfg.maxBytesForLevelBase,
		cfg.maxBytesForLevelMultiplier, cfg.level0FileNumCompactionTrigger, cfg.level0SlowdownWritesTrigger,
		cfg.level0StopWritesTrigger, cfg.maxBackgroundJobs, cfg.maxWriteBufferNumber, cfg.disableWAL, cfg.openFiles,
		cfg.compressionRatio, cfg.statsInterval, cfg.useExistingKeys, cfg.readWritePercent, cfg.reads, cfg.readsSet)
	if want := "8388608 33554432 8.5 3 9 17 5 4 true 500 0.25 7s true 35 12 true"; got != want {
		t.Fatalf("parsed %s\n          want %s", got, want)
	}
	r := &benchRunner{cfg: cfg}
	o, err := r.options()
	if err != nil {
		t.Fatal(err)
	}
	got = fmt.Sprintf("%d %d %g %d %d %d %d %d %d", o.TargetFileSizeBase, o.MaxBytesForLevelBase, o.MaxBytesForLevelMultiplier,
		o.Level0FileNumCompactionTrigger, o.Level0SlowdownWritesTrigger, o.Level0StopWritesTrigger,
		o.MaxBackgroundJobs, o.MaxWriteBufferNumber, o.MaxOpenFiles)
	if want := "8388608 33554432 8.5 3 9 17 5 4 500"; got != want {
		t.Fatalf("Options got %s\n        want %s", got, want)
	}
	if o.RateLimiter == nil || o.RateLimiter.BytesPerSecond() != 1<<20 {
		t.Errorf("--rate_limiter_bytes_per_sec 1048576: Options.RateLimiter %v", o.RateLimiter)
	}
	if err := o.EnsureDefaults().Validate(); err != nil {
		t.Fatalf("the flags make invalid Options: %v", err)
	}
	r.cfg.useExistingKeys = false // there is no database to read keys from
	restore, err := r.beginBenchmark(benchSpecs["overwrite"])
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if !r.wo.DisableWAL || r.wo.Sync {
		t.Errorf("--disable_wal: WriteOptions %+v, want DisableWAL and no Sync", *r.wo)
	}
	if r.valuesRatio != 0.25 {
		t.Errorf("values made for ratio %g, want --compression_ratio 0.25", r.valuesRatio)
	}
}

// TestBenchDBBenchFlagDefaults: without the flags, bench passes RocksDB's
// defaults (which are shale's) and honours --open_files' default, -1.
func TestBenchDBBenchFlagDefaults(t *testing.T) {
	cfg := parseBench(t)
	got := fmt.Sprintf("%d %d %g %d %d %d %d %d %v %d %g %v %v %d %v", cfg.targetFileSizeBase, cfg.maxBytesForLevelBase,
		cfg.maxBytesForLevelMultiplier, cfg.level0FileNumCompactionTrigger, cfg.level0SlowdownWritesTrigger,
		cfg.level0StopWritesTrigger, cfg.maxBackgroundJobs, cfg.maxWriteBufferNumber, cfg.disableWAL, cfg.openFiles,
		cfg.compressionRatio, cfg.statsInterval, cfg.useExistingKeys, cfg.readWritePercent, cfg.readsSet)
	if want := "67108864 268435456 10 4 20 36 2 2 false -1 0.5 0s false 90 false"; got != want {
		t.Fatalf("defaults %s\n    want %s", got, want)
	}
}

// TestBenchDBBenchFlagErrors: a bad value of a new flag fails before the
// directory is touched, with an error that names the flag, never an
// Options field or the directory, whether bench or Options.Validate found
// it.
func TestBenchDBBenchFlagErrors(t *testing.T) {
	cases := []struct {
		edit func(c *benchConfig)
		want string
	}{
		{func(c *benchConfig) { c.targetFileSizeBase = 0 }, "--target_file_size_base must be positive, got 0"},
		{func(c *benchConfig) { c.targetFileSizeBase = 1000 }, "--target_file_size_base must be at least 4 KiB, got 1000"},
		{func(c *benchConfig) { c.maxBytesForLevelBase = -1 }, "--max_bytes_for_level_base must be positive, got -1"},
		{func(c *benchConfig) { c.maxBytesForLevelMultiplier = 0 }, "--max_bytes_for_level_multiplier must be positive, got 0"},
		{func(c *benchConfig) { c.maxBytesForLevelMultiplier = math.NaN() }, "--max_bytes_for_level_multiplier must be positive, got NaN"},
		{func(c *benchConfig) { c.maxBytesForLevelMultiplier = 1.5 }, "--max_bytes_for_level_multiplier must be between 2 and 1000, got 1.5"},
		{func(c *benchConfig) { c.level0FileNumCompactionTrigger = 0 }, "--level0_file_num_compaction_trigger must be positive, got 0"},
		{func(c *benchConfig) { c.level0FileNumCompactionTrigger = 30 },
			"--level0_slowdown_writes_trigger (20) must be >= --level0_file_num_compaction_trigger (30)"},
		{func(c *benchConfig) { c.level0SlowdownWritesTrigger = 0 }, "--level0_slowdown_writes_trigger must be positive, got 0"},
		{func(c *benchConfig) { c.level0StopWritesTrigger = 10 },
			"--level0_stop_writes_trigger (10) must be >= --level0_slowdown_writes_trigger (20)"},
		{func(c *benchConfig) { c.maxBackgroundJobs = 0 }, "--max_background_jobs must be positive, got 0"},
		{func(c *benchConfig) { c.maxBackgroundJobs = 65 }, "--max_background_jobs must be between 1 and 64, got 65"},
		{func(c *benchConfig) { c.maxWriteBufferNumber = 1 }, "--max_write_buffer_number must be at least 2, got 1"},
		{func(c *benchConfig) { c.openFiles = -2 }, "--open_files must be positive, or -1 to keep every file open, got -2"},
		{func(c *benchConfig) { c.compressionRatio = -0.5 }, "--compression_ratio must be a fraction >= 0"},
		{func(c *benchConfig) { c.compressionRatio = math.Inf(1) }, "--compression_ratio must be a fraction >= 0"},
		{func(c *benchConfig) { c.statsInterval = -time.Second }, "--stats_interval_seconds must be >= 0, got -1"},
		{func(c *benchConfig) { c.readWritePercent = 101 }, "--readwritepercent must be between 0 and 100, got 101"},
		{func(c *benchConfig) { c.rateLimiterBytesPerSec = -1 }, "--rate_limiter_bytes_per_sec must be >= 0 (0: no limit), got -1"},
		{func(c *benchConfig) { c.disableWAL, c.sync = true, true }, "--sync and --disable_wal exclude each other"},
		{func(c *benchConfig) { c.disableWAL, c.benchmarks = true, []string{"fillsync"} }, "fillsync syncs every write's WAL record, which --disable_wal turns off"},
		{func(c *benchConfig) { c.useExistingKeys = true }, "--use_existing_keys needs --use_existing_db"},
	}
	for _, c := range cases {
		cfg := tinyConfig(t, "fillseq")
		c.edit(&cfg)
		_, err := runBenchmarks(&bytes.Buffer{}, &bytes.Buffer{}, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v", c.want, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "Options.") || strings.Contains(msg, cfg.db) {
			t.Errorf("error %q names an Options field or the directory", msg)
		}
	}
}

// TestBenchDBBenchFlagErrorsFromTheCommandLine: the same through the
// command, as a user types it.
func TestBenchDBBenchFlagErrorsFromTheCommandLine(t *testing.T) {
	_, _, err := run(t, "bench", "--benchmarks", "fillseq", "--num", "10", "--level0_stop_writes_trigger", "3")
	if err == nil || !strings.Contains(err.Error(), "--level0_stop_writes_trigger (3) must be >= --level0_slowdown_writes_trigger (20)") {
		t.Fatalf("got %v", err)
	}
	_, _, err = run(t, "bench", "--benchmarks", "fillseq", "--num", "10", "--readwritepercent", "-1")
	if err == nil || !strings.Contains(err.Error(), "--readwritepercent must be between 0 and 100, got -1") {
		t.Fatalf("got %v", err)
	}
}

// TestBenchOpenFiles: --open_files becomes Options.MaxOpenFiles (the
// OPTIONS file of the run's database records it): -1, the default, keeps
// every table open, 0 is shale's default, and no notice says otherwise.
func TestBenchOpenFiles(t *testing.T) {
	for n, want := range map[int]string{-1: "-1", 0: "1000", 16: "16"} {
		cfg := tinyConfig(t, "fillseq,readrandom")
		cfg.openFiles = n
		var out, progress bytes.Buffer
		if _, err := runBenchmarks(&out, &progress, cfg); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(progress.String(), "open_files") {
			t.Errorf("--open_files %d: bench still prints a notice:\n%s", n, progress.String())
		}
		if got := optionsFileValue(t, cfg.db, "max_open_files"); got != want {
			t.Errorf("--open_files %d: the database's OPTIONS say max_open_files=%s, want %s", n, got, want)
		}
	}
	help, _, err := run(t, "bench", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"cannot be honoured", "NOT HONOURED"} {
		if strings.Contains(help, gone) {
			t.Errorf("--help still says %q", gone)
		}
	}
	if !strings.Contains(help, "-1 keeps every table open") {
		t.Errorf("--help does not say what --open_files -1 does:\n%s", help)
	}
}

// optionsFileValue returns key's value in the newest OPTIONS file of db.
func optionsFileValue(t *testing.T, db, key string) string {
	t.Helper()
	names, err := os.ReadDir(db)
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	for _, e := range names {
		if strings.HasPrefix(e.Name(), "OPTIONS-") && e.Name() > newest {
			newest = e.Name()
		}
	}
	if newest == "" {
		t.Fatalf("no OPTIONS file in %s", db)
	}
	data, err := os.ReadFile(filepath.Join(db, newest))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k == key {
			return v
		}
	}
	t.Fatalf("%s has no %s", newest, key)
	return ""
}

// TestBenchIndexAndFilterCacheFlags: --cache_index_and_filter_blocks and
// --pin_l0_filter_and_index_blocks_in_cache reach Options (and the run's
// OPTIONS file); both are off unless given.
func TestBenchIndexAndFilterCacheFlags(t *testing.T) {
	for _, args := range [][]string{nil, {"--cache_index_and_filter_blocks"},
		{"--cache_index_and_filter_blocks", "--pin_l0_filter_and_index_blocks_in_cache"}} {
		cfg := parseBench(t, args...)
		r := &benchRunner{cfg: cfg}
		o, err := r.options()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%v %v", len(args) >= 1, len(args) == 2)
		if got := fmt.Sprintf("%v %v", o.CacheIndexAndFilterBlocks, o.PinL0FilterAndIndexBlocksInCache); got != want {
			t.Errorf("%v: Options got %s, want %s", args, got, want)
		}
	}
	cfg := tinyConfig(t, "fillseq,readrandom")
	cfg.cacheIndexAndFilterBlocks, cfg.pinL0FilterAndIndexBlocks = true, true
	var out, progress bytes.Buffer
	if _, err := runBenchmarks(&out, &progress, cfg); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"cache_index_and_filter_blocks", "pin_l0_filter_and_index_blocks_in_cache"} {
		if got := optionsFileValue(t, cfg.db, key); got != "true" {
			t.Errorf("the database's OPTIONS say %s=%s, want true", key, got)
		}
	}
}

// TestBenchDeletePersistenceFlag: --delete_persistence_threshold takes
// seconds or a Go duration, reaches Options and the run's OPTIONS file, is
// off unless given, and a bad value is refused naming the flag.
func TestBenchDeletePersistenceFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"--delete_persistence_threshold", "2.5"}, 2500 * time.Millisecond},
		{[]string{"--delete_persistence_threshold", "60"}, time.Minute},
		{[]string{"--delete_persistence_threshold", "1m30s"}, 90 * time.Second},
	} {
		cfg := parseBench(t, tc.args...)
		r := &benchRunner{cfg: cfg}
		o, err := r.options()
		if err != nil {
			t.Fatal(err)
		}
		if o.DeletePersistenceThreshold != tc.want {
			t.Errorf("%v: Options.DeletePersistenceThreshold = %v, want %v", tc.args, o.DeletePersistenceThreshold, tc.want)
		}
	}
	for _, bad := range []string{"-1", "-2s", "soon", "NaN"} {
		_, _, err := run(t, "bench", "--delete_persistence_threshold", bad)
		if err == nil || !strings.Contains(err.Error(), "--delete_persistence_threshold") {
			t.Errorf("--delete_persistence_threshold %s: error %v, want one naming the flag", bad, err)
		}
	}
	cfg := tinyConfig(t, "fillrandom,deleterandom")
	cfg.deletePersistence = 3 * time.Second
	var out, progress bytes.Buffer
	if _, err := runBenchmarks(&out, &progress, cfg); err != nil {
		t.Fatal(err)
	}
	if got := optionsFileValue(t, cfg.db, "delete_persistence_threshold"); got != "3s" {
		t.Errorf("the database's OPTIONS say delete_persistence_threshold=%s, want 3s", got)
	}
}

// TestBenchBlobFlagsReachOptions: db_bench's blob flags reach the Options
// fields of the same RocksDB names, and a bad compression is refused.
func TestBenchBlobFlagsReachOptions(t *testing.T) {
	cfg := parseBench(t, "--enable_blob_files", "--min_blob_size", "512", "--blob_file_size", "1048576",
		"--blob_compression_type", "zstd", "--enable_blob_garbage_collection",
		"--blob_garbage_collection_age_cutoff", "0.5", "--blob_garbage_collection_force_threshold", "0.8",
		"--blob_file_starting_level", "1", "--blob_cache_size", "4194304")
	r := &benchRunner{cfg: cfg}
	o, err := r.options()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%v %d %d %v %v %g %g %d %d", o.EnableBlobFiles, o.MinBlobSize, o.BlobFileSize, o.BlobCompression,
		o.EnableBlobGarbageCollection, o.BlobGarbageCollectionAgeCutoff, o.BlobGarbageCollectionForceThreshold,
		o.BlobFileStartingLevel, o.BlobCacheSize)
	if want := "true 512 1048576 zstd true 0.5 0.8 1 4194304"; got != want {
		t.Fatalf("Options got %s\n        want %s", got, want)
	}
	if err := o.EnsureDefaults().Validate(); err != nil {
		t.Fatalf("the flags make invalid Options: %v", err)
	}
	def := parseBench(t)
	if o, err := (&benchRunner{cfg: def}).options(); err != nil || o.EnableBlobFiles || o.BlobFileSize != 256<<20 || o.BlobGarbageCollectionAgeCutoff != 0.25 {
		t.Fatalf("defaults: %v, EnableBlobFiles %v, BlobFileSize %d, age cutoff %g", err, o.EnableBlobFiles, o.BlobFileSize, o.BlobGarbageCollectionAgeCutoff)
	}
	def.blobCompression = "lz5"
	if err := def.validate(); err == nil || !strings.Contains(err.Error(), "--blob_compression_type") {
		t.Fatalf("--blob_compression_type lz5: %v", err)
	}
}

// TestBenchPrintsAmplification: a run ends with its write amplification and
// what is on disk, blob files and their garbage included when there are.
func TestBenchPrintsAmplification(t *testing.T) {
	cfg := tinyConfig(t, "fillrandom,overwrite,compact")
	cfg.valueSize = 2000
	cfg.enableBlobFiles = true
	cfg.minBlobSize = 1000
	_, out, _ := runBenchOutput(t, cfg)
	if !regexp.MustCompile(`(?m)^Write amplification: \d+\.\d\d \(\d+ user bytes written; flushes \d+, compactions \d+ bytes\)$`).MatchString(out) {
		t.Errorf("no write amplification line:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^On disk: \d+\.\d MiB in tables, \d+\.\d MiB in \d+ blob files \(\d+\.\d MiB garbage: blob space amplification \d+\.\d\d\)$`).MatchString(out) {
		t.Errorf("no space line with blob files:\n%s", out)
	}
	for _, when := range []string{`at the end`, `once compactions are idle \(after [^)]+\)`} {
		if !regexp.MustCompile(`(?m)^Space amplification ` + when + `: \d+\.\d\d \(\d+\.\d MiB on disk: \d+\.\d in tables, \d+\.\d in blob files, \d+\.\d in WALs, \d+\.\d other; \d+\.\d MiB of live data \(keys and values\) in [1-9]\d* keys, scanned in [^)]+\)$`).MatchString(out) {
			t.Errorf("no space amplification line %q:\n%s", when, out)
		}
	}
}

// TestBenchPartitionedIndexFlags: --index_type, --partition_index_and_filters
// and --metadata_block_size reach Options as db_bench's do, and an index
// type shale does not have is refused naming the flag.
func TestBenchPartitionedIndexFlags(t *testing.T) {
	for _, tc := range []struct {
		args              []string
		want              shale.IndexType
		partition         bool
		metadataBlockSize int
	}{
		{nil, shale.BinarySearchIndex, false, 0},
		{[]string{"--index_type", "2"}, shale.TwoLevelIndexSearch, false, 0},
		{[]string{"--partition_index_and_filters", "--metadata_block_size", "8192"}, shale.TwoLevelIndexSearch, true, 8192},
	} {
		r := &benchRunner{cfg: parseBench(t, tc.args...)}
		o, err := r.options()
		if err != nil {
			t.Fatal(err)
		}
		if o.IndexType != tc.want || o.PartitionFilters != tc.partition || o.MetadataBlockSize != tc.metadataBlockSize {
			t.Errorf("%v: Options got %s %v %d", tc.args, o.IndexType, o.PartitionFilters, o.MetadataBlockSize)
		}
	}
	r := &benchRunner{cfg: parseBench(t, "--index_type", "1")}
	if _, err := r.options(); err == nil || !strings.Contains(err.Error(), "--index_type") {
		t.Errorf("--index_type=1: %v, want an error naming the flag", err)
	}
	cfg := tinyConfig(t, "fillseq,readrandom,seekrandom")
	cfg.partitionIndexAndFilters, cfg.metadataBlockSize = true, 256
	var out, progress bytes.Buffer
	if _, err := runBenchmarks(&out, &progress, cfg); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"index_type": "kTwoLevelIndexSearch", "partition_filters": "true", "metadata_block_size": "256"} {
		if got := optionsFileValue(t, cfg.db, key); got != want {
			t.Errorf("the database's OPTIONS say %s=%s, want %s", key, got, want)
		}
	}
}

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/benchdata"
)

// The db_bench workloads and settings of issue 10: fillsync, fill100K,
// readmissing, readhot, updaterandom and readrandomwriterandom, with the
// per-benchmark setup db_bench does before each benchmark (beginBenchmark),
// --use_existing_keys, --compression_ratio, --stats_interval_seconds and
// --open_files (Options.MaxOpenFiles). Their meanings follow RocksDB's tools/db_bench_tool.cc
// (readhot, which RocksDB dropped, LevelDB's db_bench).

// fill100KValueSize is the value size of fill100K: db_bench's 100 * 1000.
const fill100KValueSize = 100 * 1000

// beginBenchmark prepares the run for one benchmark as db_bench does at
// the start of each: the benchmark's own key count, value size and write
// options (fillsync writes --num/1000 random entries with sync, fill100K
// --num/1000 of 100 KB values; --disable_wal for all), values that
// compress to --compression_ratio, the keys of --use_existing_keys (read
// once, before the first benchmark), and --statistics counted from zero, so
// that what it prints after the benchmark is the benchmark's own. restore
// puts back the per-benchmark changes to r.cfg.
func (r *benchRunner) beginBenchmark(spec benchSpec) (restore func(), err error) {
	if r.cfg.useExistingKeys && r.keys == nil {
		if err := r.loadExistingKeys(); err != nil {
			return nil, err
		}
	}
	saved := r.cfg
	c := &r.cfg
	if spec.numDivisor > 0 {
		c.num /= spec.numDivisor
	}
	if spec.valueSize > 0 {
		c.valueSize = spec.valueSize
	}
	if spec.defaultValueSize > 0 && !c.valueSizeSet {
		c.valueSize = spec.defaultValueSize
	}
	if c.statsInterval > 0 {
		// db_bench prints the interval lines instead of its progress lines.
		c.progressEvery = 0
	}
	r.wo = &shale.WriteOptions{Sync: c.sync || spec.sync, DisableWAL: c.disableWAL}
	r.useValues()
	// The interval lines count what the threads finished; threads add
	// their ops to r.done in steps, each op when the lines are printed
	// (one shared atomic add per op), else every 1024.
	r.doneBatch = 1024
	if c.report != "" || c.progressOut != nil {
		// The report's per-second rates and the progress line are read
		// from r.done: keep it close behind.
		r.doneBatch = 16
	}
	if c.statsInterval > 0 {
		r.doneBatch = 1
	}
	r.stats.Reset()
	return func() { r.cfg = saved }, nil
}

// useValues makes r.values, the bytes values are cut from, large enough for
// --value_size and compressible to --compression_ratio: db_bench's
// RandomGenerator (at least 1 MiB; values above 1 compress as 1 does).
func (r *benchRunner) useValues() {
	ratio := min(r.cfg.compressionRatio, 1)
	n := max(1<<20, 2*r.cfg.valueSize)
	if len(r.values) >= n && r.valuesRatio == ratio {
		return
	}
	r.values = benchdata.CompressibleBytes(n, ratio)
	r.valuesRatio = ratio
}

// compressedValueSize is the size values compress to, for the header.
func (c *benchConfig) compressedValueSize() int {
	return int(float64(c.valueSize)*min(c.compressionRatio, 1) + 0.5)
}

// loadExistingKeys reads the keys of the database for --use_existing_keys:
// from then on key number k is the k-th key of the database, and --num
// (and --reads, unless it was given) is their count, as db_bench sets
// FLAGS_num.
func (r *benchRunner) loadExistingKeys() error {
	it := r.db.NewIterator(nil)
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return fmt.Errorf("--use_existing_keys: reading the keys of the database: %w", err)
	}
	if len(keys) == 0 {
		return errors.New("--use_existing_keys: the database in --db holds no keys")
	}
	if !r.cfg.readsSet && r.cfg.reads == r.cfg.num {
		r.cfg.reads = int64(len(keys))
	}
	r.cfg.num = int64(len(keys))
	r.keys = keys
	fmt.Fprintf(r.progress, "--use_existing_keys: %d keys read from the database\n", len(keys))
	return nil
}

// setBatchKey makes keys[i] key number k: formatted into its buffer, or,
// with --use_existing_keys, the existing key itself (then no buffer is
// ever formatted into, so sharing the key's bytes is safe).
func (t *benchThread) setBatchKey(keys [][]byte, i int, k int64) {
	if existing := t.runner.keys; existing != nil {
		keys[i] = existing[k]
		return
	}
	t.runner.cfg.formatKey(keys[i], k)
}

// readKeys is readrandom with the keys chosen by key: --reads Gets (or
// for --duration), counting those that found their key.
func (r *benchRunner) readKeys(t *benchThread, key func() []byte) error {
	for i := int64(0); t.more(i, r.cfg.reads, true); i++ {
		bytes, err := r.countedGet(t, key())
		if err != nil {
			return err
		}
		t.finished(1, bytes)
	}
	return nil
}

// countedGet reads k into the thread's buffer, counting the read and
// whether it found k, and returns the bytes of the key and value found (0
// when not found).
func (r *benchRunner) countedGet(t *benchThread, k []byte) (bytes int64, err error) {
	v, err := r.db.AppendValue(t.readBuf[:0], k, r.ro)
	t.readBuf = v
	t.reads++
	switch {
	case err == nil:
		t.found++
		return int64(len(k) + len(v)), nil
	case errors.Is(err, shale.ErrNotFound):
		return 0, nil
	}
	return 0, err
}

// benchReadMissing is db_bench's readmissing: readrandom of keys that are
// not in the database, each a key of the key space with '.' appended
// (LevelDB's "%016d."; RocksDB makes the key one byte longer), so the
// reads go down the same paths as readrandom's and find nothing.
func benchReadMissing(r *benchRunner, t *benchThread) error {
	missing := make([]byte, 0, r.cfg.keySize+1)
	return r.readKeys(t, func() []byte {
		missing = append(append(missing[:0], t.randomKey()...), '.')
		return missing
	})
}

// benchReadHot is db_bench's readhot (LevelDB): readrandom of the first
// 1% of the key space, (--num+99)/100 keys.
func benchReadHot(r *benchRunner, t *benchThread) error {
	hot := (r.cfg.num + 99) / 100
	return r.readKeys(t, func() []byte { return t.makeKey(t.rng.Int64N(hot)) })
}

// benchUpdateRandom is db_bench's updaterandom, read-modify-write of random
// keys: each op Gets a key and Puts a new value for it, whether or not it
// was found; --reads ops (db_bench's max of --reads and --writes; bench has
// no --writes) or --duration. Bytes are those read and written.
func benchUpdateRandom(r *benchRunner, t *benchThread) error {
	for i := int64(0); t.more(i, r.cfg.reads, true); i++ {
		k := t.randomKey()
		bytes, err := r.countedGet(t, k)
		if err != nil {
			return err
		}
		nv := t.value()
		if err := r.db.Put(k, nv, r.wo); err != nil {
			return err
		}
		t.finished(1, bytes+int64(len(k)+len(nv)))
	}
	return nil
}

// benchMergeRandom is db_bench's mergerandom: --num Merges of random keys
// under --merge_operator (8-byte counters for uint64add, else
// --value_size-byte values), on each thread or for --duration.
func benchMergeRandom(r *benchRunner, t *benchThread) error {
	if r.cfg.mergeOperator == "" {
		return fmt.Errorf("mergerandom needs --merge_operator (uint64add or stringappend)")
	}
	var counter [8]byte
	for i := int64(0); t.more(i, r.cfg.num, true); i++ {
		k := t.randomKey()
		v := t.value()
		if r.cfg.mergeOperator == "uint64add" {
			binary.LittleEndian.PutUint64(counter[:], uint64(i)+1)
			v = counter[:]
		}
		if err := r.db.Merge(k, v, r.wo); err != nil {
			return err
		}
		t.finished(1, int64(len(k)+len(v)))
	}
	return nil
}

// benchMergeOperator returns the merge operator --merge_operator names.
func benchMergeOperator(name string) (shale.MergeOperator, error) {
	switch name {
	case "":
		return nil, nil
	case "uint64add":
		return shale.UInt64AddOperator, nil
	case "stringappend":
		return shale.StringAppendOperator(","), nil
	}
	return nil, fmt.Errorf("--merge_operator %q: want uint64add or stringappend", name)
}

// updateMessage is updaterandom's message: "( updates:N found:F)".
func updateMessage(res *benchResult) string {
	return fmt.Sprintf("( updates:%d found:%d)", res.ops, res.found)
}

// benchReadRandomWriteRandom is db_bench's readrandomwriterandom: random
// keys, of every 100 ops the first --readwritepercent Gets and the rest
// Puts, on each thread; --reads ops or --duration. Reads and writes have
// their own histograms; no bytes are counted, as in db_bench.
func benchReadRandomWriteRandom(r *benchRunner, t *benchThread) error {
	var gets, puts int
	for i := int64(0); t.more(i, r.cfg.reads, true); i++ {
		k := t.randomKey()
		if gets == 0 && puts == 0 {
			gets, puts = r.cfg.readWritePercent, 100-r.cfg.readWritePercent
		}
		if gets > 0 {
			gets--
			t.setOp(opRead)
			if _, err := r.countedGet(t, k); err != nil {
				return err
			}
		} else {
			puts--
			t.setOp(opWrite)
			if err := r.db.Put(k, t.value(), r.wo); err != nil {
				return err
			}
		}
		t.finished(1, 0)
	}
	return nil
}

// readWriteMessage is readrandomwriterandom's message:
// "( reads:R writes:W total:T found:F)".
func readWriteMessage(res *benchResult) string {
	return fmt.Sprintf("( reads:%d writes:%d total:%d found:%d)", res.reads, res.ops-res.reads, res.ops, res.found)
}

// startStatsInterval prints db_bench's --stats_interval_seconds line on the
// progress writer every interval while a benchmark runs:
//
//	2025/01/02-15:04:05 ... thread 0: (1000,5000) ops and (1000.0,1250.0) ops/second in (1.000000,4.000000) seconds
//
// the ops, the rate and the seconds of the last interval and of the whole
// benchmark. db_bench prints one line per thread; this one counts the
// benchmark's threads together and names them (threads 0-3). The returned
// func stops it.
func (r *benchRunner) startStatsInterval(threads int) func() {
	every := r.cfg.statsInterval
	if every <= 0 || r.progress == nil {
		return func() {}
	}
	who := "thread 0"
	if threads > 1 {
		who = fmt.Sprintf("threads 0-%d", threads-1)
	}
	start := time.Now()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		last, lastDone := start, int64(0)
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				done := r.done.Load()
				fmt.Fprintln(r.progress, statsIntervalLine(now, who, done-lastDone, done, now.Sub(last), now.Sub(start)))
				last, lastDone = now, done
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

// statsIntervalLine formats one --stats_interval_seconds line.
func statsIntervalLine(now time.Time, who string, ops, total int64, interval, elapsed time.Duration) string {
	rate := func(n int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	return fmt.Sprintf("%s ... %s: (%d,%d) ops and (%.1f,%.1f) ops/second in (%.6f,%.6f) seconds",
		now.Format("2006/01/02-15:04:05"), who, ops, total, rate(ops, interval), rate(total, elapsed),
		interval.Seconds(), elapsed.Seconds())
}

// validateWorkloadFlags checks the flags of issue 10. The Options ones are
// checked here only for what shale would otherwise take as "the default"
// (zero) or cannot mean; their bounds and how they relate (the L0
// triggers) are Options.Validate's, whose errors name the flags
// (benchOptionFlags).
func (c *benchConfig) validateWorkloadFlags() error {
	for _, f := range []struct {
		flag string
		v    int64
	}{
		{"--target_file_size_base", c.targetFileSizeBase},
		{"--max_bytes_for_level_base", c.maxBytesForLevelBase},
		{"--level0_file_num_compaction_trigger", int64(c.level0FileNumCompactionTrigger)},
		{"--level0_slowdown_writes_trigger", int64(c.level0SlowdownWritesTrigger)},
		{"--level0_stop_writes_trigger", int64(c.level0StopWritesTrigger)},
		{"--max_background_jobs", int64(c.maxBackgroundJobs)},
		{"--max_write_buffer_number", int64(c.maxWriteBufferNumber)},
	} {
		if f.v < 1 {
			return fmt.Errorf("%s must be positive, got %d", f.flag, f.v)
		}
	}
	switch {
	case !(c.maxBytesForLevelMultiplier > 0) || math.IsInf(c.maxBytesForLevelMultiplier, 0):
		return fmt.Errorf("--max_bytes_for_level_multiplier must be positive, got %g", c.maxBytesForLevelMultiplier)
	case !(c.compressionRatio >= 0) || math.IsInf(c.compressionRatio, 0):
		return fmt.Errorf("--compression_ratio must be a fraction >= 0 (1 or more: incompressible), got %g", c.compressionRatio)
	case c.statsInterval < 0:
		return fmt.Errorf("--stats_interval_seconds must be >= 0, got %d", int64(c.statsInterval.Seconds()))
	case c.rateLimiterBytesPerSec < 0:
		return fmt.Errorf("--rate_limiter_bytes_per_sec must be >= 0 (0: no limit), got %d", c.rateLimiterBytesPerSec)
	case c.readWritePercent < 0 || c.readWritePercent > 100:
		return fmt.Errorf("--readwritepercent must be between 0 and 100, got %d", c.readWritePercent)
	case c.disableWAL && c.sync:
		return errors.New("--sync and --disable_wal exclude each other: a synced write is one whose WAL record is synced")
	case c.disableWAL && slices.Contains(c.benchmarks, "fillsync"):
		return errors.New("fillsync syncs every write's WAL record, which --disable_wal turns off")
	case c.useExistingKeys && !c.useExistingDB:
		return errors.New("--use_existing_keys needs --use_existing_db: a fresh run starts from an empty database")
	}
	return nil
}

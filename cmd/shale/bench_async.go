package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// The benchmarks of the async read path (issue 5): multireadrandom,
// fillseqdeterministic and the asyncio suite. See docs/async-io.md.

// readOptions returns the ReadOptions of the read benchmarks.
func (c *benchConfig) readOptions() *shale.ReadOptions {
	return &shale.ReadOptions{
		ReadaheadSize:         c.readaheadSize,
		AsyncIO:               c.asyncIO,
		OptimizeMultiGetForIO: c.optimizeMultiGetForIO,
		// --optimize_multiget_for_io=false: the zero ReadOptions reads the
		// levels at once, so the flag's false must be said.
		MultiGetOneLevelAtATime: !c.optimizeMultiGetForIO,
		PrefixSameAsStart:       c.prefixSameAsStart,
		TotalOrderSeek:          c.totalOrderSeek,
	}
}

// newBatchKeys returns n key buffers of keySize bytes.
func newBatchKeys(n, keySize int) [][]byte {
	keys := make([][]byte, n)
	buf := make([]byte, n*keySize)
	for i := range keys {
		keys[i] = buf[i*keySize : (i+1)*keySize : (i+1)*keySize]
	}
	return keys
}

// fillBatchKeys chooses the keys of one multireadrandom batch: random keys,
// or with --multiread_stride the keys start + i*stride from a random start
// (wrapping at --num).
func (t *benchThread) fillBatchKeys(keys [][]byte) {
	c := &t.runner.cfg
	if c.multireadStride == 0 {
		for i := range keys {
			t.setBatchKey(keys, i, t.rng.Int64N(c.num))
		}
		return
	}
	span := int64(len(keys)-1) * c.multireadStride
	start := t.rng.Int64N(max(1, c.num-span))
	for i := range keys {
		t.setBatchKey(keys, i, (start+int64(i)*c.multireadStride)%c.num)
	}
}

// readBatch reads keys with ro: one MultiGet when batched, else a loop of
// Get. It returns how many were found and the bytes of their keys and
// values; errors other than ErrNotFound fail it.
func (r *benchRunner) readBatch(keys [][]byte, ro *shale.ReadOptions, batched bool) (found, bytes int64, err error) {
	if !batched {
		for _, k := range keys {
			v, err := r.db.Get(k, ro)
			switch {
			case err == nil:
				found++
				bytes += int64(len(k) + len(v))
			case !errors.Is(err, shale.ErrNotFound):
				return found, bytes, err
			}
		}
		return found, bytes, nil
	}
	values, errs := r.db.MultiGet(keys, ro)
	for i, err := range errs {
		switch {
		case err == nil:
			found++
			bytes += int64(len(keys[i]) + len(values[i]))
		case !errors.Is(err, shale.ErrNotFound):
			return found, bytes, fmt.Errorf("MultiGet key %q: %w", keys[i], err)
		}
	}
	return found, bytes, nil
}

// benchMultiReadRandom is db_bench's multireadrandom: batches of
// --batch_size keys until --reads keys (or --duration); ops count keys, the
// histogram times batches.
func benchMultiReadRandom(r *benchRunner, t *benchThread) error {
	keys := newBatchKeys(r.cfg.batchSize, r.cfg.keySize)
	for i := int64(0); t.more(i, r.cfg.reads, true); {
		batch := keys
		if r.cfg.duration == 0 {
			batch = keys[:min(int64(len(keys)), r.cfg.reads-i)]
		}
		t.fillBatchKeys(batch)
		found, bytes, err := r.readBatch(batch, r.ro, r.cfg.multireadBatched)
		if err != nil {
			return err
		}
		n := int64(len(batch))
		t.reads += n
		t.found += found
		i += n
		t.finished(n, bytes)
	}
	return nil
}

// detRun is one run of fillseqdeterministic: the keys it holds go to
// level (L0 runs are flushed and stay there); weight is its share of the
// keys.
type detRun struct {
	level  int
	weight uint64
}

// deterministicRuns returns the runs of fillseqdeterministic in build
// order: the last level first, up to L1, then four L0 runs, largest first
// (so the smallest is the newest file). The weights are RocksDB's published
// shape for 4 levels — L0 files 1, 2, 4, 8; L1 16; L2 32; L3 60 — and in
// general L1 16, each level twice the one above, and the last level 15/16
// of twice the one above.
func deterministicRuns(numLevels int) []detRun {
	last := numLevels - 1
	var runs []detRun
	for l := last; l >= 1; l-- {
		w := uint64(16) << (l - 1)
		if l == last {
			w = w / 16 * 15
		}
		runs = append(runs, detRun{level: l, weight: w})
	}
	for _, w := range []uint64{8, 4, 2, 1} {
		runs = append(runs, detRun{level: 0, weight: w})
	}
	return runs
}

// detOwner returns the index in runs of the run key k belongs to: a hash of
// k (fixed, not seeded, so that every build is the same) picks a run with
// probability proportional to its weight.
func detOwner(runs []detRun, total uint64, k int64) int {
	// splitmix64's finalizer: consecutive keys land in unrelated runs.
	h := uint64(k) + 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	x := h % total
	for i, run := range runs {
		if x < run.weight {
			return i
		}
		x -= run.weight
	}
	return len(runs) - 1
}

// benchFillSeqDeterministic builds, in a fresh DB, an LSM with keys of the
// whole key space in every level and four L0 files (db_bench's
// fillseqdeterministic): each key of [0, num) belongs to one run; runs are
// built bottom-up, each written in key order, flushed, and compacted down
// into its level (CompactRangeWithOptions with ChangeLevel); the L0 runs
// are only flushed.
func benchFillSeqDeterministic(r *benchRunner, t *benchThread) error {
	c := &r.cfg
	runs := deterministicRuns(c.numLevels)
	var total uint64
	for _, run := range runs {
		total += run.weight
	}
	// Every run is flushed right after it is written, so the WAL would only
	// cost time.
	wo := &shale.WriteOptions{DisableWAL: true}
	b := r.db.NewBatch()
	for ri, run := range runs {
		var n, bytes int64
		write := func() error {
			if b.Len() == 0 {
				return nil
			}
			if err := r.db.Write(b, wo); err != nil {
				return err
			}
			t.finished(n, bytes)
			b.Reset()
			n, bytes = 0, 0
			return nil
		}
		for k := int64(0); k < c.num; k++ {
			if detOwner(runs, total, k) != ri {
				continue
			}
			key, val := t.makeKey(k), t.value()
			b.Put(key, val)
			n++
			bytes += int64(len(key) + len(val))
			if n == 1000 {
				if err := write(); err != nil {
					return err
				}
			}
		}
		if err := write(); err != nil {
			return err
		}
		if err := r.db.Flush(); err != nil {
			return err
		}
		if run.level > 0 {
			err := r.db.CompactRangeWithOptions(nil, nil, &shale.CompactRangeOptions{ChangeLevel: true, TargetLevel: run.level})
			if err != nil {
				return fmt.Errorf("compacting into L%d: %w", run.level, err)
			}
		}
	}
	fmt.Fprintf(r.out, "fillseqdeterministic : shape %s\n", shapeLine(r.db.Metrics()))
	if !c.disableAutoComp {
		fmt.Fprintln(r.out, "fillseqdeterministic : note: automatic compactions are on and may change this shape (use --disable_auto_compactions)")
	}
	return nil
}

// shapeLine renders files and bytes per level, e.g.
// "L0 4 files 1.2 MiB, L1 1 file 2.0 MiB, ...".
func shapeLine(m *shale.Metrics) string {
	var parts []string
	for l, lm := range m.Levels {
		s := "s"
		if lm.NumFiles == 1 {
			s = ""
		}
		parts = append(parts, fmt.Sprintf("L%d %d file%s %.1f MiB", l, lm.NumFiles, s, float64(lm.Size)/(1<<20)))
	}
	return strings.Join(parts, ", ")
}

// asyncioRounds is how many rounds the asyncio suite interleaves its modes
// in, so that machine noise falls on every mode alike.
const asyncioRounds = 3

// asyncioSeekNexts is --seek_nexts of the asyncio suite when not given:
// the long scans RocksDB measured.
const asyncioSeekNexts = 65536

// asyncMode is one mode of the asyncio suite.
type asyncMode struct {
	name string
	ro   *shale.ReadOptions
	seek bool // seekrandom with long scans; else multireadrandom (MultiGet)
}

// asyncioCachedRound is how long each mode runs per round in the cached
// phase without --duration: served from memory, --reads keys take a few
// milliseconds, too short to measure on a shared machine. A variable so
// that tests can shorten it.
var asyncioCachedRound = 400 * time.Millisecond

// asyncioCachedRounds is the number of rounds of the cached phase: more and
// shorter than the main phase's, since its ratio is a few percent and
// bursts of other work on the machine must average out.
const asyncioCachedRounds = 9

// asyncModeResult is what one mode measured over all rounds.
type asyncModeResult struct {
	mode                 asyncMode
	ops, found, bytes    int64 // ops: keys (multiread) or seeks
	units                int64 // batches or seeks, the unit the histogram times
	elapsed              time.Duration
	hist                 *hdrhistogram.Histogram // ns per batch or seek
	fileReads, asyncSubs uint64                  // table file reads, AsyncReader submissions
}

func (m *asyncModeResult) opsPerSec() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.ops) / m.elapsed.Seconds()
}

func (m *asyncModeResult) mbPerSec() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.bytes) / (1 << 20) / m.elapsed.Seconds()
}

// us returns percentile q of the histogram in microseconds.
func (m *asyncModeResult) us(q float64) float64 {
	return float64(m.hist.ValueAtQuantile(q)) / 1e3
}

// asyncioModes returns the suite's modes: three multireadrandom modes and
// two seekrandom modes.
func (c *benchConfig) asyncioModes() []asyncMode {
	ro := func(async, optimize bool) *shale.ReadOptions {
		return &shale.ReadOptions{ReadaheadSize: c.readaheadSize, AsyncIO: async, OptimizeMultiGetForIO: optimize,
			MultiGetOneLevelAtATime: !optimize}
	}
	return []asyncMode{
		{name: "multiget-off", ro: ro(false, true)},
		{name: "multiget-async-level", ro: ro(true, false)},
		{name: "multiget-async-multilevel", ro: ro(true, true)},
		{name: "seek-off", ro: ro(false, true), seek: true},
		{name: "seek-async", ro: ro(true, true), seek: true},
	}
}

// benchAsyncIO runs the asyncio suite on the current database: the modes
// of asyncioModes interleaved in rounds, then the cost check with every
// block cached. It prints one line per mode and the ratios issue 5
// targets.
func benchAsyncIO(r *benchRunner, _ *benchThread) error {
	c := &r.cfg
	if !c.seekNextsSet {
		defer func(n int) { c.seekNexts = n }(c.seekNexts) // later benchmarks keep theirs
		c.seekNexts = asyncioSeekNexts
	}
	modes := c.asyncioModes()
	env := "local file system"
	if l, ok := r.fs.(*latencyfs.FS); ok {
		env = fmt.Sprintf("latency FS %dus", l.Options().ReadLatency.Microseconds())
	}
	m := r.db.Metrics()
	fmt.Fprintf(r.out, "asyncio : shape %s\n", shapeLine(m))
	fmt.Fprintf(r.out, "asyncio : %s, block cache %d MiB, %d threads, MultiGet batches of %d, seekrandom with %d nexts, %d rounds\n",
		env, c.cacheSize>>20, c.threads, c.batchSize, c.seekNexts, asyncioRounds)
	results, err := r.runAsyncModes(modes, asyncioRounds, c.duration/asyncioRounds)
	if err != nil {
		return err
	}
	for i := range results {
		printAsyncMode(r, "", &results[i])
	}
	off, level, multi, seekOff, seekOn := &results[0], &results[1], &results[2], &results[3], &results[4]
	fmt.Fprintf(r.out, "asyncio : multiget ops/sec vs off: async-level %s, async-multilevel %s (target >= 2.5x); P99 multilevel/off %s (target <= 0.5x)\n",
		ratio(level.opsPerSec(), off.opsPerSec()), ratio(multi.opsPerSec(), off.opsPerSec()), ratio(multi.us(99), off.us(99)))
	fmt.Fprintf(r.out, "asyncio : scan MB/s async/off %s (target >= 1.9x)\n", ratio(seekOn.mbPerSec(), seekOff.mbPerSec()))

	// The cost side: the same work with every block in the cache, where
	// the async path can only add CPU.
	cached, err := r.runAsyncCached(modes)
	if err != nil {
		return err
	}
	for i := range cached {
		printAsyncMode(r, "cached ", &cached[i])
	}
	fmt.Fprintf(r.out, "asyncio : cached throughput on/off: multiget async-multilevel %s ops/sec, seek %s MB/s (target >= 0.9x)\n",
		ratio(cached[2].opsPerSec(), cached[0].opsPerSec()), ratio(cached[4].mbPerSec(), cached[3].mbPerSec()))
	return nil
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func printAsyncMode(r *benchRunner, prefix string, m *asyncModeResult) {
	unit := "batch"
	if m.mode.seek {
		unit = "seek"
	}
	var perUnit float64
	if m.units > 0 {
		perUnit = float64(m.fileReads) / float64(m.units)
	}
	fmt.Fprintf(r.out, "asyncio : %s%-25s : %10.0f ops/sec %8.1f MB/s  us/%s P50 %9.1f P95 %9.1f P99 %9.1f  file reads/%s %.1f async submits %d (%d of %d found)\n",
		prefix, m.mode.name, m.opsPerSec(), m.mbPerSec(), unit, m.us(50), m.us(95), m.us(99),
		unit, perUnit, m.asyncSubs, m.found, m.ops)
}

// runAsyncModes runs every mode once per round and merges the rounds.
// Every MultiGet mode and round draws its own random keys: with the same
// keys, a mode would find the blocks the mode before it read in the block
// cache. The scan modes of a round seek to the same keys, so that they scan
// the same ranges: what the cache keeps of a 65536-entry scan is its tail,
// which the next mode reaches last.
// A short untimed warm-up first opens the tables (their index and filter
// blocks), which the first timed mode would otherwise pay for alone.
func (r *benchRunner) runAsyncModes(modes []asyncMode, rounds int, perRound time.Duration) ([]asyncModeResult, error) {
	c := &r.cfg
	results := make([]asyncModeResult, len(modes))
	for i, m := range modes {
		results[i] = asyncModeResult{mode: m, hist: newLatencyHistogram()}
	}
	// Per thread and round: keys for the multiget modes, seeks for the
	// scans (about as many entries as keys, but at least 4 seeks: a round
	// lasts as long as its slowest thread, and one long scan per thread
	// makes that a lottery).
	keysPerRound := max(int64(c.batchSize), (c.reads+int64(rounds)-1)/int64(rounds))
	seeksPerRound := max(4, (c.reads/int64(max(1, c.seekNexts))+int64(rounds)-1)/int64(rounds))
	warm := asyncModeResult{mode: modes[0], hist: newLatencyHistogram()}
	if err := r.runAsyncMode(&warm, 0xffff, 64*int64(c.batchSize), 0); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	for round := range rounds {
		for i, m := range modes {
			limit := keysPerRound
			if m.seek {
				limit = seeksPerRound
			}
			stream := round<<8 | i
			if m.seek {
				stream = round<<8 | 0xff
			}
			if err := r.runAsyncMode(&results[i], stream, limit, perRound); err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
		}
	}
	return results, nil
}

// runAsyncMode runs one round of mode res.mode on --threads threads, limit
// keys or seeks each (or for d when d > 0), and adds to res. stream picks
// the random keys.
func (r *benchRunner) runAsyncMode(res *asyncModeResult, stream int, limit int64, d time.Duration) error {
	c := &r.cfg
	threads := make([]*benchThread, c.threads)
	for i := range threads {
		th := r.newThread(0, i)
		th.rng = rand.New(rand.NewPCG(uint64(c.seed), 0xa5c10<<40|uint64(stream)<<16|uint64(i)))
		th.hist = newLatencyHistogram()
		threads[i] = th
	}
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d)
	}
	more := func(done int64) bool {
		if d > 0 {
			return time.Now().Before(deadline)
		}
		return done < limit
	}
	// Garbage left by the previous mode (or the cache warm-up) is
	// collected now rather than while this mode is timed.
	runtime.GC()
	before := r.db.Metrics().IO
	errs := make([]error, len(threads))
	done := make(chan struct{})
	start := monotime.Now()
	for i, th := range threads {
		go func() {
			defer func() { done <- struct{}{} }()
			th.start = monotime.Now()
			th.last = th.start
			if res.mode.seek {
				errs[i] = r.asyncSeeks(th, res.mode.ro, more)
			} else {
				errs[i] = r.asyncMultiGets(th, res.mode.ro, more)
			}
		}()
	}
	for range threads {
		<-done
	}
	elapsed := monotime.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	after := r.db.Metrics().IO
	res.elapsed += elapsed
	res.fileReads += after.TableReads - before.TableReads
	res.asyncSubs += after.ReadsSubmitted - before.ReadsSubmitted
	for _, th := range threads {
		res.ops += th.reads
		res.found += th.found
		res.bytes += th.bytes
		res.units += th.hist.TotalCount()
		res.hist.Merge(th.hist)
	}
	return nil
}

// asyncMultiGets reads batches of --batch_size random keys with MultiGet.
func (r *benchRunner) asyncMultiGets(t *benchThread, ro *shale.ReadOptions, more func(int64) bool) error {
	keys := newBatchKeys(r.cfg.batchSize, r.cfg.keySize)
	for more(t.reads) {
		t.fillBatchKeys(keys)
		found, bytes, err := r.readBatch(keys, ro, true)
		if err != nil {
			return err
		}
		t.reads += int64(len(keys))
		t.found += found
		t.finished(int64(len(keys)), bytes)
	}
	return nil
}

// asyncSeeks seeks to random keys and calls Next --seek_nexts times after
// each, on one iterator.
func (r *benchRunner) asyncSeeks(t *benchThread, ro *shale.ReadOptions, more func(int64) bool) (err error) {
	it := r.db.NewIterator(ro)
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for more(t.reads) {
		k := t.randomKey()
		t.reads++
		var moved int64
		if it.Seek(k) {
			if string(it.Key()) == string(k) {
				t.found++
			}
			moved += int64(len(it.Key()) + len(it.Value()))
			for j := 0; j < r.cfg.seekNexts && it.Next(); j++ {
				moved += int64(len(it.Key()) + len(it.Value()))
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		t.finished(1, moved)
	}
	return nil
}

// runAsyncCached reopens the database without the latency FS and with a
// block cache larger than its tables, warms the cache with a full scan,
// runs the modes, and reopens the database as it was.
func (r *benchRunner) runAsyncCached(modes []asyncMode) (results []asyncModeResult, err error) {
	var tables int64
	for _, l := range r.db.Metrics().Levels {
		tables += int64(l.Size)
	}
	o, err := r.options()
	if err != nil {
		return nil, err
	}
	o.CreateIfMissing = false
	o.FS = vfs.Default
	// Blocks are cached uncompressed: leave room for that.
	o.BlockCacheSize = max(r.cfg.cacheSize, 4*tables+64<<20)
	if err := r.db.Close(); err != nil {
		return nil, err
	}
	r.db = nil
	defer func() {
		if r.db != nil {
			if cerr := r.db.Close(); err == nil {
				err = cerr
			}
		}
		if oerr := r.open(); err == nil {
			err = oerr
		}
	}()
	if r.db, err = r.openWith(o); err != nil {
		return nil, err
	}
	it := r.db.NewIterator(nil)
	var entries int64
	for ok := it.First(); ok; ok = it.Next() {
		entries++
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, err
	}
	perRound := r.cfg.duration / asyncioCachedRounds
	if perRound == 0 {
		perRound = asyncioCachedRound
	}
	fmt.Fprintf(r.out, "asyncio : cached: %d MiB block cache warmed by a scan of %d entries; no latency FS; %d rounds of %v per mode\n",
		o.BlockCacheSize>>20, entries, asyncioCachedRounds, perRound)
	return r.runAsyncModes(modes, asyncioCachedRounds, perRound)
}

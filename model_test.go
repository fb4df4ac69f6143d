package shale

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// model is the in-memory reference the DB is checked against.
type model map[string]string

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m model) sortedKeys(lower, upper []byte) []string {
	var keys []string
	for k := range m {
		if lower != nil && k < string(lower) {
			continue
		}
		if upper != nil && k >= string(upper) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func testOptions(fs vfs.FS) *Options {
	return &Options{
		CreateIfMissing:                true,
		FS:                             fs,
		WriteBufferSize:                16 << 10,
		TargetFileSizeBase:             8 << 10,
		MaxBytesForLevelBase:           32 << 10,
		Level0FileNumCompactionTrigger: 2,
		Level0SlowdownWritesTrigger:    8,
		Level0StopWritesTrigger:        12,
		BlockSize:                      1 << 10,
		NumLevels:                      5,
		MaxManifestFileSize:            1 << 10, // rotate often
	}
}

// stress reports whether long randomized runs are asked for (SHALE_STRESS=1).
func stress() bool { return os.Getenv("SHALE_STRESS") != "" }

// stressScale is SHALE_STRESS_SCALE, or 1 when it is unset; anything but a
// positive number stops the test binary.
func stressScale() float64 {
	s := os.Getenv("SHALE_STRESS_SCALE")
	if s == "" {
		return 1
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) {
		panic(fmt.Sprintf("SHALE_STRESS_SCALE=%q: want a positive number", s))
	}
	return f
}

func modelSeed(t *testing.T) uint64 {
	if s := os.Getenv("SHALE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return rand.Uint64()
}

// bySize picks how much a randomized test does: normal, short under
// -short, stressed when SHALE_STRESS is set (which wins over -short).
// SHALE_STRESS_SCALE (a factor, default 1) scales the stressed amount, at
// least 1, so that CI can bound a stress step's time without editing tests.
func bySize(normal, short, stressed int) int {
	switch {
	case stress():
		return max(1, int(math.Round(float64(stressed)*stressScale())))
	case testing.Short():
		return short
	}
	return normal
}

// forEachSeed runs fn in rounds subtests, each named after a fresh seed
// (SHALE_SEED fixes it) and logging how to rerun it.
func forEachSeed(t *testing.T, rounds int, fn func(t *testing.T, seed uint64)) {
	t.Helper()
	for range rounds {
		seed := modelSeed(t)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d (rerun with SHALE_SEED=%d)", seed, seed)
			fn(t, seed)
		})
	}
}

// TestModel runs random operations against the DB and an in-memory model,
// with tiny buffers so flushes and compactions run, and checks every answer
// as it comes (the generator and both targets are in modelops_test.go).
func TestModel(t *testing.T) {
	ops := bySize(4000, 1500, 20000)
	forEachSeed(t, bySize(3, 3, 20), func(t *testing.T, seed uint64) {
		runModel(t, seed, ops)
	})
}

// TestModelDeletePersistence is TestModel with a delete persistence
// threshold, on a clock that moves as the DB reads it (so deadline flushes
// and compactions of expired tables interleave with the operations) and on
// the real clock.
func TestModelDeletePersistence(t *testing.T) {
	ops := bySize(3000, 1000, 20000)
	for _, clock := range []string{"fake", "real"} {
		t.Run(clock, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 5), func(t *testing.T, seed uint64) {
				runModel(t, seed, ops, func(o *Options) {
					o.DeletePersistenceThreshold = 20 * time.Millisecond
					if clock == "fake" {
						o.Clock = newFakeClock(time.Millisecond)
					}
				})
			})
		})
	}
}

// TestModelSecondaryDelete is TestModel with DeleteBySecondaryRange among
// the operations (attributes: modelSecondaryKey), checked against the
// model's deleting every key whose current value has an attribute in the
// range; alone, with a delete persistence threshold (more compactions of
// tables holding tombstones), and with every write skipping the WAL.
func TestModelSecondaryDelete(t *testing.T) {
	ops := bySize(4000, 1500, 20000)
	variants := []struct {
		name string
		set  func(*Options)
	}{
		{"base", func(o *Options) {}},
		{"delete-persistence", func(o *Options) {
			o.DeletePersistenceThreshold = 20 * time.Millisecond
			o.Clock = newFakeClock(time.Millisecond)
		}},
		{"tiny-memtable-3-levels", func(o *Options) {
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
			o.NumLevels = 3
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, dbRunConfig{secondaryDeletes: true}, func(o *Options) {
					o.SecondaryDeleteKey = modelSecondaryKey
				}, v.set)
			})
		})
	}
}

// TestModelSetOptions is TestModel with the DB's options changed by
// SetOptions before some operations (random mutable options, a few at a
// time: dbTarget.changeOptions) and reopened with the changed ones.
func TestModelSetOptions(t *testing.T) {
	ops := bySize(3000, 1500, 20000)
	forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
		runModelWith(t, seed, ops, dbRunConfig{setOptions: true, setOptionsSeed: seed})
	})
}

// modelKeys is the size of the model tests' key space.
const modelKeys = 300

// TestModelPartitionedIndex is TestModel with partitioned index and
// filters (many small partitions per table), the top level held by the
// readers and in a small block cache, with and without async reads.
func TestModelPartitionedIndex(t *testing.T) {
	ops := bySize(3000, 1000, 20000)
	for _, cacheIF := range []bool{false, true} {
		t.Run(fmt.Sprintf("cacheIF=%v", cacheIF), func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 5), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, dbRunConfig{asyncIO: cacheIF, optimizeMultiGet: true}, setPartitionedTestOptions, func(o *Options) {
					o.CacheIndexAndFilterBlocks = cacheIF
					if cacheIF {
						o.BlockCacheSize = 32 << 10
					}
				})
			})
		})
	}
}

// TestModelAsyncIO is TestModel with every read made with ReadOptions.AsyncIO,
// MultiGet reading one level at a time and several at once.
func TestModelAsyncIO(t *testing.T) {
	ops := bySize(3000, 1000, 20000)
	for _, optimize := range []bool{false, true} {
		t.Run(fmt.Sprintf("optimize=%v", optimize), func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 5), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, dbRunConfig{asyncIO: true, optimizeMultiGet: optimize})
			})
		})
	}
}

func runModel(t *testing.T, seed uint64, ops int, variants ...func(*Options)) {
	runModelWith(t, seed, ops, dbRunConfig{}, variants...)
}

// runModelWith is runModel with the reads and writes made as cfg says.
func runModelWith(t *testing.T, seed uint64, ops int, cfg dbRunConfig, variants ...func(*Options)) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	for _, v := range variants {
		v(opts)
	}
	d, err := openDBTarget("/db", opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.close() }()
	m := newModelTarget()
	if cfg.prefixSeeks {
		m.prefix = opts.PrefixExtractor
	}
	runModelOn(t, d, m, seed, ops)
}

// runModelOn runs ops operations generated from seed on d and on m, which
// must hold the same data, checking every answer as it comes, then checks
// everything at the latest state and every snapshot, before and after a
// full compaction.
func runModelOn(t *testing.T, d *dbTarget, m *modelTarget, seed uint64, ops int) {
	gen := newOpGenerator(seed, modelKeys)
	gen.secondary = d.cfg.secondaryDeletes
	gen.merge, gen.counters = d.cfg.merge, d.cfg.counters
	gen.filterValues = d.cfg.filter
	gen.prefixSeeks = d.cfg.prefixSeeks
	gen.txns = d.cfg.txns
	gen.checkpoints = d.cfg.checkpoints
	gen.repairs = d.cfg.repairs
	gen.backups = d.cfg.backups // Backups (issue 16, item 2).
	gen.ingest = d.cfg.ingest
	gen.scans = d.cfg.scans         // Range-over-func scans (issue 19, item 3).
	gen.deadlines = d.cfg.deadlines // Read deadlines (issue 19, item 4).
	// SHALE_MODEL_TRACE=key logs every operation with the stored versions
	// of key after it.
	traceKey := os.Getenv("SHALE_MODEL_TRACE")
	var got, want []string
	for i := 0; i < ops; i++ {
		op := gen.next()
		got = runOp(d, op, i, got[:0])
		want = runOp(m, op, i, want[:0])
		if traceKey != "" {
			t.Logf("op %d: %s\n  %s:%s", i, op, traceKey, d.db.dumpKey(traceKey))
			if op.kind == opFlush || op.kind == opCompactRange || op.kind == opReopen {
				t.Logf("%s", d.db.versionString())
			}
		}
		if j := firstDifference(got, want); j >= 0 {
			t.Fatalf("op %d (%s): the DB and the model differ\n   db: %s\nmodel: %s\n   %s", i, op, lineAt(got, j), lineAt(want, j), lineDiff(lineAt(got, j), lineAt(want, j)))
		}
	}
	// A final full check at the latest state and every snapshot (with a
	// compaction filter, only after the full compaction below has filtered
	// everything: until then the DB holds values the reads canonicalize).
	db := d.db
	if !d.cfg.filter {
		checkAll(t, db, nil, m.cur)
		for id, s := range d.snaps {
			checkAll(t, db, &ReadOptions{Snapshot: s}, m.snaps[id])
		}
	}
	for id := range d.snaps {
		d.releaseSnapshot(id)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkAll(t, db, nil, m.cur)
	if n := checkBlobReferences(t, db); d.cfg.wantBlobIndexes && n == 0 {
		t.Fatal("blob files are on, but no table holds a blob index")
	}
	d.countWork()
	if d.cfg.setOptions && d.optionChanges == 0 {
		t.Fatal("test did not change options")
	}
	if p := d.iterPerf; d.cfg.prefixSeeks && p.PrefixBloomUseful == 0 {
		t.Fatalf("no prefix seek skipped a table: %d probes", p.PrefixBloomChecks)
	}
	if d.cfg.checkpoints && d.checkpoints == 0 {
		t.Fatal("the sequence took no checkpoint")
	}
	if d.flushes == 0 || d.compactions == 0 {
		t.Fatalf("test did not exercise flushes (%d) and compactions (%d):\n%s", d.flushes, d.compactions, db.Metrics())
	}
}

// firstDifference returns the index of the first line where a and b
// differ (a missing line counts), or -1 when they are equal.
func firstDifference(a, b []string) int {
	for j := 0; j < max(len(a), len(b)); j++ {
		if j >= len(a) || j >= len(b) || a[j] != b[j] {
			return j
		}
	}
	return -1
}

// lineDiff shows where two log lines part, for lines too long to compare
// by eye (scans).
func lineDiff(a, b string) string {
	c := 0
	for c < min(len(a), len(b)) && a[c] == b[c] {
		c++
	}
	from := max(0, c-40)
	return fmt.Sprintf("from column %d: %q\n      vs: %q", c, a[from:min(len(a), c+80)], b[from:min(len(b), c+80)])
}

func lineAt(log []string, j int) string {
	if j < len(log) {
		return log[j]
	}
	return "(no line)"
}

func checkGet(t *testing.T, db *DB, ro *ReadOptions, m model, k []byte, op int) {
	t.Helper()
	got, err := db.Get(k, ro)
	want, ok := m[string(k)]
	switch {
	case ok && err != nil:
		t.Fatalf("op %d: Get(%s) = %v, want %q", op, k, err, want)
	case !ok && !errors.Is(err, ErrNotFound):
		t.Fatalf("op %d: Get(%s) = %q, %v; want ErrNotFound", op, k, got, err)
	case ok && string(got) != want:
		t.Fatalf("op %d: Get(%s) = %q, want %q", op, k, got, want)
	}
}

func checkAll(t *testing.T, db *DB, ro *ReadOptions, m model) {
	t.Helper()
	it := db.NewIterator(ro)
	defer it.Close()
	keys := m.sortedKeys(nil, nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != m[keys[i]] {
			t.Fatalf("full scan: at %d got %q, want %v", i, it.Key(), keys[min(i, len(keys)-1):min(i+1, len(keys))])
		}
		i++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(keys) {
		t.Fatalf("full scan: got %d keys, want %d", i, len(keys))
	}
	for k, v := range m {
		got, err := db.Get([]byte(k), ro)
		if err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	// MultiGet of every key, an absent one and a duplicate, in each mode.
	batch := [][]byte{[]byte("zzz-absent"), []byte(keys0(keys))}
	for _, k := range keys {
		batch = append(batch, []byte(k))
	}
	for _, mode := range []ReadOptions{{}, {AsyncIO: true, MultiGetOneLevelAtATime: true}, {AsyncIO: true}} {
		mro := mode
		if ro != nil {
			mro.Snapshot = ro.Snapshot
		}
		vals, errs := db.MultiGet(batch, &mro)
		for i, k := range batch {
			want, ok := m[string(k)]
			switch {
			case ok && (errs[i] != nil || string(vals[i]) != want):
				t.Fatalf("MultiGet (AsyncIO %v, one level at a time %v) of %s = %q, %v; want %q", mro.AsyncIO, mro.MultiGetOneLevelAtATime, k, vals[i], errs[i], want)
			case !ok && !errors.Is(errs[i], ErrNotFound):
				t.Fatalf("MultiGet (AsyncIO %v, one level at a time %v) of absent %s = %q, %v", mro.AsyncIO, mro.MultiGetOneLevelAtATime, k, vals[i], errs[i])
			}
		}
	}
}

func keys0(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return keys[0]
}

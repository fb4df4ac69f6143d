package shale

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// joinOperator is the model tests' user merge operator: "+" joins a value
// and its operands; PartialMerge refuses every pair whose lengths add up
// to a multiple of 3, so that compactions keep some operands apart.
type joinOperator struct{}

func (joinOperator) Name() string { return "shale.test.join" }

func (joinOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	out := append([]byte{}, existing...)
	for i, op := range operands {
		if existing != nil || i > 0 {
			out = append(out, '+')
		}
		out = append(out, op...)
	}
	return out, nil
}

func (joinOperator) PartialMerge(key, left, right []byte) ([]byte, bool) {
	if (len(left)+len(right))%3 == 0 {
		return nil, false
	}
	return append(append(append([]byte{}, left...), '+'), right...), true
}

// mergeOperatorCases are the operators the merge model tests run: both
// built-in ones and a user one whose partial merges sometimes fail.
var mergeOperatorCases = []struct {
	name     string
	op       MergeOperator
	counters bool
}{
	{"uint64add", UInt64AddOperator, true},
	{"stringappend", StringAppendOperator(','), false},
	{"user-join", joinOperator{}, false},
}

// TestModelMerge is TestModel with Merge among the writes (alone and in
// batches), under each operator, with small memtables and levels, and with
// blob files holding the bases: reads at every snapshot, flushes,
// compactions (full and partial merges), reopens and read-only opens must
// answer as the model, which applies each merge as it is written.
func TestModelMerge(t *testing.T) {
	ops := bySize(3000, 1200, 20000)
	variants := []struct {
		name string
		set  func(*Options)
		cfg  dbRunConfig
	}{
		{"base", func(o *Options) {}, dbRunConfig{}},
		{"tiny-memtable-3-levels", func(o *Options) {
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
			o.NumLevels = 3
		}, dbRunConfig{}},
		{"blob-files-async-io", setBlobTestOptions, dbRunConfig{asyncIO: true, optimizeMultiGet: true}},
	}
	for _, mc := range mergeOperatorCases {
		for _, v := range variants {
			t.Run(mc.name+"/"+v.name, func(t *testing.T) {
				forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
					cfg := v.cfg
					cfg.merge, cfg.counters = mc.op, mc.counters
					runModelWith(t, seed, ops, cfg, func(o *Options) { o.MergeOperator = mc.op }, v.set)
				})
			})
		}
	}
}

// TestMetamorphicMerge is TestMetamorphic with merges among the writes,
// under the option sets that change how data moves through memtables,
// levels, tables and blob files and how it is read.
func TestMetamorphicMerge(t *testing.T) {
	n := bySize(2000, 600, 8000)
	names := map[string]bool{
		"base": true, "tiny-memtable-nocompression": true, "300-byte-blocks": true,
		"3-static-levels": true, "max-open-files-4-nocache": true, "async-io-single-level": true,
		"async-io-latency-nocache": true, "max-skip-0": true, "6-jobs": true,
		"delete-persistence-fake-clock": true,
	}
	sets := metamorphicSetsNamed(t, names)
	sets = append(sets, metaOptionSet{name: "blob-files", set: setBlobTestOptions})
	op := joinOperator{}
	for i := range sets {
		set := sets[i].set
		sets[i].set = func(o *Options) {
			set(o)
			o.MergeOperator = op
		}
	}
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.merge = op
		runMetamorphicOps(t, seed, generateOpsWith(g, n), sets)
	})
}

func openMergeDB(t *testing.T, fs vfs.FS, op MergeOperator, set func(*Options)) *DB {
	t.Helper()
	opts := testOptions(fs)
	opts.MergeOperator = op
	if set != nil {
		set(opts)
	}
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func counter(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }

// TestMergeBuiltInOperators checks both built-in operators through Get,
// MultiGet, iterators and a full compaction.
func TestMergeBuiltInOperators(t *testing.T) {
	t.Run("uint64add", func(t *testing.T) {
		d := openMergeDB(t, vfs.NewMem(), UInt64AddOperator, nil)
		defer d.Close()
		must(t, d.Put([]byte("a"), counter(10), nil))
		must(t, d.Merge([]byte("a"), counter(5), nil))
		must(t, d.Merge([]byte("b"), counter(7), nil))
		must(t, d.Flush())
		must(t, d.Merge([]byte("a"), counter(1), nil))
		want := map[string]uint64{"a": 16, "b": 7}
		check := func(when string) {
			for k, n := range want {
				v, err := d.Get([]byte(k), nil)
				if err != nil || !bytes.Equal(v, counter(n)) {
					t.Fatalf("%s: Get %s = %x, %v; want %d", when, k, v, err, n)
				}
			}
		}
		check("before compaction")
		must(t, d.CompactRange(nil, nil))
		check("after compaction")
		// A bad operand is an error naming the key, and loses nothing.
		must(t, d.Merge([]byte("a"), []byte("xyz"), nil))
		if _, err := d.Get([]byte("a"), nil); err == nil || !strings.Contains(err.Error(), `"a"`) {
			t.Fatalf("Get over a 3-byte operand: %v, want an error naming the key", err)
		}
	})
	t.Run("stringappend", func(t *testing.T) {
		for _, op := range []MergeOperator{StringAppendOperator(","), StringAppendOperator(byte(',')), StringAppendOperator(',')} {
			d := openMergeDB(t, vfs.NewMem(), op, nil)
			must(t, d.Merge([]byte("k"), []byte("x"), nil))
			must(t, d.Merge([]byte("k"), []byte("y"), nil))
			must(t, d.Flush())
			must(t, d.Merge([]byte("k"), []byte("z"), nil))
			for _, when := range []string{"before", "after"} {
				v, err := d.Get([]byte("k"), nil)
				if err != nil || string(v) != "x,y,z" {
					t.Fatalf("%s compaction: Get = %q, %v; want x,y,z", when, v, err)
				}
				vals, errs := d.MultiGet([][]byte{[]byte("k"), []byte("none")}, &ReadOptions{AsyncIO: true})
				if errs[0] != nil || string(vals[0]) != "x,y,z" || !errors.Is(errs[1], ErrNotFound) {
					t.Fatalf("%s compaction: MultiGet = %q %v", when, vals, errs)
				}
				must(t, d.CompactRange(nil, nil))
			}
			must(t, d.Close())
		}
	})
}

// TestMergeSnapshotStripes keeps a snapshot between operands: compaction
// must keep what the snapshot sees while merging what it may.
func TestMergeSnapshotStripes(t *testing.T) {
	d := openMergeDB(t, vfs.NewMem(), StringAppendOperator("|"), nil)
	defer d.Close()
	must(t, d.Put([]byte("k"), []byte("base"), nil))
	must(t, d.Merge([]byte("k"), []byte("1"), nil))
	snap := d.NewSnapshot()
	defer snap.Release()
	must(t, d.Merge([]byte("k"), []byte("2"), nil))
	must(t, d.Merge([]byte("k"), []byte("3"), nil))
	must(t, d.CompactRange(nil, nil))
	for _, c := range []struct {
		ro   *ReadOptions
		want string
	}{{nil, "base|1|2|3"}, {&ReadOptions{Snapshot: snap}, "base|1"}} {
		v, err := d.Get([]byte("k"), c.ro)
		if err != nil || string(v) != c.want {
			t.Fatalf("Get = %q, %v; want %q", v, err, c.want)
		}
		it := d.NewIterator(c.ro)
		if !it.Last() || string(it.Value()) != c.want {
			t.Fatalf("iterator Last = %q; want %q", it.Value(), c.want)
		}
		must(t, it.Close())
	}
}

// TestMergeOperatorMissing: Merge needs an operator; a database holding
// operands opens without one, and reads of them fail clearly.
func TestMergeOperatorMissing(t *testing.T) {
	fs := vfs.NewMem()
	d := openMergeDB(t, fs, nil, nil)
	if err := d.Merge([]byte("k"), []byte("v"), nil); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Merge without an operator: %v", err)
	}
	b := d.NewBatch()
	b.Put([]byte("p"), []byte("v"))
	b.Merge([]byte("k"), []byte("v"))
	if err := d.Write(b, nil); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Write of a batch with a Merge: %v", err)
	}
	if _, err := d.Get([]byte("p"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused batch's Put is visible: %v", err)
	}
	must(t, d.Close())
	d = openMergeDB(t, fs, StringAppendOperator(","), nil)
	must(t, d.Merge([]byte("k"), []byte("v"), nil))
	must(t, d.Close())
	d = openMergeDB(t, fs, nil, nil)
	defer d.Close()
	if _, err := d.Get([]byte("k"), nil); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Get of an operand without an operator: %v", err)
	}
	it := d.NewIterator(nil)
	if it.First() || !errors.Is(it.Err(), ErrNoMergeOperator) {
		t.Fatalf("iterator over an operand without an operator: valid %v, err %v", it.Valid(), it.Err())
	}
	it.Close()
}

// TestMergeOperatorNameChecked: reopening under another operator name is
// refused, naming both; under the same one it opens.
func TestMergeOperatorNameChecked(t *testing.T) {
	fs := vfs.NewMem()
	d := openMergeDB(t, fs, UInt64AddOperator, nil)
	must(t, d.Merge([]byte("k"), counter(1), nil))
	must(t, d.Flush())
	must(t, d.Close())
	opts := testOptions(fs)
	opts.MergeOperator = StringAppendOperator(",")
	_, err := Open("db", opts)
	if err == nil || !strings.Contains(err.Error(), "UInt64AddOperator") || !strings.Contains(err.Error(), "StringAppendOperator") {
		t.Fatalf("Open under another operator: %v; want an error naming both", err)
	}
	if _, err := OpenForReadOnly("db", opts); err == nil {
		t.Fatal("OpenForReadOnly under another operator succeeded")
	}
	d = openMergeDB(t, fs, UInt64AddOperator, nil)
	defer d.Close()
	if v, err := d.Get([]byte("k"), nil); err != nil || !bytes.Equal(v, counter(1)) {
		t.Fatalf("Get after reopening = %x, %v", v, err)
	}
}

// failingOperator fails every merge while fail is set; with mustMerge
// its errors are scoped to the reads (ErrMustMerge).
type failingOperator struct {
	fail      *atomic.Bool
	mustMerge bool
}

func (failingOperator) Name() string { return "shale.test.failing" }
func (o failingOperator) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	if o.fail.Load() {
		if o.mustMerge {
			return nil, fmt.Errorf("%w (%w)", errTestMerge, ErrMustMerge)
		}
		return nil, errTestMerge
	}
	return joinOperator{}.FullMerge(key, existing, operands)
}
func (o failingOperator) PartialMerge(key, left, right []byte) ([]byte, bool) {
	if o.fail.Load() {
		return nil, false
	}
	return joinOperator{}.PartialMerge(key, left, right)
}

var errTestMerge = errors.New("test merge failure")

// openFailingMergeDB opens a DB on MemFS under a failingOperator whose
// failure is switched by the returned flag, with a key "k" of a value and
// two operands (one in a table, one in the memtable) whose merge fails.
func openFailingMergeDB(t *testing.T, mustMerge bool) (*DB, *atomic.Bool, *Statistics) {
	t.Helper()
	fail := new(atomic.Bool)
	stats := NewStatistics()
	// No automatic compaction merges the operands before the failure.
	d := openMergeDB(t, vfs.NewMem(), failingOperator{fail, mustMerge}, func(o *Options) {
		o.DisableAutoCompactions = true
		o.Statistics = stats
	})
	must(t, d.Put([]byte("k"), []byte("b"), nil))
	must(t, d.Merge([]byte("k"), []byte("x"), nil))
	must(t, d.Flush())
	must(t, d.Merge([]byte("k"), []byte("y"), nil))
	fail.Store(true)
	if _, err := d.Get([]byte("k"), nil); !errors.Is(err, errTestMerge) || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("Get: %v; want the operator's error naming the key", err)
	}
	_, errs := d.MultiGet([][]byte{[]byte("k")}, nil)
	if !errors.Is(errs[0], errTestMerge) {
		t.Fatalf("MultiGet: %v", errs[0])
	}
	it := d.NewIterator(nil)
	if it.First() || !errors.Is(it.Err(), errTestMerge) {
		t.Fatalf("iterator: valid %v, err %v", it.Valid(), it.Err())
	}
	it.Close()
	return d, fail, stats
}

// TestMergeFailureInFlushIsBackgroundError: an operator's error is returned
// by reads (wrapped, naming the key), and a flush or compaction whose merge
// fails stops, as a background error (RocksDB's kTryMerge scope): writes
// are refused with ErrReadOnly, reads go on, nothing is lost, and once the
// operator works again Resume brings writes back.
func TestMergeFailureInFlushIsBackgroundError(t *testing.T) {
	d, fail, stats := openFailingMergeDB(t, false)
	defer d.Close()
	// A value and an operand in the memtable: the flush merges them.
	must(t, d.Put([]byte("m"), []byte("c"), nil))
	must(t, d.Merge([]byte("m"), []byte("z"), nil))
	before := stats.TickerCount(TickerNumberMergeFailures)
	err := d.Flush()
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, errTestMerge) || !strings.Contains(err.Error(), `"m"`) {
		t.Fatalf("Flush with a failing merge: %v; want ErrReadOnly wrapping the operator's error on key m", err)
	}
	if n := stats.TickerCount(TickerNumberMergeFailures) - before; n == 0 {
		t.Fatal("the failed merge of the flush was not counted")
	}
	if err := d.Put([]byte("other"), []byte("v"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Put after the failed flush: %v; want ErrReadOnly", err)
	}
	if v, err := d.Get([]byte("b"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of another key = %q, %v", v, err)
	}
	if err := d.Resume(); err == nil {
		t.Fatal("Resume succeeded while the operator still fails")
	}
	fail.Store(false)
	must(t, d.Resume())
	must(t, d.Put([]byte("other"), []byte("v"), nil))
	for k, want := range map[string]string{"k": "b+x+y", "m": "c+z"} {
		if v, err := d.Get([]byte(k), nil); err != nil || string(v) != want {
			t.Fatalf("Get(%s) after Resume = %q, %v; want %q", k, v, err, want)
		}
	}
}

// TestMergeFailureInCompactionIsBackgroundError: the same for a
// compaction: CompactRange returns the error, the DB turns read-only, and
// the table's entries are all still there.
func TestMergeFailureInCompactionIsBackgroundError(t *testing.T) {
	d, fail, _ := openFailingMergeDB(t, false)
	defer d.Close()
	fail.Store(false)
	must(t, d.Flush()) // both operands in tables, unmerged (L0 under no compaction)
	fail.Store(true)
	if err := d.CompactRange(nil, nil); !errors.Is(err, errTestMerge) {
		t.Fatalf("CompactRange with a failing merge: %v; want the operator's error", err)
	}
	if err := d.Put([]byte("other"), []byte("v"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Put after the failed compaction: %v; want ErrReadOnly", err)
	}
	fail.Store(false)
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "b+x+y" {
		t.Fatalf("Get after the failed compaction = %q, %v", v, err)
	}
	must(t, d.Resume())
	must(t, d.CompactRange(nil, nil))
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "b+x+y" {
		t.Fatalf("Get after compaction = %q, %v", v, err)
	}
}

// TestMergeFailureScopedToReadsKeepsWriting: an operator error matching
// ErrMustMerge (RocksDB's kMustMerge scope) fails the reads of the key
// only: a flush or compaction keeps the key's entries as they are, counts
// the failure and goes on, writes go on, nothing is lost, and once the
// operator works again so do reads and merges.
func TestMergeFailureScopedToReadsKeepsWriting(t *testing.T) {
	d, fail, stats := openFailingMergeDB(t, true)
	defer d.Close()
	before := stats.TickerCount(TickerNumberMergeFailures)
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	if n := stats.TickerCount(TickerNumberMergeFailures) - before; n == 0 {
		t.Fatal("the failed merges of the flush and compaction were not counted")
	}
	must(t, d.Put([]byte("other"), []byte("v"), nil)) // writes go on
	fail.Store(false)
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "b+x+y" {
		t.Fatalf("Get after the operator recovered = %q, %v", v, err)
	}
	must(t, d.CompactRange(nil, nil))
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "b+x+y" {
		t.Fatalf("Get after compaction = %q, %v", v, err)
	}
}

// TestMergeBadOperandKeepsDatabaseWritable: an operand the operator
// refuses for good (a 3-byte counter) fails the reads of its key only:
// flushes, compactions, writes and reopening work, and deleting or
// overwriting the key mends it.
func TestMergeBadOperandKeepsDatabaseWritable(t *testing.T) {
	fs := vfs.NewMem()
	d := openMergeDB(t, fs, UInt64AddOperator, nil)
	must(t, d.Put([]byte("k"), counter(1), nil))
	must(t, d.Merge([]byte("k"), []byte("xyz"), nil))
	must(t, d.Merge([]byte("j"), counter(2), nil))
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	must(t, d.Put([]byte("p"), counter(3), nil))
	must(t, d.Close())
	d = openMergeDB(t, fs, UInt64AddOperator, nil)
	defer d.Close()
	if _, err := d.Get([]byte("k"), nil); err == nil {
		t.Fatal("Get over the bad operand succeeded")
	}
	if v, err := d.Get([]byte("j"), nil); err != nil || !bytes.Equal(v, counter(2)) {
		t.Fatalf("Get j = %x, %v", v, err)
	}
	must(t, d.Put([]byte("k"), counter(7), nil))
	must(t, d.Merge([]byte("k"), counter(1), nil))
	must(t, d.CompactRange(nil, nil))
	if v, err := d.Get([]byte("k"), nil); err != nil || !bytes.Equal(v, counter(8)) {
		t.Fatalf("Get k after overwriting = %x, %v", v, err)
	}
}

// TestMergeOperatorOptionsFileChecks: the OPTIONS file names any operator
// and Check and ParseOptionsFile accept it.
func TestMergeOperatorOptionsFileChecks(t *testing.T) {
	fs := vfs.NewMem()
	d := openMergeDB(t, fs, StringAppendOperator(","), nil)
	must(t, d.Merge([]byte("k"), []byte("v"), nil))
	must(t, d.Flush())
	must(t, d.Close())
	opts := testOptions(fs)
	opts.MergeOperator = StringAppendOperator(",")
	rep, err := Check("db", opts)
	if err != nil || !rep.OK() {
		t.Fatalf("Check: %v\n%v", err, rep)
	}
	_, data := newestOptionsFile(t, fs, "db")
	if !strings.Contains(string(data), "merge_operator=StringAppendOperator") {
		t.Fatalf("the OPTIONS file does not name the operator:\n%s", data)
	}
	if _, err := ParseOptionsFile(data); err != nil {
		t.Fatalf("ParseOptionsFile: %v", err)
	}
}

// TestMergeOverBlobValue merges onto a base value kept in a blob file, in
// reads and in compaction.
func TestMergeOverBlobValue(t *testing.T) {
	d := openMergeDB(t, vfs.NewMem(), StringAppendOperator(","), func(o *Options) {
		o.EnableBlobFiles = true
		o.MinBlobSize = 16
	})
	defer d.Close()
	big := strings.Repeat("B", 100)
	must(t, d.Put([]byte("k"), []byte(big), nil))
	must(t, d.Flush())
	if n := checkBlobReferences(t, d); n == 0 {
		t.Fatal("the base value is not in a blob file")
	}
	must(t, d.Merge([]byte("k"), []byte("1"), nil))
	want := big + ",1"
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != want {
		t.Fatalf("Get = %q, %v", v, err)
	}
	it := d.NewIterator(nil)
	if !it.First() || string(it.Value()) != want {
		t.Fatalf("iterator = %q, %v", it.Value(), it.Err())
	}
	must(t, it.Close())
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != want {
		t.Fatalf("Get after compaction = %q, %v", v, err)
	}
	checkBlobReferences(t, d)
}

// TestMergeOperatorRefusesSecondaryDeleteKey: the two options cannot be
// combined (docs/decisions.md, Merge operator).
func TestMergeOperatorRefusesSecondaryDeleteKey(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	opts.MergeOperator = UInt64AddOperator
	opts.SecondaryDeleteKey = modelSecondaryKey
	_, err := Open("db", opts)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "SecondaryDeleteKey") {
		t.Fatalf("Open with both: %v", err)
	}
}

// TestMetamorphicMergePrefixBlobs runs merges, prefix-mode iterators and
// blob files together (issue 15's combined option sets): the operands and
// the blob values they merge onto, read through prefix seeks that skip
// what the prefix filters rule out, must answer as the model under every
// set.
func TestMetamorphicMergePrefixBlobs(t *testing.T) {
	n := bySize(1500, 500, 6000)
	tr := modelPrefixExtractors[0]
	op := joinOperator{}
	withAll := func(set func(*Options)) func(*Options) {
		return func(o *Options) {
			if set != nil {
				set(o)
			}
			setBlobTestOptions(o)
			o.MergeOperator = op
			o.PrefixExtractor = tr
			o.MemtablePrefixBloomSizeRatio = 0.1
		}
	}
	sets := []metaOptionSet{
		{name: "blob-files", set: withAll(nil)},
		{name: "blob-files-tiny-memtable", set: withAll(func(o *Options) {
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
		})},
		{name: "blob-files-prefixes-only", set: withAll(func(o *Options) { o.DisableWholeKeyFiltering = true })},
		{name: "blob-files-async-io", set: withAll(nil), cfg: dbRunConfig{asyncIO: true, optimizeMultiGet: true}},
		{name: "blob-files-gc-max-skip-0", set: withAll(func(o *Options) {
			setBlobGCTestOptions(o)
			o.MaxSequentialSkipInIterations = -1
		})},
	}
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.merge, g.prefixSeeks = op, true
		m := newModelTarget()
		m.prefix = tr
		runMetamorphicModel(t, seed, generateOpsWith(g, n), sets, m)
	})
}

// TestMergeScansAgreeOverTinyTables writes merges, puts and deletes of a few
// keys over many tiny tables (4 KiB, 256-byte blocks, no block cache, 4 open
// files, snapshots keeping old versions, so that one key's versions spread
// over blocks, L0 tables and levels), and checks at each snapshot that a forward scan, a
// backward scan and Get all give the model's values: each operand applied
// once, in both directions.
func TestMergeScansAgreeOverTinyTables(t *testing.T) {
	forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed))
		opts := testOptions(vfs.NewMem())
		opts.MergeOperator = joinOperator{}
		opts.WriteBufferSize = 4 << 10
		opts.TargetFileSizeBase = 4 << 10
		opts.BlockSize = 256
		opts.BlockCacheSize = -1
		opts.MaxOpenFiles = 4
		opts.DisableAutoCompactions = true
		d, err := Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		type state = map[string]string
		cur := state{}
		type snap struct {
			s    *Snapshot
			want state
		}
		var snaps []snap
		defer func() {
			for _, s := range snaps {
				s.s.Release()
			}
		}()
		check := func(op int, s *Snapshot, want state) {
			t.Helper()
			ro := &ReadOptions{Snapshot: s}
			var keys []string
			for k := range want {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var wantScan []string
			for _, k := range keys {
				wantScan = append(wantScan, k+"="+want[k])
			}
			it := d.NewIterator(ro)
			var fwd, rev []string
			for ok := it.First(); ok; ok = it.Next() {
				fwd = append(fwd, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
			}
			for ok := it.Last(); ok; ok = it.Prev() {
				rev = append(rev, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
			}
			must(t, it.Close())
			slices.Reverse(rev)
			for name, got := range map[string][]string{"forward": fwd, "backward": rev} {
				if j := firstDifference(got, wantScan); j >= 0 {
					t.Fatalf("op %d: %s scan entry %d (got, then want) %s", op, name, j, lineDiff(lineAt(got, j), lineAt(wantScan, j)))
				}
			}
			for _, k := range keys {
				if v, err := d.Get([]byte(k), ro); err != nil || string(v) != want[k] {
					t.Fatalf("op %d: Get(%s) = %v (got, then want) %s", op, k, err, lineDiff(string(v), want[k]))
				}
			}
		}
		for op := range 2000 {
			k := fmt.Sprintf("key%03d", rng.IntN(40))
			switch r := rng.IntN(100); {
			case r < 55:
				v := fmt.Sprintf("m%d", op)
				must(t, d.Merge([]byte(k), []byte(v), nil))
				if old, ok := cur[k]; ok {
					v = old + "+" + v
				}
				cur[k] = v
			case r < 75:
				v := fmt.Sprintf("v%d-%s", op, strings.Repeat("x", rng.IntN(1200)))
				must(t, d.Put([]byte(k), []byte(v), nil))
				cur[k] = v
			case r < 82:
				must(t, d.Delete([]byte(k), nil))
				delete(cur, k)
			case r < 86:
				must(t, d.Flush())
			case r < 88:
				must(t, d.CompactRange(nil, nil))
			case r < 93:
				snaps = append(snaps, snap{s: d.NewSnapshot(), want: maps.Clone(cur)})
				if len(snaps) > 8 {
					snaps[0].s.Release()
					snaps = snaps[1:]
				}
			default:
				check(op, nil, cur)
				for _, s := range snaps {
					check(op, s.s, s.want)
				}
			}
		}
		check(-1, nil, cur)
		for _, s := range snaps {
			check(-1, s.s, s.want)
		}
	})
}

// TestMergeFailureInRecoveryFlushFailsOpen: when the WAL replayed at Open
// holds a merge the operator refuses (outside ErrMustMerge), Open returns
// the operator's error naming the key and leaves the database as it was:
// opened again under a working operator, every write is there.
func TestMergeFailureInRecoveryFlushFailsOpen(t *testing.T) {
	fs := vfs.NewMem()
	fail := new(atomic.Bool)
	op := failingOperator{fail: fail}
	d := openMergeDB(t, fs, op, nil)
	must(t, d.Put([]byte("m"), []byte("c"), nil))
	must(t, d.Merge([]byte("m"), []byte("z"), nil))
	must(t, d.Close()) // the writes stay in the WAL

	fail.Store(true)
	opts := testOptions(fs)
	opts.MergeOperator = op
	if d, err := Open("db", opts); err == nil {
		t.Log("Open replayed the WAL without a flush")
		// Some configurations replay without flushing at Open: then the
		// first flush fails instead.
		ferr := d.Flush()
		d.Close()
		if !errors.Is(ferr, errTestMerge) {
			t.Fatalf("Open succeeded and the flush returned %v; want the operator's error", ferr)
		}
	} else if !errors.Is(err, errTestMerge) || !strings.Contains(err.Error(), `"m"`) {
		t.Fatalf("Open with a failing merge in the WAL: %v; want the operator's error naming key m", err)
	}
	fail.Store(false)
	d = openMergeDB(t, fs, op, nil)
	defer d.Close()
	if v, err := d.Get([]byte("m"), nil); err != nil || string(v) != "c+z" {
		t.Fatalf("Get after reopening under a working operator = %q, %v", v, err)
	}
}

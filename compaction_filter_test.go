package shale

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// funcFilter is a CompactionFilter of a function, counting its calls.
type funcFilter struct {
	mu    sync.Mutex
	calls int
	fn    func(level int, key []byte, vt CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte)
}

func (f *funcFilter) Name() string { return "shale.test.func" }
func (f *funcFilter) Filter(level int, key []byte, vt CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return f.fn(level, key, vt, value)
}

func openFilterDB(t *testing.T, f CompactionFilter, set func(*Options)) *DB {
	t.Helper()
	opts := testOptions(vfs.NewMem())
	opts.CompactionFilter = f
	opts.DisableAutoCompactions = true
	if set != nil {
		set(opts)
	}
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantValue(t *testing.T, d *DB, key, want string, ro *ReadOptions) {
	t.Helper()
	v, err := d.Get([]byte(key), ro)
	switch {
	case want == "" && !errors.Is(err, ErrNotFound):
		t.Fatalf("Get %s = %q, %v; want not found", key, v, err)
	case want != "" && (err != nil || string(v) != want):
		t.Fatalf("Get %s = %q, %v; want %q", key, v, err, want)
	}
}

// TestCompactionFilterDecisions: removed keys are gone (their older
// versions below included), changed values read back changed, kept ones
// stay, and keys in a skipped range are removed without asking.
func TestCompactionFilterDecisions(t *testing.T) {
	f := &funcFilter{fn: func(_ int, key []byte, _ CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
		switch {
		case bytes.HasPrefix(key, []byte("rm")):
			return DecisionRemove, nil, nil
		case bytes.HasPrefix(key, []byte("chg")):
			// Every compaction of the key calls the filter again.
			if v, _ := value(); !bytes.HasPrefix(v, []byte("changed-")) {
				return DecisionChangeValue, append([]byte("changed-"), v...), nil
			}
		case bytes.Equal(key, []byte("skip0")):
			return DecisionRemoveAndSkipUntil, nil, []byte("skip5")
		case bytes.Equal(key, []byte("zz")):
			return DecisionRemoveAndSkipUntil, nil, []byte("a") // not after the key: kept
		}
		return DecisionKeep, nil, nil
	}}
	d := openFilterDB(t, nil, nil)
	must(t, d.Put([]byte("rm1"), []byte("old"), nil))
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil)) // old version at the bottom, unfiltered
	must(t, d.Close())
	opts := testOptions(d.opts.FS)
	opts.CompactionFilter = f
	opts.DisableAutoCompactions = true
	d, err := Open("db", opts)
	must(t, err)
	defer d.Close()
	must(t, d.Put([]byte("rm1"), []byte("new"), nil))
	must(t, d.Put([]byte("chg1"), []byte("v"), nil))
	must(t, d.Put([]byte("keep"), []byte("k"), nil))
	must(t, d.Put([]byte("zz"), []byte("z"), nil))
	for i := range 8 {
		must(t, d.Put(fmt.Appendf(nil, "skip%d", i), []byte("s"), nil))
	}
	must(t, d.Flush())
	// L0 into L1: the old rm1 below must stay hidden.
	must(t, d.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}))
	check := func() {
		t.Helper()
		wantValue(t, d, "rm1", "", nil)
		wantValue(t, d, "chg1", "changed-v", nil)
		wantValue(t, d, "keep", "k", nil)
		wantValue(t, d, "zz", "z", nil)
		for i := range 8 {
			want := ""
			if i >= 5 {
				want = "s"
			}
			wantValue(t, d, fmt.Sprintf("skip%d", i), want, nil)
		}
	}
	check()
	must(t, d.CompactRange(nil, nil))
	check()
	if f.calls == 0 {
		t.Fatal("the filter was never called")
	}
}

// TestCompactionFilterSkipsSnapshots: entries an open snapshot sees are
// never shown to the filter.
func TestCompactionFilterSkipsSnapshots(t *testing.T) {
	var seen []string
	f := &funcFilter{fn: func(_ int, key []byte, _ CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
		v, _ := value()
		seen = append(seen, string(key)+"="+string(v))
		return DecisionRemove, nil, nil
	}}
	d := openFilterDB(t, f, nil)
	defer d.Close()
	must(t, d.Put([]byte("a"), []byte("1"), nil))
	snap := d.NewSnapshot()
	must(t, d.Put([]byte("a"), []byte("2"), nil))
	must(t, d.Put([]byte("b"), []byte("1"), nil))
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	if got := strings.Join(seen, " "); got != "a=2 b=1" {
		t.Fatalf("the filter saw %q; want only the entries no snapshot sees (a=2 b=1)", got)
	}
	wantValue(t, d, "a", "1", &ReadOptions{Snapshot: snap})
	wantValue(t, d, "a", "", nil)
	wantValue(t, d, "b", "", nil)
	snap.Release()
	seen = nil
	must(t, d.CompactRange(nil, nil))
	wantValue(t, d, "a", "", nil)
}

// TestCompactionFilterBlobValues: a filter that decides on the key alone
// reads no blob file; one that asks for the value gets it.
func TestCompactionFilterBlobValues(t *testing.T) {
	for _, readValue := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-value=%v", readValue), func(t *testing.T) {
			stats := NewStatistics()
			f := &funcFilter{fn: func(_ int, key []byte, _ CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
				if !readValue {
					if bytes.HasSuffix(key, []byte("0")) {
						return DecisionRemove, nil, nil
					}
					return DecisionKeep, nil, nil
				}
				// (A later compaction of the same range sees the
				// changed value.)
				v, err := value()
				if err != nil || len(v) != 200 && string(v) != "small" {
					t.Errorf("value() = %q, %v", v, err)
				}
				return DecisionChangeValue, []byte("small"), nil
			}}
			d := openFilterDB(t, f, func(o *Options) {
				o.EnableBlobFiles = true
				o.MinBlobSize = 100
				o.Statistics = stats
			})
			defer d.Close()
			for i := range 50 {
				must(t, d.Put(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte{'x'}, 200), nil))
			}
			must(t, d.Flush())
			before := stats.TickerCount(TickerBlobFileReads)
			must(t, d.CompactRange(nil, nil))
			reads := stats.TickerCount(TickerBlobFileReads) - before
			if !readValue && reads != 0 {
				t.Fatalf("a key-only filter read %d blob values", reads)
			}
			if readValue && reads == 0 {
				t.Fatal("the filter asked for values but no blob value was read")
			}
			for i := range 50 {
				want := strings.Repeat("x", 200)
				switch {
				case readValue:
					want = "small"
				case i%10 == 0:
					want = ""
				}
				wantValue(t, d, fmt.Sprintf("k%02d", i), want, nil)
			}
			checkBlobReferences(t, d)
		})
	}
}

// TestCompactionFilterMergeOperands: operands the filter removes or
// changes are merged without or with their change.
func TestCompactionFilterMergeOperands(t *testing.T) {
	f := &funcFilter{fn: func(_ int, key []byte, vt CompactionFilterValueType, value func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
		v, _ := value()
		switch {
		case vt == ValueTypeMergeOperand && string(v) == "drop":
			return DecisionRemove, nil, nil
		case vt == ValueTypeMergeOperand && string(v) == "up":
			return DecisionChangeValue, []byte("UP"), nil
		}
		return DecisionKeep, nil, nil
	}}
	d := openFilterDB(t, f, func(o *Options) { o.MergeOperator = appendNoPartial{} })
	defer d.Close()
	must(t, d.Put([]byte("k"), []byte("base"), nil))
	// The base at the bottom: the flush below keeps the operands apart
	// (appendNoPartial combines none) for the compaction to filter.
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	for _, op := range []string{"a", "drop", "up", "b"} {
		must(t, d.Merge([]byte("k"), []byte(op), nil))
	}
	wantValue(t, d, "k", "base,a,drop,up,b", nil)
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	wantValue(t, d, "k", "base,a,UP,b", nil)
}

// appendNoPartial is StringAppendOperator(",") without partial merges.
type appendNoPartial struct{}

func (appendNoPartial) Name() string { return "shale.test.append-no-partial" }
func (appendNoPartial) FullMerge(key, existing []byte, operands [][]byte) ([]byte, error) {
	return StringAppendOperator(",").FullMerge(key, existing, operands)
}
func (appendNoPartial) PartialMerge(key, left, right []byte) ([]byte, bool) { return nil, false }

// countingFactory makes a filter per compaction and records the contexts.
type countingFactory struct {
	mu   sync.Mutex
	ctxs []CompactionFilterContext
}

func (f *countingFactory) Name() string { return "shale.test.factory" }
func (f *countingFactory) CreateCompactionFilter(ctx CompactionFilterContext) CompactionFilter {
	f.mu.Lock()
	f.ctxs = append(f.ctxs, ctx)
	f.mu.Unlock()
	return &funcFilter{fn: func(int, []byte, CompactionFilterValueType, func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
		return DecisionRemove, nil, nil
	}}
}

// TestCompactionFilterFactory: one filter per compaction, with its context;
// CompactionFilter, when also set, wins.
func TestCompactionFilterFactory(t *testing.T) {
	fac := &countingFactory{}
	d := openFilterDB(t, nil, func(o *Options) { o.CompactionFilterFactory = fac })
	defer d.Close()
	must(t, d.Put([]byte("a"), []byte("1"), nil))
	must(t, d.Flush())
	must(t, d.CompactRange(nil, nil))
	if len(fac.ctxs) == 0 {
		t.Fatal("the factory made no filter")
	}
	if c := fac.ctxs[0]; !c.IsManualCompaction || !c.IsFullCompaction {
		t.Fatalf("context %+v: want a manual full compaction", c)
	}
	wantValue(t, d, "a", "", nil)

	keep := &funcFilter{fn: func(int, []byte, CompactionFilterValueType, func() ([]byte, error)) (CompactionFilterDecision, []byte, []byte) {
		return DecisionKeep, nil, nil
	}}
	fac2 := &countingFactory{}
	d2 := openFilterDB(t, keep, func(o *Options) { o.CompactionFilterFactory = fac2 })
	defer d2.Close()
	must(t, d2.Put([]byte("a"), []byte("1"), nil))
	must(t, d2.Flush())
	must(t, d2.CompactRange(nil, nil))
	if len(fac2.ctxs) != 0 || keep.calls == 0 {
		t.Fatalf("factory used %d times, filter %d: CompactionFilter must take precedence", len(fac2.ctxs), keep.calls)
	}
	wantValue(t, d2, "a", "1", nil)
}

// TestModelCompactionFilter is TestModel with modelFilter as the
// compaction filter and values it removes or changes among the writes;
// every read answers as modelFilter would make the value, whether a
// compaction filtered it yet or not (a removed value must never show an
// older version), and after the final full compaction the DB holds exactly
// the filtered data.
func TestModelCompactionFilter(t *testing.T) {
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
		{"blob-files-async-io", setBlobTestOptions, dbRunConfig{asyncIO: true}},
		{"factory", func(o *Options) { o.CompactionFilter, o.CompactionFilterFactory = nil, modelFilterFactory{} }, dbRunConfig{}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 4), func(t *testing.T, seed uint64) {
				cfg := v.cfg
				cfg.filter = true
				runModelWith(t, seed, ops, cfg, func(o *Options) { o.CompactionFilter = modelFilter{} }, v.set)
			})
		})
	}
}

// modelFilterFactory makes a modelFilter per compaction.
type modelFilterFactory struct{}

func (modelFilterFactory) Name() string { return "shale.test.model-filter-factory" }
func (modelFilterFactory) CreateCompactionFilter(CompactionFilterContext) CompactionFilter {
	return modelFilter{}
}

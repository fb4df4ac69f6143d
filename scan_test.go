package shale

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// scanBoundsMode is how opScan hands its bounds to Scan.
type scanBoundsMode uint8

const (
	// scanBoundsArgs passes them as Scan's lower and upper.
	scanBoundsArgs scanBoundsMode = iota
	// scanBoundsReadOptions passes them as ReadOptions.LowerBound and
	// UpperBound, with nil lower and upper.
	scanBoundsReadOptions
	// scanBoundsOverride passes them as lower and upper, over
	// ReadOptions bounds (the other end of the key space) that they must
	// replace.
	scanBoundsOverride
)

func (m scanBoundsMode) String() string {
	return [...]string{"args", "readoptions", "override"}[m]
}

// scanOp returns an opScan: random bounds (each end nil a third of the
// time), a snapshot sometimes, either direction, and a break out of the
// loop a quarter of the time.
func (g *opGenerator) scanOp() modelOp {
	rng := g.rng
	op := modelOp{kind: opScan, snap: g.readSnap(), reverse: rng.IntN(2) == 0,
		scanBounds: scanBoundsMode(rng.IntN(3))}
	if rng.IntN(3) != 0 {
		op.lower = g.boundKey()
	}
	if rng.IntN(3) != 0 {
		op.upper = g.boundKey()
	}
	if rng.IntN(4) == 0 {
		op.scanLimit = 1 + rng.IntN(20)
	}
	return op
}

// scanTarget runs opScan: it returns the entries the scan yielded and how
// it ended.
type scanTarget interface {
	scan(op modelOp) string
}

func (m *modelTarget) scan(op modelOp) string {
	s := m.state(op.snap)
	keys := s.sortedKeys(op.lower, op.upper)
	if op.reverse {
		slices.Reverse(keys)
	}
	var b strings.Builder
	for j, k := range keys {
		if op.scanLimit > 0 && j == op.scanLimit {
			b.WriteString(" break")
			return b.String()
		}
		fmt.Fprintf(&b, " %s=%s", k, fmtValue([]byte(s[k])))
	}
	b.WriteString(" end")
	return b.String()
}

func (d *dbTarget) scan(op modelOp) string {
	ro := &ReadOptions{ReadaheadSize: d.cfg.readaheadSize, AsyncIO: d.cfg.asyncIO,
		MultiGetOneLevelAtATime: !d.cfg.optimizeMultiGet}
	if op.snap != 0 {
		ro.Snapshot = d.snaps[op.snap]
	}
	lower, upper := op.lower, op.upper
	switch op.scanBounds {
	case scanBoundsReadOptions:
		ro.LowerBound, ro.UpperBound = lower, upper
		lower, upper = nil, nil
	case scanBoundsOverride:
		// Bounds that would show a different range if Scan kept them.
		if lower != nil {
			ro.LowerBound = []byte("z")
		}
		if upper != nil {
			ro.UpperBound = []byte("a")
		}
	}
	seq := d.db.Scan(ro, lower, upper)
	if op.reverse {
		seq = d.db.ScanReverse(ro, lower, upper)
	}
	var b strings.Builder
	n := 0
	end := " end"
	for kv, err := range seq {
		if err != nil {
			end = " error: " + err.Error()
			break
		}
		v := kv.Value
		if d.cfg.filter {
			c, ok := filterCanonical(v)
			if !ok {
				continue
			}
			v = c
		}
		if op.scanLimit > 0 && n == op.scanLimit {
			end = " break"
			break
		}
		fmt.Fprintf(&b, " %s=%s", kv.Key, fmtValue(v))
		n++
	}
	b.WriteString(end)
	// Whatever ended the loop, the scan's iterator is closed by now.
	if open := d.db.openIters.Load(); open != 0 {
		fmt.Fprintf(&b, " (%d iterators left open)", open)
	}
	return b.String()
}

// TestModelScan is TestModel with DB.Scan and ScanReverse among the
// operations (opScan): random bounds passed as arguments, as ReadOptions
// bounds or over other ReadOptions bounds, at snapshots, whole or broken
// out of, checked against the model's sorted keys, and no iterator left
// open after any of them; with the reads async, with blob files (values
// read as the scan reaches them) and with merges.
func TestModelScan(t *testing.T) {
	ops := bySize(2500, 1000, 10000)
	variants := []struct {
		name string
		set  func(*Options)
		cfg  dbRunConfig
	}{
		{"base", func(o *Options) {}, dbRunConfig{scans: true}},
		{"async-io-readahead", func(o *Options) {}, dbRunConfig{scans: true, asyncIO: true, optimizeMultiGet: true, readaheadSize: 16 << 10}},
		{"blob-files", setBlobTestOptions, dbRunConfig{scans: true}},
		{"merge-stringappend", func(o *Options) { o.MergeOperator = StringAppendOperator(',') },
			dbRunConfig{scans: true, merge: StringAppendOperator(',')}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, v.cfg, v.set)
			})
		})
	}
}

// scanTestDB opens a DB on MemFS holding key00000..key00099 (value
// "v<i>"), some of them flushed to a table.
func scanTestDB(t *testing.T, set func(*Options)) *DB {
	t.Helper()
	opts := testOptions(vfs.NewMem())
	if set != nil {
		set(opts)
	}
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		must(t, d.Put(testKey(i), fmt.Appendf(nil, "v%d", i), nil))
		if i == 60 {
			must(t, d.Flush())
		}
	}
	return d
}

// collectScan ranges over seq, returning the keys and values it yielded
// (copied) and the errors.
func collectScan(seq iter.Seq2[KV, error]) (kvs []string, errs []error) {
	for kv, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		kvs = append(kvs, string(kv.Key)+"="+string(kv.Value))
	}
	return kvs, errs
}

func keyRange(from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("%s=v%d", testKey(i), i))
	}
	return s
}

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// TestScanBoundsAndSnapshots checks Scan's and ScanReverse's bounds (the
// arguments, ReadOptions' when an argument is nil, the arguments over
// ReadOptions'), a snapshot, and the same for Transaction.Scan (the
// transaction's writes over the DB), Iterator.All and Iterator.Backward.
func TestScanBoundsAndSnapshots(t *testing.T) {
	d := scanTestDB(t, nil)
	defer d.Close()
	snap := d.NewSnapshot()
	defer snap.Release()
	must(t, d.Put(testKey(15), []byte("new"), nil))
	must(t, d.Delete(testKey(16), nil))

	check := func(name string, got []string, errs []error, want []string) {
		t.Helper()
		if len(errs) != 0 || !slices.Equal(got, want) {
			t.Errorf("%s: got %q, errors %v; want %q", name, got, errs, want)
		}
	}
	atSnap := &ReadOptions{Snapshot: snap}
	k := testKey
	latestAll := keyRange(0, 100)
	latestAll[15] = string(k(15)) + "=new"
	latestAll = slices.Delete(latestAll, 16, 17)
	for _, c := range []struct {
		name         string
		ro           *ReadOptions
		lower, upper []byte
		want         []string
	}{
		{"args", atSnap, k(10), k(20), keyRange(10, 20)},
		{"nil ReadOptions, unbounded", nil, nil, nil, latestAll},
		{"snapshot, unbounded", atSnap, nil, nil, keyRange(0, 100)},
		{"lower only", atSnap, k(95), nil, keyRange(95, 100)},
		{"upper only", atSnap, nil, k(3), keyRange(0, 3)},
		{"ReadOptions bounds", &ReadOptions{Snapshot: snap, LowerBound: k(40), UpperBound: k(45)}, nil, nil, keyRange(40, 45)},
		{"args over ReadOptions", &ReadOptions{Snapshot: snap, LowerBound: k(40), UpperBound: k(45)}, k(50), k(52), keyRange(50, 52)},
		{"lower arg, ReadOptions upper", &ReadOptions{Snapshot: snap, UpperBound: k(45)}, k(43), nil, keyRange(43, 45)},
		{"empty range", atSnap, k(30), k(30), nil},
		{"inverted range", atSnap, k(31), k(30), nil},
	} {
		got, errs := collectScan(d.Scan(c.ro, c.lower, c.upper))
		check(c.name, got, errs, c.want)
		got, errs = collectScan(d.ScanReverse(c.ro, c.lower, c.upper))
		check(c.name+" reverse", got, errs, reversed(c.want))
	}
	// Scan copies ReadOptions: the caller's bounds are left alone.
	ro := &ReadOptions{LowerBound: k(1)}
	collectScan(d.Scan(ro, k(5), k(6)))
	if !bytes.Equal(ro.LowerBound, k(1)) || ro.UpperBound != nil {
		t.Errorf("Scan changed the caller's ReadOptions: %+v", ro)
	}

	latest := keyRange(14, 18)
	latest[1] = string(k(15)) + "=new"
	latest = slices.Delete(latest, 2, 3)
	got, errs := collectScan(d.Scan(nil, k(14), k(18)))
	check("latest", got, errs, latest)

	txn := d.BeginOptimisticTransaction(nil, nil)
	must(t, txn.Put(k(14), []byte("txn")))
	must(t, txn.Delete(k(17)))
	inTxn := []string{string(k(14)) + "=txn", string(k(15)) + "=new"}
	got, errs = collectScan(txn.Scan(nil, k(14), k(18)))
	check("transaction", got, errs, inTxn)
	got, errs = collectScan(txn.ScanReverse(nil, k(14), k(18)))
	check("transaction reverse", got, errs, reversed(inTxn))
	must(t, txn.Rollback())

	it := d.NewIterator(&ReadOptions{Snapshot: snap, LowerBound: k(20), UpperBound: k(25)})
	got, errs = collectScan(it.All())
	check("Iterator.All", got, errs, keyRange(20, 25))
	got, errs = collectScan(it.Backward())
	check("Iterator.Backward", got, errs, reversed(keyRange(20, 25)))
	// All leaves the iterator open, for the caller to use and close.
	if !it.Seek(k(22)) || !bytes.Equal(it.Key(), k(22)) {
		t.Errorf("iterator after All: Seek(%s) at %q, %v", k(22), it.Key(), it.Err())
	}
	must(t, it.Close())
	if n := d.Metrics().NumIterators; n != 0 {
		t.Fatalf("%d iterators open after the scans", n)
	}
}

// TestScanBreakClosesIterator breaks out of scans (and returns false from
// a yield called by hand): the iterator is closed at once, and the
// sequence never calls yield again.
func TestScanBreakClosesIterator(t *testing.T) {
	d := scanTestDB(t, nil)
	defer d.Close()
	for _, reverse := range []bool{false, true} {
		seq := d.Scan(nil, nil, nil)
		if reverse {
			seq = d.ScanReverse(nil, nil, nil)
		}
		n := 0
		for _, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 3 {
				break
			}
		}
		if open := d.Metrics().NumIterators; open != 0 {
			t.Fatalf("reverse=%v: %d iterators open after a break", reverse, open)
		}
		calls := 0
		seq(func(KV, error) bool {
			calls++
			return false
		})
		if calls != 1 {
			t.Fatalf("reverse=%v: yield called %d times after returning false", reverse, calls)
		}
		if open := d.Metrics().NumIterators; open != 0 {
			t.Fatalf("reverse=%v: %d iterators open after yield returned false", reverse, open)
		}
	}
}

// TestScanPanicClosesIterator panics in the body of a scan's loop: the
// panic reaches the caller, and the iterator is closed.
func TestScanPanicClosesIterator(t *testing.T) {
	d := scanTestDB(t, nil)
	defer d.Close()
	txn := d.BeginOptimisticTransaction(nil, nil)
	defer txn.Rollback()
	for _, seq := range []iter.Seq2[KV, error]{d.Scan(nil, nil, nil), d.ScanReverse(nil, nil, nil), txn.Scan(nil, nil, nil)} {
		recovered := func() (r any) {
			defer func() { r = recover() }()
			for range seq {
				panic("in the loop body")
			}
			return nil
		}()
		if recovered != "in the loop body" {
			t.Fatalf("recovered %v, want the body's panic", recovered)
		}
		if open := d.Metrics().NumIterators; open != 0 {
			t.Fatalf("%d iterators open after a panic in the loop body", open)
		}
	}
}

// TestScanReadErrorEndsSequence fails a read of a table (and of a blob
// file) in the middle of a scan, of the DB or of a transaction: the error
// is yielded once, as the last element, after entries that are all right,
// and the iterator is closed.
func TestScanReadErrorEndsSequence(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Options)
		rule errorfs.Rule
		txn  bool
	}{
		{"table", nil, errorfs.Rule{Op: errorfs.OpRead, PathPattern: "*.sst", Nth: 4}, false},
		{"blob-file", setBlobTestOptions, errorfs.Rule{Op: errorfs.OpRead, PathPattern: "*.blob", Nth: 4}, false},
		{"txn-table", nil, errorfs.Rule{Op: errorfs.OpRead, PathPattern: "*.sst", Nth: 4}, true},
		{"txn-blob-file", setBlobTestOptions, errorfs.Rule{Op: errorfs.OpRead, PathPattern: "*.blob", Nth: 4}, true},
	} {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reverse=%v", c.name, reverse), func(t *testing.T) {
				ffs, _, d := openFaultDB(t, vfs.NewMem(), func(o *Options) {
					o.BlockCacheSize = -1 // every block read reaches the file
					if c.set != nil {
						c.set(o)
					}
				})
				defer d.Close()
				const n = 2000
				for i := range n {
					must(t, d.Put(testKey(i), bytes.Repeat([]byte{byte('a' + i%26)}, 100), nil))
				}
				must(t, d.Flush())
				must(t, d.CompactRange(nil, nil))
				ffs.AddRule(c.rule)
				scan, scanReverse := d.Scan, d.ScanReverse
				if c.txn {
					txn := d.BeginOptimisticTransaction(nil, nil)
					defer txn.Rollback()
					scan, scanReverse = txn.Scan, txn.ScanReverse
				}
				seq := scan(nil, nil, nil)
				next, step := 0, 1
				if reverse {
					seq, next, step = scanReverse(nil, nil, nil), n-1, -1
				}
				var errs []error
				entries := 0
				for kv, err := range seq {
					if len(errs) > 0 {
						t.Fatalf("yielded %q, %v after the error", kv.Key, err)
					}
					if err != nil {
						errs = append(errs, err)
						continue
					}
					if !bytes.Equal(kv.Key, testKey(next)) || !bytes.Equal(kv.Value, bytes.Repeat([]byte{byte('a' + next%26)}, 100)) {
						t.Fatalf("entry %d: %q=%q, want %q", entries, kv.Key, kv.Value, testKey(next))
					}
					next += step
					entries++
				}
				if len(errs) != 1 || !errors.Is(errs[0], errorfs.ErrInjected) {
					t.Fatalf("after %d entries: errors %v, want one injected fault", entries, errs)
				}
				if entries == 0 || entries >= n {
					t.Fatalf("%d entries before the error: want the fault mid-scan", entries)
				}
				if open := d.Metrics().NumIterators; open != 0 {
					t.Fatalf("%d iterators open after the error", open)
				}
				// The fault was one read: the next scan reads everything.
				ffs.ClearRules()
				if got, errs := collectScan(d.Scan(nil, nil, nil)); len(got) != n || len(errs) != 0 {
					t.Fatalf("scan after the fault: %d entries, errors %v", len(got), errs)
				}
			})
		}
	}
}

// TestScanAfterDBClose: a scan ranged over after DB.Close yields
// ErrClosed once and nothing else; one running when the DB closes (closed
// from its loop body) ends with ErrClosed at its next step, its iterator
// released.
func TestScanAfterDBClose(t *testing.T) {
	d := scanTestDB(t, nil)
	seq := d.Scan(nil, nil, nil)
	entries := 0
	var errs []error
	for kv, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(errs) > 0 {
			t.Fatalf("yielded %q after the error", kv.Key)
		}
		if entries++; entries == 10 {
			if err := d.Close(); err != nil {
				t.Logf("Close with a scan running: %v", err)
			}
		}
	}
	if entries != 10 || len(errs) != 1 || !errors.Is(errs[0], ErrClosed) {
		t.Fatalf("scan across Close: %d entries, errors %v; want 10 and ErrClosed", entries, errs)
	}
	if n := d.openIters.Load(); n != 0 {
		t.Fatalf("%d iterators open after the scan ended", n)
	}
	for name, seq := range map[string]iter.Seq2[KV, error]{
		"Scan": d.Scan(nil, nil, nil), "ScanReverse": d.ScanReverse(nil, nil, nil),
	} {
		got, errs := collectScan(seq)
		if len(got) != 0 || len(errs) != 1 || !errors.Is(errs[0], ErrClosed) {
			t.Fatalf("%s after Close: %q, errors %v; want ErrClosed alone", name, got, errs)
		}
	}
}

// TestMetamorphicScan is TestMetamorphic with opScan among the operations,
// under option sets that change what a scan steps through (readahead,
// async reads, reseeks, blob files, a bounded file cache, scan-triggered
// flushes, tombstones kept or compacted away): every set must answer as
// the model does.
func TestMetamorphicScan(t *testing.T) {
	n := bySize(1500, 600, 4000)
	names := map[string]bool{
		"base": true, "tiny-memtable-nocompression": true, "readahead-8k": true, "async-io": true,
		"max-skip-0": true, "max-open-files-4-nocache": true, "scan-flush-trigger-2": true,
		"blob-files-tiny": true, "delete-persistence-fake-clock": true,
	}
	sets := metamorphicSetsNamed(t, names)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.scans = true
		runMetamorphicOps(t, seed, generateOpsWith(g, n), sets)
	})
}

// TestScanReadOnlyAndSecondary scans a DB opened with OpenForReadOnly and
// one opened with OpenAsSecondary beside the writer (the same *DB type):
// they yield what the writer's scan does, and a write the secondary has
// not caught up with shows only after TryCatchUpWithPrimary.
func TestScanReadOnlyAndSecondary(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 50 {
		must(t, d.Put(testKey(i), fmt.Appendf(nil, "v%d", i), nil))
	}
	must(t, d.Flush())
	want := keyRange(10, 40)
	o := *opts
	ro, err := OpenForReadOnly("/db", &o)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	sec, err := OpenAsSecondary("/db", "/db.secondary", &o)
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	for name, db := range map[string]*DB{"read-only": ro, "secondary": sec} {
		got, errs := collectScan(db.Scan(nil, testKey(10), testKey(40)))
		if len(errs) != 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: got %q, errors %v; want %q", name, got, errs, want)
		}
		got, errs = collectScan(db.ScanReverse(nil, testKey(10), testKey(40)))
		if len(errs) != 0 || !slices.Equal(got, reversed(want)) {
			t.Fatalf("%s reverse: got %q, errors %v", name, got, errs)
		}
	}
	must(t, d.Delete(testKey(20), nil))
	must(t, d.Flush())
	got, errs := collectScan(sec.Scan(nil, testKey(19), testKey(22)))
	if want := keyRange(19, 22); len(errs) != 0 || !slices.Equal(got, want) {
		t.Fatalf("secondary before catch-up: got %q, errors %v; want %q", got, errs, want)
	}
	must(t, sec.TryCatchUpWithPrimary())
	got, errs = collectScan(sec.Scan(nil, testKey(19), testKey(22)))
	if want := []string{"key00019=v19", "key00021=v21"}; len(errs) != 0 || !slices.Equal(got, want) {
		t.Fatalf("secondary after catch-up: got %q, errors %v; want %q", got, errs, want)
	}
}

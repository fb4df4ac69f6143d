package shale

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// prefixKey is key k of prefix p in the prefix tests: "pppp:kk", whose
// first 4 bytes are its NewFixedPrefixTransform(4) prefix.
func prefixKey(p, k int) []byte { return fmt.Appendf(nil, "%04d:%02d", p, k) }

func prefixOfKey(p int) []byte { return fmt.Appendf(nil, "%04d", p) }

// prefixTestOptions are testOptions with a fixed 4-byte prefix extractor
// and a memtable prefix bloom, automatic compactions off so a test decides
// the LSM's shape.
func prefixTestOptions(fs vfs.FS) *Options {
	o := testOptions(fs)
	o.PrefixExtractor = NewFixedPrefixTransform(4)
	o.MemtablePrefixBloomSizeRatio = 0.1
	o.DisableAutoCompactions = true
	o.WriteBufferSize = 1 << 20
	return o
}

// fillPrefixLSM writes keysPer keys of every prefix p < nPrefixes with p%4
// == 0 and compacts them to the bottom level (several tables), writes those
// with p%4 == 2 to L0 tables, one flush per quarter, and leaves those with
// p%8 == 1 in the memtable. Odd prefixes other than those are absent.
func fillPrefixLSM(t *testing.T, d *DB, nPrefixes, keysPer int) {
	t.Helper()
	put := func(p int) {
		for k := 0; k < keysPer; k++ {
			if err := d.Put(prefixKey(p, k), fmt.Appendf(nil, "value-%d-%d-%s", p, k, strings.Repeat("x", 80)), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two overlapping flushes, so that the compaction merges them into
	// tables of TargetFileSizeBase rather than moving one.
	for half := 0; half < 2; half++ {
		for p := 4 * half; p < nPrefixes; p += 8 {
			put(p)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for q := 0; q < 4; q++ {
		for p := 2 + 4*q; p < nPrefixes; p += 16 {
			put(p)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for p := 1; p < nPrefixes; p += 8 {
		put(p)
	}
}

// prefixPresent says whether fillPrefixLSM wrote prefix p.
func prefixPresent(p int) bool { return p%4 == 0 || p%4 == 2 || p%8 == 1 }

// scanPrefix seeks to the first key of prefix p and returns the keys the
// iterator yields until it is invalid, with its counts.
func scanPrefix(t *testing.T, d *DB, ro *ReadOptions, p int) ([]string, PerfContext) {
	t.Helper()
	it := d.NewIterator(ro)
	var keys []string
	for ok := it.Seek(prefixOfKey(p)); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	stats := it.Stats()
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return keys, stats
}

// TestPrefixSeekAbsentPrefixReadsNoDataBlock: a prefix-mode Seek to a
// prefix no source holds reads no data block of any table (neither from
// the file nor from the block cache): memtables are skipped by their
// prefix bloom, L0 tables by their prefix filter, a level's files by their
// bounds or filter. With TotalOrderSeek the same seek reads blocks. Seeks
// to present prefixes return exactly the keys of the prefix, as a
// total-order scan does.
func TestPrefixSeekAbsentPrefixReadsNoDataBlock(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("AsyncIO=%v", async), func(t *testing.T) {
			o := prefixTestOptions(vfs.NewMem())
			o.Statistics = NewStatistics()
			d, err := Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			const nPrefixes, keysPer = 256, 10
			fillPrefixLSM(t, d, nPrefixes, keysPer)
			m := d.Metrics()
			if m.Levels[0].NumFiles < 4 || m.Levels[len(m.Levels)-1].NumFiles < 2 {
				t.Fatalf("want several L0 tables and bottom-level tables: %s", m)
			}
			prefixRO := &ReadOptions{PrefixSameAsStart: true, AsyncIO: async}
			totalRO := &ReadOptions{PrefixSameAsStart: true, TotalOrderSeek: true, AsyncIO: async}
			clean, absent := 0, 0
			var memUseful, checks, useful uint64
			for p := 0; p < nPrefixes; p++ {
				keys, st := scanPrefix(t, d, prefixRO, p)
				memUseful += st.MemtablePrefixBloomUseful
				checks += st.PrefixBloomChecks
				useful += st.PrefixBloomUseful
				if prefixPresent(p) {
					if len(keys) != keysPer {
						t.Fatalf("prefix %d: %d keys %q, want %d", p, len(keys), keys, keysPer)
					}
					continue
				}
				absent++
				if len(keys) != 0 {
					t.Fatalf("absent prefix %d: keys %q", p, keys)
				}
				if st.PrefixBloomChecks != st.PrefixBloomUseful {
					continue // a false positive of some table's filter
				}
				clean++
				if n := st.BlockReads + st.BlockCacheHits; n != 0 {
					t.Fatalf("absent prefix %d: every filter ruled it out, yet %d data blocks were read (%+v)", p, n, st)
				}
				if st.AsyncReads != 0 {
					t.Fatalf("absent prefix %d: %d async reads submitted for tables the filters ruled out", p, st.AsyncReads)
				}
				if st.PrefixBloomUseful < 4 {
					t.Fatalf("absent prefix %d: only %d tables ruled out by their filters (4 L0 tables)", p, st.PrefixBloomUseful)
				}
				// The same seek in total order reads blocks, and lands on
				// another prefix.
				it := d.NewIterator(totalRO)
				if it.Seek(prefixOfKey(p)) && bytes.HasPrefix(it.Key(), prefixOfKey(p)) {
					t.Fatalf("absent prefix %d: a total-order seek found %q", p, it.Key())
				}
				tst := it.Stats()
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				if tst.BlockReads+tst.BlockCacheHits == 0 || tst.PrefixBloomChecks != 0 {
					t.Fatalf("absent prefix %d: a total-order seek %+v", p, tst)
				}
			}
			if clean < absent*8/10 {
				t.Errorf("only %d of %d absent prefixes ruled out by every table's filter", clean, absent)
			}
			if memUseful < uint64(absent*8/10) {
				t.Errorf("the memtable's prefix bloom ruled out %d of %d absent prefixes", memUseful, absent)
			}
			if c, u := o.Statistics.TickerCount(TickerBloomPrefixChecked), o.Statistics.TickerCount(TickerBloomPrefixUseful); c != checks || u != useful {
				t.Errorf("tickers: %d prefix probes, %d useful; the iterators counted %d and %d", c, u, checks, useful)
			}
		})
	}
}

// TestPrefixSeekSemantics pins down prefix mode: Seek, SeekForPrev and
// SeekLT confine to the seek key's prefix, First and Last to the prefix of
// the key they land on, a seek key outside the domain seeks in total
// order, TotalOrderSeek turns prefix mode off, and an invalid confined
// iterator does not move.
func TestPrefixSeekSemantics(t *testing.T) {
	d, err := Open("/db", prefixTestOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, k := range []string{"ab", "0001:a", "0001:b", "0002:a", "0003:a", "0003:b", "0003:c", "0005:a", "9"} {
		if err := d.Put([]byte(k), []byte("v"+k), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Put([]byte("0003:bb"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	// walk runs moves ("s:KEY" Seek, "p:KEY" SeekForPrev, "l:KEY" SeekLT,
	// "f" First, "L" Last, "n" Next, "b" Prev) and renders where each lands.
	walk := func(ro *ReadOptions, moves ...string) string {
		it := d.NewIterator(ro)
		defer it.Close()
		var out []string
		for _, mv := range moves {
			op, arg, _ := strings.Cut(mv, ":")
			var ok bool
			switch op {
			case "s":
				ok = it.Seek([]byte(arg))
			case "p":
				ok = it.SeekForPrev([]byte(arg))
			case "l":
				ok = it.SeekLT([]byte(arg))
			case "f":
				ok = it.First()
			case "L":
				ok = it.Last()
			case "n":
				ok = it.Next()
			case "b":
				ok = it.Prev()
			}
			if ok != it.Valid() {
				t.Fatalf("%s returned %v, Valid %v", mv, ok, it.Valid())
			}
			if ok {
				out = append(out, string(it.Key()))
			} else {
				out = append(out, "-")
			}
		}
		return strings.Join(out, " ")
	}
	prefix := &ReadOptions{PrefixSameAsStart: true}
	total := &ReadOptions{PrefixSameAsStart: true, TotalOrderSeek: true}
	for _, c := range []struct {
		ro    *ReadOptions
		moves []string
		want  string
	}{
		{prefix, []string{"s:0003", "n", "n", "n", "n", "n"}, "0003:a 0003:b 0003:bb 0003:c - -"},
		{prefix, []string{"s:0003:bb", "b", "b", "b", "b"}, "0003:bb 0003:b 0003:a - -"},
		{prefix, []string{"s:0004", "n", "b"}, "- - -"},               // absent prefix: nothing
		{total, []string{"s:0004", "n", "b"}, "0005:a 9 0005:a"},      // total order
		{nil, []string{"s:0004"}, "0005:a"},                           // no ReadOptions: total order
		{prefix, []string{"s:000", "n", "n"}, "0001:a 0001:b 0002:a"}, // out of the domain: total order
		{prefix, []string{"p:0003:zz", "b", "b", "b", "n"}, "0003:c 0003:bb 0003:b 0003:a 0003:b"},
		{prefix, []string{"p:0004", "n"}, "- -"},                       // the last key <= 0004 is 0003:c: another prefix
		{prefix, []string{"l:0003:b", "b", "n", "n"}, "0003:a - - -"},  // SeekLT, confined
		{prefix, []string{"f", "n", "n", "n"}, "0001:a 0001:b - -"},    // First, then confined
		{prefix, []string{"L", "b"}, "ab 9"},                           // "ab" has no prefix: unconfined
		{prefix, []string{"s:0002", "f", "n"}, "0002:a 0001:a 0001:b"}, // First lifts the Seek's prefix
		{prefix, []string{"s:0001", "n", "n", "s:0003", "n"}, "0001:a 0001:b - 0003:a 0003:b"},
	} {
		if got := walk(c.ro, c.moves...); got != c.want {
			t.Errorf("%+v %v: got %q, want %q", c.ro, c.moves, got, c.want)
		}
	}
}

// TestPrefixSeekRangeTombstoneInRuledOutTable: a table whose filter rules
// the prefix out still contributes its range tombstones, which delete the
// prefix's keys in older tables; so does a memtable its bloom rules out.
func TestPrefixSeekRangeTombstoneInRuledOutTable(t *testing.T) {
	for _, inMemtable := range []bool{false, true} {
		t.Run(fmt.Sprintf("tombstone in memtable=%v", inMemtable), func(t *testing.T) {
			d, err := Open("/db", prefixTestOptions(vfs.NewMem()))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for k := 0; k < 5; k++ {
				for _, p := range []int{1, 2, 3} {
					if err := d.Put(prefixKey(p, k), []byte("old"), nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			// The newer source holds points of prefix 9 only, and a
			// tombstone over all of prefix 2 and part of prefix 3.
			if err := d.Put(prefixKey(9, 0), []byte("new"), nil); err != nil {
				t.Fatal(err)
			}
			if err := d.DeleteRange(prefixOfKey(2), prefixKey(3, 2), nil); err != nil {
				t.Fatal(err)
			}
			if !inMemtable {
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			ro := &ReadOptions{PrefixSameAsStart: true}
			if keys, st := scanPrefix(t, d, ro, 2); len(keys) != 0 {
				t.Errorf("prefix 2, deleted by a tombstone of a source without the prefix: %q (%+v)", keys, st)
			}
			keys, st := scanPrefix(t, d, ro, 3)
			if want := []string{"0003:02", "0003:03", "0003:04"}; !slices.Equal(keys, want) {
				t.Errorf("prefix 3: %q, want %q", keys, want)
			}
			if !inMemtable && st.PrefixBloomUseful == 0 || inMemtable && st.MemtablePrefixBloomUseful == 0 {
				t.Errorf("the source holding the tombstone was not ruled out by its filter: %+v", st)
			}
			if keys, _ := scanPrefix(t, d, ro, 1); len(keys) != 5 {
				t.Errorf("prefix 1: %q", keys)
			}
		})
	}
}

// TestPrefixSeekForeignExtractorTables: tables written under another
// extractor (same function, other name) or none are never skipped by a
// prefix seek, which still returns what a total-order scan does; tables
// written after the extractor changed (SetOptions) are.
func TestPrefixSeekForeignExtractorTables(t *testing.T) {
	fs := vfs.NewMem()
	o := prefixTestOptions(fs)
	o.PrefixExtractor = nil
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	write := func(p int) {
		t.Helper()
		for k := 0; k < 3; k++ {
			if err := d.Put(prefixKey(p, k), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	write(1) // no extractor
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	o.PrefixExtractor = NewCappedPrefixTransform(4) // the same prefixes, another name
	if d, err = Open("/db", o); err != nil {
		t.Fatal(err)
	}
	write(2)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	o.PrefixExtractor = NewFixedPrefixTransform(4)
	if d, err = Open("/db", o); err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	ro := &ReadOptions{PrefixSameAsStart: true}
	for p := 0; p < 4; p++ {
		keys, st := scanPrefix(t, d, ro, p)
		if want := map[bool]int{true: 3, false: 0}[p == 1 || p == 2]; len(keys) != want {
			t.Errorf("prefix %d: %q, want %d keys", p, keys, want)
		}
		if st.PrefixBloomChecks != 0 {
			t.Errorf("prefix %d: %d probes of filters of other extractors", p, st.PrefixBloomChecks)
		}
	}
	write(3) // under rocksdb.FixedPrefix.4
	keys, st := scanPrefix(t, d, ro, 0)
	if len(keys) != 0 || st.PrefixBloomChecks != 1 || st.PrefixBloomUseful != 1 {
		t.Errorf("prefix 0: %q, %+v: want the one table of this extractor ruled out", keys, st)
	}
	if err := d.SetOptions(map[string]string{"prefix_extractor": "rocksdb.CappedPrefix.4"}); err != nil {
		t.Fatal(err)
	}
	keys, st = scanPrefix(t, d, ro, 0)
	if len(keys) != 0 || st.PrefixBloomChecks != 1 {
		t.Errorf("after SetOptions: prefix 0: %q, %+v: want the table of rocksdb.CappedPrefix.4 probed", keys, st)
	}
	if keys, _ := scanPrefix(t, d, ro, 3); len(keys) != 3 {
		t.Errorf("after SetOptions: prefix 3: %q", keys)
	}
	if err := d.SetOptions(map[string]string{"prefix_extractor": "nullptr"}); err != nil {
		t.Fatal(err)
	}
	if keys, st := scanPrefix(t, d, ro, 2); len(keys) != 9-3 || st.PrefixBloomChecks != 0 {
		// No extractor: PrefixSameAsStart has nothing to confine to, and
		// the scan runs to the end in total order.
		t.Errorf("without an extractor: %q, %+v", keys, st)
	}
}

// TestPrefixOnlyFiltersServeGets: with WholeKeyFiltering off, tables hold
// prefixes only, Gets of absent keys of absent prefixes are still ruled
// out by the filters (through the key's prefix), and every present key is
// found, also after a reopen and under another extractor.
func TestPrefixOnlyFiltersServeGets(t *testing.T) {
	fs := vfs.NewMem()
	o := prefixTestOptions(fs)
	o.DisableWholeKeyFiltering = true
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p < 100; p += 2 {
		for k := 0; k < 3; k++ {
			if err := d.Put(prefixKey(p, k), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	props, err := d.GetPropertiesOfAllTables()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range props {
		if p.WholeKeyFiltering || !p.PrefixFiltering || p.PrefixExtractorName != "rocksdb.FixedPrefix.4" {
			t.Fatalf("table %s: whole keys %v, prefixes %v of %q", name, p.WholeKeyFiltering, p.PrefixFiltering, p.PrefixExtractorName)
		}
	}
	check := func(d *DB, wantUseful bool) {
		t.Helper()
		pc := &PerfContext{}
		ro := &ReadOptions{PerfContext: pc}
		for p := 0; p < 100; p++ {
			for k := 0; k < 3; k++ {
				_, err := d.Get(prefixKey(p, k), ro)
				if p%2 == 0 && err != nil || p%2 == 1 && !errors.Is(err, ErrNotFound) {
					t.Fatalf("Get(%s): %v", prefixKey(p, k), err)
				}
			}
		}
		if useful := pc.BloomUseful > 100; useful != wantUseful {
			t.Errorf("%d of %d probes ruled a key out; want useful probes %v", pc.BloomUseful, pc.BloomChecks, wantUseful)
		}
	}
	check(d, true)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	o.PrefixExtractor = NewCappedPrefixTransform(4)
	if d, err = Open("/db", o); err != nil {
		t.Fatal(err)
	}
	check(d, false) // the filters hold another extractor's prefixes: not used
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPrefixOptionsFile: the prefix options are written to the OPTIONS
// file in RocksDB's spelling and parse back; the memtable bloom ratio is
// clamped at 0.25 as RocksDB clamps it; a custom extractor's name does not
// parse, and Check accepts it when given the extractor.
func TestPrefixOptionsFile(t *testing.T) {
	fs := vfs.NewMem()
	o := prefixTestOptions(fs)
	o.DisableWholeKeyFiltering = true
	o.MemtablePrefixBloomSizeRatio = 0.5
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.GetOptions().MemtablePrefixBloomSizeRatio; got != 0.25 {
		t.Errorf("MemtablePrefixBloomSizeRatio %g, want it clamped to 0.25", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, data := newestOptionsFile(t, fs, "/db")
	for _, line := range []string{"prefix_extractor=rocksdb.FixedPrefix.4", "whole_key_filtering=false", "memtable_prefix_bloom_size_ratio=0.25"} {
		if !bytes.Contains(data, []byte("  "+line+"\n")) {
			t.Errorf("OPTIONS lacks %q", line)
		}
	}
	po, err := ParseOptionsFile(data)
	if err != nil {
		t.Fatal(err)
	}
	po.EnsureDefaults()
	if po.PrefixExtractor == nil || po.PrefixExtractor.Name() != "rocksdb.FixedPrefix.4" || po.WholeKeyFiltering || po.MemtablePrefixBloomSizeRatio != 0.25 {
		t.Errorf("parsed back: extractor %v, whole keys %v, ratio %g", po.PrefixExtractor, po.WholeKeyFiltering, po.MemtablePrefixBloomSizeRatio)
	}
	if _, err := ParseOptionsFile([]byte("prefix_extractor=my.extractor\n")); err == nil {
		t.Error("a custom extractor's name parsed")
	}
	o2 := testOptions(vfs.NewMem())
	if _, err := ParseOptionsFile([]byte("prefix_extractor=nullptr\n")); err != nil {
		t.Errorf("nullptr: %v", err)
	}
	o2.PrefixExtractor = namedTransform{SliceTransform: NewFixedPrefixTransform(2), name: "my.extractor"}
	d2, err := Open("/db2", o2)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db2", o2)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Files {
		if f.Kind == "OPTIONS" && f.Status != CheckOK {
			t.Errorf("Check with the custom extractor: %s %v", f.Name, f.Err)
		}
	}
}

// namedTransform is a transform of another name.
type namedTransform struct {
	SliceTransform
	name string
}

func (n namedTransform) Name() string { return n.name }

// modelPrefixExtractors are the extractors the model and metamorphic tests
// run prefix seeks under: a fixed one (keys of modelPrefixLen bytes and
// more have a prefix: the model's "a" and "z" seek keys do not) and a
// capped one (every key has one: "a" is a prefix of its own).
var modelPrefixExtractors = []SliceTransform{
	NewFixedPrefixTransform(modelPrefixLen),
	NewCappedPrefixTransform(modelPrefixLen - 1), // "key001": a hundred keys
}

// TestModelPrefixSeek is TestModel with iterators in prefix mode among the
// operations (ReadOptions.PrefixSameAsStart, sometimes with TotalOrderSeek),
// checked against the model's prefix semantics: with each extractor, with
// memtable prefix blooms, with filters of prefixes only, with AsyncIO
// (two-phase prefix seeks), with blob files, and with SetOptions changing
// options (not the extractor) mid-run.
func TestModelPrefixSeek(t *testing.T) {
	ops := bySize(3000, 1000, 20000)
	variants := []struct {
		name string
		cfg  dbRunConfig
		set  func(*Options)
	}{
		{"memtable-bloom", dbRunConfig{}, func(o *Options) { o.MemtablePrefixBloomSizeRatio = 0.05 }},
		{"prefixes-only-tiny-tables", dbRunConfig{}, func(o *Options) {
			o.DisableWholeKeyFiltering = true
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
		}},
		{"async-io", dbRunConfig{asyncIO: true, optimizeMultiGet: true}, func(o *Options) { o.MemtablePrefixBloomSizeRatio = 0.1 }},
		{"blob-files", dbRunConfig{}, setBlobTestOptions},
		{"set-options", dbRunConfig{setOptions: true}, func(o *Options) {}},
	}
	for _, tr := range modelPrefixExtractors {
		for _, v := range variants {
			t.Run(tr.Name()+"/"+v.name, func(t *testing.T) {
				forEachSeed(t, bySize(1, 1, 5), func(t *testing.T, seed uint64) {
					cfg := v.cfg
					cfg.prefixSeeks = true
					cfg.setOptionsSeed = seed
					runModelWith(t, seed, ops, cfg, func(o *Options) { o.PrefixExtractor = tr }, v.set)
				})
			})
		}
	}
}

// TestMetamorphicPrefixSeek is TestMetamorphic with iterators in prefix
// mode, under the option sets that change where keys live and how tables
// and memtables are read, each with the extractor and a memtable prefix
// bloom on top (and one set without whole keys in its filters): every set
// must answer as the model's prefix semantics say.
func TestMetamorphicPrefixSeek(t *testing.T) {
	n := bySize(1500, 500, 8000)
	names := []string{
		"base", "tiny-memtable-nocompression", "big-blocks-nobloom", "300-byte-blocks",
		"7-static-levels", "max-open-files-4-nocache", "cache-index-filter-small-cache",
		"async-io", "async-io-latency-nocache", "max-skip-0", "blob-files-tiny",
		"delete-persistence-fake-clock", "set-options-mid-run",
	}
	for _, tr := range modelPrefixExtractors {
		t.Run(tr.Name(), func(t *testing.T) {
			var sets []metaOptionSet
			for _, name := range names {
				i := slices.IndexFunc(metamorphicSets, func(s metaOptionSet) bool { return s.name == name })
				if i < 0 {
					t.Fatalf("no option set %q", name)
				}
				s := metamorphicSets[i]
				set := s.set
				s.set = func(o *Options) {
					set(o)
					o.PrefixExtractor = tr
					o.MemtablePrefixBloomSizeRatio = 0.1
				}
				sets = append(sets, s)
			}
			sets = append(sets, metaOptionSet{name: "prefixes-only-no-memtable-bloom", set: func(o *Options) {
				o.PrefixExtractor = tr
				o.DisableWholeKeyFiltering = true
			}})
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				g := newOpGenerator(seed, modelKeys)
				g.prefixSeeks = true
				m := newModelTarget()
				m.prefix = tr
				runMetamorphicModel(t, seed, generateOpsWith(g, n), sets, m)
			})
		})
	}
}

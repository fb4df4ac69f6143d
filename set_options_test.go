package shale

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// mutableOptionValues gives every mutable option a valid value other than
// testOptions' (TestSetOptionsEveryMutableOption needs one per option).
var mutableOptionValues = map[string]string{
	"write_buffer_size":                       "32768",
	"max_write_buffer_number":                 "3",
	"level0_file_num_compaction_trigger":      "3",
	"level0_slowdown_writes_trigger":          "9",
	"level0_stop_writes_trigger":              "13",
	"target_file_size_base":                   "16384",
	"target_file_size_multiplier":             "2",
	"max_bytes_for_level_base":                "65536",
	"max_bytes_for_level_multiplier":          "4.5",
	"max_background_jobs":                     "4",
	"disable_auto_compactions":                "true",
	"block_size":                              "2048",
	"block_restart_interval":                  "8",
	"bloom_bits_per_key":                      "12",
	"compression":                             "zstd",
	"bytes_per_sync":                          "65536",
	"tombstone_dense_compaction_threshold":    "0.25",
	"num_deletions_threshold":                 "50",
	"deletion_size_ratio_threshold":           "0.75",
	"disable_delete_aware_compaction":         "true",
	"max_sequential_skip_in_iterations":       "3",
	"memtable_op_scan_flush_trigger":          "50",
	"delete_persistence_threshold":            "1h0m0s",
	"ttl":                                     "86400",
	"periodic_compaction_seconds":             "604800",
	"avoid_flush_during_shutdown":             "true",
	"enable_blob_files":                       "true",
	"enable_blob_write_separation":            "true",
	"min_blob_size":                           "100",
	"blob_file_size":                          "1048576",
	"blob_compression_type":                   "zstd",
	"enable_blob_garbage_collection":          "true",
	"blob_garbage_collection_age_cutoff":      "0.5",
	"blob_garbage_collection_force_threshold": "0.75",
	"blob_garbage_collection_off_peak_window": "22:30-03:15",
	"blob_compaction_readahead_size":          "65536",
	"blob_file_starting_level":                "1",
	"prepopulate_blob_cache":                  "true",
	"prefix_extractor":                        "rocksdb.FixedPrefix.4",
	"whole_key_filtering":                     "false",
	"memtable_prefix_bloom_size_ratio":        "0.1",

	// Blob targets (issue 13).
	"blob_garbage_collection_max_relocation_bytes": "33554432",
}

// optionFieldsWithoutName are the Options fields the OPTIONS file does not
// record, which SetOptions therefore cannot change (set_options.go lists
// why).
var optionFieldsWithoutName = []string{
	"CreateIfMissing", "ErrorIfExists", "FS", "Logger", "Statistics", "Lock", "Clock",
	"SecondaryDeleteKey", "DisableDynamicLevelBytes", "KeepLogFileNum", "MaxLogFileSize",
	"EventListener", "RateLimiter", "DisableWholeKeyFiltering",
}

// companionFields are the fields an option's parse sets besides its own:
// the Disable switch of an option whose default is true.
var companionFields = map[string]string{"WholeKeyFiltering": "DisableWholeKeyFiltering"}

// TestOptionSpecsCoverOptions: optionSpecs names each option once, each
// entry's field is the Options field its parse sets, every Options field is
// classified, and every mutable option has a test value that writes back as
// it was read.
func TestOptionSpecsCoverOptions(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	classified := map[string]bool{}
	for _, f := range optionFieldsWithoutName {
		classified[f] = true
	}
	base := testOptions(vfs.NewMem()).EnsureDefaults()
	for _, spec := range optionSpecs {
		if optionSpecsByName[spec.name] != &optionSpecs[slices.IndexFunc(optionSpecs, func(s optionSpec) bool { return s.name == spec.name })] {
			t.Errorf("optionSpecs names %s more than once", spec.name)
		}
		if _, ok := typ.FieldByName(spec.field); !ok {
			t.Errorf("%s: field %q is not an Options field", spec.name, spec.field)
		}
		classified[spec.field] = true
		value, hasValue := mutableOptionValues[spec.name]
		switch {
		case spec.immutable == "" && !hasValue:
			t.Errorf("mutable option %s has no value in mutableOptionValues", spec.name)
			continue
		case spec.immutable != "" && hasValue:
			t.Errorf("immutable option %s has a value in mutableOptionValues", spec.name)
			continue
		case !hasValue:
			continue
		}
		o := *base
		if err := spec.parse(&o, value); err != nil {
			t.Errorf("%s=%s: %v", spec.name, value, err)
			continue
		}
		if got := spec.format(&o); got != value {
			t.Errorf("%s=%s is written back as %s", spec.name, value, got)
		}
		bv, ov := reflect.ValueOf(*base), reflect.ValueOf(o)
		for i := range typ.NumField() {
			if f := typ.Field(i); f.Type.Comparable() && bv.Field(i).Interface() != ov.Field(i).Interface() && f.Name != spec.field && f.Name != companionFields[spec.field] {
				t.Errorf("%s=%s changes Options.%s, not (only) Options.%s", spec.name, value, f.Name, spec.field)
			}
		}
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); !classified[f.Name] {
			t.Errorf("Options.%s is neither in optionSpecs nor in optionFieldsWithoutName", f.Name)
		}
	}
}

// TestMutableOptionsReadThroughAccessor: no production code reads a mutable
// option through d.opts (Open's options, which SetOptions never changes).
func TestMutableOptionsReadThroughAccessor(t *testing.T) {
	mutable := map[string]bool{"maxSequentialSkip": true}
	for _, spec := range optionSpecs {
		if spec.immutable == "" {
			mutable[spec.field] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "set_options.go") {
		t.Skip("the package's sources are not in the working directory")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !mutable[sel.Sel.Name] {
				return true
			}
			if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "opts" {
				t.Errorf("%s: reads %s through .opts; read mutable options through mutableOptions()", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// openSetOptionsDB opens /db in fs with testOptions changed by set (may be
// nil), closed at the end of the test.
func openSetOptionsDB(t *testing.T, fs vfs.FS, set func(*Options)) *DB {
	t.Helper()
	opts := testOptions(fs)
	opts.Logger = discardLogger()
	if set != nil {
		set(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSetOptionsEveryMutableOption sets each mutable option alone: the DB's
// options, the picker's, and the OPTIONS file (the only one left) show the
// new value, and nothing else changes.
func TestSetOptionsEveryMutableOption(t *testing.T) {
	for name, value := range mutableOptionValues {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			db := openSetOptionsDB(t, fs, nil)
			before := optionsFileMap(ptr(db.GetOptions()))
			if before[name] == value {
				t.Fatalf("%s is already %s: the test value must differ", name, value)
			}
			if err := db.SetOptions(map[string]string{name: value}); err != nil {
				t.Fatal(err)
			}
			after := optionsFileMap(ptr(db.GetOptions()))
			if want := withOption(before, name, value); !reflect.DeepEqual(after, want) {
				t.Fatalf("after SetOptions(%s=%s) the options differ from the old ones in more than %s:\n got %v\nwant %v", name, value, name, after, want)
			}
			want := db.compactOptions()
			want.EnsureDefaults()
			if got := pickerOptionsOf(db); withoutNow(got) != withoutNow(want) {
				t.Fatalf("picker options %s, want %s", withoutNow(got), withoutNow(want))
			}
			if n := countFiles(t, fs, base.FileTypeOptions); n != 1 {
				t.Fatalf("%d OPTIONS files after SetOptions, want 1", n)
			}
			_, data := newestOptionsFile(t, fs, "/db")
			parsed, err := ParseOptionsFile(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := optionsFileMap(parsed)[name]; got != value {
				t.Fatalf("the OPTIONS file has %s=%s, want %s", name, got, value)
			}
		})
	}
}

// pickerOptionsOf returns the options db's picker picks with.
func pickerOptionsOf(db *DB) compact.Options {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.picker.Options()
}

// withoutNow renders picker options without their clock function, which
// reflect.DeepEqual cannot compare.
func withoutNow(o compact.Options) string {
	v := reflect.ValueOf(o)
	var b strings.Builder
	for i := range v.NumField() {
		if v.Type().Field(i).Type.Kind() == reflect.Func {
			continue
		}
		fmt.Fprintf(&b, "%s=%v ", v.Type().Field(i).Name, v.Field(i))
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// withOption returns m with k set to v, in a new map.
func withOption(m map[string]string, k, v string) map[string]string {
	c := make(map[string]string, len(m))
	for key, val := range m {
		c[key] = val
	}
	c[k] = v
	return c
}

// TestSetOptionsRejects: an unknown or immutable name, a value that does not
// parse or that Open would refuse, and an empty call fail naming the option,
// and change neither the options nor any file, even with valid options
// beside the bad one.
func TestSetOptionsRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		opts map[string]string
		want string // in the error
	}{
		{"empty", map[string]string{}, "no option given"},
		{"unknown", map[string]string{"write_buffer_size": "32768", "no_such_option": "1"}, `unknown option "no_such_option"`},
		{"immutable", map[string]string{"num_levels": "3"}, "num_levels cannot change while the DB is open"},
		{"immutable-comparator", map[string]string{"comparator": "leveldb.BytewiseComparator"}, "comparator cannot change"},
		{"immutable-with-mutable", map[string]string{"disable_auto_compactions": "true", "use_direct_reads": "true"}, "use_direct_reads cannot change"},
		{"parse-int", map[string]string{"write_buffer_size": "64MiB"}, "write_buffer_size=64MiB"},
		{"parse-int-overflow", map[string]string{"target_file_size_base": "9000000000000T"}, "target_file_size_base=9000000000000T"},
		{"parse-bool", map[string]string{"disable_auto_compactions": "yes"}, "disable_auto_compactions=yes"},
		{"parse-compression", map[string]string{"compression": "lz4"}, `SetOptions: compression=lz4: unknown compression "lz4"`},
		{"parse-duration", map[string]string{"delete_persistence_threshold": "3 days"}, "delete_persistence_threshold=3 days"},
		{"validate", map[string]string{"write_buffer_size": "100", "disable_auto_compactions": "true"}, "write_buffer_size=100: Options.WriteBufferSize must be at least 4 KiB"},
		{"validate-block-size", map[string]string{"block_size": "-3000"}, "block_size=-3000: Options.BlockSize must be between 1 byte and 256 MiB"},
		{"validate-cross", map[string]string{"level0_file_num_compaction_trigger": "10"}, "level0_file_num_compaction_trigger=10: Options.Level0SlowdownWritesTrigger (8) must be >= Level0FileNumCompactionTrigger (10)"},
		{"validate-spec", map[string]string{"target_file_size_multiplier": "-2"}, "target_file_size_multiplier=-2: Options.TargetFileSizeMultiplier must be positive, got -2"},
		{"validate-jobs", map[string]string{"max_background_jobs": "65"}, "max_background_jobs=65: Options.MaxBackgroundJobs must be between 1 and 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db := openSetOptionsDB(t, fs, nil)
			before := db.GetOptions()
			names := listNames(t, fs, "/db")
			optName, data := newestOptionsFile(t, fs, "/db")
			err := db.SetOptions(c.opts)
			if err == nil || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("SetOptions(%v): %v, want ErrInvalidArgument containing %q", c.opts, err, c.want)
			}
			if got := optionsFileMap(ptr(db.GetOptions())); !reflect.DeepEqual(got, optionsFileMap(&before)) {
				t.Fatalf("a failed SetOptions changed the options:\n got %v\nwant %v", got, optionsFileMap(&before))
			}
			if db.mutableOptions().WriteBufferSize != before.WriteBufferSize {
				t.Fatal("a failed SetOptions changed the options")
			}
			if got := listNames(t, fs, "/db"); !slices.Equal(got, names) {
				t.Fatalf("a failed SetOptions changed the files: %v, was %v", got, names)
			}
			if got := readFile(t, fs, "/db/"+optName); string(got) != string(data) {
				t.Fatal("a failed SetOptions changed the OPTIONS file")
			}
		})
	}
}

// TestSetOptionsClosedAndReadOnly: a closed DB and a read-only one refuse.
func TestSetOptionsClosedAndReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenForReadOnly("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.SetOptions(map[string]string{"disable_auto_compactions": "true"}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("SetOptions on a read-only DB: %v, want ErrReadOnly", err)
	}
	ro.Close()
	db.Close()
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "true"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetOptions after Close: %v, want ErrClosed", err)
	}
}

// putFlushed writes n keys (prefix, then a number) and flushes them to one
// L0 table.
func putFlushed(t *testing.T, db *DB, prefix string, n int) {
	t.Helper()
	for i := range n {
		if err := db.Put([]byte(fmt.Sprintf("%s%05d", prefix, i)), []byte("value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestSetOptionsDisableAutoCompactions: with auto compactions turned off L0
// grows past its trigger and nothing compacts it; turned on again, the
// waiting compactions run.
func TestSetOptionsDisableAutoCompactions(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), nil) // L0 trigger 2
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "true"}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		putFlushed(t, db, fmt.Sprintf("k%d-", i), 50)
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Levels[0].NumFiles != 5 || m.Compact.Count+m.Compact.TrivialMoves != 0 {
		t.Fatalf("with auto compactions off: %d L0 files and %d compactions, want 5 and 0:\n%s",
			m.Levels[0].NumFiles, m.Compact.Count+m.Compact.TrivialMoves, m)
	}
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "false"}); err != nil {
		t.Fatal(err)
	}
	// SetOptions schedules the compactions itself: wait without asking.
	if !waitFor(func() bool { m := db.Metrics(); return m.Compact.Count+m.Compact.TrivialMoves > 0 }) {
		t.Fatalf("no compaction after auto compactions were turned on:\n%s", db.Metrics())
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	if n := db.Metrics().Levels[0].NumFiles; n >= 2 {
		t.Fatalf("%d L0 files left after auto compactions were turned on, trigger 2", n)
	}
}

// TestSetOptionsL0CompactionTrigger: a raised trigger leaves L0 files below
// it alone, and lowering it again compacts them.
func TestSetOptionsL0CompactionTrigger(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), nil)
	if err := db.SetOptions(map[string]string{
		"level0_file_num_compaction_trigger": "6",
		"level0_slowdown_writes_trigger":     "10",
		"level0_stop_writes_trigger":         "14",
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		putFlushed(t, db, fmt.Sprintf("k%d-", i), 50)
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Levels[0].NumFiles != 4 || m.Compact.Count+m.Compact.TrivialMoves != 0 {
		t.Fatalf("trigger 6: %d L0 files and %d compactions, want 4 and 0:\n%s", m.Levels[0].NumFiles, m.Compact.Count+m.Compact.TrivialMoves, m)
	}
	if err := db.SetOptions(map[string]string{"level0_file_num_compaction_trigger": "3"}); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Levels[0].NumFiles >= 3 || m.Compact.Count+m.Compact.TrivialMoves == 0 {
		t.Fatalf("trigger 3: %d L0 files and %d compactions:\n%s", m.Levels[0].NumFiles, m.Compact.Count+m.Compact.TrivialMoves, m)
	}
}

// TestSetOptionsWriteBufferSize: a lowered write_buffer_size rotates the
// memtable at the new size at once; a raised one applies from the next
// memtable, the current one rotating at its old size.
func TestSetOptionsWriteBufferSize(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), func(o *Options) {
		o.DisableAutoCompactions = true // count flushes only
		o.MaxWriteBufferNumber = 8
	}) // write_buffer_size 16 KiB
	value := strings.Repeat("v", 100)
	write := func(prefix string, bytes int) {
		for i := range bytes / 110 {
			if err := db.Put([]byte(fmt.Sprintf("%s%06d", prefix, i)), []byte(value), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	flushesAfter := func(prefix string, bytes int) uint64 {
		t.Helper()
		before := db.Metrics().Flush.Count
		write(prefix, bytes)
		if err := db.WaitForCompact(nil); err != nil {
			t.Fatal(err)
		}
		return db.Metrics().Flush.Count - before
	}
	if err := db.SetOptions(map[string]string{"write_buffer_size": "4096"}); err != nil {
		t.Fatal(err)
	}
	if n := flushesAfter("a", 64<<10); n < 10 {
		t.Fatalf("64 KiB written at write_buffer_size 4 KiB: %d flushes, want more than 10", n)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.SetOptions(map[string]string{"write_buffer_size": "4194304"}); err != nil {
		t.Fatal(err)
	}
	// The memtable made at 4 KiB rotates at 4 KiB; the next one holds
	// everything else.
	if n := flushesAfter("b", 256<<10); n != 1 {
		t.Fatalf("256 KiB written after write_buffer_size was raised to 4 MiB: %d flushes, want 1 (the memtable made at 4 KiB)", n)
	}
}

// TestSetOptionsMaxBackgroundJobs: the compaction budget follows
// max_background_jobs as Open splits it.
func TestSetOptionsMaxBackgroundJobs(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), nil)
	for jobs, want := range map[string]int{"1": 1, "2": 1, "4": 3, "8": 6} {
		if err := db.SetOptions(map[string]string{"max_background_jobs": jobs}); err != nil {
			t.Fatal(err)
		}
		if got := db.maxCompactions(); got != want {
			t.Errorf("max_background_jobs=%s: %d compactions, want %d", jobs, got, want)
		}
	}
}

// TestSetOptionsMemtableOpScanFlushTrigger: iterators made after the
// trigger was lowered flush a memtable their moves find costly.
func TestSetOptionsMemtableOpScanFlushTrigger(t *testing.T) {
	db := scanFlushDB(t, -1, 300, 200)
	if skipped := firstLive(t, db, "k00200"); skipped < 200 || db.Metrics().ScanFlushes != 0 {
		t.Fatalf("with the trigger off: %d skipped, %d scan flushes", skipped, db.Metrics().ScanFlushes)
	}
	if err := db.SetOptions(map[string]string{"memtable_op_scan_flush_trigger": "100"}); err != nil {
		t.Fatal(err)
	}
	firstLive(t, db, "k00200")
	if !waitFor(func() bool { return db.Metrics().ScanFlushes == 1 }) {
		t.Fatalf("no scan flush after the trigger was set to 100:\n%s", db.Metrics())
	}
}

// TestSetOptionsDeletePersistence: turning the threshold on arms the timer
// for a memtable's tombstone, turning it off stops it.
func TestSetOptionsDeletePersistence(t *testing.T) {
	clock := newFakeClock(0)
	db := openSetOptionsDB(t, vfs.NewMem(), func(o *Options) { o.Clock = clock })
	if err := db.Delete([]byte("k"), nil); err != nil {
		t.Fatal(err)
	}
	armed := func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.deadline.timer != nil
	}
	if armed() {
		t.Fatal("a timer is armed with the threshold off")
	}
	if err := db.SetOptions(map[string]string{"delete_persistence_threshold": "1h"}); err != nil {
		t.Fatal(err)
	}
	if !armed() {
		t.Fatal("no timer armed for the memtable's tombstone once the threshold is on")
	}
	if m := db.Metrics().DeletePersistence; m.Threshold != time.Hour || m.MemtableTTL == 0 {
		t.Fatalf("DeletePersistence metrics %+v, want the 1h threshold", m)
	}
	if err := db.SetOptions(map[string]string{"delete_persistence_threshold": "0s"}); err != nil {
		t.Fatal(err)
	}
	if armed() {
		t.Fatal("the timer is still armed after the threshold was turned off")
	}
}

// TestSetOptionsNewTablesUseNewFormat: tables written after a change of
// compression or block size are written with it, and every table stays
// readable.
func TestSetOptionsNewTablesUseNewFormat(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), func(o *Options) { o.DisableAutoCompactions = true })
	putFlushed(t, db, "a", 200)
	if err := db.SetOptions(map[string]string{"compression": "none", "block_size": "4096", "bloom_bits_per_key": "-1"}); err != nil {
		t.Fatal(err)
	}
	putFlushed(t, db, "b", 200)
	props, err := db.GetPropertiesOfAllTables()
	if err != nil {
		t.Fatal(err)
	}
	var before, after *TableProperties
	var seen []string
	for _, p := range props {
		seen = append(seen, fmt.Sprintf("%s/%d/%d", p.CompressionName, p.NumDataBlocks, p.FilterSize))
		if p.CompressionName == "none" {
			after = p
		} else {
			before = p
		}
	}
	// The same number of keys of the same size in each table.
	if len(props) != 2 || before == nil || after == nil || before.CompressionName != "snappy" ||
		before.FilterSize == 0 || after.FilterSize != 0 || after.NumDataBlocks*2 > before.NumDataBlocks {
		t.Fatalf("tables (compression/data blocks/filter size) %v: want a snappy one with a filter and 1 KiB blocks, and an uncompressed one without filter and 4 KiB blocks", seen)
	}
	for _, k := range []string{"a00007", "b00199"} {
		if _, err := db.Get([]byte(k), nil); err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
	}
}

// TestSetOptionsReopen: the OPTIONS file a SetOptions wrote holds the new
// values, Close writes no other, and a DB reopened with them (GetOptions, or
// the parsed file) runs with them and writes them again.
func TestSetOptionsReopen(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.Logger = discardLogger()
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	change := map[string]string{"write_buffer_size": "65536", "disable_auto_compactions": "true", "compression": "zstd"}
	if err := db.SetOptions(change); err != nil {
		t.Fatal(err)
	}
	live := db.GetOptions()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, data := newestOptionsFile(t, fs, "/db")
	parsed, err := ParseOptionsFile(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range change {
		if got := optionsFileMap(parsed)[name]; got != value {
			t.Fatalf("after Close the OPTIONS file has %s=%s, want %s", name, got, value)
		}
	}
	// Reopen with the parsed file's values on top of the program's
	// objects (FS, logger), as LoadLatestOptions users would.
	parsed.FS, parsed.Logger, parsed.CreateIfMissing = fs, opts.Logger, true
	for _, o := range []*Options{&live, parsed} {
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		got := optionsFileMap(ptr(db.GetOptions()))
		_, data := newestOptionsFile(t, fs, "/db")
		written, err := ParseOptionsFile(data)
		if err != nil {
			t.Fatal(err)
		}
		for name, value := range change {
			if got[name] != value || optionsFileMap(written)[name] != value {
				t.Fatalf("reopened: %s=%s, OPTIONS file %s, want %s", name, got[name], optionsFileMap(written)[name], value)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSetOptionsOptionsFileWriteFails: when any step of writing the OPTIONS
// file fails, SetOptions returns the error, the DB keeps its old options,
// and the directory holds the same files with the same OPTIONS bytes; once
// the fault is gone the same call succeeds.
func TestSetOptionsOptionsFileWriteFails(t *testing.T) {
	for _, r := range []errorfs.Rule{
		{Op: errorfs.OpCreate, PathPattern: "*.dbtmp"},
		{Op: errorfs.OpWrite, PathPattern: "*.dbtmp"},
		{Op: errorfs.OpWrite, PathPattern: "*.dbtmp", NoSpace: true, ShortWrite: true},
		{Op: errorfs.OpSync, PathPattern: "*.dbtmp"},
		{Op: errorfs.OpRename, PathPattern: "OPTIONS-*"},
		{Op: errorfs.OpSync, PathPattern: "db"}, // the directory, after the rename
	} {
		t.Run(fmt.Sprintf("%s-%s-nospace=%v", r.Op, r.PathPattern, r.NoSpace), func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, _, db := openFaultDB(t, mem, nil)
			defer db.Close()
			before := optionsFileMap(ptr(db.GetOptions()))
			names := listNames(t, mem, "/db")
			optName, data := newestOptionsFile(t, mem, "/db")
			ffs.AddRule(r)
			change := map[string]string{"disable_auto_compactions": "true", "write_buffer_size": "65536"}
			err := db.SetOptions(change)
			if err == nil || ffs.Injected() == 0 {
				t.Fatalf("SetOptions with a failing %s: %v (%d faults injected)", r.Op, err, ffs.Injected())
			}
			if !strings.Contains(err.Error(), "OPTIONS-") {
				t.Fatalf("the error does not name the OPTIONS file: %v", err)
			}
			ffs.ClearRules()
			if got := optionsFileMap(ptr(db.GetOptions())); !reflect.DeepEqual(got, before) {
				t.Fatalf("a failed OPTIONS write changed the options:\n got %v\nwant %v", got, before)
			}
			if db.mutableOptions().DisableAutoCompactions {
				t.Fatal("a failed OPTIONS write turned auto compactions off")
			}
			if got := listNames(t, mem, "/db"); !slices.Equal(got, names) {
				t.Fatalf("a failed OPTIONS write left files: %v, was %v", got, names)
			}
			if got := readFile(t, mem, "/db/"+optName); string(got) != string(data) {
				t.Fatal("a failed OPTIONS write changed the OPTIONS file")
			}
			if err := db.SetOptions(change); err != nil {
				t.Fatalf("SetOptions once the fault is gone: %v", err)
			}
			if !db.mutableOptions().DisableAutoCompactions {
				t.Fatal("SetOptions succeeded without changing the options")
			}
		})
	}
}

// TestSetOptionsRace runs writers, readers and iterators while SetOptions
// keeps changing options that flushes, compactions, stalls and iterators
// read (run it with -race), then checks every key.
func TestSetOptionsRace(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), func(o *Options) { o.WriteBufferSize = 8 << 10 })
	settings := []map[string]string{
		{"disable_auto_compactions": "true"},
		{"disable_auto_compactions": "false"},
		{"write_buffer_size": "4096"},
		{"write_buffer_size": "32768"},
		{"max_write_buffer_number": "3"},
		{"level0_file_num_compaction_trigger": "4", "level0_slowdown_writes_trigger": "6", "level0_stop_writes_trigger": "8"},
		{"level0_file_num_compaction_trigger": "2", "level0_slowdown_writes_trigger": "8", "level0_stop_writes_trigger": "12"},
		{"max_background_jobs": "1"},
		{"max_background_jobs": "4"},
		{"target_file_size_base": "4096", "max_bytes_for_level_base": "16384"},
		{"compression": "none", "block_size": "4096"},
		{"compression": "zstd", "bloom_bits_per_key": "-1"},
		{"memtable_op_scan_flush_trigger": "2", "max_sequential_skip_in_iterations": "0"},
		{"tombstone_dense_compaction_threshold": "0.01", "num_deletions_threshold": "2"},
		{"disable_delete_aware_compaction": "true"},
		{"delete_persistence_threshold": "20ms"},
		{"delete_persistence_threshold": "0s"},
	}
	const writers, keysPerWriter = 2, 1500
	var wg sync.WaitGroup
	var done atomic.Bool
	errc := make(chan error, 8)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keysPerWriter {
				k := []byte(fmt.Sprintf("w%d-%05d", w, i))
				if err := db.Put(k, []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 50))), nil); err != nil {
					errc <- err
					return
				}
				if i%7 == 0 {
					if err := db.Delete([]byte(fmt.Sprintf("w%d-%05d", w, i/2)), nil); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for !done.Load() {
			_, _ = db.Get([]byte("w0-00010"), nil)
			it := db.NewIterator(nil)
			n := 0
			for ok := it.First(); ok && n < 200; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil {
				errc <- err
				return
			}
		}
	}()
	readers.Add(1)
	go func() {
		defer readers.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for !done.Load() {
			if err := db.SetOptions(settings[rng.IntN(len(settings))]); err != nil {
				errc <- err
				return
			}
			_ = db.GetOptions()
			_ = db.Metrics()
		}
	}()
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "false"}); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompact(&WaitForCompactOptions{Flush: true}); err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		for i := range keysPerWriter {
			deleted := false
			for j := i * 2; j <= i*2+1; j++ {
				deleted = deleted || (j%7 == 0 && j < keysPerWriter)
			}
			k := fmt.Sprintf("w%d-%05d", w, i)
			_, err := db.Get([]byte(k), nil)
			// A writer deletes key i at step 2i or 2i+1, after its Put.
			if deleted && !errors.Is(err, ErrNotFound) || !deleted && err != nil {
				t.Fatalf("Get(%s) = %v (deleted %v)", k, err, deleted)
			}
		}
	}
}

// TestSetOptionsPowerLoss crashes after every file-system mutation of a
// SetOptions and checks each crash: Open succeeds, and the newest OPTIONS
// file is whole (its checksum line matches) and holds either the old values
// or the new ones; after SetOptions returns, only the new ones.
func TestSetOptionsPowerLoss(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	var clones []*vfs.MemFS
	recording := atomic.Bool{}
	cfs := errorfs.NewCrashPointFS(mem, func(errorfs.Mutation) {
		if recording.Load() {
			mu.Lock()
			clones = append(clones, mem.CrashClone())
			mu.Unlock()
		}
	})
	opts := testOptions(cfs)
	opts.Logger = discardLogger()
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	oldValue := optionsFileMap(ptr(db.GetOptions()))["write_buffer_size"]
	recording.Store(true)
	if err := db.SetOptions(map[string]string{"write_buffer_size": "65536"}); err != nil {
		t.Fatal(err)
	}
	recording.Store(false)
	last := mem.CrashClone()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(clones) < 4 {
		t.Fatalf("SetOptions made %d mutations, want at least create, write, sync and rename", len(clones))
	}
	sawNew := false
	for i, fs := range append(clones, last) {
		_, data := newestOptionsFile(t, fs, "/db")
		if err := verifyOptionsChecksum(data); err != nil {
			t.Fatalf("crash after mutation %d of SetOptions: newest OPTIONS file: %v", i+1, err)
		}
		parsed, err := ParseOptionsFile(data)
		if err != nil {
			t.Fatal(err)
		}
		got := optionsFileMap(parsed)["write_buffer_size"]
		switch {
		case got == "65536":
			sawNew = true
		case got != oldValue || i == len(clones):
			t.Fatalf("crash after mutation %d of SetOptions: the newest OPTIONS file has write_buffer_size=%s, want %s or 65536 (65536 once it returned)", i+1, got, oldValue)
		}
		o := testOptions(fs)
		o.Logger = discardLogger()
		db, err := Open("/db", o)
		if err != nil {
			t.Fatalf("crash after mutation %d of SetOptions: Open: %v", i+1, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if n := countFiles(t, fs, base.FileTypeOptions); n != 1 {
			t.Fatalf("crash after mutation %d of SetOptions: %d OPTIONS files after Open, want 1", i+1, n)
		}
	}
	if !sawNew {
		t.Fatal("no crash point kept the new OPTIONS file")
	}
}

// TestSetOptionsRocksDBValues: values spelled as RocksDB spells them (size
// suffixes, its compression names) set what they say.
func TestSetOptionsRocksDBValues(t *testing.T) {
	db := openSetOptionsDB(t, vfs.NewMem(), nil)
	if err := db.SetOptions(map[string]string{
		"write_buffer_size":        "64M",
		"target_file_size_base":    "32k",
		"max_bytes_for_level_base": "1G",
		"compression":              "kZSTD",
	}); err != nil {
		t.Fatal(err)
	}
	o := db.GetOptions()
	if o.WriteBufferSize != 64<<20 || o.TargetFileSizeBase != 32<<10 || o.MaxBytesForLevelBase != 1<<30 || o.Compression != ZstdCompression {
		t.Fatalf("got write_buffer_size %d, target_file_size_base %d, max_bytes_for_level_base %d, compression %s",
			o.WriteBufferSize, o.TargetFileSizeBase, o.MaxBytesForLevelBase, o.Compression)
	}
	for v, want := range map[string]Compression{"kNoCompression": NoCompression, "kSnappyCompression": SnappyCompression} {
		if err := db.SetOptions(map[string]string{"compression": v}); err != nil {
			t.Fatal(err)
		}
		if got := db.GetOptions().Compression; got != want {
			t.Fatalf("compression=%s: %s, want %s", v, got, want)
		}
	}
}

// TestSetOptionsAvoidFlushDuringShutdown: Close follows the value set last:
// writes that skipped the WAL are flushed, or lost once
// avoid_flush_during_shutdown is set.
func TestSetOptionsAvoidFlushDuringShutdown(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint(avoid), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := testOptions(fs)
			opts.Logger = discardLogger()
			opts.AvoidFlushDuringShutdown = !avoid
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Put([]byte("k"), []byte("v"), &WriteOptions{DisableWAL: true}); err != nil {
				t.Fatal(err)
			}
			if err := db.SetOptions(map[string]string{"avoid_flush_during_shutdown": fmt.Sprint(avoid)}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = Open("/db", opts); err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err = db.Get([]byte("k"), nil)
			if avoid && !errors.Is(err, ErrNotFound) || !avoid && err != nil {
				t.Fatalf("avoid_flush_during_shutdown=%v: Get after reopen: %v", avoid, err)
			}
		})
	}
}

// TestSetOptionsRefusesNaNMultiplier: NaN fails the range check of
// max_bytes_for_level_multiplier (else OPTIONS and GetOptions would say NaN
// while the picker ran with 10).
func TestSetOptionsRefusesNaNMultiplier(t *testing.T) {
	d, err := Open("/db", testOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.SetOptions(map[string]string{"max_bytes_for_level_multiplier": "NaN"}); err == nil {
		o := d.GetOptions()
		t.Fatalf("SetOptions accepted NaN: GetOptions says %v, the picker uses %v", o.MaxBytesForLevelMultiplier, d.picker.Options().MaxBytesForLevelMultiplier)
	}
}

package shale

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// extEntry is one entry of an external table written by writeExternal:
// kind 'p' Put, 'm' Merge, 'd' Delete, 'r' DeleteRange [key, value).
type extEntry struct {
	kind       byte
	key, value string
}

// writeExternal writes an external table at path with opts (points in the
// order given, which must be increasing) and returns its info.
func writeExternal(t *testing.T, opts *Options, path string, entries ...extEntry) ExternalSSTFileInfo {
	t.Helper()
	w := NewSSTFileWriter(opts)
	must(t, w.Open(path))
	for _, e := range entries {
		var err error
		switch e.kind {
		case 'p':
			err = w.Put([]byte(e.key), []byte(e.value))
		case 'm':
			err = w.Merge([]byte(e.key), []byte(e.value))
		case 'd':
			err = w.Delete([]byte(e.key))
		case 'r':
			err = w.DeleteRange([]byte(e.key), []byte(e.value))
		}
		must(t, err)
	}
	must(t, w.Finish())
	return w.Info()
}

// getString reads key at ro, "<nil>" when not found.
func getString(t *testing.T, d *DB, key string, ro *ReadOptions) string {
	t.Helper()
	v, err := d.Get([]byte(key), ro)
	if errors.Is(err, ErrNotFound) {
		return "<nil>"
	}
	must(t, err)
	return string(v)
}

// scanString lists the DB's keys and values at ro.
func scanString(t *testing.T, d *DB, ro *ReadOptions) string {
	t.Helper()
	it := d.NewIterator(ro)
	defer it.Close()
	var sb strings.Builder
	for it.First(); it.Valid(); it.Next() {
		fmt.Fprintf(&sb, "%s=%s ", it.Key(), it.Value())
	}
	must(t, it.Err())
	return strings.TrimSpace(sb.String())
}

// levelOf returns the level of table num in d's current version, -1 when
// it is not there.
func levelOf(d *DB, num base.FileNum) int {
	v := d.versions.Current()
	defer v.Unref()
	for l, files := range v.Levels {
		for _, f := range files {
			if f.FileNum == num {
				return l
			}
		}
	}
	return -1
}

// ingestedTables returns the tables of d's current version with a global
// seqnum, by number.
func ingestedTables(d *DB) map[base.FileNum]base.SeqNum {
	v := d.versions.Current()
	defer v.Unref()
	m := map[base.FileNum]base.SeqNum{}
	for _, files := range v.Levels {
		for _, f := range files {
			if f.GlobalSeqNum != 0 {
				m[f.FileNum] = f.GlobalSeqNum
			}
		}
	}
	return m
}

// TestIngestExternalFileOverExistingData: a table overlapping flushed data
// and the memtable goes in at a seqnum above both (the memtable flushed
// first), its puts, deletes and range deletion win over older data, a
// snapshot taken before keeps the old view, and all of it survives a
// reopen; a table overlapping nothing goes to the last level at seqnum 0.
func TestIngestExternalFileOverExistingData(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.DisableAutoCompactions = true
	d, err := Open("/db", opts)
	must(t, err)
	must(t, mem.MkdirAll("/ext", 0o755))
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		must(t, d.Put([]byte(k), []byte("old-"+k), nil))
	}
	must(t, d.Flush())
	must(t, d.Put([]byte("c"), []byte("mem-c"), nil))
	snap := d.NewSnapshot()
	defer snap.Release()
	before := scanString(t, d, nil)

	writeExternal(t, opts, "/ext/1.sst",
		extEntry{'p', "a", "new-a"}, extEntry{'d', "b", ""}, extEntry{'p', "c", "new-c"},
		extEntry{'r', "d", "e"}, extEntry{'p', "f", "new-f"})
	must(t, d.IngestExternalFile([]string{"/ext/1.sst"}, nil))
	if _, err := mem.Stat("/ext/1.sst"); err != nil {
		t.Fatalf("copy mode removed the source: %v", err)
	}
	want := "a=new-a c=new-c e=old-e f=new-f"
	if got := scanString(t, d, nil); got != want {
		t.Fatalf("after ingestion: %q, want %q", got, want)
	}
	if got := scanString(t, d, &ReadOptions{Snapshot: snap}); got != before {
		t.Fatalf("snapshot from before: %q, want %q", got, before)
	}
	for k, v := range map[string]string{"a": "new-a", "b": "<nil>", "c": "new-c", "d": "<nil>", "e": "old-e", "f": "new-f"} {
		if got := getString(t, d, k, nil); got != v {
			t.Fatalf("Get(%s) = %s, want %s", k, got, v)
		}
	}
	if got := getString(t, d, "c", &ReadOptions{Snapshot: snap}); got != "mem-c" {
		t.Fatalf("snapshot Get(c) = %s, want mem-c", got)
	}
	ing := ingestedTables(d)
	if len(ing) != 1 {
		t.Fatalf("ingested tables %v, want one with a global seqnum", ing)
	}
	for num, seq := range ing {
		if lvl := levelOf(d, num); lvl != 0 {
			t.Fatalf("overlapping table went to L%d, want L0", lvl)
		}
		if seq <= base.SeqNum(snap.SeqNum()) {
			t.Fatalf("global seqnum %d not above the snapshot's %d", seq, snap.SeqNum())
		}
	}

	// A table overlapping nothing, with no snapshot needing a seqnum, goes
	// to the last level at seqnum 0 (and moves: the source goes).
	snap.Release()
	writeExternal(t, opts, "/ext/2.sst", extEntry{'p', "x", "new-x"}, extEntry{'p', "y", "new-y"})
	must(t, d.IngestExternalFile([]string{"/ext/2.sst"}, &IngestExternalFileOptions{MoveFiles: true}))
	if _, err := mem.Stat("/ext/2.sst"); err == nil {
		t.Fatalf("MoveFiles kept the source")
	}
	v := d.versions.Current()
	last := v.Levels[len(v.Levels)-1]
	if len(last) != 1 || last[0].GlobalSeqNum != 0 || string(last[0].Smallest.UserKey) != "x" {
		t.Fatalf("last level %v, want the table of x..y at seqnum 0", last)
	}
	v.Unref()
	want += " x=new-x y=new-y"
	if got := scanString(t, d, nil); got != want {
		t.Fatalf("after second ingestion: %q, want %q", got, want)
	}
	must(t, d.Close())
	rep, err := Check("/db", opts)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("check after ingestion:\n%s", rep)
	}
	d, err = Open("/db", opts)
	must(t, err)
	if got := scanString(t, d, nil); got != want {
		t.Fatalf("after reopen: %q, want %q", got, want)
	}
	must(t, d.CompactRange(nil, nil))
	if got := scanString(t, d, nil); got != want {
		t.Fatalf("after full compaction: %q, want %q", got, want)
	}
	must(t, d.Close())
}

// TestSSTFileWriterRefusesOutOfOrderKeys: a duplicate or decreasing key is
// an error matching ErrInvalidArgument naming it; calls out of turn are
// refused; an empty table is refused and leaves no file.
func TestSSTFileWriterRefusesOutOfOrderKeys(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	w := NewSSTFileWriter(opts)
	if err := w.Put([]byte("a"), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Put before Open: %v", err)
	}
	must(t, w.Open("/t.sst"))
	must(t, w.Put([]byte("b"), []byte("1")))
	for _, k := range []string{"b", "a"} {
		err := w.Put([]byte(k), []byte("2"))
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("%q", k)) {
			t.Fatalf("Put(%s) after b: %v, want ErrInvalidArgument naming it", k, err)
		}
	}
	w.Abandon()
	if _, err := mem.Stat("/t.sst"); err == nil {
		t.Fatalf("Abandon left the table")
	}
	w = NewSSTFileWriter(opts)
	must(t, w.Open("/e.sst"))
	must(t, w.DeleteRange([]byte("a"), []byte("a"))) // empty: ignored
	if err := w.Finish(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Finish of an empty table: %v", err)
	}
	if _, err := mem.Stat("/e.sst"); err == nil {
		t.Fatalf("an empty table was left")
	}
	w = NewSSTFileWriter(nil)
	if err := w.Open("/x.sst"); err == nil {
		// nil options write through the OS file system: not here.
		w.Abandon()
	}
}

// TestIngestRangeDeletionsAnyOrder: range deletions given in any order,
// overlapping each other, delete older data across their union and never
// the table's own points.
func TestIngestRangeDeletionsAnyOrder(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	for i := range 20 {
		must(t, d.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("old"), nil))
	}
	must(t, d.Flush())
	writeExternal(t, opts, "/ext.sst",
		extEntry{'r', "k10", "k13"}, extEntry{'r', "k02", "k05"}, extEntry{'p', "k03", "new"},
		extEntry{'r', "k04", "k07"}, extEntry{'r', "k11", "k12"})
	must(t, d.IngestExternalFile([]string{"/ext.sst"}, nil))
	var want []string
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		switch {
		case i == 3:
			want = append(want, k+"=new")
		case i >= 2 && i < 7, i >= 10 && i < 13:
		default:
			want = append(want, k+"=old")
		}
	}
	if got := scanString(t, d, nil); got != strings.Join(want, " ") {
		t.Fatalf("got %q\nwant %q", got, strings.Join(want, " "))
	}
	must(t, d.Close())
}

// TestIngestOverlappingInputsRefused: files of one call that overlap each
// other are refused (naming the option) with nothing changed; with
// AllowOverlappingFiles they stack in L0, the later over the earlier.
func TestIngestOverlappingInputsRefused(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer d.Close()
	writeExternal(t, opts, "/1.sst", extEntry{'p', "a", "1"}, extEntry{'p', "c", "1"})
	writeExternal(t, opts, "/2.sst", extEntry{'p', "b", "2"}, extEntry{'p', "c", "2"})
	before := listNames(t, mem, "/db")
	err = d.IngestExternalFile([]string{"/1.sst", "/2.sst"}, nil)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "AllowOverlappingFiles") {
		t.Fatalf("overlapping inputs: %v", err)
	}
	if after := listNames(t, mem, "/db"); !slices.Equal(before, after) {
		t.Fatalf("a refused call changed the directory: %v -> %v", before, after)
	}
	if got := scanString(t, d, nil); got != "" {
		t.Fatalf("refused call ingested %q", got)
	}
	must(t, d.IngestExternalFile([]string{"/1.sst", "/2.sst"}, &IngestExternalFileOptions{AllowOverlappingFiles: true}))
	if got := scanString(t, d, nil); got != "a=1 b=2 c=2" {
		t.Fatalf("overlapping inputs allowed: %q", got)
	}
}

// TestIngestOptionsRefusals: DisallowGlobalSeqNo, DisallowBlockingFlush
// and FailIfNotBottommostLevel refuse what they forbid, changing nothing.
func TestIngestOptionsRefusals(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer d.Close()
	must(t, d.Put([]byte("b"), []byte("mem"), nil))
	writeExternal(t, opts, "/1.sst", extEntry{'p', "a", "1"}, extEntry{'p', "c", "1"})
	for _, c := range []struct {
		o    IngestExternalFileOptions
		want string
	}{
		{IngestExternalFileOptions{DisallowBlockingFlush: true}, "DisallowBlockingFlush"},
		{IngestExternalFileOptions{DisallowGlobalSeqNo: true}, "DisallowGlobalSeqNo"},
		{IngestExternalFileOptions{FailIfNotBottommostLevel: true}, "FailIfNotBottommostLevel"},
	} {
		err := d.IngestExternalFile([]string{"/1.sst"}, &c.o)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: %v, want ErrInvalidArgument naming %s", c.o, err, c.want)
		}
		if got := scanString(t, d, nil); got != "b=mem" {
			t.Fatalf("%+v: refused call left %q", c.o, got)
		}
		if n := countFiles(t, mem, base.FileTypeTable); n != 0 {
			t.Fatalf("%+v: refused call left %d tables", c.o, n)
		}
	}
}

// writeTableRaw writes a table with the sstable writer directly: entries
// an SSTFileWriter would never write (seqnums, orders, no external mark).
func writeTableRaw(t *testing.T, fs vfs.FS, path string, cmp *base.Comparer, external bool, keys ...base.InternalKey) {
	t.Helper()
	f, err := fs.Create(path)
	must(t, err)
	wo := sstable.WriterOptions{Comparer: cmp}
	if external {
		wo.Collectors = []sstable.PropertyCollector{&externalPropsCollector{w: &SSTFileWriter{}}}
	}
	w := sstable.NewWriter(f, path, wo)
	for _, k := range keys {
		must(t, w.Add(k, []byte("v")))
	}
	_, err = w.Close()
	must(t, err)
}

// TestIngestRefusesBadFiles: truncated and corrupted tables, tables whose
// keys are unsorted, repeated or not at seqnum 0, and tables not written
// by SSTFileWriter are refused with a clear error and change nothing.
func TestIngestRefusesBadFiles(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer d.Close()
	must(t, d.Put([]byte("keep"), []byte("me"), nil))
	writeExternal(t, opts, "/good.sst", extEntry{'p', "a", strings.Repeat("x", 100)}, extEntry{'p', "b", "y"})
	good := readFile(t, mem, "/good.sst")
	writeFile(t, mem, "/truncated.sst", good[:len(good)-10])
	flipped := slices.Clone(good)
	flipped[20] ^= 0x40
	writeFile(t, mem, "/flipped.sst", flipped)
	// A comparer that orders in reverse under the bytewise name writes a
	// table whose keys a bytewise reader finds decreasing.
	rev := *base.DefaultComparer
	rev.Compare = func(a, b []byte) int { return base.DefaultComparer.Compare(b, a) }
	rev.Separator = func(dst, a, _ []byte) []byte { return append(dst, a...) }
	rev.Successor = func(dst, a []byte) []byte { return append(dst, a...) }
	writeTableRaw(t, mem, "/unsorted.sst", &rev, true,
		base.MakeInternalKey([]byte("b"), 0, base.KindSet), base.MakeInternalKey([]byte("a"), 0, base.KindSet))
	writeTableRaw(t, mem, "/dup.sst", base.DefaultComparer, true,
		base.MakeInternalKey([]byte("a"), 0, base.KindSet), base.MakeInternalKey([]byte("a"), 0, base.KindDelete))
	writeTableRaw(t, mem, "/seq.sst", base.DefaultComparer, true,
		base.MakeInternalKey([]byte("a"), 7, base.KindSet))
	writeTableRaw(t, mem, "/notexternal.sst", base.DefaultComparer, false,
		base.MakeInternalKey([]byte("a"), 0, base.KindSet))
	before := listNames(t, mem, "/db")
	for _, c := range []struct {
		path string
		want error
	}{
		{"/truncated.sst", ErrCorruption},
		{"/flipped.sst", ErrCorruption},
		{"/unsorted.sst", ErrCorruption},
		{"/dup.sst", ErrCorruption},
		{"/seq.sst", ErrCorruption},
		{"/notexternal.sst", ErrInvalidArgument},
		{"/missing.sst", nil},
	} {
		err := d.IngestExternalFile([]string{"/good.sst", c.path}, nil)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.path) {
			t.Fatalf("%s: %v, want an error matching %v naming the file", c.path, err, c.want)
		}
		if got := scanString(t, d, nil); got != "keep=me" {
			t.Fatalf("%s: refused call left %q", c.path, got)
		}
		if after := listNames(t, mem, "/db"); !slices.Equal(before, after) {
			t.Fatalf("%s: refused call changed the directory: %v -> %v", c.path, before, after)
		}
	}
}

// TestIngestBlobFiles: with EnableBlobFiles the writer puts large values
// in blob files beside the table (rolled at BlobFileSize); ingestion takes
// them under database numbers in the same edit (the table's blob indexes
// renumbered), every read path returns the values, the blob invariants
// hold, and a reopen, a compaction and MoveFiles (sources gone) keep it so.
func TestIngestBlobFiles(t *testing.T) {
	for _, move := range []bool{false, true} {
		t.Run(fmt.Sprintf("move=%v", move), func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobTestOptions(mem)
			d, err := Open("/db", opts)
			must(t, err)
			must(t, d.Put([]byte("k0005"), []byte("older"), nil))
			must(t, d.Flush())
			var entries []extEntry
			want := map[string]string{}
			for i := range 200 {
				k := fmt.Sprintf("k%04d", i)
				v := string(blobTestValue(i))
				if i%7 == 0 {
					v = "short" // stays inline
				}
				entries = append(entries, extEntry{'p', k, v})
				want[k] = v
			}
			info := writeExternal(t, opts, "/ext.sst", entries...)
			if len(info.BlobFiles) < 2 {
				t.Fatalf("writer made %d blob files, want several (BlobFileSize %d)", len(info.BlobFiles), opts.BlobFileSize)
			}
			blobsBefore := countFiles(t, mem, base.FileTypeBlob)
			must(t, d.IngestExternalFile([]string{"/ext.sst"}, &IngestExternalFileOptions{MoveFiles: move}))
			for _, p := range append([]string{"/ext.sst"}, info.BlobFiles...) {
				if _, err := mem.Stat(p); (err == nil) == move {
					t.Fatalf("move=%v: source %s present=%v", move, p, err == nil)
				}
			}
			if got := countFiles(t, mem, base.FileTypeBlob) - blobsBefore; got != len(info.BlobFiles) {
				t.Fatalf("%d blob files ingested, want %d", got, len(info.BlobFiles))
			}
			check := func(when string) {
				t.Helper()
				if n := checkBlobReferences(t, d); n < 100 {
					t.Fatalf("%s: %d blob indexes, want most of 200", when, n)
				}
				for k, v := range want {
					if got := getString(t, d, k, nil); got != v {
						t.Fatalf("%s: Get(%s) = %.20q, want %.20q", when, k, got, v)
					}
				}
				keys := make([][]byte, 0, len(want))
				for k := range want {
					keys = append(keys, []byte(k))
				}
				vals, errs := d.MultiGet(keys, nil)
				for i, k := range keys {
					if errs[i] != nil || string(vals[i]) != want[string(k)] {
						t.Fatalf("%s: MultiGet(%s) = %.20q, %v", when, k, vals[i], errs[i])
					}
				}
				it := d.NewIterator(nil)
				n := 0
				for it.First(); it.Valid(); it.Next() {
					if string(it.Value()) != want[string(it.Key())] {
						t.Fatalf("%s: iterator at %s: %.20q", when, it.Key(), it.Value())
					}
					n++
				}
				must(t, it.Close())
				if n != len(want) {
					t.Fatalf("%s: iterator saw %d keys, want %d", when, n, len(want))
				}
			}
			check("ingested")
			must(t, d.Close())
			d, err = Open("/db", opts)
			must(t, err)
			check("reopened")
			must(t, d.Close())
			// shale check reads the ingested tables and blob files as it
			// reads the DB's own.
			rep, err := Check("/db", opts)
			must(t, err)
			if !rep.OK() {
				t.Fatalf("check after ingestion:\n%s", rep)
			}
			d, err = Open("/db", opts)
			must(t, err)
			must(t, d.CompactRange(nil, nil))
			check("compacted")
			must(t, d.Close())
		})
	}
}

// TestIngestMergeOperands: merge operands in an external table merge onto
// the data below them, and a database without a merge operator refuses
// the table.
func TestIngestMergeOperands(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.MergeOperator = StringAppendOperator(",")
	d, err := Open("/db", opts)
	must(t, err)
	must(t, d.Put([]byte("a"), []byte("base"), nil))
	must(t, d.Flush())
	writeExternal(t, opts, "/m.sst", extEntry{'m', "a", "x"}, extEntry{'m', "b", "y"})
	must(t, d.IngestExternalFile([]string{"/m.sst"}, nil))
	must(t, d.Merge([]byte("a"), []byte("z"), nil))
	if got := scanString(t, d, nil); got != "a=base,x,z b=y" {
		t.Fatalf("merged: %q", got)
	}
	must(t, d.CompactRange(nil, nil))
	if got := getString(t, d, "a", nil); got != "base,x,z" {
		t.Fatalf("after compaction: %q", got)
	}
	must(t, d.Close())

	plain := testOptions(mem)
	d2, err := Open("/db2", plain)
	must(t, err)
	defer d2.Close()
	if err := d2.IngestExternalFile([]string{"/m.sst"}, nil); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("merge operands without an operator: %v", err)
	}
}

// TestIngestCrashPoints crashes (MemFS crash clones) after every durable
// mutation of an ingestion, copying and moving, with blob files and range
// deletions: each crash reopens to exactly the state before the call or
// exactly the state after it, with no table or blob file the recovered
// version does not hold, and (copying) the source files intact.
func TestIngestCrashPoints(t *testing.T) {
	for _, move := range []bool{false, true} {
		t.Run(fmt.Sprintf("move=%v", move), func(t *testing.T) {
			mem := vfs.NewMem()
			// The hook runs in whichever goroutine mutates the file system,
			// background file deletion included: mu guards armed and clones.
			var mu sync.Mutex
			var clones []*vfs.MemFS
			armed := false
			setArmed := func(v bool) { mu.Lock(); armed = v; mu.Unlock() }
			cp := errorfs.NewCrashPointFS(mem, func(m errorfs.Mutation) {
				mu.Lock()
				defer mu.Unlock()
				if armed && m.Durable() {
					clones = append(clones, mem.CrashClone())
				}
			})
			opts := blobTestOptions(cp)
			opts.DisableAutoCompactions = true
			d, err := Open("/db", opts)
			must(t, err)
			for i := range 30 {
				must(t, d.Put([]byte(fmt.Sprintf("k%03d", i*3)), blobTestValue(i), &WriteOptions{Sync: true}))
			}
			must(t, d.Flush())
			must(t, d.Put([]byte("k010"), []byte("in the memtable"), &WriteOptions{Sync: true}))
			must(t, mem.MkdirAll("/ext", 0o755))
			var entries []extEntry
			for i := range 40 {
				entries = append(entries, extEntry{'p', fmt.Sprintf("k%03d", i*2), string(blobTestValue(100 + i))})
			}
			entries = append(entries, extEntry{'r', "k050", "k060"})
			info := writeExternal(t, opts, "/ext/1.sst", entries...)
			syncDirOf(mem, "/ext")
			before := scanString(t, d, nil)
			mu.Lock()
			clones = append(clones, mem.CrashClone())
			mu.Unlock()
			setArmed(true)
			must(t, d.IngestExternalFile([]string{"/ext/1.sst"}, &IngestExternalFileOptions{MoveFiles: move}))
			setArmed(false)
			after := scanString(t, d, nil)
			if before == after {
				t.Fatal("the ingestion changed nothing")
			}
			must(t, d.Close())
			clones = append(clones, mem.CrashClone()) // no goroutine of d is left
			sawBefore, sawAfter := false, false
			for i, c := range clones {
				o := blobTestOptions(c)
				o.DisableAutoCompactions = true
				rd, err := Open("/db", o)
				if err != nil {
					t.Fatalf("crash %d: Open: %v", i, err)
				}
				got := scanString(t, rd, nil)
				switch got {
				case before:
					sawBefore = true
				case after:
					sawAfter = true
				default:
					t.Fatalf("crash %d: recovered neither the state before nor after the ingestion:\n%s", i, got)
				}
				checkBlobReferences(t, rd)
				checkNoStrayFiles(t, rd, c)
				if !move || got == before {
					for _, p := range append([]string{"/ext/1.sst"}, info.BlobFiles...) {
						if _, err := c.Stat(p); err != nil {
							t.Fatalf("crash %d (recovered %s): source %s lost: %v", i, map[bool]string{true: "before", false: "after"}[got == before], p, err)
						}
					}
				}
				must(t, rd.Close())
			}
			if !sawBefore || !sawAfter {
				t.Fatalf("crashes recovered before: %v, after: %v; want both", sawBefore, sawAfter)
			}
		})
	}
}

// checkNoStrayFiles fails when fs's /db holds a table or blob file that
// d's current version does not.
func checkNoStrayFiles(t *testing.T, d *DB, fs vfs.FS) {
	t.Helper()
	v := d.versions.Current()
	defer v.Unref()
	live := map[base.FileNum]bool{}
	for _, files := range v.Levels {
		for _, f := range files {
			live[f.FileNum] = true
		}
	}
	for _, b := range v.BlobFiles {
		live[b.FileNum] = true
	}
	for _, name := range listNames(t, fs, "/db") {
		typ, num, ok := base.ParseFilename(name)
		if ok && (typ == base.FileTypeTable || typ == base.FileTypeBlob) && !live[num] {
			t.Fatalf("stray file %s after recovery", name)
		}
	}
}

// TestModelIngest is TestModel with opIngest among the operations: external
// tables of random sorted puts, deletes, merges (under an operator) and
// range deletions, ingested (copied or moved) as a batch newer than
// everything, checked against the model at every read, with snapshots
// taken before an ingestion not seeing it; under small memtables and
// levels (ingestions over memtables, L0 and deeper levels), blob files and
// merges.
func TestModelIngest(t *testing.T) {
	ops := bySize(3000, 1200, 10000)
	variants := []struct {
		name string
		set  func(*Options)
		cfg  dbRunConfig
	}{
		{"base", func(o *Options) {}, dbRunConfig{ingest: true}},
		{"tiny-memtable-3-levels", func(o *Options) {
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
			o.NumLevels = 3
		}, dbRunConfig{ingest: true}},
		{"blob-files-async-io", setBlobTestOptions, dbRunConfig{ingest: true, asyncIO: true, optimizeMultiGet: true}},
		{"merge-stringappend", func(o *Options) { o.MergeOperator = StringAppendOperator(',') },
			dbRunConfig{ingest: true, merge: StringAppendOperator(',')}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, v.cfg, v.set)
			})
		})
	}
}

// TestMetamorphicIngest is TestMetamorphic with opIngest among the
// operations, under option sets that change how data moves through
// memtables, levels, tables and blob files, on MemFS and the OS file
// system: every set must answer as the model does.
func TestMetamorphicIngest(t *testing.T) {
	n := bySize(2000, 600, 4000)
	names := map[string]bool{
		"base": true, "tiny-memtable-nocompression": true, "3-static-levels": true, "7-static-levels": true,
		"max-open-files-4-nocache": true, "no-auto-compactions": true, "disable-wal": true,
		"async-io-single-level": true, "cache-index-filter-small-cache": true, "blob-files-tiny": true,
		"blob-gc-cutoff-1-force-0.5": true, "prefix-extractor-prefixes-only": true,
	}
	if !testing.Short() {
		// Seconds of fsyncs on a loaded machine.
		names["osfs-blob-files-direct"] = true
	}
	sets := metamorphicSetsNamed(t, names)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.ingest = true
		runMetamorphicOps(t, seed, generateOpsWith(g, n), sets)
	})
}

// TestIngestFaults: a full disk while copying a table or blob file, a
// failed directory sync and a failed read of the source fail the call with
// nothing changed and nothing left in the database directory; a failed
// MANIFEST write stops writes (ErrReadOnly), and after Resume or a reopen
// the database holds all of the ingestion or none of it.
func TestIngestFaults(t *testing.T) {
	for _, c := range []struct {
		name string
		rule errorfs.Rule
	}{
		{"table-write-enospc", errorfs.Rule{Op: errorfs.OpWrite, PathContains: "/db/", PathPattern: "*.sst", NoSpace: true}},
		{"blob-write-enospc", errorfs.Rule{Op: errorfs.OpWrite, PathContains: "/db/", PathPattern: "*.blob", NoSpace: true}},
		{"dir-sync", errorfs.Rule{Op: errorfs.OpSync, PathPattern: "db"}},
		{"source-read", errorfs.Rule{Op: errorfs.OpRead, PathContains: "/ext/", Nth: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, opts, d := openFaultDB(t, mem, setBlobTestOptions)
			defer d.Close()
			must(t, d.Put([]byte("a"), []byte("old"), nil))
			must(t, mem.MkdirAll("/ext", 0o755))
			var entries []extEntry
			for i := range 50 {
				entries = append(entries, extEntry{'p', fmt.Sprintf("k%03d", i), string(blobTestValue(i))})
			}
			writeExternal(t, opts, "/ext/1.sst", entries...)
			before := listNames(t, mem, "/db")
			ffs.AddRule(c.rule)
			err := d.IngestExternalFile([]string{"/ext/1.sst"}, nil)
			if err == nil || ffs.Injected() == 0 {
				t.Fatalf("ingestion under %s: %v (%d faults injected)", c.name, err, ffs.Injected())
			}
			ffs.ClearRules()
			if after := listNames(t, mem, "/db"); !slices.Equal(before, after) {
				t.Fatalf("failed ingestion changed the directory: %v -> %v", before, after)
			}
			if got := scanString(t, d, nil); got != "a=old" {
				t.Fatalf("failed ingestion left %q", got)
			}
			// The database is fine: the same call now succeeds.
			must(t, d.IngestExternalFile([]string{"/ext/1.sst"}, nil))
			if got := getString(t, d, "k049", nil); got != string(blobTestValue(49)) {
				t.Fatalf("after retry: k049 = %.20q", got)
			}
		})
	}
	t.Run("manifest-sync", func(t *testing.T) {
		mem := vfs.NewMem()
		ffs, opts, d := openFaultDB(t, mem, nil)
		must(t, d.Put([]byte("a"), []byte("old"), nil))
		writeExternal(t, opts, "/1.sst", extEntry{'p', "b", "new"})
		ffs.AddRule(errorfs.Rule{Op: errorfs.OpSync, PathContains: "MANIFEST"})
		err := d.IngestExternalFile([]string{"/1.sst"}, nil)
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("ingestion with a failing MANIFEST sync: %v, want ErrReadOnly", err)
		}
		if err := d.Put([]byte("c"), []byte("x"), nil); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("write after the failed edit: %v, want ErrReadOnly", err)
		}
		ffs.ClearRules()
		must(t, d.Close())
		d, err = Open("/db", opts)
		must(t, err)
		defer d.Close()
		if got := scanString(t, d, nil); got != "a=old" && got != "a=old b=new" {
			t.Fatalf("after reopen: %q, want all or nothing of the ingestion", got)
		}
		checkNoStrayFiles(t, d, mem)
	})
}

// TestIngestConcurrentWithWritesAndCompactions: ingestions run while a
// writer writes into the same key ranges and small memtables keep
// flushes and compactions going; readers check at random snapshots that
// each ingested file is visible all or nothing, and at the end every file
// and every acknowledged write reads back at its newest value.
func TestIngestConcurrentWithWritesAndCompactions(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	opts.WriteBufferSize = 16 << 10
	opts.TargetFileSizeBase = 16 << 10
	opts.NumLevels = 4
	d, err := Open("/db", opts)
	must(t, err)
	defer d.Close()
	const files, perFile = 12, 40
	done := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	// A writer writes between the ingested keys (a 'w' after their
	// names), so that ingestions overlap the memtables and L0.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			k := fmt.Sprintf("i%03d-%05dw", i%files, i%300)
			if err := d.Put([]byte(k), []byte("w"), nil); err != nil {
				errs <- err
				return
			}
		}
	}()
	// A reader checks that each file is visible whole or not at all.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			s := d.NewSnapshot()
			it := d.NewIterator(&ReadOptions{Snapshot: s})
			counts := map[string]int{}
			for it.First(); it.Valid(); it.Next() {
				if k := string(it.Key()); len(k) == len("i000-00000") {
					counts[k[:4]]++
				}
			}
			err := it.Close()
			s.Release()
			if err != nil {
				errs <- err
				return
			}
			for f, n := range counts {
				if n != perFile {
					errs <- fmt.Errorf("a snapshot sees %d of the %d keys of file %s", n, perFile, f)
					return
				}
			}
		}
	}()
	for f := range files {
		path := fmt.Sprintf("/ext-%03d.sst", f)
		var entries []extEntry
		for i := range perFile {
			entries = append(entries, extEntry{'p', fmt.Sprintf("i%03d-%05d", f, i*7), fmt.Sprintf("v%d", f)})
		}
		writeExternal(t, opts, path, entries...)
		if err := d.IngestExternalFile([]string{path}, &IngestExternalFileOptions{MoveFiles: f%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	must(t, d.WaitForCompact(nil))
	for f := range files {
		for i := range perFile {
			if got := getString(t, d, fmt.Sprintf("i%03d-%05d", f, i*7), nil); got != fmt.Sprintf("v%d", f) {
				t.Fatalf("file %d key %d reads %q", f, i, got)
			}
		}
	}
	checkNoStrayFiles(t, d, mem)
}

// TestIngestSnapshotConsistency: with a snapshot open, a file that
// overlaps nothing still gets a seqnum above it, so the snapshot does not
// see it; with DisableSnapshotConsistency it goes in at seqnum 0 and the
// snapshot sees it (RocksDB's snapshot_consistency=false).
func TestIngestSnapshotConsistency(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	defer d.Close()
	must(t, d.Put([]byte("a"), []byte("1"), nil))
	must(t, d.Flush())
	snap := d.NewSnapshot()
	defer snap.Release()
	writeExternal(t, opts, "/1.sst", extEntry{'p', "m", "1"})
	writeExternal(t, opts, "/2.sst", extEntry{'p', "x", "2"})
	must(t, d.IngestExternalFile([]string{"/1.sst"}, nil))
	must(t, d.IngestExternalFile([]string{"/2.sst"}, &IngestExternalFileOptions{DisableSnapshotConsistency: true}))
	if got := scanString(t, d, &ReadOptions{Snapshot: snap}); got != "a=1 x=2" {
		t.Fatalf("snapshot sees %q, want a=1 x=2", got)
	}
	if got := scanString(t, d, nil); got != "a=1 m=1 x=2" {
		t.Fatalf("latest state %q", got)
	}
	seqs := map[string]base.SeqNum{}
	v := d.versions.Current()
	for _, files := range v.Levels {
		for _, f := range files {
			seqs[string(f.Smallest.UserKey)] = f.GlobalSeqNum
		}
	}
	v.Unref()
	if seqs["m"] <= base.SeqNum(snap.SeqNum()) || seqs["x"] != 0 {
		t.Fatalf("global seqnums %v (snapshot at %d): want m's above it and x's 0", seqs, snap.SeqNum())
	}
}

// TestIngestRecordsFileChecksums: an ingested table and its blob files get
// their whole-file checksums recorded (by the DB's generator, as flushed
// files do), VerifyFileChecksums passes and finds a byte flipped in an
// ingested table afterwards; with NoFileChecksums none is recorded.
func TestIngestRecordsFileChecksums(t *testing.T) {
	for _, none := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-checksums=%v", none), func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobTestOptions(mem)
			if none {
				opts.FileChecksumGenFactory = NoFileChecksums
			}
			d, err := Open("/db", opts)
			must(t, err)
			defer d.Close()
			var entries []extEntry
			for i := range 30 {
				entries = append(entries, extEntry{'p', fmt.Sprintf("k%03d", i), string(blobTestValue(i))})
			}
			writeExternal(t, opts, "/1.sst", entries...)
			must(t, d.IngestExternalFile([]string{"/1.sst"}, nil))
			must(t, d.VerifyFileChecksums())
			tables, blobs := d.GetLiveFilesMetaData(), d.GetLiveBlobFilesMetaData()
			if len(tables) != 1 || len(blobs) == 0 {
				t.Fatalf("%d tables, %d blob files live, want the ingested ones", len(tables), len(blobs))
			}
			for _, m := range tables {
				if (len(m.FileChecksum) == 0) != none {
					t.Fatalf("table %s: checksum %x %q", m.Name, m.FileChecksum, m.FileChecksumFuncName)
				}
			}
			for _, m := range blobs {
				if (len(m.FileChecksum) == 0) != none || (!none && m.FileChecksumFuncName != FileChecksumCrc32cName) {
					t.Fatalf("blob file %s: checksum %x %q", m.Name, m.FileChecksum, m.FileChecksumFuncName)
				}
			}
			if none {
				return
			}
			path := "/db/" + tables[0].Name
			b := readFile(t, mem, path)
			b[len(b)/3] ^= 1
			must(t, mem.Remove(path))
			writeFile(t, mem, path, b)
			if err := d.VerifyFileChecksums(); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), tables[0].Name) {
				t.Fatalf("VerifyFileChecksums after a byte flip in the ingested table: %v", err)
			}
		})
	}
}

// linkCountingFS is a MemFS with a Link that copies (main's MemFS has no
// hard links) and counts its calls, so that the linking path of MoveFiles
// runs.
type linkCountingFS struct {
	*vfs.MemFS
	links int
}

func (fs *linkCountingFS) Link(oldname, newname string) error {
	fs.links++
	data, err := fs.readAll(oldname)
	if err != nil {
		return err
	}
	f, err := fs.Create(newname)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close() // unsynced: linkOrCopy syncs it
}

func (fs *linkCountingFS) readAll(name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	_, err = f.ReadAt(b, 0)
	return b, err
}

// TestIngestMoveLinks: with MoveFiles on a file system that can link, the
// table and blob files are linked (not copied), synced, and survive a
// crash right after the call; without MoveFiles they are copied.
func TestIngestMoveLinks(t *testing.T) {
	mem := &linkCountingFS{MemFS: vfs.NewMem()}
	opts := blobTestOptions(mem)
	d, err := Open("/db", opts)
	must(t, err)
	writeExternal(t, opts, "/1.sst", extEntry{'p', "a", string(blobTestValue(1))}, extEntry{'p', "b", "short"})
	writeExternal(t, opts, "/2.sst", extEntry{'p', "c", "x"})
	must(t, d.IngestExternalFile([]string{"/2.sst"}, nil))
	if mem.links != 0 {
		t.Fatalf("copy mode linked %d files", mem.links)
	}
	must(t, d.IngestExternalFile([]string{"/1.sst"}, &IngestExternalFileOptions{MoveFiles: true}))
	// The table with a blob value is rewritten; its blob file is linked.
	if mem.links != 1 {
		t.Fatalf("MoveFiles linked %d files, want the blob file", mem.links)
	}
	writeExternal(t, opts, "/3.sst", extEntry{'p', "d", "y"})
	must(t, d.IngestExternalFile([]string{"/3.sst"}, &IngestExternalFileOptions{MoveFiles: true}))
	if mem.links != 2 {
		t.Fatalf("MoveFiles linked %d files, want the table too", mem.links)
	}
	want := "a=" + string(blobTestValue(1)) + " b=short c=x d=y"
	if got := scanString(t, d, nil); got != want {
		t.Fatalf("got %q", got)
	}
	crashed := mem.CrashClone()
	must(t, d.Close())
	d, err = Open("/db", blobTestOptions(crashed))
	must(t, err)
	defer d.Close()
	if got := scanString(t, d, nil); got != want {
		t.Fatalf("after a crash: %q", got)
	}
}

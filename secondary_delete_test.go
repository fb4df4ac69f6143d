package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// tsValue is a value whose first 8 bytes are a big-endian timestamp, the
// attribute tsAttr reads; a value shorter than 8 bytes has none.
func tsValue(ts uint64, rest string) []byte {
	v := binary.BigEndian.AppendUint64(nil, ts)
	return append(v, rest...)
}

func tsAttr(_, value []byte) (uint64, bool) {
	if len(value) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(value), true
}

func secondaryOptions(fs vfs.FS) *Options {
	o := testOptions(fs)
	o.SecondaryDeleteKey = tsAttr
	return o
}

// readAll returns the DB's contents at ro as seen by a forward scan, a
// backward scan, Get and MultiGet of keys, failing when they disagree.
func readAll(t *testing.T, db *DB, ro *ReadOptions, keys []string) map[string]string {
	t.Helper()
	fwd := map[string]string{}
	it := db.NewIterator(ro)
	for ok := it.First(); ok; ok = it.Next() {
		fwd[string(it.Key())] = string(it.Value())
	}
	n := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		if v, ok := fwd[string(it.Key())]; !ok || v != string(it.Value()) {
			t.Fatalf("backward scan has %q=%q, forward scan %q", it.Key(), it.Value(), v)
		}
		n++
	}
	if n != len(fwd) {
		t.Fatalf("backward scan has %d keys, forward %d", n, len(fwd))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	bkeys := make([][]byte, len(keys))
	for i, k := range keys {
		bkeys[i] = []byte(k)
	}
	vals, errs := db.MultiGet(bkeys, ro)
	for i, k := range keys {
		v, err := db.Get([]byte(k), ro)
		want, ok := fwd[k]
		switch {
		case ok && (err != nil || string(v) != want):
			t.Fatalf("Get(%s) = %q, %v; scan has %q", k, v, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			t.Fatalf("Get(%s) = %q, %v; scan has none", k, v, err)
		case ok && (errs[i] != nil || string(vals[i]) != want):
			t.Fatalf("MultiGet(%s) = %q, %v; scan has %q", k, vals[i], errs[i], want)
		case !ok && !errors.Is(errs[i], ErrNotFound):
			t.Fatalf("MultiGet(%s) = %q, %v; scan has none", k, vals[i], errs[i])
		}
	}
	return fwd
}

// TestDeleteBySecondaryRangeHidesOlderVersions is the resurfacing case: k@20
// (attribute 50) hides k@10 (attribute 5); deleting [40, 60) deletes k, and
// k@10 must not come back, whether both versions are in the memtable, in
// one table, in different levels, after compactions or after a reopen.
func TestDeleteBySecondaryRangeHidesOlderVersions(t *testing.T) {
	for _, layout := range []string{"memtable", "flushed-together", "split-levels", "new-over-old-in-l0"} {
		t.Run(layout, func(t *testing.T) {
			fs := vfs.NewMem()
			db, err := Open("/db", secondaryOptions(fs))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			put := func(k string, ts uint64, v string) {
				if err := db.Put([]byte(k), tsValue(ts, v), nil); err != nil {
					t.Fatal(err)
				}
			}
			put("k", 5, "old")
			put("other", 7, "stays")
			switch layout {
			case "split-levels":
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := db.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
			case "new-over-old-in-l0":
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			put("k", 50, "new")
			put("gone", 45, "deleted")
			if layout != "memtable" {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.DeleteBySecondaryRange(40, 60, nil); err != nil {
				t.Fatal(err)
			}
			put("after", 50, "written after the delete")
			want := map[string]string{"other": string(tsValue(7, "stays")), "after": string(tsValue(50, "written after the delete"))}
			keys := []string{"k", "other", "gone", "after"}
			check := func(when string) {
				t.Helper()
				got := readAll(t, db, nil, keys)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: got %q, want %q", when, got, want)
				}
			}
			check("after the delete")
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			check("after a flush")
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			check("after a full compaction")
			db = reopenWith(t, db, fs, secondaryOptions(fs))
			check("after a reopen")
		})
	}
}

func reopenWith(t *testing.T, db *DB, fs vfs.FS, o *Options) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDeleteBySecondaryRangeSnapshot checks that a snapshot taken before
// the delete still sees the entries, through flushes and compactions (which
// must keep them for it, and drop them once it is released), and that the
// tombstone is retired once no table holds what it deletes.
func TestDeleteBySecondaryRangeSnapshot(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", secondaryOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	var keys []string
	before := map[string]string{}
	after := map[string]string{}
	for i := range 400 {
		k := fmt.Sprintf("key%04d", i)
		keys = append(keys, k)
		v := tsValue(uint64(i), "value")
		if i%10 == 0 {
			v = []byte("no-ts") // no attribute: never deleted
		}
		if err := db.Put([]byte(k), v, nil); err != nil {
			t.Fatal(err)
		}
		before[k] = string(v)
		if i%10 == 0 || i < 100 || i >= 300 {
			after[k] = string(v)
		}
		if i == 200 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap := db.NewSnapshot()
	if err := db.DeleteBySecondaryRange(100, 300, nil); err != nil {
		t.Fatal(err)
	}
	for step, do := range []func() error{func() error { return nil }, db.Flush, func() error { return db.CompactRange(nil, nil) }} {
		if err := do(); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, db, &ReadOptions{Snapshot: snap}, keys); fmt.Sprint(got) != fmt.Sprint(before) {
			t.Fatalf("step %d: the snapshot sees %d keys, want %d", step, len(got), len(before))
		}
		if got := readAll(t, db, nil, keys); fmt.Sprint(got) != fmt.Sprint(after) {
			t.Fatalf("step %d: latest state has %d keys, want %d", step, len(got), len(after))
		}
	}
	if n := len(db.secondaryTombstones()); n != 1 {
		t.Fatalf("with the snapshot held, %d secondary tombstones are live, want 1", n)
	}
	snap.Release()
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, db, nil, keys); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("after the snapshot's release: %d keys, want %d", len(got), len(after))
	}
	if n := len(db.secondaryTombstones()); n != 0 {
		t.Fatalf("%d secondary tombstones live after a full compaction, want 0 (retired)", n)
	}
	m := db.Metrics()
	var entries uint64
	v := db.versions.Current()
	for _, files := range v.Levels {
		for _, f := range files {
			entries += f.NumEntries
		}
	}
	v.Unref()
	if entries != uint64(len(after)) {
		t.Fatalf("the tables hold %d entries after the full compaction, want %d (deleted ones gone)\n%s", entries, len(after), m)
	}
	db = reopenWith(t, db, fs, secondaryOptions(fs))
	if got := readAll(t, db, nil, keys); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("after reopen: %d keys, want %d", len(got), len(after))
	}
}

// secondaryTombstones returns the live secondary tombstones.
func (d *DB) secondaryTombstones() []manifest.SecondaryTombstone {
	v := d.versions.Current()
	defer v.Unref()
	return v.SecondaryTombstones
}

// TestDeleteBySecondaryRangeErrors checks the refusals: no
// SecondaryDeleteKey, lo > hi, a read-only DB, a closed DB; lo == hi
// deletes nothing.
func TestDeleteBySecondaryRangeErrors(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBySecondaryRange(1, 2, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("without SecondaryDeleteKey: %v, want ErrInvalidArgument", err)
	}
	db = reopenWith(t, db, fs, secondaryOptions(fs))
	if err := db.Put([]byte("a"), tsValue(3, ""), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBySecondaryRange(5, 2, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("lo > hi: %v, want ErrInvalidArgument", err)
	}
	if err := db.DeleteBySecondaryRange(3, 3, nil); err != nil {
		t.Fatalf("lo == hi: %v", err)
	}
	if _, err := db.Get([]byte("a"), nil); err != nil {
		t.Fatalf("lo == hi deleted a: %v", err)
	}
	if n := len(db.secondaryTombstones()); n != 0 {
		t.Fatalf("lo == hi recorded %d tombstones", n)
	}
	if err := db.DeleteBySecondaryRange(0, 10, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBySecondaryRange(0, 10, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v, want ErrClosed", err)
	}
	// The tombstone is live (the memtable's data was flushed by Close
	// with it applied, but nothing retired it without a compaction... or
	// it was retired): either way, a DB holding a live one needs the key.
	ro, err := OpenForReadOnly("/db", secondaryOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.DeleteBySecondaryRange(0, 10, nil); !errors.Is(err, errOpenedReadOnly) {
		t.Fatalf("read-only: %v, want the read-only error", err)
	}
	if _, err := ro.Get([]byte("a"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read-only Get(a) = %v, want ErrNotFound", err)
	}
	ro.Close()
}

// TestOpenWithSecondaryTombstoneNeedsKey checks that a database holding a
// live secondary tombstone does not open without SecondaryDeleteKey (its
// reads could not apply it), and does with it.
func TestOpenWithSecondaryTombstoneNeedsKey(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", secondaryOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	snap := db.NewSnapshot() // keeps the tombstone live through Close
	if err := db.Put([]byte("a"), tsValue(3, ""), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBySecondaryRange(0, 10, nil); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/db", testOptions(fs)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open without SecondaryDeleteKey: %v, want ErrInvalidArgument", err)
	}
	if _, err := OpenForReadOnly("/db", testOptions(fs)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("OpenForReadOnly without SecondaryDeleteKey: %v, want ErrInvalidArgument", err)
	}
	db, err = Open("/db", secondaryOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Get([]byte("a"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(a) after reopen = %v, want ErrNotFound", err)
	}
}

// TestSecondaryDeleteDropsWholeTables writes a time series (keys in the
// order of their timestamps), compacts it to the last level, deletes the
// older half by timestamp and checks that automatic compactions (picking
// the covered tables) drop the tables entirely inside the range without
// reading them, rewrite the one straddling its end, and retire the
// tombstone; the younger half reads back whole.
func TestSecondaryDeleteDropsWholeTables(t *testing.T) {
	fs := vfs.NewMem()
	o := secondaryOptions(fs)
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	const n = 3000
	var keys []string
	want := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("id%06d", i)
		v := tsValue(uint64(1000+i), "sample-payload-of-some-length")
		if err := db.Put([]byte(k), v, nil); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		if i >= n/2 {
			want[k] = string(v)
		}
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := db.Metrics()
	if err := db.DeleteBySecondaryRange(0, 1000+n/2, nil); err != nil { // not at a table's end
		t.Fatal(err)
	}
	if got := readAll(t, db, nil, keys); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the delete: %d keys, want %d", len(got), len(want))
	}
	// The delete itself wakes the picker; the covered tables go first.
	if !waitFor(func() bool { return len(db.secondaryTombstones()) == 0 }) {
		t.Fatalf("the secondary tombstone was never retired:\n%s\n%s", db.Metrics(), db.versionString())
	}
	m := db.Metrics()
	if m.SecondaryDelete.DroppedFiles == 0 {
		t.Fatalf("no table was dropped whole:\n%s", m)
	}
	// The table holding the cut keeps its younger blocks and loses its
	// older ones unread.
	if m.SecondaryDelete.SkippedBlocks == 0 {
		t.Fatalf("no data block was skipped:\n%s", m)
	}
	if read := m.IO.TableBytesRead - before.IO.TableBytesRead; m.SecondaryDelete.DroppedEntries == 0 && read == 0 {
		t.Fatalf("nothing was compacted:\n%s", m)
	}
	var entries uint64
	for _, l := range m.Levels {
		entries += l.NumEntries
	}
	if entries != uint64(len(want)) {
		t.Fatalf("tables hold %d entries, want %d:\n%s", entries, len(want), m)
	}
	if got := readAll(t, db, nil, keys); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the compactions: %d keys, want %d", len(got), len(want))
	}
	db = reopenWith(t, db, fs, secondaryOptions(fs))
	if got := readAll(t, db, nil, keys); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen: %d keys, want %d", len(got), len(want))
	}
}

// TestCheckPrintsSecondaryFields checks that Check reports the live
// secondary tombstones of the MANIFEST and each table's attribute range
// and applied tombstone, and compares the range with the table's
// properties.
func TestCheckPrintsSecondaryFields(t *testing.T) {
	fs := vfs.NewMem()
	o := secondaryOptions(fs)
	o.DisableAutoCompactions = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := db.Put([]byte(fmt.Sprintf("k%02d", i)), tsValue(uint64(100+i), "v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBySecondaryRange(100, 105, nil); err != nil {
		t.Fatal(err)
	}
	check := func(wants ...string) {
		t.Helper()
		rep, err := Check("/db", secondaryOptions(fs))
		if err != nil || !rep.OK() {
			t.Fatalf("Check: %v\n%s", err, rep)
		}
		out := rep.String()
		for _, want := range wants {
			if strings.HasPrefix(want, "!") {
				if strings.Contains(out, want[1:]) {
					t.Errorf("the report has %q:\n%s", want[1:], out)
				}
			} else if !strings.Contains(out, want) {
				t.Errorf("the report lacks %q:\n%s", want, out)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check("secondary attributes [100, 119] in 20 entries", "live secondary tombstones [100,105)@21", "!applied")
	db, err = Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check("secondary attributes [105, 119] in 15 entries", "secondary tombstones applied to @21", "!live secondary")
}

// TestSecondaryDeleteOnDBWrittenBefore opens the database of
// testdata/db-before-compaction-stats (written before tables recorded
// secondary attribute ranges) with a SecondaryDeleteKey reading the number
// in its "value-NNNN-old" values, deletes by it, and checks that its old
// tables, whose ranges are unknown, are compacted until the tombstone
// retires, with the right keys gone, across a reopen.
func TestSecondaryDeleteOnDBWrittenBefore(t *testing.T) {
	const src = "testdata/db-before-compaction-stats"
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		data, err := os.ReadFile(src + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, "/db/"+e.Name(), data)
	}
	attr := func(_, value []byte) (uint64, bool) {
		var n uint64
		if _, err := fmt.Sscanf(string(value), "value-%04d-old", &n); err != nil {
			return 0, false
		}
		return n, true
	}
	o := &Options{FS: fs, WriteBufferSize: 64 << 10, SecondaryDeleteKey: attr}
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	before := readAll(t, db, nil, nil)
	if err := db.DeleteBySecondaryRange(0, 200, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k, v := range before {
		if a, ok := attr(nil, []byte(v)); !ok || a >= 200 {
			want[k] = v
		}
	}
	if len(want) == len(before) || len(want) == 0 {
		t.Fatalf("the delete should remove some keys: %d of %d stay", len(want), len(before))
	}
	check := func(what string) {
		t.Helper()
		if got := readAll(t, db, nil, nil); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
		}
	}
	check("after the delete")
	if !waitFor(func() bool { return len(db.secondaryTombstones()) == 0 }) {
		t.Fatalf("the tombstone never retired over tables of unknown ranges:\n%s", db.versionString())
	}
	check("after the tombstone retired")
	db = reopenWith(t, db, fs, o)
	check("after a reopen")
}

// TestSecondaryDeleteKeepsDeletesAboveOlderData deletes, by attribute, the
// newer versions of keys whose older versions (outside the range) lie in
// the last level, while the newer ones sit in a middle level: the
// compaction picked for the tombstone writes point Deletes over them (it
// may neither drop the table nor skip its blocks, since older data lies
// below), so the older versions never come back.
func TestSecondaryDeleteKeepsDeletesAboveOlderData(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", secondaryOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	var keys []string
	for round, ts := range []uint64{5, 50} {
		for i := range 200 {
			k := fmt.Sprintf("k%04d", i)
			if round == 0 {
				keys = append(keys, k)
			}
			if err := db.Put([]byte(k), tsValue(ts, "payload"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		} else if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteBySecondaryRange(40, 60, nil); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return len(db.secondaryTombstones()) == 0 }) {
		t.Fatalf("the tombstone never retired:\n%s", db.versionString())
	}
	if got := readAll(t, db, nil, keys); len(got) != 0 {
		t.Fatalf("%d keys came back (older versions below the deleted ones):\n%s", len(got), db.versionString())
	}
	if m := db.Metrics(); m.SecondaryDelete.ToDelete == 0 {
		t.Fatalf("no Set was turned into a Delete:\n%s", m)
	}
}

// TestSecondaryDeleteFlushKeepsSnapshotTakenDuringFlush takes a snapshot
// and deletes by attribute after a flush listed the live snapshots and
// before it writes its memtable: the flush must not apply that tombstone,
// which the snapshot it does not know does not see (its Sets would turn
// into Deletes the snapshot sees).
func TestSecondaryDeleteFlushKeepsSnapshotTakenDuringFlush(t *testing.T) {
	db, err := Open("/db", secondaryOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 100 {
		if err := db.Put([]byte(fmt.Sprintf("key%04d", i)), tsValue(uint64(i), "value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	var snap *Snapshot
	var hookErr error
	testHookFlushListedSnapshots = func() {
		testHookFlushListedSnapshots = nil // the flushes the delete causes run plain
		snap = db.NewSnapshot()
		hookErr = db.DeleteBySecondaryRange(0, 1000, nil)
	}
	defer func() { testHookFlushListedSnapshots = nil }()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	defer snap.Release()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		k := fmt.Sprintf("key%04d", i)
		if v, err := db.Get([]byte(k), &ReadOptions{Snapshot: snap}); err != nil || string(v) != string(tsValue(uint64(i), "value")) {
			t.Fatalf("%s at the snapshot: %q, %v: the flush applied a tombstone the snapshot does not see", k, v, err)
		}
		if _, err := db.Get([]byte(k), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s now: %v, want ErrNotFound", k, err)
		}
	}
}

// TestEmptySecondaryDeleteSyncsTheWAL: DeleteBySecondaryRange is a synced
// write even over an empty range, so an unsynced Put before it survives a
// crash right after it returns.
func TestEmptySecondaryDeleteSyncsTheWAL(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.SecondaryDeleteKey = crashAttr
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteBySecondaryRange(7, 7, nil); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	opts.FS = crashed
	d2, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if v, err := d2.Get([]byte("k"), nil); err != nil || string(v) != "v" {
		t.Fatalf("after a crash: Get(k) = %q, %v; the empty secondary delete acknowledged it as durable", v, err)
	}
}

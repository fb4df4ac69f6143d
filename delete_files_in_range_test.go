package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// dfrKey and dfrValue are the keys and values of the DeleteFilesInRange
// tests.
func dfrKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
func dfrValue(i int, gen string) []byte {
	return []byte(fmt.Sprintf("%s-value-%05d-%s", gen, i, bytes.Repeat([]byte{'a' + byte(i%26)}, 20+i%30)))
}

// putKeyRange writes keys [from, to) with values of generation gen.
func putKeyRange(t *testing.T, d *DB, from, to int, gen string) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := d.Put(dfrKey(i), dfrValue(i, gen), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// tablesByLevel returns the tables of d's current version, by level.
func tablesByLevel(d *DB) [][]*manifest.FileMetadata {
	v := d.versions.Current()
	defer v.Unref()
	out := make([][]*manifest.FileMetadata, len(v.Levels))
	for l, files := range v.Levels {
		out[l] = slices.Clone(files)
	}
	return out
}

// tableOnDisk reports whether table num is in /db.
func tableOnDisk(t *testing.T, fs vfs.FS, num base.FileNum) bool {
	t.Helper()
	return slices.Contains(listNames(t, fs, "/db"), base.MakeFilename(base.FileTypeTable, num))
}

// checkReport fails the test unless Check finds /db in order.
func checkReport(t *testing.T, fs vfs.FS) {
	t.Helper()
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("Check:\n%s", rep)
	}
}

// TestDeleteFilesInRange builds a last level of many tables and deletes
// those inside a range: exactly the tables whose keys all lie in it go
// (from the version and from disk), the ones crossing its ends stay with
// all their keys, keys outside read as before, a table ending at the
// range's end goes only with includeEnd, and a reopen and Check agree.
func TestDeleteFilesInRange(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	putKeyRange(t, d, 0, n, "v1")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	levels := tablesByLevel(d)
	last := levels[len(levels)-1]
	if len(last) < 10 {
		t.Fatalf("setup: %d tables in the last level, want 10 or more", len(last))
	}
	// The range starts inside one table and ends at the last key of
	// another, so both a crossing table and the includeEnd case occur.
	first, end := last[2], last[len(last)-3]
	start := append(slices.Clone(first.Smallest.UserKey), 'x') // inside first
	endKey := end.Largest.UserKey
	var inside, crossing []*manifest.FileMetadata
	for _, f := range last {
		switch {
		case bytes.Compare(f.Smallest.UserKey, start) >= 0 && bytes.Compare(f.Largest.UserKey, endKey) <= 0:
			inside = append(inside, f)
		case bytes.Compare(f.Largest.UserKey, start) >= 0 && bytes.Compare(f.Smallest.UserKey, endKey) <= 0:
			crossing = append(crossing, f)
		}
	}
	if len(inside) < 3 || len(crossing) != 1 || crossing[0] != first {
		t.Fatalf("setup: %d tables inside, crossing %v", len(inside), crossing)
	}

	// holds reports which table of the setup held key i.
	holds := func(files []*manifest.FileMetadata, i int) bool {
		for _, f := range files {
			if bytes.Compare(f.Smallest.UserKey, dfrKey(i)) <= 0 && bytes.Compare(dfrKey(i), f.Largest.UserKey) <= 0 {
				return true
			}
		}
		return false
	}
	check := func(what string, db *DB, gone []*manifest.FileMetadata) {
		t.Helper()
		absent := 0
		for i := range n {
			v, err := db.Get(dfrKey(i), nil)
			if holds(gone, i) {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: key %d of a deleted table: %q, %v", what, i, v, err)
				}
				absent++
				continue
			}
			if err != nil || !bytes.Equal(v, dfrValue(i, "v1")) {
				t.Fatalf("%s: key %d: %q, %v", what, i, v, err)
			}
		}
		if absent == 0 {
			t.Fatalf("%s: no key is gone", what)
		}
		it := db.NewIterator(nil)
		count := 0
		for ok := it.First(); ok; ok = it.Next() {
			count++
		}
		if err := it.Close(); err != nil || count != n-absent {
			t.Fatalf("%s: a scan saw %d keys, want %d: %v", what, count, n-absent, err)
		}
	}

	// Without includeEnd, the table ending at the range's end stays.
	if err := d.DeleteFilesInRange(start, endKey, false); err != nil {
		t.Fatal(err)
	}
	gone := slices.DeleteFunc(slices.Clone(inside), func(f *manifest.FileMetadata) bool { return f == end })
	after := tablesByLevel(d)
	for _, f := range last {
		kept := slices.Contains(after[len(after)-1], f)
		if slices.Contains(gone, f) {
			if kept || tableOnDisk(t, mem, f.FileNum) {
				t.Errorf("table %s inside the range: in the version %v, on disk %v", f.FileNum, kept, tableOnDisk(t, mem, f.FileNum))
			}
		} else if !kept || !tableOnDisk(t, mem, f.FileNum) {
			t.Errorf("table %s not inside the range was deleted", f.FileNum)
		}
	}
	check("without includeEnd", d, gone)

	// With it, that table goes too; nothing else does.
	if err := d.DeleteFilesInRange(start, endKey, true); err != nil {
		t.Fatal(err)
	}
	if after := tablesByLevel(d); len(after[len(after)-1]) != len(last)-len(inside) || tableOnDisk(t, mem, end.FileNum) {
		t.Fatalf("with includeEnd: %d tables left of %d, %d inside; table %s on disk %v",
			len(after[len(after)-1]), len(last), len(inside), end.FileNum, tableOnDisk(t, mem, end.FileNum))
	}
	check("with includeEnd", d, inside)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReport(t, mem)
	d, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check("after a reopen", d, inside)
	// Nothing left within: a second call deletes nothing.
	before := tablesByLevel(d)
	if err := d.DeleteFilesInRange(start, endKey, true); err != nil {
		t.Fatal(err)
	}
	if after := tablesByLevel(d); !slices.Equal(after[len(after)-1], before[len(before)-1]) {
		t.Error("a second call deleted tables")
	}
}

// TestDeleteFilesInRangeLevel0 deletes L0 tables too, and shows what the
// deletion is not: a key whose newest version was in a deleted table reads
// as the older version a deeper table holds, and unflushed writes stay.
func TestDeleteFilesInRangeLevel0(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	opts.DisableAutoCompactions = true
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	putKeyRange(t, d, 0, 100, "old")
	if err := d.CompactRange(nil, nil); err != nil { // the old values below L0
		t.Fatal(err)
	}
	// Three L0 tables: [10, 20), [30, 40) and [15, 35), newest last.
	for _, r := range [][2]int{{10, 20}, {30, 40}, {15, 35}} {
		putKeyRange(t, d, r[0], r[1], "new")
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	putKeyRange(t, d, 50, 51, "mem") // stays in the memtable
	l0 := tablesByLevel(d)[0]
	if len(l0) != 3 {
		t.Fatalf("setup: %d L0 tables", len(l0))
	}
	// [10, 36] holds [10, 20) and [15, 35) whole and [30, 40) only in
	// part: two of the three go.
	if err := d.DeleteFilesInRanges([]Range{{Start: dfrKey(10), Limit: dfrKey(36)}, {Start: dfrKey(50), Limit: dfrKey(51)}}, true); err != nil {
		t.Fatal(err)
	}
	left := tablesByLevel(d)
	if len(left[0]) != 1 || !bytes.Equal(left[0][0].Smallest.UserKey, dfrKey(30)) {
		t.Fatalf("L0 after: %v", left[0])
	}
	if got := len(left[len(left)-1]); got == 0 {
		t.Fatal("the deeper level is gone: its tables cross the range")
	}
	for i := range 100 {
		want := "old"
		switch {
		case i >= 30 && i < 40:
			want = "new" // the L0 table crossing the range's end
		case i == 50:
			want = "mem"
		}
		if v, err := d.Get(dfrKey(i), nil); err != nil || !bytes.Equal(v, dfrValue(i, want)) {
			t.Fatalf("key %d: %q, %v; want the %s value", i, v, err, want)
		}
	}
}

// TestDeleteFilesInRangeKeepsIterators: an iterator opened before the call
// reads every key it could (the tables it reads stay on disk until it
// closes), and a read through a snapshot taken before sees the deletion, as
// later reads do: snapshots do not keep tables.
func TestDeleteFilesInRangeKeepsIterators(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const n = 2000
	putKeyRange(t, d, 0, n, "v1")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap := d.NewSnapshot()
	defer snap.Release()
	it := d.NewIterator(nil)
	if !it.First() {
		t.Fatal("empty")
	}
	before := tablesByLevel(d)
	if err := d.DeleteFilesInRange(dfrKey(500), dfrKey(1500), true); err != nil {
		t.Fatal(err)
	}
	after := tablesByLevel(d)
	var deleted []base.FileNum
	for _, f := range before[len(before)-1] {
		if !slices.Contains(after[len(after)-1], f) {
			deleted = append(deleted, f.FileNum)
			if !tableOnDisk(t, mem, f.FileNum) {
				t.Errorf("table %s was removed from disk while an iterator reads it", f.FileNum)
			}
		}
	}
	if len(deleted) == 0 {
		t.Fatal("nothing deleted")
	}
	i := 0
	for ok := true; ok; ok = it.Next() {
		if !bytes.Equal(it.Key(), dfrKey(i)) || !bytes.Equal(it.Value(), dfrValue(i, "v1")) {
			t.Fatalf("iterator at %d: %q = %q", i, it.Key(), it.Value())
		}
		i++
	}
	if err := it.Close(); err != nil || i != n {
		t.Fatalf("iterator read %d keys of %d: %v", i, n, err)
	}
	d.deleteObsoleteFiles(false)
	for _, num := range deleted {
		if tableOnDisk(t, mem, num) {
			t.Errorf("table %s still on disk after the last iterator closed", num)
		}
	}
	// The snapshot: the keys outside the range read as they were, those in
	// deleted tables are gone; nothing fails.
	missing := 0
	for i := range n {
		v, err := d.Get(dfrKey(i), &ReadOptions{Snapshot: snap})
		switch {
		case errors.Is(err, ErrNotFound) && i >= 500 && i <= 1500:
			missing++
		case err != nil || !bytes.Equal(v, dfrValue(i, "v1")):
			t.Fatalf("snapshot read of key %d: %q, %v", i, v, err)
		}
	}
	if missing == 0 {
		t.Error("the snapshot still sees the deleted tables' keys")
	}
}

// TestDeleteFilesInRangeBlobFiles: the blob files only deleted tables
// referenced are deleted with them (from the MANIFEST and from disk), the
// others get the deleted tables' references as garbage, exactly
// (verifyBlobReferences), the listener hears of every removed table and
// blob file as obsolete, and Check and a reopen agree.
func TestDeleteFilesInRangeBlobFiles(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true // only the call deletes files
	lis := &recordingListener{}
	opts.EventListener = lis
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	// Even keys, then odd ones: each flush's blob files hold keys spread
	// over several of the tables compactions merge them into.
	for _, parity := range []int{0, 1} {
		for i := parity; i < n; i += 2 {
			if err := d.Put(dfrKey(i), dfrValue(i, "v1"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	d.deleteObsoleteFiles(false)
	checkBlobReferences(t, d)
	v := d.versions.Current()
	blobsBefore := slices.Clone(v.BlobFiles)
	v.Unref()
	tablesBefore := tablesByLevel(d)
	// Events about files live before the call are about the call (those
	// of the compaction before may still be on their way).
	liveBefore := map[uint64]bool{}
	for _, files := range tablesBefore {
		for _, f := range files {
			liveBefore[uint64(f.FileNum)] = true
		}
	}
	for _, b := range blobsBefore {
		liveBefore[uint64(b.FileNum)] = true
	}

	if err := d.DeleteFilesInRange(dfrKey(300), dfrKey(1700), true); err != nil {
		t.Fatal(err)
	}
	tablesAfter := tablesByLevel(d)
	var goneTables []uint64
	for _, f := range tablesBefore[len(tablesBefore)-1] {
		if !slices.Contains(tablesAfter[len(tablesAfter)-1], f) {
			goneTables = append(goneTables, uint64(f.FileNum))
		}
	}
	v = d.versions.Current()
	var goneBlobs []uint64
	garbaged := 0
	for _, b := range blobsBefore {
		now := v.BlobFile(b.FileNum)
		switch {
		case now == nil:
			goneBlobs = append(goneBlobs, uint64(b.FileNum))
			if slices.Contains(blobFileNums(t, mem), b.FileNum) {
				t.Errorf("deleted blob file %s still on disk", b.FileNum)
			}
		case now.GarbageCount > b.GarbageCount:
			garbaged++
		}
	}
	v.Unref()
	if len(goneTables) == 0 || len(goneBlobs) == 0 || garbaged == 0 {
		t.Fatalf("%d tables deleted, %d blob files deleted, %d given garbage: the test needs each", len(goneTables), len(goneBlobs), garbaged)
	}
	checkBlobReferences(t, d)

	readAll := func(db *DB) int {
		t.Helper()
		found := 0
		for i := range n {
			got, err := db.Get(dfrKey(i), nil)
			switch {
			case err == nil && bytes.Equal(got, dfrValue(i, "v1")):
				found++
			case errors.Is(err, ErrNotFound) && i >= 300 && i <= 1700:
			default:
				t.Fatalf("key %d: %q, %v", i, got, err)
			}
		}
		return found
	}
	found := readAll(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The listener (every event is delivered by Close): each removed
	// file once, as obsolete.
	var heardTables, heardBlobs []uint64
	for _, e := range ofKind[TableFileInfo](lis, "TableFileDeleted") {
		if !liveBefore[e.FileNum] {
			continue
		}
		if e.Reason != FileReasonObsolete || e.Err != nil {
			t.Errorf("table deletion event %+v", e)
		}
		heardTables = append(heardTables, e.FileNum)
	}
	for _, e := range ofKind[BlobFileInfo](lis, "BlobFileDeleted") {
		if !liveBefore[e.FileNum] {
			continue
		}
		if e.Reason != FileReasonObsolete || e.Err != nil {
			t.Errorf("blob file deletion event %+v", e)
		}
		heardBlobs = append(heardBlobs, e.FileNum)
	}
	slices.Sort(goneTables)
	slices.Sort(heardTables)
	slices.Sort(goneBlobs)
	slices.Sort(heardBlobs)
	if !slices.Equal(heardTables, goneTables) || !slices.Equal(heardBlobs, goneBlobs) {
		t.Errorf("listener heard of tables %v and blob files %v deleted, want %v and %v", heardTables, heardBlobs, goneTables, goneBlobs)
	}

	checkReport(t, mem)
	d, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := readAll(d); got != found {
		t.Errorf("after a reopen %d keys read, before %d", got, found)
	}
	checkBlobReferences(t, d)
	// Compactions take the garbage from there: a full one leaves none.
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkBlobReferences(t, d)
}

// TestDeleteFilesInRangeErrors: a read-only DB refuses with ErrReadOnly, a
// closed one with ErrClosed, and a range whose start is above its end
// deletes nothing.
func TestDeleteFilesInRangeErrors(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	putKeyRange(t, d, 0, 1000, "v1")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := tablesByLevel(d)
	if err := d.DeleteFilesInRange(dfrKey(900), dfrKey(100), true); err != nil {
		t.Fatal(err)
	}
	if after := tablesByLevel(d); !slices.Equal(after[len(after)-1], before[len(before)-1]) {
		t.Error("a range with start above end deleted tables")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteFilesInRange(nil, nil, true); !errors.Is(err, ErrClosed) {
		t.Errorf("closed: %v", err)
	}
	ro, err := OpenForReadOnly("/db", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.DeleteFilesInRange(nil, nil, true); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only: %v", err)
	}
	if err := ro.DeleteFilesInRanges([]Range{{}}, false); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only, DeleteFilesInRanges: %v", err)
	}
}

// TestDeleteFilesInRangeManifestFailure fails the MANIFEST sync of the
// deletion: the call fails, writes stop (the edit may be durable), the
// tables stay readable; after Resume the deletion can be made again.
func TestDeleteFilesInRangeManifestFailure(t *testing.T) {
	mem := vfs.NewMem()
	ffs, _, d := openFaultDB(t, mem, nil)
	defer d.Close()
	putKeyRange(t, d, 0, 2000, "v1")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := tablesByLevel(d)
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpSync, PathContains: "MANIFEST"})
	if err := d.DeleteFilesInRange(dfrKey(500), dfrKey(1500), true); err == nil {
		t.Fatal("DeleteFilesInRange with a failing MANIFEST succeeded")
	}
	if err := d.Put(dfrKey(1), []byte("x"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a write after the failed deletion: %v", err)
	}
	if err := d.DeleteFilesInRange(dfrKey(500), dfrKey(1500), true); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a deletion in the read-only state: %v", err)
	}
	for i := range 2000 {
		if v, err := d.Get(dfrKey(i), nil); err != nil || !bytes.Equal(v, dfrValue(i, "v1")) {
			t.Fatalf("key %d after the failed deletion: %q, %v", i, v, err)
		}
	}
	ffs.ClearRules()
	if err := d.Resume(); err != nil {
		t.Fatal(err)
	}
	if after := tablesByLevel(d); len(after[len(after)-1]) != len(before[len(before)-1]) {
		t.Fatalf("the failed deletion changed the version: %d tables, before %d", len(after[len(after)-1]), len(before[len(before)-1]))
	}
	if err := d.DeleteFilesInRange(dfrKey(500), dfrKey(1500), true); err != nil {
		t.Fatal(err)
	}
	if after := tablesByLevel(d); len(after[len(after)-1]) >= len(before[len(before)-1]) {
		t.Fatal("nothing deleted after Resume")
	}
}

// TestDeleteFilesInRangeRandomized runs random writes, deletes, range
// deletes, flushes and compactions (automatic ones in the background) with
// DeleteFilesInRange of random ranges among them, and after each deletion
// checks every key: one outside the range keeps its newest value, one
// inside reads as its newest value, a value once written for it, or
// absent. What it reads then becomes what it must read from there on (no
// compaction changes what a read sees), checked by Get and a full scan,
// before and after a reopen; the blob accounting stays exact and Check
// passes at the end.
func TestDeleteFilesInRangeRandomized(t *testing.T) {
	sets := []struct {
		name string
		set  func(*Options)
	}{
		{"tiny-tables-static-levels", func(o *Options) {
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
			o.MaxBytesForLevelBase = 16 << 10
			o.DisableDynamicLevelBytes = true
		}},
		{"blob-files", func(o *Options) {
			setBlobTestOptions(o)
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
		}},
	}
	ops := bySize(4000, 1500, 20000)
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 5), func(t *testing.T, seed uint64) {
				runDeleteFilesRandomized(t, seed, ops, s.set)
			})
		})
	}
}

func runDeleteFilesRandomized(t *testing.T, seed uint64, ops int, set func(*Options)) {
	const numKeys = 1200
	mem := vfs.NewMem()
	opts := testOptions(mem)
	opts.Logger = discardLogger()
	set(opts)
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	rng := rand.New(rand.NewPCG(seed, 0xdf))
	// cur is what each key must read as ("" absent); history every value
	// ever written for it.
	cur := map[int]string{}
	history := map[int]map[string]bool{}
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	checkAll := func(what string) {
		t.Helper()
		for i := range numKeys {
			v, err := d.Get(key(i), nil)
			switch want := cur[i]; {
			case want == "" && !errors.Is(err, ErrNotFound):
				t.Fatalf("%s: key %d: %q, %v; want absent", what, i, v, err)
			case want != "" && (err != nil || string(v) != want):
				t.Fatalf("%s: key %d: %q, %v; want %q", what, i, v, err, want)
			}
		}
		it := d.NewIterator(nil)
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			for i < numKeys && cur[i] == "" {
				i++
			}
			if i == numKeys || !bytes.Equal(it.Key(), key(i)) || string(it.Value()) != cur[i] {
				t.Fatalf("%s: scan at %q = %q; want key %d", what, it.Key(), it.Value(), i)
			}
			i++
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s: scan: %v", what, err)
		}
		for ; i < numKeys; i++ {
			if cur[i] != "" {
				t.Fatalf("%s: scan ended before key %d", what, i)
			}
		}
	}
	// lost and resurfaced count the keys a deletion made absent, and those
	// it made read as an older value.
	deletions, eligible, lost, resurfaced := 0, 0, 0, 0
	// next is the key after the last Put: most Puts write it, so that
	// tables hold runs of keys narrow enough to lie inside ranges.
	next := 0
	// deleteFiles calls DeleteFilesInRange and checks every key after it.
	deleteFiles := func(op int, start, end []byte, includeEnd bool) {
		d.mu.Lock()
		v := d.versions.Current()
		eligible += len(filesWithinRanges(d.cmp.Compare, v, []Range{{start, end}}, includeEnd))
		v.Unref()
		d.mu.Unlock()
		if err := d.DeleteFilesInRange(start, end, includeEnd); err != nil {
			t.Fatal(err)
		}
		deletions++
		inRange := func(i int) bool {
			k := key(i)
			return (start == nil || bytes.Compare(k, start) >= 0) &&
				(end == nil || bytes.Compare(k, end) < 0 || includeEnd && bytes.Equal(k, end))
		}
		for i := range numKeys {
			v, err := d.Get(key(i), nil)
			got := string(v)
			if errors.Is(err, ErrNotFound) {
				got, err = "", nil
			}
			if err != nil {
				t.Fatalf("op %d: after DeleteFilesInRange [%q, %q] (includeEnd %v): key %d: %v", op, start, end, includeEnd, i, err)
			}
			if got == cur[i] {
				continue
			}
			if !inRange(i) || got != "" && !history[i][got] {
				t.Fatalf("op %d: after DeleteFilesInRange [%q, %q] (includeEnd %v): key %d (in range %v) reads %q, newest %q, never written",
					op, start, end, includeEnd, i, inRange(i), got, cur[i])
			}
			if got == "" {
				lost++
			} else {
				resurfaced++
			}
			cur[i] = got
		}
		checkAll(fmt.Sprintf("op %d: after DeleteFilesInRange", op))
		if opts.EnableBlobFiles {
			if _, err := verifyBlobReferences(d); err != nil {
				t.Fatalf("op %d: %v", op, err)
			}
		}
	}
	for op := 0; op < ops; op++ {
		switch r := rng.IntN(1000); {
		case r < 650:
			i := next % numKeys
			if rng.IntN(10) == 0 {
				i = rng.IntN(numKeys)
			}
			next = i + 1
			fill := make([]byte, 20+rng.IntN(100)) // incompressible: small tables
			for j := range fill {
				fill[j] = 'a' + byte(rng.IntN(26))
			}
			v := fmt.Sprintf("v%d-%d-%s", op, i, fill)
			if err := d.Put(key(i), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			cur[i] = v
			if history[i] == nil {
				history[i] = map[string]bool{}
			}
			history[i][v] = true
		case r < 780:
			i := rng.IntN(numKeys)
			if err := d.Delete(key(i), nil); err != nil {
				t.Fatal(err)
			}
			cur[i] = ""
		case r < 790:
			a := rng.IntN(numKeys)
			b := a + 1 + rng.IntN(20)
			if err := d.DeleteRange(key(a), key(b), nil); err != nil {
				t.Fatal(err)
			}
			for i := a; i < b && i < numKeys; i++ {
				cur[i] = ""
			}
		case r < 840:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 850:
			a := rng.IntN(numKeys)
			if err := d.CompactRange(key(a), key(a+rng.IntN(100))); err != nil {
				t.Fatal(err)
			}
		case r < 990:
			i := rng.IntN(numKeys)
			v, err := d.Get(key(i), nil)
			if want := cur[i]; want == "" && !errors.Is(err, ErrNotFound) || want != "" && (err != nil || string(v) != want) {
				t.Fatalf("op %d: key %d: %q, %v; want %q", op, i, v, err, want)
			}
		default:
			a := rng.IntN(numKeys)
			b := a + rng.IntN(numKeys/4)
			var start, end []byte
			if rng.IntN(8) != 0 {
				start = key(a)
			}
			if rng.IntN(8) != 0 {
				end = key(b)
			}
			includeEnd := rng.IntN(2) == 0
			deleteFiles(op, start, end, includeEnd)
		}
	}
	if eligible == 0 || lost == 0 {
		// A short run may meet no table inside a range: one more call, over
		// everything once the memtable is flushed.
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		deleteFiles(ops, nil, nil, false)
	}
	checkAll("at the end")
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	checkBlobReferences(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReport(t, mem)
	if d, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	checkAll("after a reopen")
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkAll("after a full compaction")
	checkBlobReferences(t, d)
	if eligible == 0 || lost == 0 {
		t.Fatalf("%d calls found %d tables to delete, %d keys lost: the test needs some", deletions, eligible, lost)
	}
	t.Logf("%d DeleteFilesInRange calls, %d tables within their ranges; %d keys lost, %d read as an older value", deletions, eligible, lost, resurfaced)
}

// TestDeleteFilesInRangeConcurrent calls DeleteFilesInRange and
// CompactRange over and over while writers write and automatic compactions
// run, with blob files on: no call fails, no background error is set, every
// key reads as absent or a value written for it, the blob accounting stays
// exact and Check passes.
func TestDeleteFilesInRangeConcurrent(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.WriteBufferSize = 4 << 10
	opts.TargetFileSizeBase = 4 << 10
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const numKeys = 2000
	rounds := bySize(3000, 1000, 20000)
	errs := make(chan error, 4)
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; n < rounds; n++ {
				i := (n + w*numKeys/2) % numKeys
				if rng.IntN(10) == 0 {
					i = rng.IntN(numKeys)
				}
				if err := d.Put(dfrKey(i), dfrValue(i, fmt.Sprint("w", w, "-", n)), nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var others sync.WaitGroup
	calls := 0
	var eligible atomic.Int64
	others.Add(1)
	go func() {
		defer others.Done()
		rng := rand.New(rand.NewPCG(2, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			a := rng.IntN(numKeys)
			if rng.IntN(10) == 0 {
				if err := d.CompactRange(dfrKey(a), dfrKey(a+200)); err != nil {
					errs <- err
					return
				}
				continue
			}
			start, end, includeEnd := dfrKey(a), dfrKey(a+rng.IntN(400)), rng.IntN(2) == 0
			d.mu.Lock()
			v := d.versions.Current()
			eligible.Add(int64(len(filesWithinRanges(d.cmp.Compare, v, []Range{{start, end}}, includeEnd))))
			v.Unref()
			d.mu.Unlock()
			if err := d.DeleteFilesInRange(start, end, includeEnd); err != nil {
				errs <- err
				return
			}
			calls++
			time.Sleep(100 * time.Microsecond) // leave the writers the CPU
		}
	}()
	writers.Wait()
	// A fast run (-race -short) can end its writes before any call found a
	// table inside its range: the calls go on over the flushed data a while.
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); eligible.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	for i := range numKeys {
		v, err := d.Get(dfrKey(i), nil)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil || !bytes.Contains(v, []byte(fmt.Sprintf("-value-%05d-", i))) {
			t.Fatalf("key %d: %q, %v", i, v, err)
		}
	}
	checkBlobReferences(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkReport(t, mem)
	if eligible.Load() == 0 {
		t.Fatalf("%d calls found no table to delete", calls)
	}
	t.Logf("%d DeleteFilesInRange calls beside the writers, %d tables within their ranges", calls, eligible.Load())
}

package shale

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// scanFlushDB opens a DB whose memtable holds n tombstones in front of
// live keys that are all in tables: keys k00000..k(total) written and
// flushed, then the lowest n deleted.
func scanFlushDB(t *testing.T, trigger, total, n int) *DB {
	t.Helper()
	opts := testOptions(vfs.NewMem())
	opts.WriteBufferSize = 8 << 20 // the deletes stay in the memtable
	opts.MemtableOpScanFlushTrigger = trigger
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i := range total {
		if err := db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte("value"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := db.Delete([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// firstLive opens an iterator, positions it with First, checks the key it
// finds and returns the tombstones the move stepped over.
func firstLive(t *testing.T, db *DB, want string) uint64 {
	t.Helper()
	it := db.NewIterator(nil)
	defer it.Close()
	if !it.First() || string(it.Key()) != want {
		t.Fatalf("First: %q (valid %v, err %v), want %q", it.Key(), it.Valid(), it.Err(), want)
	}
	return it.Stats().InternalDeleteSkippedCount
}

// TestMemtableOpScanFlushTrigger: an iterator move that steps over more
// memtable entries than the trigger flushes the memtable, after which
// compaction removes the tombstones and a new scan skips none of them.
func TestMemtableOpScanFlushTrigger(t *testing.T) {
	db := scanFlushDB(t, 100, 3000, 2000)
	flushes := db.Metrics().Flush.Count
	if skipped := firstLive(t, db, "k02000"); skipped < 2000 {
		t.Fatalf("the first scan skipped %d tombstones, want 2000", skipped)
	}
	if !waitFor(func() bool { return db.Metrics().ScanFlushes == 1 && db.Metrics().Flush.Count > flushes }) {
		t.Fatalf("no flush after a scan over 2000 tombstones of the memtable:\n%s", db.Metrics())
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	if skipped := firstLive(t, db, "k02000"); skipped >= 100 {
		t.Fatalf("after the flush and compactions a scan still skips %d tombstones:\n%s", skipped, db.Metrics())
	}
	if n := db.Metrics().ScanFlushes; n != 1 {
		t.Fatalf("%d scan flushes, want 1", n)
	}
}

// TestMemtableOpScanFlushTriggerNotReached: a move stepping over no more
// entries than the trigger, or any number with the trigger off, flushes
// nothing.
func TestMemtableOpScanFlushTriggerNotReached(t *testing.T) {
	for _, c := range []struct {
		name             string
		trigger, deletes int
	}{
		{"below", 1000, 900},
		{"off", -1, 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := scanFlushDB(t, c.trigger, 3000, c.deletes)
			flushes := db.Metrics().Flush.Count
			firstLive(t, db, fmt.Sprintf("k%05d", c.deletes))
			// Close waits for a flush an iterator asked for.
			m := db.Metrics()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if m.ScanFlushes != 0 || m.Flush.Count != flushes {
				t.Fatalf("%d scan flushes and %d flushes after the scan, want none", m.ScanFlushes, m.Flush.Count-flushes)
			}
		})
	}
}

// TestMemtableOpScanFlushAtClose: Close right after a scan asked for a
// flush neither hangs nor loses data, and a read-only DB never flushes for
// a scan.
func TestMemtableOpScanFlushAtClose(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.WriteBufferSize = 8 << 20
	opts.MemtableOpScanFlushTrigger = 10
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := db.Delete([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put([]byte("z"), []byte("live"), nil); err != nil {
		t.Fatal(err)
	}
	it := db.NewIterator(nil)
	if !it.First() || string(it.Key()) != "z" {
		t.Fatalf("First: %q", it.Key())
	}
	it.Close()
	if err := db.Close(); err != nil { // races the flush it asked for
		t.Fatal(err)
	}
	rdb, err := OpenForReadOnly("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	flushes := rdb.Metrics().Flush.Count
	for range 2 {
		it := rdb.NewIterator(nil)
		if !it.First() || string(it.Key()) != "z" {
			t.Fatalf("read-only First: %q", it.Key())
		}
		it.Close()
	}
	if m := rdb.Metrics(); m.ScanFlushes != 0 || m.Flush.Count != flushes {
		t.Fatalf("read-only DB flushed for a scan: %d, %d", m.ScanFlushes, m.Flush.Count-flushes)
	}
}

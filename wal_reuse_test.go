package shale

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// TestReopenWritesNoTables is the CLI's pattern: open, write one key with
// sync, close, a hundred times. Close does not flush what the WAL holds and
// Open appends to a WAL that replays cleanly, so no table is written and
// one WAL holds everything.
func TestReopenWritesNoTables(t *testing.T) {
	fs := vfs.NewMem()
	for i := range 100 {
		db, err := Open("/db", &Options{FS: fs, CreateIfMissing: true})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := db.Put(fmt.Appendf(nil, "key%03d", i), fmt.Appendf(nil, "value%03d", i), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := countFiles(t, fs, base.FileTypeTable); n > 0 {
		t.Fatalf("100 open/put/close cycles left %d tables, want none", n)
	}
	if n := countFiles(t, fs, base.FileTypeLog); n != 1 {
		t.Fatalf("%d WALs, want the one they all appended to", n)
	}
	db, err := Open("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 100 {
		v, err := db.Get(fmt.Appendf(nil, "key%03d", i), nil)
		if err != nil || string(v) != fmt.Sprintf("value%03d", i) {
			t.Fatalf("key%03d = %q, %v", i, v, err)
		}
	}
	// The appended WAL survives a power loss: every write was synced.
	crash := fs.CrashClone()
	cdb, err := Open("/db", &Options{FS: crash})
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	it := cdb.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 100 {
		t.Fatalf("after a power loss %d keys (err %v), want 100", n, err)
	}
}

// TestReopenTruncatesZerosBeforeAppending: a WAL that ends in zeros (space
// preallocated before a crash) replays cleanly; Open cuts the zeros off
// before appending, or the records written after them would be lost
// behind what replay takes for the end.
func TestReopenTruncatesZerosBeforeAppending(t *testing.T) {
	fs := vfs.NewMem()
	db := openMemFS(t, fs)
	if err := db.Put([]byte("before"), []byte("1"), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	walName := "/db/" + findFile(t, fs, "/db", base.FileTypeLog)
	f, err := fs.OpenReadWrite(walName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMemFS(t, fs)
	if m := db.Metrics(); len(m.Recovery.Losses) != 0 {
		t.Fatalf("trailing zeros reported as a loss: %+v", m.Recovery)
	}
	if err := db.Put([]byte("after"), []byte("2"), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	db = reopenMem(t, db, fs)
	defer db.Close()
	for k, want := range map[string]string{"before": "1", "after": "2"} {
		if v, err := db.Get([]byte(k), nil); err != nil || string(v) != want {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, v, err, want)
		}
	}
	if n := countFiles(t, fs, base.FileTypeTable); n != 0 {
		t.Fatalf("%d tables, want none", n)
	}
}

// TestReopenAfterTornTailStartsNewWAL: a WAL with a torn tail is replayed,
// flushed and replaced, never appended to (new records would sit behind
// the damage).
func TestReopenAfterTornTailStartsNewWAL(t *testing.T) {
	fs := vfs.NewMem()
	db := openMemFS(t, fs)
	for i := range 3 {
		if err := db.Put(fmt.Appendf(nil, "k%d", i), make([]byte, 300), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	walName := "/db/" + findFile(t, fs, "/db", base.FileTypeLog)
	f, err := fs.OpenReadWrite(walName)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	if err := f.Truncate(size - 100); err != nil { // tear the last record
		t.Fatal(err)
	}
	f.Close()
	db = openMemFS(t, fs)
	m := db.Metrics()
	if m.Recovery.DroppedRecords != 1 || len(m.Recovery.Losses) != 1 || m.Recovery.Losses[0].File != walName {
		t.Fatalf("recovery metrics after a torn tail: %+v", m.Recovery)
	}
	if _, err := fs.Stat(walName); err == nil {
		t.Fatalf("the torn WAL %s is still there: it was appended to", walName)
	}
	if err := db.Put([]byte("k9"), []byte("v"), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	db = reopenMem(t, db, fs)
	defer db.Close()
	for _, k := range []string{"k0", "k1", "k9"} {
		if _, err := db.Get([]byte(k), nil); err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
	}
	if _, err := db.Get([]byte("k2"), nil); err == nil {
		t.Fatal("the torn record k2 was replayed")
	}
}

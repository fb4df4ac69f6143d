package shale

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// walFileSize returns the size on disk of the one WAL in /db.
func walFileSize(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	var size int64
	n := 0
	for _, name := range listNames(t, fs, "/db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeLog {
			fi, err := fs.Stat(fs.PathJoin("/db", name))
			if err != nil {
				t.Fatal(err)
			}
			size = fi.Size()
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d WALs in /db, want 1", n)
	}
	return size
}

// TestSyncedWritesZeroFillTheWAL: small synced writes extend the WAL with
// zeros ahead of its records (so their fdatasync changes no metadata); a
// secondary instance catching up, a power loss, and a reopen after Close
// all read every acknowledged write from such a WAL, and Close trims it.
func TestSyncedWritesZeroFillTheWAL(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	value := func(i int) []byte { return fmt.Appendf(nil, "value-%05d-%0200d", i, i) }
	put := func(i int) {
		if err := db.Put(fmt.Appendf(nil, "key%05d", i), value(i), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(i)
	}
	walRecords := func() int64 {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.log.w.Size()
	}
	records := walRecords()
	if size := walFileSize(t, fs); size <= records {
		t.Fatalf("WAL is %d bytes for %d of records: not zero-filled ahead", size, records)
	}
	check := func(what string, r *DB, upto int) {
		t.Helper()
		for i := range upto {
			v, err := r.Get(fmt.Appendf(nil, "key%05d", i), nil)
			if err != nil {
				t.Fatalf("%s: key %d: %v", what, i, err)
			}
			if string(v) != string(value(i)) {
				t.Fatalf("%s: key %d = %q", what, i, v)
			}
		}
	}
	sec, err := OpenAsSecondary("/db", "/sec", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	check("secondary", sec, n)
	for i := n; i < n+100; i++ {
		put(i)
	}
	if err := sec.TryCatchUpWithPrimary(); err != nil {
		t.Fatal(err)
	}
	check("secondary after catching up", sec, n+100)
	if err := sec.Close(); err != nil {
		t.Fatal(err)
	}

	crash := fs.CrashClone()
	crashed, err := Open("/db", &Options{FS: crash})
	if err != nil {
		t.Fatal(err)
	}
	check("after a power loss", crashed, n+100)
	for i := n + 100; i < n+200; i++ {
		if err := crashed.Put(fmt.Appendf(nil, "key%05d", i), value(i), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}
	if crashed, err = Open("/db", &Options{FS: crash}); err != nil {
		t.Fatal(err)
	}
	check("reopened after a power loss", crashed, n+200)
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}

	records = walRecords()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if size := walFileSize(t, fs); size != records {
		t.Fatalf("WAL is %d bytes after Close, its records %d", size, records)
	}
	db, err = Open("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check("reopened", db, n+100)
}

package shale

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// fillAndClose writes enough to /db in fs for tables, a WAL, a MANIFEST and
// an OPTIONS file, then closes it.
func fillAndClose(t *testing.T, fs *vfs.MemFS) {
	t.Helper()
	db := openMemFS(t, fs)
	for i := range 2000 {
		if err := db.Put([]byte{byte(i >> 8), byte(i)}, make([]byte, 40), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDestroyDBRemovesOnlyDatabaseFiles(t *testing.T) {
	fs := vfs.NewMem()
	fillAndClose(t, fs)
	writeFile(t, fs, "/db/notes.txt", []byte("mine"))
	if err := fs.MkdirAll("/db/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, "/db/sub/000001.sst", []byte("not a table of this database"))
	writeFile(t, fs, "/db/LOG.old", []byte("old log"))
	before := listNames(t, fs, "/db")
	for _, want := range []string{"CURRENT", "LOCK", "LOG"} {
		if !slices.Contains(before, want) {
			t.Fatalf("the filled DB lacks %s: %v", want, before)
		}
	}
	if err := DestroyDB("/db", &Options{FS: fs}); err != nil {
		t.Fatal(err)
	}
	if got := listNames(t, fs, "/db"); !slices.Equal(got, []string{"notes.txt", "sub"}) {
		t.Fatalf("after DestroyDB /db holds %v, want only the foreign notes.txt and sub", got)
	}
	if got := listNames(t, fs, "/db/sub"); !slices.Equal(got, []string{"000001.sst"}) {
		t.Fatalf("DestroyDB touched a subdirectory: %v", got)
	}
	if _, err := Open("/db", &Options{FS: fs}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open without CreateIfMissing after DestroyDB: %v, want does-not-exist", err)
	}
}

func TestDestroyDBRemovesEmptiedDirectory(t *testing.T) {
	fs := vfs.NewMem()
	fillAndClose(t, fs)
	if err := DestroyDB("/db", &Options{FS: fs}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("/db"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the emptied directory is still there: %v", err)
	}
	if err := DestroyDB("/db", &Options{FS: fs}); err != nil {
		t.Fatalf("DestroyDB of a missing directory: %v", err)
	}
}

func TestDestroyDBRefusedWhileOpen(t *testing.T) {
	fs := vfs.NewMem()
	db := openMemFS(t, fs)
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	before := listNames(t, fs, "/db")
	if err := DestroyDB("/db", &Options{FS: fs}); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("DestroyDB of an open DB: %v, want ErrLocked", err)
	}
	if got := listNames(t, fs, "/db"); !slices.Equal(got, before) {
		t.Fatalf("a refused DestroyDB changed the directory: %v, was %v", got, before)
	}
	if v, err := db.Get([]byte("k"), nil); err != nil || string(v) != "v" {
		t.Fatalf("Get after a refused DestroyDB: %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLockDirectoryAcrossOpens(t *testing.T) {
	fs := vfs.NewMem()
	lock, err := LockDirectory("/db", fs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDirectory("/db", fs); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second LockDirectory: %v, want ErrLocked", err)
	}
	if _, err := Open("/db", testOptions(fs)); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("Open without the held lock: %v, want ErrLocked", err)
	}
	o := testOptions(fs)
	o.Lock = lock
	for round := range 3 {
		db, err := Open("/db", o)
		if err != nil {
			t.Fatalf("round %d: Open with Options.Lock: %v", round, err)
		}
		if _, err := Open("/db", o); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("a second DB with the same Options.Lock: %v, want ErrLocked", err)
		}
		if err := lock.Close(); err == nil {
			t.Fatal("Lock.Close succeeded while a DB uses it")
		}
		if err := db.Put([]byte("k"), []byte{byte(round)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// Closing the DB kept the lock.
		if _, err := Open("/db", testOptions(fs)); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("Open after a Close with Options.Lock: %v, want ErrLocked", err)
		}
		if round == 1 {
			if err := DestroyDB("/db", &Options{FS: fs, Lock: lock}); err != nil {
				t.Fatalf("DestroyDB with the held lock: %v", err)
			}
			if got := listNames(t, fs, "/db"); !slices.Equal(got, []string{"LOCK"}) {
				t.Fatalf("DestroyDB with Options.Lock left %v, want only LOCK", got)
			}
		}
	}
	if _, err := Open("/elsewhere", &Options{FS: fs, CreateIfMissing: true, Lock: lock}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open of another directory with the lock: %v, want ErrInvalidArgument", err)
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatalf("Open after Lock.Close: %v", err)
	}
	if v, err := db.Get([]byte("k"), nil); err != nil || v[0] != 2 {
		t.Fatalf("Get = %v, %v; want the write of round 2", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

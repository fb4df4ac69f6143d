package shale

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// dirImage maps each file of dir to a checksum of its bytes.
func dirImage(t *testing.T, fs vfs.FS, dir string) map[string]uint32 {
	t.Helper()
	img := map[string]uint32{}
	for _, name := range listNames(t, fs, dir) {
		p := fs.PathJoin(dir, name)
		if fi, err := fs.Stat(p); err == nil && fi.IsDir() {
			img[name+"/"] = 0
			continue
		}
		f, err := fs.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		img[name] = crc32.ChecksumIEEE(b)
	}
	return img
}

// readOnlyFS refuses, and counts, every call that could change the file
// system: a read-only mount, and a witness that nothing tried to write.
type readOnlyFS struct {
	vfs.FS
	attempts atomic.Int64
}

var errROFS = &os.PathError{Op: "write", Path: "read-only fs", Err: syscall.EROFS}

func (fs *readOnlyFS) refuse() error { fs.attempts.Add(1); return errROFS }

func (fs *readOnlyFS) Create(string, ...vfs.OpenOption) (vfs.File, error) { return nil, fs.refuse() }
func (fs *readOnlyFS) OpenReadWrite(string) (vfs.File, error)             { return nil, fs.refuse() }
func (fs *readOnlyFS) OpenDir(string) (vfs.File, error)                   { return nil, fs.refuse() }
func (fs *readOnlyFS) Remove(string) error                                { return fs.refuse() }
func (fs *readOnlyFS) RemoveAll(string) error                             { return fs.refuse() }
func (fs *readOnlyFS) Rename(string, string) error                        { return fs.refuse() }
func (fs *readOnlyFS) MkdirAll(string, os.FileMode) error                 { return fs.refuse() }
func (fs *readOnlyFS) Lock(string) (io.Closer, error)                     { return nil, fs.refuse() }

// fillForReadOnly writes keys k0000..k(n-1) in several tables and levels,
// the last ones only in the WAL, a range deletion of [k0100, k0110) and
// deletes of every tenth key, and closes the DB. It returns the model.
func fillForReadOnly(t *testing.T, fs *vfs.MemFS, n int) model {
	t.Helper()
	db := openMemFS(t, fs)
	m := model{}
	for i := range n {
		k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("v%04d-%s", i, make([]byte, i%50))
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
		if i%10 == 9 {
			if err := db.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		}
	}
	if err := db.DeleteRange([]byte("k0100"), []byte("k0110"), nil); err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 110; i++ {
		delete(m, fmt.Sprintf("k%04d", i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkDBEquals checks every Get, MultiGet and a full scan of db against m.
func checkDBEquals(t *testing.T, db *DB, m model) {
	t.Helper()
	checkAll(t, db, nil, m)
}

func TestOpenForReadOnlyWritesNothing(t *testing.T) {
	mem := vfs.NewMem()
	m := fillForReadOnly(t, mem, 3000)
	if n := countFiles(t, mem, base.FileTypeTable); n == 0 {
		t.Fatal("the fill wrote no table")
	}
	before := dirImage(t, mem, "/db")
	ro := &readOnlyFS{FS: mem}
	for round := range 2 {
		db, err := OpenForReadOnly("/db", &Options{FS: ro})
		if err != nil {
			t.Fatalf("round %d: OpenForReadOnly: %v", round, err)
		}
		checkDBEquals(t, db, m)
		writes := map[string]error{
			"Put":          db.Put([]byte("x"), []byte("y"), nil),
			"Delete":       db.Delete([]byte("k0001"), nil),
			"SingleDelete": db.SingleDelete([]byte("k0001"), nil),
			"DeleteRange":  db.DeleteRange([]byte("a"), []byte("z"), nil),
			"Write":        db.Write(func() *Batch { b := db.NewBatch(); b.Put([]byte("x"), nil); return b }(), nil),
			"Flush":        db.Flush(),
			"CompactRange": db.CompactRange(nil, nil),
			"Resume":       db.Resume(),
		}
		for what, err := range writes {
			if !errors.Is(err, ErrReadOnly) {
				t.Errorf("%s on a read-only DB: %v, want ErrReadOnly", what, err)
			}
		}
		checkDBEquals(t, db, m)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := ro.attempts.Load(); n != 0 {
		t.Fatalf("OpenForReadOnly, reads and Close made %d calls that change the file system", n)
	}
	if after := dirImage(t, mem, "/db"); !maps.Equal(before, after) {
		t.Fatalf("the directory changed:\nbefore %v\nafter  %v", before, after)
	}
	// Read-only opens also leave the database as a writer found it.
	db := openMemFS(t, mem)
	checkDBEquals(t, db, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenForReadOnlyOfMissingDatabase(t *testing.T) {
	mem := vfs.NewMem()
	ro := &readOnlyFS{FS: mem}
	if _, err := OpenForReadOnly("/none", &Options{FS: ro}); err == nil {
		t.Fatal("OpenForReadOnly of a missing directory succeeded")
	}
	if err := mem.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenForReadOnly("/empty", &Options{FS: ro, CreateIfMissing: true}); err == nil {
		t.Fatal("OpenForReadOnly of a directory without a database succeeded")
	}
	if n := ro.attempts.Load(); n != 0 {
		t.Fatalf("failed read-only opens made %d calls that change the file system", n)
	}
	if names := listNames(t, mem, "/empty"); len(names) != 0 {
		t.Fatalf("a failed read-only open left %v", names)
	}
}

// TestOpenForReadOnlyBesideWriter opens read-only again and again while a
// writer commits batches that set every key to one generation, flushing and
// compacting (so tables and WALs come and go). Each read-only DB must see
// one generation for every key, no older than the last acknowledged before
// its open, and keep seeing it while the writer moves on.
func TestOpenForReadOnlyBesideWriter(t *testing.T) {
	mem := vfs.NewMem()
	wo := testOptions(mem)
	// A WAL rotation every ~15 batches: often, but not at every batch (a
	// read-only open that always meets a rotation must start over forever).
	wo.WriteBufferSize = 128 << 10
	w, err := Open("/db", wo)
	if err != nil {
		t.Fatal(err)
	}
	const keys = 40
	var acked atomic.Int64
	writeGen := func(g int) error {
		b := w.NewBatch()
		for k := range keys {
			b.Put(fmt.Appendf(nil, "key%02d", k), fmt.Appendf(nil, "gen%06d-%s", g, make([]byte, 200)))
		}
		return w.Write(b, nil)
	}
	if err := writeGen(0); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() {
		for g := 1; ; g++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := writeGen(g); err != nil {
				werr = err
				return
			}
			acked.Store(int64(g))
			if g%50 == 0 {
				if err := w.CompactRange(nil, nil); err != nil {
					werr = err
					return
				}
			}
		}
	})
	rounds := bySize(30, 10, 200)
	for r := range rounds {
		min := acked.Load()
		db, err := OpenForReadOnly("/db", &Options{FS: mem})
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: OpenForReadOnly beside a writer: %v", r, err)
		}
		gen := func() string {
			it := db.NewIterator(nil)
			defer it.Close()
			g, n := "", 0
			for ok := it.First(); ok; ok = it.Next() {
				v := string(it.Value()[:9])
				if g == "" {
					g = v
				} else if v != g {
					t.Fatalf("round %d: key %s has %s, an earlier key %s: not one consistent state", r, it.Key(), v, g)
				}
				n++
			}
			if n != keys {
				t.Fatalf("round %d: %d keys, want %d", r, n, keys)
			}
			return g
		}
		g := gen()
		var got int64
		fmt.Sscanf(g, "gen%06d", &got)
		if got < min {
			t.Fatalf("round %d: read-only open sees generation %d, older than %d acknowledged before it", r, got, min)
		}
		for range 3 { // the writer moves on; the read-only view does not
			if g2 := gen(); g2 != g {
				t.Fatalf("round %d: the read-only view changed from %s to %s", r, g, g2)
			}
			for k := range keys {
				v, err := db.Get(fmt.Appendf(nil, "key%02d", k), nil)
				if err != nil || string(v[:9]) != g {
					t.Fatalf("round %d: Get(key%02d) = %.9q, %v; the scan saw %s", r, k, v, err, g)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenForReadOnlyWALRemovedDuringOpen makes the writer, between the
// read-only open's MANIFEST read and its second look at the directory,
// write to a new WAL and flush and remove that WAL again: the loaded
// version does not hold that WAL's table, and the WAL is gone, so the open
// must start over rather than replay the WALs around the gap.
func TestOpenForReadOnlyWALRemovedDuringOpen(t *testing.T) {
	mem := vfs.NewMem()
	w := openMemFS(t, mem)
	defer w.Close()
	put := func(k string) {
		t.Helper()
		if err := w.Put([]byte(k), []byte("v-"+k), nil); err != nil {
			t.Fatal(err)
		}
	}
	put("k0")
	fired := false
	readOnlyLoadedHook = func() {
		if fired {
			return
		}
		fired = true
		put("k1")
		if err := w.Flush(); err != nil { // k1 to a table; a new WAL A
			t.Error(err)
		}
		walA := "/db/" + findFile(t, mem, "/db", base.FileTypeLog)
		put("k2")                         // only in WAL A
		if err := w.Flush(); err != nil { // k2 to a table; WAL B; A removed
			t.Error(err)
		}
		put("k3") // in WAL B
		for range 1000 {
			if _, err := mem.Stat(walA); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Errorf("the flushed WAL %s was not removed", walA)
	}
	defer func() { readOnlyLoadedHook = nil }()
	db, err := OpenForReadOnly("/db", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !fired {
		t.Fatal("the hook did not run")
	}
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		if v, err := db.Get([]byte(k), nil); err != nil || string(v) != "v-"+k {
			t.Errorf("Get(%s) = %q, %v: the read-only view is not the writer's state", k, v, err)
		}
	}
}

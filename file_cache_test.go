package shale

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// closeCountFS counts the Close calls of every table file it opens.
type closeCountFS struct {
	vfs.FS
	mu     sync.Mutex
	closes map[*closeCountFile]int
}

type closeCountFile struct {
	vfs.File
	fs *closeCountFS
}

func (fs *closeCountFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	cf := &closeCountFile{File: f, fs: fs}
	fs.mu.Lock()
	fs.closes[cf] = 0
	fs.mu.Unlock()
	return cf, nil
}

func (f *closeCountFile) Close() error {
	f.fs.mu.Lock()
	f.fs.closes[f]++
	f.fs.mu.Unlock()
	return f.File.Close()
}

// TestTableCacheClosesFailedOpenOnce opens a table whose footer is damaged
// through the table cache: the handle must be closed exactly once
// (sstable.NewReader closes it on error; closing it again could close a
// descriptor another file has reused, on a file system that does not guard
// against it).
func TestTableCacheClosesFailedOpenOnce(t *testing.T) {
	mem := vfs.NewMem()
	db := openMemFS(t, mem)
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := mem.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, n := range names {
		if !strings.HasSuffix(n, ".sst") {
			continue
		}
		path := mem.PathJoin("/db", n)
		f, err := mem.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b[len(b)-1] ^= 0xff // the table magic
		w, err := mem.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		w.Close()
		damaged++
	}
	if damaged == 0 {
		t.Fatal("no table to damage")
	}
	fs := &closeCountFS{FS: mem, closes: map[*closeCountFile]int{}}
	db, err = Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k"), nil); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Get from a table with a damaged footer: %v, want ErrCorruption", err)
	}
	db.Close()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.closes) == 0 {
		t.Fatal("no table was opened")
	}
	for f, n := range fs.closes {
		if n != 1 {
			t.Errorf("a table handle (%T) was closed %d times", f.File, n)
		}
	}
}

package shale

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

func TestMmapReadsRefuseDirectReads(t *testing.T) {
	_, err := Open("/db", &Options{CreateIfMissing: true, FS: vfs.NewMem(), AllowMmapReads: true, UseDirectReads: true})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "AllowMmapReads") {
		t.Fatalf("Open with AllowMmapReads and UseDirectReads: %v", err)
	}
}

// mmapTestValue is the value of key i: large ones (to blob files) for
// even i, small ones (inline in tables) for odd i.
func mmapTestValue(i int) []byte {
	n := 20
	if i%2 == 0 {
		n = 3000 + i%500
	}
	return bytes.Repeat([]byte{byte('a' + i%26)}, n)
}

// openMmapTestDB opens dir on the OS file system with tables and blob files
// read through mappings.
func openMmapTestDB(t *testing.T, dir string) *DB {
	t.Helper()
	o := testOptions(nil)
	o.FS = vfs.Default
	o.EnableBlobFiles, o.MinBlobSize, o.BlobFileSize = true, 1000, 256<<10
	o.AllowMmapReads = true
	o.BlockCacheSize = 0 // every read goes to the mapping
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestMmapReadsOSFiles writes tables and blob files on the OS file system
// and reads them back through mappings with Get, MultiGet and an iterator,
// before and after a reopen; the file cache's readers must be mapped.
func TestMmapReadsOSFiles(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	db := openMmapTestDB(t, dir)
	const n = 600
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%05d", i), mmapTestValue(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(db *DB) {
		t.Helper()
		for i := range n {
			v, err := db.Get(fmt.Appendf(nil, "key%05d", i), nil)
			if err != nil || !bytes.Equal(v, mmapTestValue(i)) {
				t.Fatalf("Get key%05d: %d bytes, %v", i, len(v), err)
			}
		}
		keys := [][]byte{[]byte("key00002"), []byte("key00003"), []byte("key00598"), []byte("nokey")}
		vals, errs := db.MultiGet(keys, nil)
		for j, k := range keys {
			var i int
			if _, err := fmt.Sscanf(string(k), "key%05d", &i); err != nil {
				if !errors.Is(errs[j], ErrNotFound) {
					t.Fatalf("MultiGet %s: %v", k, errs[j])
				}
				continue
			}
			if errs[j] != nil || !bytes.Equal(vals[j], mmapTestValue(i)) {
				t.Fatalf("MultiGet %s: %d bytes, %v", k, len(vals[j]), errs[j])
			}
		}
		it := db.NewIterator(nil)
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if want := fmt.Sprintf("key%05d", i); string(it.Key()) != want || !bytes.Equal(it.Value(), mmapTestValue(i)) {
				t.Fatalf("iterator at %q, want %s", it.Key(), want)
			}
			i++
		}
		if err := it.Close(); err != nil || i != n {
			t.Fatalf("iterator saw %d keys, %v", i, err)
		}
		v := db.versions.Current()
		defer v.Unref()
		mapped := 0
		for _, files := range v.Levels {
			for _, f := range files {
				tf, err := db.fileCache.findTable(f.FileNum)
				if err != nil {
					t.Fatal(err)
				}
				if !tf.reader.Mapped() {
					t.Errorf("table %s is not read through a mapping", f.FileNum)
				}
				tf.release()
				mapped++
			}
		}
		for _, b := range v.BlobFiles {
			num := b.FileNum
			bf, err := db.fileCache.findBlob(num)
			if err != nil {
				t.Fatal(err)
			}
			if !bf.blobReader.Mapped() {
				t.Errorf("blob file %s is not read through a mapping", num)
			}
			bf.release()
			mapped++
		}
		if mapped < 2 {
			t.Fatalf("only %d files to check", mapped)
		}
	}
	check(db)
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMmapTestDB(t, dir)
	defer db.Close()
	check(db)
}

// TestMmapReadsCorruptBlobFile flips a byte in the middle of each blob file
// on disk: a Get through the mapping returns a corruption error for the
// value it damaged, and every other value still reads back.
func TestMmapReadsCorruptBlobFile(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	db := openMmapTestDB(t, dir)
	const n = 40
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%05d", i), mmapTestValue(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil { // flushes: every value is in a blob file
		t.Fatal(err)
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob"))
	if len(blobs) == 0 {
		t.Fatal("no blob files")
	}
	for _, name := range blobs {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0x40 // within a record: one value per file
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db = openMmapTestDB(t, dir)
	defer db.Close()
	corrupt := 0
	for i := range n {
		v, err := db.Get(fmt.Appendf(nil, "key%05d", i), nil)
		switch {
		case errors.Is(err, ErrCorruption):
			corrupt++
		case err != nil || !bytes.Equal(v, mmapTestValue(i)):
			t.Fatalf("Get key%05d: %d bytes, %v", i, len(v), err)
		}
	}
	if corrupt != len(blobs) {
		t.Fatalf("%d values read as corrupt, want %d (one per blob file)", corrupt, len(blobs))
	}
}

// TestMmapReadsGetRacingClose closes the DB while Gets of a large blob
// value run: a Get copying from a mapping when Close comes must finish
// (or fail with ErrClosed), not fault on an unmapped file.
func TestMmapReadsGetRacingClose(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	db := openMmapTestDB(t, dir)
	big := bytes.Repeat([]byte("v"), 16<<20)
	if err := db.Put([]byte("big"), big, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil { // into a blob file, read through its mapping
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		db := openMmapTestDB(t, dir)
		var wg sync.WaitGroup
		started := make(chan struct{}, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ro := &ReadOptions{SkipFillCache: true}
				for i := 0; ; i++ {
					v, err := db.Get([]byte("big"), ro)
					if i == 0 {
						started <- struct{}{}
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil || len(v) != len(big) {
						t.Errorf("round %d: Get: %d bytes, %v", round, len(v), err)
						return
					}
				}
			}()
		}
		<-started
		<-started
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

package shale

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// blobTestOptions are testOptions with setBlobTestOptions.
func blobTestOptions(fs vfs.FS) *Options {
	o := testOptions(fs)
	o.Logger = discardLogger()
	setBlobTestOptions(o)
	return o
}

func blobTestValue(i int) []byte {
	return []byte(fmt.Sprintf("value-%05d-%s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, 40+i%50)))
}

// TestBlobFilesFlushSeparatesValues: a flush with blob files on writes
// blob files (rolled at BlobFileSize), its table holds blob indexes, the
// MANIFEST records both, and Get, MultiGet (both modes) and iterators read
// the values back, before and after a reopen. Short values stay inline.
func TestBlobFilesFlushSeparatesValues(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), blobTestValue(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put([]byte("short"), []byte("tiny"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	v := d.versions.Current()
	if len(v.BlobFiles) < 2 {
		t.Fatalf("want several blob files (4 KiB each), got %d", len(v.BlobFiles))
	}
	var total uint64
	for _, b := range v.BlobFiles {
		total += b.TotalCount
		if b.TotalBytes+56 != b.Size {
			t.Errorf("blob file %s: total bytes %d, size %d: want size = bytes + header + footer", b.FileNum, b.TotalBytes, b.Size)
		}
	}
	if total != n {
		t.Errorf("blob files hold %d values, want %d", total, n)
	}
	for _, f := range v.Levels[0] {
		if len(f.BlobFiles) == 0 {
			t.Errorf("L0 table %s references no blob file", f.FileNum)
		}
	}
	v.Unref()
	if got := countFiles(t, mem, base.FileTypeBlob); got < 2 {
		t.Fatalf("%d blob files on disk", got)
	}
	check := func(d *DB) {
		t.Helper()
		for i := range n {
			k := []byte(fmt.Sprintf("k%05d", i))
			got, err := d.Get(k, nil)
			if err != nil || !bytes.Equal(got, blobTestValue(i)) {
				t.Fatalf("Get(%s) = %q, %v", k, got, err)
			}
		}
		if got, err := d.Get([]byte("short"), nil); err != nil || string(got) != "tiny" {
			t.Fatalf("Get(short) = %q, %v", got, err)
		}
		for _, async := range []bool{false, true} {
			var keys [][]byte
			for i := 0; i < n; i += 7 {
				keys = append(keys, []byte(fmt.Sprintf("k%05d", i)))
			}
			keys = append(keys, []byte("missing"), []byte("short"))
			vals, errs := d.MultiGet(keys, &ReadOptions{AsyncIO: async})
			for j := range keys[:len(keys)-2] {
				if errs[j] != nil || !bytes.Equal(vals[j], blobTestValue(j*7)) {
					t.Fatalf("async %v: MultiGet %s = %q, %v", async, keys[j], vals[j], errs[j])
				}
			}
			if !errors.Is(errs[len(keys)-2], ErrNotFound) || string(vals[len(keys)-1]) != "tiny" {
				t.Fatalf("async %v: MultiGet missing/short = %v / %q", async, errs[len(keys)-2], vals[len(keys)-1])
			}
		}
		it := d.NewIterator(nil)
		i := 0
		for ok := it.First(); ok && i < n; ok = it.Next() {
			if want := fmt.Sprintf("k%05d", i); string(it.Key()) != want || !bytes.Equal(it.Value(), blobTestValue(i)) {
				t.Fatalf("iterator at %q = %q, want %s", it.Key(), it.Value(), want)
			}
			i++
		}
		if i != n || string(it.Key()) != "short" || string(it.Value()) != "tiny" {
			t.Fatalf("iterator stopped at %d (%q)", i, it.Key())
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			_ = it.Value()
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check(d)
	if got := checkBlobReferences(t, d); got != n {
		t.Errorf("tables hold %d blob indexes, want %d", got, n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	check(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestModelBlobFiles is TestModel with blob files on: tiny memtables and
// blob files, so values go through flushes into blob files, compactions
// pass their indexes on and drop the overwritten ones, and blob files are
// deleted; with separation starting at L1 (compactions separate values
// that flushes kept inline); and with SetOptions turning blob files on and
// off, and changing their sizes, mid-run.
func TestModelBlobFiles(t *testing.T) {
	ops := bySize(3000, 1200, 20000)
	variants := []struct {
		name string
		cfg  dbRunConfig
		set  func(*Options)
	}{
		{name: "tiny", set: func(o *Options) {
			setBlobTestOptions(o)
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
		}},
		{name: "min-100-starting-level-1", set: func(o *Options) {
			setBlobTestOptions(o)
			o.MinBlobSize = 100
			o.BlobFileStartingLevel = 1
		}},
		{name: "set-options", cfg: dbRunConfig{setOptions: true}, set: setBlobTestOptions},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
				cfg := v.cfg
				if cfg.setOptions {
					cfg.setOptionsSeed = seed
				} else {
					cfg.wantBlobIndexes = true
				}
				runModelWith(t, seed, ops, cfg, v.set)
			})
		})
	}
}

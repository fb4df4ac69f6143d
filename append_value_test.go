package shale

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestAppendValue checks AppendValue against Get for values in the
// memtable, in tables and in blob files: it appends to dst and keeps its
// bytes, leaves dst as it was for a missing key or a closed DB, and
// allocates nothing once dst has the capacity.
func TestAppendValue(t *testing.T) {
	for _, blobs := range []bool{false, true} {
		mem := vfs.NewMem()
		opts := &Options{FS: mem, CreateIfMissing: true, EnableBlobFiles: blobs}
		d, err := Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		big := bytes.Repeat([]byte("v"), 4000)
		for _, kv := range [][2]string{{"flushed", string(big)}, {"empty", ""}} {
			if err := d.Put([]byte(kv[0]), []byte(kv[1]), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.Put([]byte("memtable"), []byte("in the memtable"), nil); err != nil {
			t.Fatal(err)
		}
		if blobs && d.Metrics().Blob.Files == 0 {
			t.Fatal("no blob file written")
		}
		for _, k := range []string{"flushed", "empty", "memtable"} {
			want, err := d.Get([]byte(k), nil)
			if err != nil {
				t.Fatalf("blobs %v: Get(%s): %v", blobs, k, err)
			}
			got, err := d.AppendValue([]byte("dst:"), []byte(k), nil)
			if err != nil || string(got) != "dst:"+string(want) {
				t.Fatalf("blobs %v: AppendValue(dst:, %s) = %.40q, %v; want dst:%.40q", blobs, k, got, err, want)
			}
		}
		dst := []byte("kept")
		if got, err := d.AppendValue(dst, []byte("missing"), nil); !errors.Is(err, ErrNotFound) || string(got) != "kept" {
			t.Fatalf("blobs %v: AppendValue of a missing key = %q, %v; want dst and ErrNotFound", blobs, got, err)
		}
		buf, key := make([]byte, 0, len(big)), []byte("flushed")
		// No background work allocates while the reads are counted.
		if err := d.WaitForCompact(nil); err != nil {
			t.Fatal(err)
		}
		// Allocation counts are not the code's under the race detector.
		if n := testing.AllocsPerRun(20, func() {
			if buf, err = d.AppendValue(buf[:0], key, nil); err != nil || !bytes.Equal(buf, big) {
				t.Fatalf("AppendValue into a reused buffer: %d bytes, %v", len(buf), err)
			}
		}); n > 0 && !raceEnabled {
			t.Errorf("blobs %v: AppendValue of a cached value into a buffer of its size allocates %.1f times per read", blobs, n)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := d.AppendValue(dst, []byte("flushed"), nil); !errors.Is(err, ErrClosed) || string(got) != "kept" {
			t.Fatalf("blobs %v: AppendValue after Close = %q, %v; want dst and ErrClosed", blobs, got, err)
		}
	}
}

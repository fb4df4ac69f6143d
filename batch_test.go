package shale

import (
	"bytes"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// TestBatchEncodingRoundTrip decodes what a Batch encodes.
func TestBatchEncodingRoundTrip(t *testing.T) {
	b := newBatch()
	b.Put([]byte("k1"), []byte("v1"))
	b.Delete([]byte("k2"))
	b.SingleDelete([]byte(""))
	b.DeleteRange([]byte("a"), []byte("z"))
	b.Put([]byte("k3"), bytes.Repeat([]byte("x"), 300))
	b.setSeqNum(42)
	r, ok := newBatchReader(b.data)
	if !ok || r.seq != 42 || r.count != 5 {
		t.Fatalf("header: ok=%v seq=%d count=%d", ok, r.seq, r.count)
	}
	want := []struct {
		kind       base.Kind
		key, value string
	}{
		{base.KindSet, "k1", "v1"}, {base.KindDelete, "k2", ""}, {base.KindSingleDelete, "", ""},
		{base.KindRangeDelete, "a", "z"}, {base.KindSet, "k3", string(bytes.Repeat([]byte("x"), 300))},
	}
	for i, w := range want {
		kind, key, value, ok, malformed := r.next()
		if !ok || malformed || kind != w.kind || string(key) != w.key || string(value) != w.value {
			t.Fatalf("entry %d: %v %q %q ok=%v malformed=%v", i, kind, key, value, ok, malformed)
		}
	}
	if _, _, _, ok, malformed := r.next(); ok || malformed {
		t.Fatalf("after the last entry: ok=%v malformed=%v", ok, malformed)
	}
	// Every truncation is malformed (or, at the header, refused).
	for n := 0; n < len(b.data); n++ {
		r, ok := newBatchReader(b.data[:n])
		if !ok {
			continue
		}
		bad := false
		for {
			_, _, _, ok, malformed := r.next()
			if malformed {
				bad = true
				break
			}
			if !ok {
				break
			}
		}
		if !bad {
			t.Fatalf("a batch cut to %d of %d bytes decoded without complaint", n, len(b.data))
		}
	}
}

// TestMalformedBatchInIntactWALRecord: a WAL record with a valid checksum but
// a malformed batch inside fails Open with ErrCorruption naming the WAL.
func TestMalformedBatchInIntactWALRecord(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	name := base.MakeFilename(base.FileTypeLog, 999)
	f, err := fs.Create("/db/" + name)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewWriter(f, name)
	bad := newBatch()
	bad.Put([]byte("k"), []byte("v"))
	bad.setSeqNum(100)
	bad.data = bad.data[:len(bad.data)-1] // the value runs past the end
	if err := w.AddRecord(bad.data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open("/db", testOptions(fs))
	expectCorruption(t, err, name)
}

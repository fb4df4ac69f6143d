package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
)

func verifyTestTable(t *testing.T, o WriterOptions) ([]byte, []kv) {
	t.Helper()
	var entries []kv
	for i := 0; i < 40; i++ {
		entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("key%03d", i*3)), base.SeqNum(100+i), base.KindSet),
			bytes.Repeat([]byte{'v', byte('a' + i%26)}, 8)})
	}
	path := filepath.Join(testdir.New(t), "v.sst")
	writeTable(t, path, o, entries, []tombstone{{"key010", "key020", 50}, {"key030", "key040", 60}, {"key030", "key040", 40}})
	return readFile(t, path), entries
}

// TestVerifyChecksumsEveryByte: every single-byte change of a table is found
// by NewReader or VerifyChecksums (no byte of a table escapes a checksum or
// a format check), and an intact table verifies.
func TestVerifyChecksumsEveryByte(t *testing.T) {
	for _, o := range []WriterOptions{
		{BlockSize: 128, BlockRestartInterval: 3, Compression: SnappyCompression},
		{BlockSize: 256, Compression: ZstdCompression, Checksum: ChecksumXXHash64},
		{BlockSize: 200, Compression: NoCompression, BloomBitsPerKey: NoFilter},
	} {
		orig, _ := verifyTestTable(t, o)
		r, err := NewReader(&bytesFile{orig}, ReaderOptions{FileName: "v.sst"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.VerifyChecksums(); err != nil {
			t.Fatalf("%s: intact table: %v", o.Compression, err)
		}
		r.Close()
		for pos := range orig {
			for _, x := range []byte{0x01, 0x80} {
				b := bytes.Clone(orig)
				b[pos] ^= x
				r, err := NewReader(&bytesFile{b}, ReaderOptions{FileName: "v.sst"})
				if err == nil {
					err = r.VerifyChecksums()
					r.Close()
				}
				var ce *base.CorruptionError
				if !errors.As(err, &ce) || ce.File != "v.sst" {
					t.Fatalf("%s: byte %d ^ %#x of %d: got %v, want a corruption error naming v.sst", o.Compression, pos, x, len(orig), err)
				}
			}
		}
	}
}

// TestVerifyChecksumsAfterOpen: damage to a data block made after the table
// was opened (and while its blocks sit in the cache) is found by
// VerifyChecksums, which reads from the file, at the block's offset.
func TestVerifyChecksumsAfterOpen(t *testing.T) {
	orig, entries := verifyTestTable(t, WriterOptions{BlockSize: 128, Compression: NoCompression})
	f := &bytesFile{bytes.Clone(orig)}
	r, err := NewReader(f, ReaderOptions{FileName: "v.sst", Cache: cache.New(1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it := r.NewIter(IterOptions{FillCache: true})
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != len(entries) {
		t.Fatalf("scan: %d entries, %v", n, err)
	}
	third := r.ix.items[2].handle
	f.b[third.Offset+3] ^= 0x20
	err = r.VerifyChecksums()
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != "v.sst" || ce.Offset != int64(third.Offset) {
		t.Fatalf("got %v, want corruption in v.sst at offset %d", err, third.Offset)
	}
	// The cache still serves the verified copy: reads stay correct.
	if v, _, _, ok, err := r.Get(entries[7].key.UserKey, base.SeqNumMax, true); err != nil || !ok || !bytes.Equal(v, entries[7].value) {
		t.Fatalf("cached Get: %q %v %v", v, ok, err)
	}
	f.b[third.Offset+3] ^= 0x20
	if err := r.VerifyChecksums(); err != nil {
		t.Fatalf("repaired: %v", err)
	}
	// A table that grew or shrank since it was opened is reported.
	f.b = append(f.b, 0)
	if err := r.VerifyChecksums(); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("grown table: %v", err)
	}
}

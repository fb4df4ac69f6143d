package sstable

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// TestLayoutTilesTheTable: the blocks Layout lists tile the whole file
// (each block and its trailer end where the next begins, the footer ends
// the file), the data blocks' entries read through DataBlockEntries are
// the table's entries in order, and each data block's keys are at most its
// separator. A damaged data block is reported at its offset.
func TestLayoutTilesTheTable(t *testing.T) {
	for _, o := range []WriterOptions{
		{BlockSize: 128, BlockRestartInterval: 3, Compression: SnappyCompression},
		{BlockSize: 256, Compression: NoCompression, BloomBitsPerKey: NoFilter},
	} {
		orig, _ := verifyTestTable(t, o)
		r, err := NewReader(&bytesFile{orig}, ReaderOptions{FileName: "l.sst"})
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := r.Layout()
		if err != nil {
			t.Fatal(err)
		}
		var off uint64
		var got []base.InternalKey
		kinds := map[string]int{}
		for _, b := range blocks {
			kinds[b.Kind]++
			if b.Offset != off {
				t.Fatalf("%s block at %d, want %d (blocks %+v)", b.Kind, b.Offset, off, blocks)
			}
			off = b.Offset + b.Length
			if b.Kind != "footer" {
				off += 5
			}
			if b.Kind != "data" {
				continue
			}
			err := r.DataBlockEntries(b, func(k base.InternalKey, _ []byte) {
				if base.InternalCompare(bytes.Compare, k, b.Separator) > 0 {
					t.Errorf("key %s above its block's separator %s", k, b.Separator)
				}
				got = append(got, k.Clone())
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if off != uint64(len(orig)) || kinds["data"] < 2 || kinds["index"] != 1 || kinds["footer"] != 1 || kinds["metaindex"] != 1 || kinds["rocksdb.properties"] != 1 {
			t.Fatalf("blocks end at %d of %d; kinds %v", off, len(orig), kinds)
		}
		it := r.NewIter(IterOptions{})
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if i >= len(got) || base.InternalCompare(bytes.Compare, it.Key(), got[i]) != 0 {
				t.Fatalf("entry %d: iterator %s, blocks %v", i, it.Key(), got[min(i, len(got)-1)])
			}
			i++
		}
		if err := it.Close(); err != nil || i != len(got) {
			t.Fatalf("iterator %d entries (%v), blocks %d", i, err, len(got))
		}
		r.Close()

		// Damage in the second data block: its entries are refused at its
		// offset.
		var second BlockInfo
		for _, b := range blocks {
			if b.Kind == "data" && b.Offset > 0 {
				second = b
				break
			}
		}
		bad := bytes.Clone(orig)
		bad[second.Offset+1] ^= 0x20
		r, err = NewReader(&bytesFile{bad}, ReaderOptions{FileName: "l.sst"})
		if err != nil {
			t.Fatal(err)
		}
		var ce *base.CorruptionError
		if err := r.DataBlockEntries(second, func(base.InternalKey, []byte) {}); !errors.As(err, &ce) || ce.Offset != int64(second.Offset) {
			t.Errorf("damaged block at %d: %v", second.Offset, err)
		}
		r.Close()
	}
}

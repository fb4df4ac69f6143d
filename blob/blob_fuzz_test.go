package blob

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// FuzzBlobIndexDecode: any bytes decode to an Index that encodes back to
// exactly them, or fail with corruption naming the table.
func FuzzBlobIndexDecode(f *testing.F) {
	for _, x := range []Index{
		{},
		{FileNum: 12, Offset: 24, Size: 8192, Compression: SnappyCompression},
		{FileNum: 1 << 40, Offset: 1 << 33, Size: block.MaxLen, Compression: ZstdCompression},
		{FileNum: math.MaxUint64, Offset: math.MaxUint64 - block.MaxLen - block.TrailerLen, Size: block.MaxLen},
	} {
		if x.Compression == DefaultCompression {
			x.Compression = NoCompression
		}
		enc := EncodeIndex(nil, x)
		f.Add(enc)
		f.Add(enc[:len(enc)-1])
		f.Add(append(enc, 0))
		bad := append([]byte(nil), enc...)
		bad[0] = 2
		f.Add(bad)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0x80, 0x00, 1, 1, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeIndex("t.sst", b)
		if err != nil {
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || ce.File != "t.sst" {
				t.Fatalf("%x: %v is not a corruption error naming the table", b, err)
			}
			return
		}
		if enc := EncodeIndex(nil, x); !bytes.Equal(enc, b) {
			t.Fatalf("%x decodes to %s, which encodes to %x", b, x, enc)
		}
		if len(b) > MaxIndexLen || x.Size > block.MaxLen || x.Offset+x.Size+block.TrailerLen < x.Offset {
			t.Fatalf("%x: decoded %s out of bounds", b, x)
		}
	})
}

// The mode bits of FuzzBlobFileRead.
const (
	// fuzzRepair recomputes every checksum the file's structure reaches
	// (header, each record's trailer, footer) before reading, so that
	// mutations get past the checksums into the decoders.
	fuzzRepair = 1 << iota
	// fuzzCache reads through a block cache.
	fuzzCache
	// fuzzDirect reads through a fake direct-IO file (512-byte aligned).
	fuzzDirect
	// fuzzReadahead scans with explicit readahead instead of none.
	fuzzReadahead
)

// FuzzBlobFileRead opens any bytes as a blob file: the open and every read
// return corruption or consistent data, never panic. When the file opens,
// the iterator returns records until it stops (with corruption, or at the
// end having counted what the footer says), and Get and GetBatch of each
// record's index return the record's value.
func FuzzBlobFileRead(f *testing.F) {
	old := fileAlignment
	fileAlignment = func(vf vfs.File) int {
		if a, ok := vf.(*alignedFile); ok {
			return a.align
		}
		return old(vf)
	}
	f.Cleanup(func() { fileAlignment = old })
	for i, o := range []WriterOptions{{}, {Compression: SnappyCompression}, {Compression: ZstdCompression, Checksum: ChecksumXXHash64}} {
		recs := []record{{[]byte("k1"), []byte("v1")}, {nil, nil}, {[]byte("key"), bytes.Repeat([]byte("ab"), 100)}}
		data, _, _ := writeBlob(f, o, recs[:i+1])
		f.Add(data, byte(i))
		f.Add(data[:len(data)-1], byte(0))
		f.Add(data[:HeaderLen+5], byte(fuzzRepair))
		mut := append([]byte(nil), data...)
		mut[HeaderLen+lengthLen+1] ^= 0x40
		f.Add(mut, byte(fuzzRepair|fuzzCache))
	}
	empty, _, _ := writeBlob(f, WriterOptions{}, nil)
	f.Add(empty, byte(fuzzDirect))
	f.Add([]byte{}, byte(0))
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		if len(data) > 1<<20 {
			return
		}
		if mode&fuzzRepair != 0 {
			data = append([]byte(nil), data...)
			repairChecksums(data)
		}
		var vf vfs.File = &bytesFile{b: data}
		if mode&fuzzDirect != 0 {
			vf = &alignedFile{bytesFile: bytesFile{data}, align: 512}
		}
		o := ReaderOptions{FileName: "f.blob", FileNum: 5}
		if mode&fuzzCache != 0 {
			o.Cache = cache.New(1 << 20)
		}
		r, err := NewReader(vf, o)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("open: %v is not corruption", err)
			}
			return
		}
		defer r.Close()
		io := IterOptions{ReadaheadSize: -1}
		if mode&fuzzReadahead != 0 {
			io.ReadaheadSize = 4096
		}
		recs, xs, err := iterAll(r, io)
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("iterator: %v is not corruption", err)
		}
		if err == nil && uint64(len(recs)) != r.Properties().Count {
			t.Fatalf("iterated %d records to the end, the footer counts %d", len(recs), r.Properties().Count)
		}
		b := NewGetBatch(nil)
		for i, x := range xs {
			v, err := r.Get(x, recs[i].key)
			if err != nil || !bytes.Equal(v, recs[i].value) {
				t.Fatalf("record %d (%s): Get returned %d bytes, %v; the iterator %d", i, x, len(v), err, len(recs[i].value))
			}
			b.Add(r, x, recs[i].key, false)
		}
		for i := range xs {
			if v, err := b.Result(i); err != nil || !bytes.Equal(v, recs[i].value) {
				t.Fatalf("record %d: GetBatch: %v", i, err)
			}
		}
		// An index made up from the input reads nothing it should not.
		if len(data) > 8 {
			x := Index{FileNum: 5, Offset: uint64(binary.LittleEndian.Uint32(data[len(data)-8:])) % uint64(len(data)),
				Size: uint64(data[0]) << (mode % 8), Compression: NoCompression}
			if _, err := r.Get(x, data[:1]); err != nil && !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("Get of a made-up index: %v is not corruption", err)
			}
		}
		if err := r.VerifyFileChecksum(); err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("file checksum: %v is not corruption", err)
		}
	})
}

// repairChecksums recomputes, in place, the checksums of b that its
// structure leads to: the header's (with the checksum type it states, or
// CRC32C), the trailer of each record reached by following the lengths
// from the header, and the footer's.
func repairChecksums(b []byte) {
	if len(b) < HeaderLen {
		return
	}
	sum := ChecksumType(b[12])
	if !sum.Known() {
		sum = ChecksumCRC32C
	}
	binary.LittleEndian.PutUint32(b[16:], block.Checksum(sum, b[:16]))
	if len(b) < HeaderLen+FooterLen {
		return
	}
	footOff := len(b) - FooterLen
	for off := HeaderLen; footOff-off >= minRecordLen; {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		end := off + lengthLen + n + block.TrailerLen
		if n > footOff || end > footOff {
			break
		}
		blk := b[off+lengthLen : end]
		binary.LittleEndian.PutUint32(blk[n+1:], block.Checksum(sum, blk[:n+1]))
		off = end
	}
	ft := b[footOff:]
	binary.LittleEndian.PutUint32(ft[24:], block.Checksum(sum, ft[:24]))
}

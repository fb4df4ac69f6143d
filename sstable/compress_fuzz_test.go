package sstable

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
)

// FuzzCompression round-trips arbitrary block contents through every
// compression, and decompresses the raw input as each block type: that
// returns bytes or an error message, never a panic.
func FuzzCompression(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, repeat uint8) {
		// Repeating the input makes runs the compressors shrink hard.
		in := bytes.Repeat(raw, 1+int(repeat)%64)
		for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
			stored, typ, _ := compressBlock(c, in, nil)
			out, msg := decompressBlock(typ, stored)
			if msg != "" || !bytes.Equal(out, in) {
				t.Fatalf("%s: %d bytes stored as type %d decompress to %d bytes, %q", c, len(in), typ, len(out), msg)
			}
		}
		for _, typ := range []byte{blockTypeNone, blockTypeSnappy, blockTypeZstd, 2} {
			if out, msg := decompressBlock(typ, raw); msg == "" && typ == 2 || msg != "" && out != nil {
				t.Fatalf("type %d: %d bytes, %q", typ, len(out), msg)
			}
		}
	})
}

// TestDecompressStatedLength: a block stating a huge decompressed length
// is refused (snappy) or decoded (zstd) without allocating for that
// length. Before, a damaged length field made every read of the block
// allocate up to 1 GiB (maxBlockLen) before decoding failed.
func TestDecompressStatedLength(t *testing.T) {
	huge := binary.AppendUvarint(nil, maxBlockLen)
	if _, _, err := zstdCodec(); err != nil { // its setup is not measured
		t.Fatal(err)
	}
	for _, typ := range []byte{blockTypeSnappy, blockTypeZstd} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, msg := decompressBlock(typ, append(bytes.Clone(huge), 0, 0, 0))
		runtime.ReadMemStats(&after)
		if msg == "" || out != nil {
			t.Fatalf("type %d: a block stating %d bytes decompressed to %d", typ, maxBlockLen, len(out))
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Fatalf("type %d: %d bytes allocated for a %d-byte block", typ, n, len(huge)+3)
		}
	}
	// The bounds do not refuse what compresses best: 1 MiB of one byte.
	in := make([]byte, 1<<20)
	for _, c := range []Compression{SnappyCompression, ZstdCompression} {
		stored, typ, _ := compressBlock(c, in, nil)
		if out, msg := decompressBlock(typ, stored); msg != "" || !bytes.Equal(out, in) {
			t.Fatalf("%s: 1 MiB of zeros (stored in %d bytes): %q", c, len(stored), msg)
		}
	}
}

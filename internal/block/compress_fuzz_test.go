package block

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/shaledb/shale/internal/fuzzseed"
)

// FuzzCompression round-trips arbitrary block contents through every
// compression, and decompresses the raw input as each block type: that
// returns bytes or an error message, never a panic.
func FuzzCompression(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, repeat uint8) {
		// Repeating the input makes runs the compressors shrink hard.
		in := bytes.Repeat(raw, 1+int(repeat)%64)
		for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
			stored, typ, _ := Compress(c, in, nil)
			out, msg := Decompress(typ, stored)
			if msg != "" || !bytes.Equal(out, in) {
				t.Fatalf("%s: %d bytes stored as type %d decompress to %d bytes, %q", c, len(in), typ, len(out), msg)
			}
		}
		for _, typ := range []byte{TypeNone, TypeSnappy, TypeZstd, 2} {
			if out, msg := Decompress(typ, raw); msg == "" && typ == 2 || msg != "" && out != nil {
				t.Fatalf("type %d: %d bytes, %q", typ, len(out), msg)
			}
		}
	})
}

// TestDecompressStatedLength: a block stating a huge decompressed length
// is refused (snappy) or decoded (zstd) without allocating for that
// length. Before, a damaged length field made every read of the block
// allocate up to 1 GiB (MaxLen) before decoding failed.
func TestDecompressStatedLength(t *testing.T) {
	huge := binary.AppendUvarint(nil, MaxLen)
	if _, _, err := zstdCodec(); err != nil { // its setup is not measured
		t.Fatal(err)
	}
	for _, typ := range []byte{TypeSnappy, TypeZstd} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, msg := Decompress(typ, append(bytes.Clone(huge), 0, 0, 0))
		runtime.ReadMemStats(&after)
		if msg == "" || out != nil {
			t.Fatalf("type %d: a block stating %d bytes decompressed to %d", typ, MaxLen, len(out))
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Fatalf("type %d: %d bytes allocated for a %d-byte block", typ, n, len(huge)+3)
		}
	}
	// The bounds do not refuse what compresses best: 1 MiB of one byte.
	in := make([]byte, 1<<20)
	for _, c := range []Compression{SnappyCompression, ZstdCompression} {
		stored, typ, _ := Compress(c, in, nil)
		if out, msg := Decompress(typ, stored); msg != "" || !bytes.Equal(out, in) {
			t.Fatalf("%s: 1 MiB of zeros (stored in %d bytes): %q", c, len(stored), msg)
		}
	}
}

// TestWriteFuzzSeeds writes the seed corpora of this package's fuzz
// targets into testdata/fuzz when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it
// checks that each target has a committed corpus.
func TestWriteFuzzSeeds(t *testing.T) {
	// Block-like contents: keys sharing prefixes, small values.
	var entries []byte
	for i := 0; i < 40; i += 7 {
		entries = fmt.Appendf(entries, "\x00\x0e\x01key%03d\x01\x09%08d", i, i)
	}
	fuzzseed.Sync(t, map[string][][]any{
		"FuzzCompression": {{[]byte("abcabcabd"), uint8(3)}, {[]byte{}, uint8(0)}, {entries, uint8(1)}},
	})
}

// TestCompressionAndChecksumNames: every compression's name parses back to
// it, unknown names and values are reported, and checksum types name
// themselves by their footer code.
func TestCompressionAndChecksumNames(t *testing.T) {
	for _, c := range []Compression{DefaultCompression, NoCompression, SnappyCompression, ZstdCompression} {
		if got, err := ParseCompression(c.String()); err != nil || got != c {
			t.Errorf("ParseCompression(%q) = %v, %v", c.String(), got, err)
		}
	}
	if _, err := ParseCompression("lz4"); err == nil {
		t.Error("ParseCompression(lz4) succeeded")
	}
	if s := Compression(9).String(); s != "Compression(9)" {
		t.Errorf("Compression(9).String() = %q", s)
	}
	if s := Compression(-1).String(); s != "Compression(-1)" {
		t.Errorf("Compression(-1).String() = %q", s)
	}
	for c, want := range map[ChecksumType]string{ChecksumDefault: "default", ChecksumCRC32C: "crc32c", 2: "ChecksumType(2)", ChecksumXXHash64: "xxhash64", 200: "ChecksumType(200)"} {
		if got := c.String(); got != want {
			t.Errorf("ChecksumType(%d).String() = %q, want %q", uint8(c), got, want)
		}
	}
	if ChecksumDefault.Known() || !ChecksumCRC32C.Known() || ChecksumType(2).Known() || !ChecksumXXHash64.Known() {
		t.Error("Known() is wrong")
	}
}

package block

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/shaledb/shale/internal/base"
)

// Compression selects how a writer compresses blocks.
type Compression int

// The compressions. The zero value, DefaultCompression, leaves the choice
// to the writer's default (snappy for tables).
const (
	DefaultCompression Compression = iota
	NoCompression
	SnappyCompression
	ZstdCompression
)

// compressionNames are the names String gives and ParseCompression takes.
var compressionNames = [...]string{
	DefaultCompression: "default",
	NoCompression:      "none",
	SnappyCompression:  "snappy",
	ZstdCompression:    "zstd",
}

// String returns "none", "snappy" or "zstd" ("default" for the zero value).
func (c Compression) String() string {
	if c >= 0 && int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// ParseCompression parses the output of Compression.String.
func ParseCompression(s string) (Compression, error) {
	for c, name := range compressionNames {
		if s == name {
			return Compression(c), nil
		}
	}
	return 0, base.InvalidArgumentf("shale: unknown compression %q (want none, snappy or zstd)", s)
}

// The compression type codes of the trailer (RocksDB's).
const (
	TypeNone   byte = 0
	TypeSnappy byte = 1
	TypeZstd   byte = 7
)

var zstdState struct {
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	err  error
}

// zstdCodec returns the process-wide zstd encoder and decoder; EncodeAll and
// DecodeAll are safe for concurrent use.
func zstdCodec() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdState.once.Do(func() {
		zstdState.enc, zstdState.err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if zstdState.err == nil {
			zstdState.dec, zstdState.err = zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxLen))
		}
	})
	return zstdState.enc, zstdState.dec, zstdState.err
}

// Compress compresses raw with c into dst (reused across calls) and returns
// the bytes to store, their trailer type, and the buffer to pass as dst next
// time. It returns raw itself, with TypeNone, when compression saves less
// than 1/8 of the size (or c is NoCompression or DefaultCompression).
func Compress(c Compression, raw, dst []byte) (stored []byte, typ byte, buf []byte) {
	var out []byte
	switch c {
	case SnappyCompression:
		if n := snappy.MaxEncodedLen(len(raw)); cap(dst) < n {
			dst = make([]byte, n)
		}
		// s2's snappy-compatible fast encoder: klauspost's snappy.Encode
		// uses the slower "better" mode.
		out = s2.EncodeSnappy(dst[:cap(dst)], raw)
		typ = TypeSnappy
	case ZstdCompression:
		enc, _, err := zstdCodec()
		if err != nil {
			return raw, TypeNone, dst
		}
		// The decompressed length comes first, as in RocksDB's format 2+,
		// so the reader allocates exactly once.
		out = binary.AppendUvarint(dst[:0], uint64(len(raw)))
		out = enc.EncodeAll(raw, out)
		typ = TypeZstd
	default:
		return raw, TypeNone, dst
	}
	if cap(out) > cap(dst) {
		dst = out
	}
	if len(out) > len(raw)-len(raw)/8 {
		return raw, TypeNone, dst
	}
	return out, typ, dst
}

const (
	// snappyMaxExpansion bounds how much a snappy block can expand: the
	// densest element, a 3-byte copy, yields 64 bytes. A longer stated
	// length is corruption, refused before anything is allocated for it.
	snappyMaxExpansion = 22
	// zstdPreallocRatio bounds the buffer allocated up front for a zstd
	// block from its stated length; zstd can expand far more than this
	// (runs of one byte), so a longer output is grown, not refused.
	zstdPreallocRatio = 64
)

// Decompress returns the contents of the stored block b of trailer type
// typ (b itself for TypeNone), or a message saying why it cannot. The
// decompressed length a block states is never trusted for an allocation
// beyond what its compressed size makes plausible.
func Decompress(typ byte, b []byte) ([]byte, string) {
	switch typ {
	case TypeNone:
		return b, ""
	case TypeSnappy:
		n, err := snappy.DecodedLen(b)
		if err != nil || n > MaxLen || n > snappyMaxExpansion*len(b) {
			return nil, "bad snappy block length"
		}
		out, err := snappy.Decode(make([]byte, n), b)
		if err != nil {
			return nil, "bad snappy block: " + err.Error()
		}
		return out, ""
	case TypeZstd:
		n, m := binary.Uvarint(b)
		if m <= 0 || n > MaxLen {
			return nil, "bad zstd block length"
		}
		_, dec, err := zstdCodec()
		if err != nil {
			return nil, "zstd unavailable: " + err.Error()
		}
		// n comes from the file: allocate for it only as far as the
		// compressed bytes make plausible, and let a longer output grow.
		out, err := dec.DecodeAll(b[m:], make([]byte, 0, min(n, zstdPreallocRatio*uint64(len(b))+64<<10)))
		if err != nil {
			return nil, "bad zstd block: " + err.Error()
		}
		if uint64(len(out)) != n {
			return nil, "zstd block decompressed to the wrong length"
		}
		return out, ""
	}
	return nil, "unknown block compression type"
}

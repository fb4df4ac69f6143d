package blob

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
)

// IndexKind is the first byte of an encoded blob index: which variant
// follows.
type IndexKind byte

// The index kinds; only IndexKindBlob is written and read. The others are
// RocksDB's codes, reserved so that a later format can add them.
const (
	indexKindInlinedTTL IndexKind = 0 // reserved: a value inline with an expiration
	IndexKindBlob       IndexKind = 1 // a value in a blob file
	indexKindBlobTTL    IndexKind = 2 // reserved: a blob with an expiration
)

// MaxIndexLen is the longest encoding of an Index.
const MaxIndexLen = 1 + 3*binary.MaxVarintLen64 + 1

// Index locates a value in a blob file: what a table stores under
// base.KindBlobIndex in place of the value.
type Index struct {
	// FileNum is the blob file's number.
	FileNum base.FileNum
	// Offset is where the record's stored value block starts in the file,
	// and Size its stored (compressed) length, without the block trailer.
	Offset, Size uint64
	// Compression is the compression the value is stored with:
	// NoCompression, SnappyCompression or ZstdCompression.
	Compression Compression
}

// handle is the value block's handle.
func (x Index) handle() block.Handle { return block.Handle{Offset: x.Offset, Length: x.Size} }

// String formats x for messages.
func (x Index) String() string {
	return fmt.Sprintf("blob %s offset %d size %d %s", x.FileNum, x.Offset, x.Size, x.Compression)
}

// EncodeIndex appends the encoding of x (kind IndexKindBlob) to dst. x must
// come from a Writer or DecodeIndex: a Compression other than the three
// stored ones is a broken invariant.
func EncodeIndex(dst []byte, x Index) []byte {
	code, ok := typeCode(x.Compression)
	if !ok {
		base.AssertionFailedf("blob index with compression %s", x.Compression)
	}
	dst = append(dst, byte(IndexKindBlob))
	dst = binary.AppendUvarint(dst, uint64(x.FileNum))
	dst = binary.AppendUvarint(dst, x.Offset)
	dst = binary.AppendUvarint(dst, x.Size)
	return append(dst, code)
}

// DecodeIndex decodes an encoded blob index, which must be all of b. Any
// malformed input (a kind it does not know, a bad or non-minimal varint,
// an unknown compression, trailing bytes, a size above block.MaxLen, an
// extent that overflows) is an error matching base.ErrCorruption; file
// names the table it was read from in the error.
func DecodeIndex(file string, b []byte) (Index, error) {
	bad := func(format string, args ...any) (Index, error) {
		return Index{}, base.CorruptionErrorf(file, 0, "blob index %x: "+format, append([]any{b}, args...)...)
	}
	if len(b) == 0 {
		return bad("empty")
	}
	switch k := IndexKind(b[0]); k {
	case IndexKindBlob:
	case indexKindInlinedTTL, indexKindBlobTTL:
		return bad("kind %d (with expiration) is not supported", k)
	default:
		return bad("unknown kind %d", k)
	}
	p := b[1:]
	var v [3]uint64
	for i := range v {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return bad("truncated or overflowing varint")
		}
		if n != uvarintLen(x) {
			return bad("non-minimal varint")
		}
		v[i], p = x, p[n:]
	}
	if len(p) == 0 {
		return bad("no compression byte")
	}
	c, ok := compressionOf(p[0])
	if !ok {
		return bad("unknown compression type %d", p[0])
	}
	if len(p) > 1 {
		return bad("%d bytes after the end", len(p)-1)
	}
	x := Index{FileNum: base.FileNum(v[0]), Offset: v[1], Size: v[2], Compression: c}
	if x.Size > block.MaxLen {
		return bad("size %d above the block limit", x.Size)
	}
	if x.Offset > math.MaxUint64-x.Size-block.TrailerLen {
		return bad("offset %d with size %d overflows", x.Offset, x.Size)
	}
	return x, nil
}

// uvarintLen is the length of the minimal uvarint encoding of x.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

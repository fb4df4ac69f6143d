package sstable

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/shaledb/shale/internal/base"
)

const (
	// blockTrailerLen is the compression type byte and the 4-byte checksum
	// after every block.
	blockTrailerLen = 5
	// maxHandleLen is the longest encoding of a blockHandle.
	maxHandleLen = 2 * binary.MaxVarintLen64
	// footerLen is the fixed size of the footer.
	footerLen = 1 + 2*maxHandleLen + 4 + 8
	// tableMagic ends every shale table ("shaleSST" read big-endian).
	tableMagic uint64 = 0x7368616c65535354
	// formatVersion is the current table format version.
	formatVersion uint32 = 1
	// maxBlockLen bounds the (decompressed) size of any block; larger sizes
	// read from a file are treated as corruption rather than allocated.
	maxBlockLen = 1 << 30
)

// Block compression codes in the block trailer (RocksDB's).
const (
	blockTypeNone   = 0
	blockTypeSnappy = 1
	blockTypeZstd   = 7
)

// Meta block names in the metaindex block.
const (
	metaFilterName     = "fullfilter.shale.bloom"
	metaPropertiesName = "rocksdb.properties"
	metaRangeDelName   = "rocksdb.range_del"
)

// blockHandle locates a block (without its trailer) in the file.
type blockHandle struct {
	offset, length uint64
}

func (h blockHandle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

// decodeHandle decodes a handle from the front of b; n <= 0 on failure.
func decodeHandle(b []byte) (blockHandle, int) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return blockHandle{}, 0
	}
	length, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return blockHandle{}, 0
	}
	return blockHandle{off, length}, n + m
}

var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

// maskCRC is LevelDB's masking, so that a CRC over data containing CRCs
// stays well distributed.
func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

// checksum computes the checksum of b, which is a block followed by its
// compression type byte.
func checksum(t ChecksumType, b []byte) uint32 {
	if t == ChecksumXXHash64 {
		return uint32(xxhash.Sum64(b))
	}
	return maskCRC(crc32.Checksum(b, crc32cTable))
}

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
				zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxBlockLen))
		}
	})
	return zstdState.enc, zstdState.dec, zstdState.err
}

// compressBlock compresses raw into dst (reused) and returns the bytes to
// store and their block type. It stores raw when compression saves less
// than 1/8 of the size.
func compressBlock(c Compression, raw, dst []byte) ([]byte, byte, []byte) {
	var out []byte
	var typ byte
	switch c {
	case SnappyCompression:
		if n := snappy.MaxEncodedLen(len(raw)); cap(dst) < n {
			dst = make([]byte, n)
		}
		// s2's snappy-compatible fast encoder: klauspost's snappy.Encode
		// uses the slower "better" mode.
		out = s2.EncodeSnappy(dst[:cap(dst)], raw)
		typ = blockTypeSnappy
	case ZstdCompression:
		enc, _, err := zstdCodec()
		if err != nil {
			return raw, blockTypeNone, dst
		}
		// The decompressed length comes first, as in RocksDB's format 2+,
		// so the reader allocates exactly once.
		out = binary.AppendUvarint(dst[:0], uint64(len(raw)))
		out = enc.EncodeAll(raw, out)
		typ = blockTypeZstd
	default:
		return raw, blockTypeNone, dst
	}
	if cap(out) > cap(dst) {
		dst = out
	}
	if len(out) > len(raw)-len(raw)/8 {
		return raw, blockTypeNone, dst
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

// decompressBlock returns the decompressed contents of a stored block, or
// an error message. The decompressed length a block states is never
// trusted for an allocation beyond what its compressed size makes
// plausible.
func decompressBlock(typ byte, b []byte) ([]byte, string) {
	switch typ {
	case blockTypeNone:
		return b, ""
	case blockTypeSnappy:
		n, err := snappy.DecodedLen(b)
		if err != nil || n > maxBlockLen || n > snappyMaxExpansion*len(b) {
			return nil, "bad snappy block length"
		}
		out, err := snappy.Decode(make([]byte, n), b)
		if err != nil {
			return nil, "bad snappy block: " + err.Error()
		}
		return out, ""
	case blockTypeZstd:
		n, m := binary.Uvarint(b)
		if m <= 0 || n > maxBlockLen {
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

// footer is the fixed-size tail of a table.
type footer struct {
	checksum  ChecksumType
	metaindex blockHandle
	index     blockHandle
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	b[0] = byte(f.checksum)
	h := f.metaindex.append(b[1:1])
	f.index.append(h)
	binary.LittleEndian.PutUint32(b[footerLen-12:], formatVersion)
	binary.LittleEndian.PutUint64(b[footerLen-8:], tableMagic)
	return b
}

// decodeFooter parses the footer b found at offset off of file.
func decodeFooter(file string, off int64, b []byte) (footer, error) {
	var f footer
	if magic := binary.LittleEndian.Uint64(b[footerLen-8:]); magic != tableMagic {
		return f, base.CorruptionErrorf(file, off, "bad table magic %#x (not a shale table)", magic)
	}
	if v := binary.LittleEndian.Uint32(b[footerLen-12:]); v != formatVersion {
		return f, base.CorruptionErrorf(file, off, "unknown table format version %d", v)
	}
	f.checksum = ChecksumType(b[0])
	if f.checksum != ChecksumCRC32C && f.checksum != ChecksumXXHash64 {
		return f, base.CorruptionErrorf(file, off, "unknown checksum type %d", b[0])
	}
	handles := b[1 : 1+2*maxHandleLen]
	var n, m int
	f.metaindex, n = decodeHandle(handles)
	if n > 0 {
		f.index, m = decodeHandle(handles[n:])
	}
	if n <= 0 || m <= 0 {
		return f, base.CorruptionErrorf(file, off, "bad block handle in footer")
	}
	for _, c := range handles[n+m:] {
		if c != 0 {
			return f, base.CorruptionErrorf(file, off, "nonzero footer padding")
		}
	}
	if !bytes.Equal(f.encode(), b[:footerLen]) {
		// A handle varint with a redundant continuation byte decodes to
		// the same handle; only a damaged file has one, and a table
		// writes no footer any other way.
		return f, base.CorruptionErrorf(file, off, "footer is not in canonical form")
	}
	return f, nil
}

func crc32Update(c uint32, b []byte) uint32 { return crc32.Update(c, crc32cTable, b) }

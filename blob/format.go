package blob

import (
	"encoding/binary"
	"errors"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/checksum"
)

// Compression selects how a Writer compresses values (block.Compression).
type Compression = block.Compression

// The compressions.
const (
	DefaultCompression = block.DefaultCompression // the zero value: none, RocksDB's blob_compression_type default
	NoCompression      = block.NoCompression
	SnappyCompression  = block.SnappyCompression
	ZstdCompression    = block.ZstdCompression
)

// ChecksumType selects the checksums of a blob file (block.ChecksumType).
type ChecksumType = block.ChecksumType

// The checksum types, by the codes the header records.
const (
	ChecksumDefault  = block.ChecksumDefault // the zero value: CRC32C
	ChecksumCRC32C   = block.ChecksumCRC32C
	ChecksumXXHash64 = block.ChecksumXXHash64
)

// ReadStats counts the reads of Readers (block.ReadStats).
type ReadStats = block.ReadStats

// ReadGroup gathers reads into one batch for the async reader
// (block.ReadGroup); GetBatch submits through one.
type ReadGroup = block.ReadGroup

const (
	// FormatVersion is the version Writers write and Readers read.
	FormatVersion = 1
	// HeaderLen and FooterLen are the sizes of the file's header and footer.
	HeaderLen = 20
	FooterLen = 36
	// headerMagic and footerMagic open and close a blob file.
	headerMagic uint64 = 0xb10bf11e5ba1e001
	footerMagic uint64 = 0xb10bf11e0f007e7d
	// lengthLen is the size of the length in front of each record's block.
	lengthLen = 4
	// minRecordLen is the smallest record: the length, a block of one byte
	// (the key length of an empty key with an empty value) and the trailer.
	minRecordLen = lengthLen + 1 + block.TrailerLen
)

// ErrNoFooter is matched (with errors.Is) by the error of NewReader for a
// file that was never finished: too short for a footer, or without the
// footer magic at its end. The error also matches base.ErrCorruption.
var ErrNoFooter = errors.New("shale: blob file has no footer (unfinished file)")

// noFooterError is the corruption error of an unfinished file.
type noFooterError struct{ *base.CorruptionError }

func (e noFooterError) Is(target error) bool {
	return target == ErrNoFooter || target == base.ErrCorruption
}

func (e noFooterError) Unwrap() error { return e.CorruptionError }

func errNoFooter(file string, off int64, msg string) error {
	return noFooterError{&base.CorruptionError{File: file, Offset: off, Msg: msg}}
}

// typeCode returns the trailer code of a compression a record or header
// may state, and false for others (DefaultCompression included).
func typeCode(c Compression) (byte, bool) {
	switch c {
	case NoCompression:
		return block.TypeNone, true
	case SnappyCompression:
		return block.TypeSnappy, true
	case ZstdCompression:
		return block.TypeZstd, true
	}
	return 0, false
}

// compressionOf is the inverse of typeCode.
func compressionOf(code byte) (Compression, bool) {
	switch code {
	case block.TypeNone:
		return NoCompression, true
	case block.TypeSnappy:
		return SnappyCompression, true
	case block.TypeZstd:
		return ZstdCompression, true
	}
	return 0, false
}

// header is the decoded header of a blob file.
type header struct {
	checksum    ChecksumType
	compression Compression
}

func (h header) encode(dst []byte) []byte {
	code, _ := typeCode(h.compression)
	var b [HeaderLen]byte
	binary.LittleEndian.PutUint64(b[0:], headerMagic)
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
	b[12] = byte(h.checksum)
	b[13] = code
	binary.LittleEndian.PutUint32(b[16:], block.Checksum(h.checksum, b[:16]))
	return append(dst, b[:]...)
}

// decodeHeader decodes the first HeaderLen bytes of the file name.
func decodeHeader(name string, b []byte) (header, error) {
	if binary.LittleEndian.Uint64(b) != headerMagic {
		return header{}, base.CorruptionErrorf(name, 0, "not a blob file (bad header magic %#x)", binary.LittleEndian.Uint64(b))
	}
	t := ChecksumType(b[12])
	if !t.Known() {
		return header{}, base.CorruptionErrorf(name, 12, "unknown checksum type %d", b[12])
	}
	if want, got := binary.LittleEndian.Uint32(b[16:]), block.Checksum(t, b[:16]); want != got {
		return header{}, base.CorruptionErrorf(name, 16, "header checksum mismatch: stored %#x, computed %#x", want, got)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != FormatVersion {
		return header{}, base.CorruptionErrorf(name, 8, "unknown blob file format version %d", v)
	}
	c, ok := compressionOf(b[13])
	if !ok {
		return header{}, base.CorruptionErrorf(name, 13, "unknown compression type %d", b[13])
	}
	if b[14] != 0 || b[15] != 0 {
		return header{}, base.CorruptionErrorf(name, 14, "unknown header flags %#x %#x", b[14], b[15])
	}
	return header{checksum: t, compression: c}, nil
}

// footer is the decoded footer of a finished blob file.
type footer struct {
	count, valueBytes uint64
	fileChecksum      uint64
}

func (f footer) encode(t ChecksumType, dst []byte) []byte {
	var b [FooterLen]byte
	binary.LittleEndian.PutUint64(b[0:], f.count)
	binary.LittleEndian.PutUint64(b[8:], f.valueBytes)
	binary.LittleEndian.PutUint64(b[16:], f.fileChecksum)
	binary.LittleEndian.PutUint32(b[24:], block.Checksum(t, b[:24]))
	binary.LittleEndian.PutUint64(b[28:], footerMagic)
	return append(dst, b[:]...)
}

// decodeFooter decodes the footer b found at off in the file name, whose
// checksums are of type t.
func decodeFooter(name string, off int64, t ChecksumType, b []byte) (footer, error) {
	if binary.LittleEndian.Uint64(b[28:]) != footerMagic {
		return footer{}, errNoFooter(name, off, "no footer magic at the end of the file (unfinished blob file)")
	}
	if want, got := binary.LittleEndian.Uint32(b[24:]), block.Checksum(t, b[:24]); want != got {
		return footer{}, base.CorruptionErrorf(name, off+24, "footer checksum mismatch: stored %#x, computed %#x", want, got)
	}
	f := footer{
		count:        binary.LittleEndian.Uint64(b[0:]),
		valueBytes:   binary.LittleEndian.Uint64(b[8:]),
		fileChecksum: binary.LittleEndian.Uint64(b[16:]),
	}
	if f.count > uint64(off-HeaderLen)/minRecordLen {
		return footer{}, base.CorruptionErrorf(name, off, "footer counts %d blobs in %d bytes of records", f.count, off-HeaderLen)
	}
	return f, nil
}

// fileHash is the running checksum of the bytes of a file: the unmasked
// CRC-32C, or xxhash64.
type fileHash struct {
	t   ChecksumType
	crc uint32
	xxh *checksum.XXHash64Digest
}

func newFileHash(t ChecksumType) fileHash {
	h := fileHash{t: t}
	if t == ChecksumXXHash64 {
		h.xxh = checksum.NewXXHash64()
	}
	return h
}

func (h *fileHash) write(b []byte) {
	if h.xxh != nil {
		h.xxh.Write(b)
		return
	}
	h.crc = checksum.ExtendCRC32C(h.crc, b)
}

func (h *fileHash) sum() uint64 {
	if h.xxh != nil {
		return h.xxh.Sum64()
	}
	return uint64(h.crc)
}

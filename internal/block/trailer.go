package block

import (
	"encoding/binary"
	"fmt"

	"github.com/shaledb/shale/internal/checksum"
)

// ChecksumType selects the checksum in the trailers of a file's blocks; the
// values are the codes a file records (a table in its footer), RocksDB's.
type ChecksumType uint8

// The checksum types. The zero value means CRC32C.
const (
	ChecksumDefault  ChecksumType = 0
	ChecksumCRC32C   ChecksumType = 1
	ChecksumXXHash64 ChecksumType = 3
)

// checksumNames are the names String gives, by code.
var checksumNames = [...]string{
	ChecksumDefault:  "default",
	ChecksumCRC32C:   "crc32c",
	ChecksumXXHash64: "xxhash64",
}

// String returns "crc32c" or "xxhash64" ("default" for the zero value).
func (c ChecksumType) String() string {
	if int(c) < len(checksumNames) && checksumNames[c] != "" {
		return checksumNames[c]
	}
	return fmt.Sprintf("ChecksumType(%d)", uint8(c))
}

// Known reports whether c is a checksum a file may record (CRC32C or
// xxhash64; not the default, which a writer resolves before writing).
func (c ChecksumType) Known() bool { return c == ChecksumCRC32C || c == ChecksumXXHash64 }

// Checksum returns the checksum of type t stored in the trailer of the
// block b: b holds the stored block bytes followed by the trailer's
// compression type byte. CRC32C is masked; xxhash64 keeps its low 32 bits.
func Checksum(t ChecksumType, b []byte) uint32 {
	if t == ChecksumXXHash64 {
		return uint32(checksum.XXHash64(b))
	}
	return checksum.MaskedCRC32C(b)
}

// TrailerWriter builds block trailers. Its zero value is ready; it is not
// safe for concurrent use (it keeps an xxhash digest for reuse).
type TrailerWriter struct {
	buf [TrailerLen]byte
	xxh *checksum.XXHash64Digest
}

// Trailer returns the trailer of the stored block b with compression type
// typ: the checksum is Checksum(t, b || typ), computed without copying b.
// The result is valid until the next call.
func (w *TrailerWriter) Trailer(t ChecksumType, b []byte, typ byte) []byte {
	w.buf[0] = typ
	var sum uint32
	if t == ChecksumXXHash64 {
		if w.xxh == nil {
			w.xxh = checksum.NewXXHash64()
		}
		w.xxh.Reset()
		w.xxh.Write(b)
		w.xxh.Write(w.buf[:1])
		sum = uint32(w.xxh.Sum64())
	} else {
		sum = checksum.Mask(checksum.ExtendCRC32C(checksum.CRC32C(b), w.buf[:1]))
	}
	binary.LittleEndian.PutUint32(w.buf[1:], sum)
	return w.buf[:]
}

package checksum

import (
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
)

// castagnoli is the CRC-32C table; crc32 uses the SSE4.2 or ARMv8 CRC
// instruction with it when the CPU has one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is LevelDB's masking constant.
const maskDelta = 0xa282ead8

// CRC32C returns the CRC-32C of b.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ExtendCRC32C returns the CRC-32C of the bytes whose CRC-32C is crc
// followed by b, so that a checksum can cover pieces that are not
// contiguous in memory.
func ExtendCRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// Mask returns LevelDB's masked form of crc (see the package comment).
func Mask(crc uint32) uint32 { return (crc>>15 | crc<<17) + maskDelta }

// Unmask returns the CRC whose masked form is masked.
func Unmask(masked uint32) uint32 {
	rot := masked - maskDelta
	return rot>>17 | rot<<15
}

// MaskedCRC32C returns Mask(CRC32C(b)).
func MaskedCRC32C(b []byte) uint32 { return Mask(CRC32C(b)) }

// XXHash64 returns the 64-bit xxhash (XXH64, seed 0) of b.
func XXHash64(b []byte) uint64 { return xxhash.Sum64(b) }

// XXHash64Digest computes XXHash64 over bytes written in pieces. The zero
// value is not ready: call Reset first (or use NewXXHash64).
type XXHash64Digest = xxhash.Digest

// NewXXHash64 returns a ready XXHash64Digest.
func NewXXHash64() *XXHash64Digest { return xxhash.New() }

package sstable

import (
	"math"

	"github.com/shaledb/shale/internal/checksum"
)

// bloomHash is the 64-bit hash of a user key from which all probe positions
// are derived (double hashing).
func bloomHash(userKey []byte) uint64 { return checksum.XXHash64(userKey) }

// bloomK is the number of probes for bitsPerKey: round(bitsPerKey*ln2)
// clamped to [1, 30].
func bloomK(bitsPerKey int) int {
	k := int(math.Round(float64(bitsPerKey) * math.Ln2))
	return min(max(k, 1), 30)
}

// buildBloom returns the filter for the given key hashes: the bit array
// followed by one byte holding k.
func buildBloom(hashes []uint64, bitsPerKey int) []byte {
	k := bloomK(bitsPerKey)
	nbits := uint64(len(hashes)) * uint64(bitsPerKey)
	nbits = max(nbits, 64)
	nbytes := (nbits + 7) / 8
	nbits = nbytes * 8
	f := make([]byte, nbytes+1)
	for _, h := range hashes {
		h1, delta := h, h>>33|h<<31
		for j := 0; j < k; j++ {
			bit := h1 % nbits
			f[bit/8] |= 1 << (bit % 8)
			h1 += delta
		}
	}
	f[nbytes] = byte(k)
	return f
}

// bloomMayContain probes filter f for hash h. A malformed filter (too short,
// or a k outside 1..30) answers true: it may cost a read, never a wrong
// result.
func bloomMayContain(f []byte, h uint64) bool {
	if len(f) < 2 {
		return true
	}
	k := int(f[len(f)-1])
	if k < 1 || k > 30 {
		return true
	}
	nbits := uint64(len(f)-1) * 8
	h1, delta := h, h>>33|h<<31
	for j := 0; j < k; j++ {
		bit := h1 % nbits
		if f[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
		h1 += delta
	}
	return true
}

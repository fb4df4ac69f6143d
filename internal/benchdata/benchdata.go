// Package benchdata generates the keys and values of shale's db_bench-style
// workloads, shared by `shale bench` and bench/compare so that both feed
// every engine exactly the same data. It never does IO.
package benchdata

import "math/rand/v2"

// FormatKey writes k into dst as zero-padded decimal filling dst exactly
// (db_bench's non-prefixed keys); higher digits that do not fit are dropped.
func FormatKey(dst []byte, k int64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + k%10)
		k /= 10
	}
}

// CompressibleBytes returns n pseudo-random printable bytes that compress to
// about ratio of their size, as db_bench's value generator: each 100-byte
// piece repeats a random prefix of ratio*100 bytes. The bytes are the same
// on every call.
func CompressibleBytes(n int, ratio float64) []byte {
	rng := rand.New(rand.NewPCG(301, 301))
	out := make([]byte, 0, n+100)
	raw := max(1, int(100*ratio))
	piece := make([]byte, 100)
	for len(out) < n {
		for i := 0; i < raw; i++ {
			piece[i] = byte(' ' + rng.IntN(95))
		}
		for i := raw; i < len(piece); i++ {
			piece[i] = piece[i-raw]
		}
		out = append(out, piece...)
	}
	return out[:n]
}

package block

import "encoding/binary"

const (
	// TrailerLen is the size of the trailer after every block: the
	// compression type byte and the 4-byte checksum.
	TrailerLen = 5
	// MaxHandleLen is the longest encoding of a Handle.
	MaxHandleLen = 2 * binary.MaxVarintLen64
	// MaxLen bounds the (decompressed) size of any block; larger sizes read
	// from a file are corruption, never allocated.
	MaxLen = 1 << 30
)

// Handle locates a block in its file: Length bytes at Offset, not counting
// the trailer that follows them.
type Handle struct {
	Offset, Length uint64
}

// Append appends the encoding of h to dst: uvarint(Offset) uvarint(Length).
func (h Handle) Append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.Offset)
	return binary.AppendUvarint(dst, h.Length)
}

// End is the offset just past h's trailer.
func (h Handle) End() uint64 { return h.Offset + h.Length + TrailerLen }

// DecodeHandle decodes a Handle from the front of b and returns it with the
// number of bytes it took; n <= 0 when b does not start with one.
func DecodeHandle(b []byte) (h Handle, n int) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return Handle{}, 0
	}
	length, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return Handle{}, 0
	}
	return Handle{off, length}, n + m
}

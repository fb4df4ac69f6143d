package vfs

import "unsafe"

// AlignedBuffer returns a zeroed buffer of n bytes whose address is a
// multiple of align (a power of two), for direct IO. The buffer is a slice
// of a larger allocation; keep the returned slice alive, not a copy of its
// address.
func AlignedBuffer(n, align int) []byte {
	if align <= 1 {
		return make([]byte, n)
	}
	if align&(align-1) != 0 {
		panic("vfs: AlignedBuffer alignment must be a power of two")
	}
	b := make([]byte, n+align)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) & uintptr(align-1)); r != 0 {
		skip = align - r
	}
	return b[skip : skip+n : skip+n]
}

// IsAligned reports whether off, len(b) and the address of b are all
// multiples of align: what a direct-IO read or write needs.
func IsAligned(b []byte, off int64, align int) bool {
	if align <= 1 {
		return true
	}
	m := int64(align - 1)
	return off&m == 0 && int64(len(b))&m == 0 &&
		(len(b) == 0 || int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))&m == 0)
}

// alignDown and alignUp round x to a multiple of align (a power of two).
func alignDown(x int64, align int) int64 { return x &^ int64(align-1) }
func alignUp(x int64, align int) int64   { return (x + int64(align-1)) &^ int64(align-1) }

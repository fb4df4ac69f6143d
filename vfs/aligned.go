package vfs

import (
	"sync"
	"unsafe"
)

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

// AlignDown and AlignUp round x to a multiple of align (a power of two).
func AlignDown(x int64, align int) int64 { return x &^ int64(align-1) }

// AlignUp: see AlignDown.
func AlignUp(x int64, align int) int64 { return (x + int64(align-1)) &^ int64(align-1) }

// AddrAligned reports whether p's memory starts on a multiple of align,
// whatever p's length or capacity.
func AddrAligned(p []byte, align int) bool {
	return align <= 1 || uintptr(unsafe.Pointer(unsafe.SliceData(p)))&uintptr(align-1) == 0
}

// minPooledAlign is the least alignment of AlignedPool buffers: enough for
// every logical block size in use (512 and 4096 bytes), so one pooled
// buffer suits any direct file.
const minPooledAlign = 4096

// AlignedPool recycles aligned buffers for direct IO. Sizes are rounded up
// to a power of two (at least 4 KiB), so buffers are reused across sizes.
// The zero value is ready to use.
type AlignedPool struct{ p sync.Pool }

// Get returns a buffer of at least n bytes (its length is its capacity)
// whose address is a multiple of align: a pooled one when it fits, else a
// new one.
func (ap *AlignedPool) Get(n, align int) *[]byte {
	if b, ok := ap.p.Get().(*[]byte); ok {
		if cap(*b) >= n && AddrAligned(*b, align) {
			*b = (*b)[:cap(*b)]
			return b
		}
		// Too small: let it go rather than keep small buffers circulating.
	}
	size := minPooledAlign
	for size < n {
		size <<= 1
	}
	b := AlignedBuffer(size, max(align, minPooledAlign))
	return &b
}

// Put hands b back for a later Get; b must not be used afterwards.
func (ap *AlignedPool) Put(b *[]byte) { ap.p.Put(b) }

package vfs

import (
	"io"
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

// readBounced reads p at off, neither of which need be aligned, through
// buf, an aligned buffer of a multiple of align bytes: read (an aligned
// read, which returns an error when it reads less than asked) fills buf
// from the aligned offset below the next byte of p wanted, and the bytes of
// p are copied out of it.
func readBounced(p []byte, off int64, buf []byte, align int, read func(b []byte, at int64) (int, error)) (int, error) {
	n := 0
	for n < len(p) {
		cur := off + int64(n)
		start := AlignDown(cur, align)
		skip := int(cur - start)
		want := int(min(int64(len(buf)), AlignUp(int64(skip+len(p)-n), align)))
		m, err := read(buf[:want], start)
		if m > skip {
			n += copy(p[n:], buf[skip:m])
		}
		if n == len(p) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if m < want {
			return n, io.EOF
		}
	}
	return n, nil
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

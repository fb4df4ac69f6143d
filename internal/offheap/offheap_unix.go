//go:build unix

package offheap

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapWords maps n words of private anonymous memory, zeroed by the kernel.
func mapWords(n int) ([]uint64, bool) {
	b, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, false
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), true
}

// unmapWords unmaps what mapWords mapped. munmap of a whole mapping made
// by this package fails only on a bad address, which would be a bug here.
func unmapWords(w []uint64) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	if err := unix.Munmap(b); err != nil {
		panic("offheap: munmap of a mapping of this package failed: " + err.Error())
	}
}

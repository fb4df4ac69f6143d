//go:build windows

package offheap

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// mapWords reserves and commits n words with VirtualAlloc, zeroed by the
// system; pages join the working set as they are first touched.
func mapWords(n int) ([]uint64, bool) {
	addr, err := windows.VirtualAlloc(0, uintptr(n)*8, windows.MEM_RESERVE|windows.MEM_COMMIT, windows.PAGE_READWRITE)
	if err != nil || addr == 0 {
		return nil, false
	}
	// A slice header over memory outside Go's heap at addr (converting
	// addr to an unsafe.Pointer directly is what vet flags).
	var w []uint64
	h := (*struct {
		data     uintptr
		len, cap int
	})(unsafe.Pointer(&w))
	h.data, h.len, h.cap = addr, n, n
	return w, true
}

// unmapWords releases what mapWords allocated.
func unmapWords(w []uint64) {
	if err := windows.VirtualFree(uintptr(unsafe.Pointer(&w[0])), 0, windows.MEM_RELEASE); err != nil {
		panic("offheap: VirtualFree of an allocation of this package failed: " + err.Error())
	}
}

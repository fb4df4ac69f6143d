// Package offheap allocates large buffers outside the Go heap: anonymous
// memory mappings on Unix and VirtualAlloc on Windows, ordinary heap
// slices elsewhere. Memory there is not scanned by the garbage collector,
// does not raise the heap goal (a heap slice of N bytes lets the heap grow
// by N more before the next collection), and becomes resident page by page
// as it is first written.
//
// The caller owns the lifetime: Free must be called exactly once, after
// the last access. A slice kept past Free points at unmapped memory, and
// an access through it is a fault, not a data race the runtime can
// forgive; see the reference counting of memtable arenas that relies on
// this package.
package offheap

import "sync/atomic"

// mappedBytes counts the bytes of the process's live mappings of this
// package (LiveBytes).
var mappedBytes atomic.Int64

// LiveBytes returns the bytes allocated outside the Go heap and not yet
// freed, by every user in the process: tests check it returns to where it
// was, so that nothing leaks.
func LiveBytes() int64 { return mappedBytes.Load() }

// Words is a zeroed buffer of 64-bit words from Alloc.
type Words struct {
	// W is the buffer; nil after Free.
	W []uint64
	// mapped says W lies outside the Go heap and Free must unmap it.
	mapped bool
}

// Alloc returns n zeroed words, outside the Go heap where the platform
// allows, on the heap otherwise (and when the mapping fails, for example
// under an address-space limit: the heap may still have room).
func Alloc(n int) *Words {
	if n <= 0 {
		return &Words{W: []uint64{}}
	}
	if w, ok := mapWords(n); ok {
		mappedBytes.Add(int64(n) * 8)
		return &Words{W: w, mapped: true}
	}
	return &Words{W: make([]uint64, n)}
}

// Free returns the words of w; w.W is nil afterwards. A second Free does
// nothing.
func (w *Words) Free() {
	if w == nil || w.W == nil {
		return
	}
	if w.mapped {
		mappedBytes.Add(-int64(len(w.W)) * 8)
		unmapWords(w.W)
	}
	w.W = nil
}

// OffHeap reports whether w lies outside the Go heap.
func (w *Words) OffHeap() bool { return w.mapped }

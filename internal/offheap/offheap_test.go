package offheap

import (
	"runtime"
	"testing"
)

// TestAllocIsZeroedWritableAndFreedOnce: the words come zeroed, take
// writes at both ends, count in LiveBytes while held, and a second Free,
// or a Free of nil, does nothing.
func TestAllocIsZeroedWritableAndFreedOnce(t *testing.T) {
	before := LiveBytes()
	for _, n := range []int{1, 511, 512, 1 << 20} {
		w := Alloc(n)
		if len(w.W) != n {
			t.Fatalf("Alloc(%d) has %d words", n, len(w.W))
		}
		if (runtime.GOOS == "linux" || runtime.GOOS == "darwin" || runtime.GOOS == "windows") && !w.OffHeap() {
			t.Fatalf("Alloc(%d) fell back to the heap on %s", n, runtime.GOOS)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			if w.W[i] != 0 {
				t.Fatalf("Alloc(%d): word %d is %x, not zero", n, i, w.W[i])
			}
		}
		for _, i := range []int{0, n / 2, n - 1} {
			w.W[i] = ^uint64(i)
		}
		if w.OffHeap() && LiveBytes()-before != int64(n)*8 {
			t.Fatalf("LiveBytes grew by %d for %d words", LiveBytes()-before, n)
		}
		w.Free()
		if w.W != nil {
			t.Fatal("Free left the words in place")
		}
		w.Free()
		if got := LiveBytes(); got != before {
			t.Fatalf("LiveBytes %d after Free, %d before", got, before)
		}
	}
	var nilWords *Words
	nilWords.Free()
	if w := Alloc(0); len(w.W) != 0 || w.OffHeap() {
		t.Fatalf("Alloc(0) = %d words, off heap %v", len(w.W), w.OffHeap())
	}
}

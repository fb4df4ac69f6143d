package vfs

import (
	"testing"
	"unsafe"
)

func TestAlignedBuffer(t *testing.T) {
	for _, align := range []int{1, 512, 4096} {
		for _, n := range []int{0, 1, 511, 512, 4096, 10000} {
			b := AlignedBuffer(n, align)
			if len(b) != n || cap(b) != n {
				t.Fatalf("AlignedBuffer(%d, %d): len %d cap %d", n, align, len(b), cap(b))
			}
			if n > 0 && uintptr(unsafe.Pointer(&b[0]))%uintptr(align) != 0 {
				t.Fatalf("AlignedBuffer(%d, %d) is not aligned", n, align)
			}
		}
	}
	b := AlignedBuffer(8192, 4096)
	if !IsAligned(b, 4096, 4096) {
		t.Fatal("aligned buffer, offset and length reported unaligned")
	}
	for _, c := range []struct {
		b   []byte
		off int64
	}{{b, 100}, {b[:4000], 0}, {b[1:4097], 0}} {
		if IsAligned(c.b, c.off, 4096) {
			t.Fatalf("len %d off %d reported aligned", len(c.b), c.off)
		}
	}
	if AlignDown(5000, 4096) != 4096 || AlignUp(5000, 4096) != 8192 || AlignUp(4096, 4096) != 4096 {
		t.Fatal("alignDown/alignUp")
	}
}

func TestAlignedPool(t *testing.T) {
	// A fresh pool each time, so the first Get of every case allocates: a
	// buffer smaller than its alignment must still report aligned.
	for _, c := range []struct{ n, align int }{{100, 8192}, {4096, 16384}} {
		var fresh AlignedPool
		b := fresh.Get(c.n, c.align)
		if !AddrAligned(*b, c.align) {
			t.Fatalf("fresh Get(%d, %d) is not aligned", c.n, c.align)
		}
	}
	var p AlignedPool
	for _, c := range []struct{ n, align int }{{1, 512}, {5000, 4096}, {70000, 512}, {100, 8192}} {
		b := p.Get(c.n, c.align)
		if len(*b) < c.n || len(*b) != cap(*b) || len(*b)&(len(*b)-1) != 0 || len(*b) < 4096 {
			t.Fatalf("Get(%d, %d): len %d cap %d, want a power of two >= max(n, 4096)", c.n, c.align, len(*b), cap(*b))
		}
		if !AddrAligned(*b, c.align) || !AddrAligned(*b, 4096) {
			t.Fatalf("Get(%d, %d) is not aligned", c.n, c.align)
		}
		p.Put(b)
	}
	if AddrAligned(AlignedBuffer(8192, 4096)[1:], 512) {
		t.Fatal("AddrAligned of an offset slice")
	}
}

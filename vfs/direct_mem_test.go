package vfs

import (
	"bytes"
	"io"
	"testing"
)

// TestMemDirectIO: MemFS accepts DirectIO and reports a 512-byte alignment,
// so callers' aligned paths run in memory, while any read or write works.
func TestMemDirectIO(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/f", DirectIO)
	if err != nil {
		t.Fatalf("MemFS Create with DirectIO: %v", err)
	}
	if a := Alignment(f); a != 512 {
		t.Fatalf("Alignment of a DirectIO MemFS file = %d, want 512", a)
	}
	data := bytes.Repeat([]byte("0123456789"), 100) // 1000 bytes: not aligned
	if _, err := f.Write(data[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[3:]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := fs.Open("/f", DirectIO)
	if err != nil {
		t.Fatal(err)
	}
	if a := Alignment(r); a != 512 {
		t.Fatalf("Alignment of a DirectIO MemFS reader = %d, want 512", a)
	}
	p := make([]byte, 100)
	if n, err := r.ReadAt(p, 950); n != 50 || err != io.EOF || !bytes.Equal(p[:n], data[950:]) {
		t.Fatalf("unaligned read across EOF = %d, %v", n, err)
	}
	b := AlignedBuffer(512, 512)
	if n, err := r.ReadAt(b, 512); n != 488 || err != io.EOF || !bytes.Equal(b[:n], data[512:]) {
		t.Fatalf("aligned read across EOF = %d, %v", n, err)
	}
	plain, err := fs.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	if a := Alignment(plain); a != 1 {
		t.Fatalf("Alignment of a buffered MemFS file = %d, want 1", a)
	}
}

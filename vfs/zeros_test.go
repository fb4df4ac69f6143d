package vfs

import (
	"bytes"
	"errors"
	"testing"
)

// TestWriteZerosKeepsAppendPosition: zeros written past the end extend the
// file, zeros over written bytes clear them, and the next Write still
// appends where the last one ended, on every FS.
func TestWriteZerosKeepsAppendPosition(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "a")
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("abcdef")); err != nil {
			t.Fatal(err)
		}
		const ahead = 200 << 10 // more than one chunk of zeros
		if err := WriteZeros(f, 6, ahead); err != nil {
			t.Fatal(err)
		}
		if size, err := f.Size(); err != nil || size != 6+ahead {
			t.Fatalf("Size after WriteZeros = %d, %v; want %d", size, err, 6+ahead)
		}
		if _, err := f.Write([]byte("gh")); err != nil {
			t.Fatal(err)
		}
		if err := WriteZeros(f, 1, 2); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 6+ahead)
		if n, err := f.ReadAt(got, 0); n != len(got) {
			t.Fatalf("read %d of %d bytes: %v", n, len(got), err)
		}
		want := append([]byte("a\x00\x00defgh"), make([]byte, ahead-2)...)
		if !bytes.Equal(got, want) {
			t.Fatalf("file starts %q, want %q", got[:12], want[:12])
		}
		if err := WriteZeros(f, -1, 1); err == nil {
			t.Fatal("WriteZeros at a negative offset succeeded")
		}
	})
}

// TestWriteZerosUnsupported: a File that is not a ZeroWriter reports
// ErrZerosUnsupported, and writing nothing is not an error.
func TestWriteZerosUnsupported(t *testing.T) {
	fs := NewMem()
	f, err := fs.Create("/a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wrapped := struct{ File }{f}
	if err := WriteZeros(wrapped, 0, 10); !errors.Is(err, ErrZerosUnsupported) {
		t.Fatalf("WriteZeros on a plain File = %v, want ErrZerosUnsupported", err)
	}
	if err := WriteZeros(wrapped, 0, 0); err != nil {
		t.Fatalf("WriteZeros of nothing = %v", err)
	}
}

package vfs

import (
	"bytes"
	"errors"
	"testing"
)

// TestMapReadOnly maps a file of a few pages on each file system: the
// mapping holds the file's bytes, outlives Close of the file and its
// removal, and a mapping longer than the file is refused.
func TestMapReadOnly(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "mapped")
		want := make([]byte, 3*4096+123)
		for i := range want {
			want[i] = byte(i*31 + i>>8)
		}
		writeFile(t, fs, name, string(want))
		f, err := fs.Open(name, RandomAccess)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := MapReadOnly(f, int64(len(want))+1); err == nil {
			t.Fatal("mapping past the end of the file succeeded")
		}
		data, unmap, err := MapReadOnly(f, int64(len(want)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Fatal("mapping differs from the file")
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fs.Remove(name); err != nil {
			t.Fatalf("removing a mapped file: %v", err)
		}
		if !bytes.Equal(data, want) {
			t.Fatal("mapping changed after Close and Remove")
		}
		if err := unmap(); err != nil {
			t.Fatal(err)
		}
	})
}

// wrappedFile stands for a wrapping file system's file, which does not map.
type wrappedFile struct{ File }

func TestMapReadOnlyUnsupported(t *testing.T) {
	fs := NewMem()
	writeFile(t, fs, "/f", "0123456789")
	f, err := fs.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := MapReadOnly(wrappedFile{f}, 10); !errors.Is(err, ErrMapUnsupported) {
		t.Fatalf("mapping a wrapped file: %v, want ErrMapUnsupported", err)
	}
	if _, _, err := MapReadOnly(f, 0); err == nil {
		t.Fatal("mapping 0 bytes succeeded")
	}
}

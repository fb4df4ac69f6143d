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

// TestMapWritable maps windows of an OS file for writing: the file grows
// to the window's end (zeros past what was copied), what is copied is read
// back at once through another handle, flush and sync work, and after
// unmap the file can be trimmed. MemFS and wrapping files refuse.
func TestMapWritable(t *testing.T) {
	dir := testDir(t)
	name := Default.PathJoin(dir, "wal")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var want []byte
	for w := int64(0); w < 2; w++ {
		off := w * MapWriteAlignment
		data, flush, unmap, err := MapWritable(f, off, off+MapWriteAlignment)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := f.Size(); n != off+MapWriteAlignment {
			t.Fatalf("window %d: file is %d bytes, want %d", w, n, off+MapWriteAlignment)
		}
		chunk := bytes.Repeat([]byte{byte('a' + w)}, int(MapWriteAlignment))
		copy(data, chunk)
		want = append(want, chunk...)
		got := make([]byte, len(want))
		if _, err := r.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("window %d: another handle reads %d differing bytes (%v)", w, len(got), err)
		}
		if err := flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.SyncData(); err != nil {
			t.Fatal(err)
		}
		if err := unmap(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(MapWriteAlignment + 10); err != nil {
		t.Fatalf("trimming after unmap: %v", err)
	}
	if _, _, _, err := MapWritable(f, 100, 200); err == nil {
		t.Fatal("an unaligned offset was mapped")
	}
	m := NewMem()
	mf, _ := m.Create("/f")
	if _, _, _, err := MapWritable(mf, 0, MapWriteAlignment); !errors.Is(err, ErrMapUnsupported) {
		t.Fatalf("MemFS file: %v, want ErrMapUnsupported", err)
	}
}

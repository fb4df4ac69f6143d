package vfs

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestReadFile reads a whole file, an empty one, and reports a missing one
// as os.ErrNotExist.
func TestReadFile(t *testing.T) {
	fs := NewMem()
	for _, content := range []string{"", "CURRENT-ish\n", strings.Repeat("x", 100000)} {
		f, err := fs.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got, err := ReadFile(fs, "f")
		if err != nil || string(got) != content {
			t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(got), err, len(content))
		}
	}
	if _, err := ReadFile(fs, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
}

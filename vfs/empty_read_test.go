package vfs

import (
	"errors"
	"testing"
)

// TestEmptyReadAtEnd: an empty ReadAt succeeds with (0, nil) at any offset
// >= 0, as os.File.ReadAt does, on every file kind: buffered and DirectIO,
// being written and read-only, OS and MemFS. Before, MemFS files and
// DirectIO files being written returned io.EOF at or past the end, so code
// tested on MemFS saw an error the OS file system never gives.
func TestEmptyReadAtEnd(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		for _, opts := range [][]OpenOption{nil, {DirectIO}} {
			name := fs.PathJoin(dir, "f")
			w, err := fs.Create(name, opts...)
			if errors.Is(err, ErrDirectIOUnsupported) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			check := func(what string, f File) {
				t.Helper()
				for _, off := range []int64{0, 3, 5, 9, 1 << 20} {
					if n, err := f.ReadAt(nil, off); n != 0 || err != nil {
						t.Errorf("%s (%v): ReadAt(empty, %d) = %d, %v; want 0, nil", what, opts, off, n, err)
					}
				}
				if _, err := f.ReadAt(nil, -1); err == nil {
					t.Errorf("%s (%v): ReadAt(empty, -1) succeeded", what, opts)
				}
			}
			check("being written", w)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := fs.Open(name, opts...)
			if err != nil {
				t.Fatal(err)
			}
			check("read-only", r)
			r.Close()
		}
	})
}

package vfs

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestLinkSharesTheFile(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		l, ok := fs.(Linker)
		if !ok {
			t.Fatalf("%T does not implement Linker", fs)
		}
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		writeFile(t, fs, a, "immutable")
		if err := l.Link(a, b); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, b, "immutable")
		// The names are one file: removing the first keeps the second.
		if err := fs.Remove(a); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, b, "immutable")
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 1 || names[0] != "b" {
			t.Fatalf("List after removing a: %q, want [b]", names)
		}
	})
}

func TestLinkRefusals(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		l := fs.(Linker)
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		writeFile(t, fs, a, "x")
		writeFile(t, fs, b, "y")
		if err := l.Link(a, b); !errors.Is(err, os.ErrExist) {
			t.Fatalf("Link over an existing name: %v, want os.ErrExist", err)
		}
		mustRead(t, fs, b, "y")
		err := l.Link(fs.PathJoin(dir, "missing"), fs.PathJoin(dir, "c"))
		mustNotExist(t, err, "Link of a missing file")
		if _, err := fs.Stat(fs.PathJoin(dir, "c")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a failed Link left c: %v", err)
		}
		if _, err := LinkOrCopy(fs, fs.PathJoin(dir, "missing"), fs.PathJoin(dir, "c")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("LinkOrCopy of a missing file: %v, want os.ErrNotExist", err)
		}
	})
}

// noLinkFS hides its FS's Link, as a file system without hard links.
type noLinkFS struct{ FS }

// refusingLinkFS refuses every link as a file system without hard links
// does (the error LinkOrCopy copies after).
type refusingLinkFS struct{ FS }

func (refusingLinkFS) Link(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: ErrLinkUnsupported}
}

// failingLinkFS fails every link with an error that is not about support.
type failingLinkFS struct{ FS }

var errLinkIO = errors.New("link: input/output error")

func (failingLinkFS) Link(oldname, newname string) error { return errLinkIO }

func TestLinkOrCopy(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		content := strings.Repeat("0123456789", copyChunk/10+7) // more than one chunk
		a := fs.PathJoin(dir, "a")
		writeFile(t, fs, a, content)
		for _, c := range []struct {
			name       string
			fs         FS
			wantLinked bool
		}{
			{"linker", fs, true},
			{"no-linker", noLinkFS{fs}, false},
			{"refused", refusingLinkFS{fs}, false},
		} {
			dst := fs.PathJoin(dir, c.name)
			linked, err := LinkOrCopy(c.fs, a, dst)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if linked != c.wantLinked {
				t.Fatalf("%s: linked = %v, want %v", c.name, linked, c.wantLinked)
			}
			mustRead(t, fs, dst, content)
		}
		// Another failure of Link is returned, and nothing is copied.
		dst := fs.PathJoin(dir, "failing")
		if _, err := LinkOrCopy(failingLinkFS{fs}, a, dst); !errors.Is(err, errLinkIO) {
			t.Fatalf("LinkOrCopy over a failing Link: %v, want errLinkIO", err)
		}
		if _, err := fs.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a failed link left %s: %v", dst, err)
		}
	})
}

func TestCopyN(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		writeFile(t, fs, a, "0123456789")
		src, err := fs.Open(a)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if err := CopyN(fs, src, b, 4); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, b, "0123")
		if err := CopyN(fs, src, b, 4); !errors.Is(err, os.ErrExist) {
			t.Fatalf("CopyN over an existing file: %v, want os.ErrExist", err)
		}
		// A source shorter than asked: an error, and nothing left behind.
		c := fs.PathJoin(dir, "c")
		if err := CopyN(fs, src, c, 11); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("CopyN past the end: %v, want io.ErrUnexpectedEOF", err)
		}
		if _, err := fs.Stat(c); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a failed CopyN left %s: %v", c, err)
		}
	})
}

// TestMemLinkCrashClone checks that a link is durable only once its
// directory is synced, and that a crash clone keeps the two names one file.
func TestMemLinkCrashClone(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("/a", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("/b", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, "/a/f", "synced")
	syncDir(t, fs, "/a")
	if err := fs.Link("/a/f", "/b/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.CrashClone().Stat("/b/f"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a link whose directory was not synced survived a crash: %v", err)
	}
	syncDir(t, fs, "/b")
	// Bytes appended but not synced are lost under both names alike.
	f, err := fs.OpenReadWrite("/a/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("+unsynced")); err != nil {
		t.Fatal(err)
	}
	mustRead(t, fs, "/b/f", "synced+unsynced")
	clone := fs.CrashClone()
	mustRead(t, clone, "/a/f", "synced")
	mustRead(t, clone, "/b/f", "synced")
	// The clone keeps one node for both names.
	g, err := clone.OpenReadWrite("/b/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	mustRead(t, clone, "/a/f", "synced!")
	_ = g.Close()
	_ = f.Close()
}

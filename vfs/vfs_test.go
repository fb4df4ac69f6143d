package vfs

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// forEachFS runs test against the OS file system (in a temporary directory)
// and against a MemFS, so both are held to the same contract.
func forEachFS(t *testing.T, test func(t *testing.T, fs FS, dir string)) {
	t.Run("os", func(t *testing.T) { test(t, Default, testDir(t)) })
	t.Run("mem", func(t *testing.T) {
		fs := NewMem()
		if err := fs.MkdirAll("/db", 0o755); err != nil {
			t.Fatal(err)
		}
		test(t, fs, "/db")
	})
}

func writeFile(t *testing.T, fs FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile reads name whole through Open, Size and ReadAt.
func readFile(fs FS, name string) (string, error) {
	f, err := fs.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readAll(f)
}

func readAll(f File) (string, error) {
	size, err := f.Size()
	if err != nil {
		return "", err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && n == len(buf)) {
		return "", err
	}
	return string(buf[:n]), nil
}

func mustRead(t *testing.T, fs FS, name, want string) {
	t.Helper()
	got, err := readFile(fs, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if got != want {
		t.Fatalf("read %s: got %q, want %q", name, got, want)
	}
}

func mustNotExist(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: got error %v, want one matching os.ErrNotExist", what, err)
	}
}

func TestCreateWriteRead(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "a")
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"hello ", "world"} {
			if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
		}
		if size, err := f.Size(); err != nil || size != 11 {
			t.Fatalf("Size = %d, %v; want 11", size, err)
		}
		// Files made by Create can be read too.
		buf := make([]byte, 5)
		if n, err := f.ReadAt(buf, 6); err != nil || string(buf[:n]) != "world" {
			t.Fatalf("ReadAt(6) = %q, %v", buf[:n], err)
		}
		// A read that ends past EOF is short and says io.EOF.
		if n, err := f.ReadAt(buf, 8); err != io.EOF || string(buf[:n]) != "rld" {
			t.Fatalf("ReadAt(8) = %q, %v; want \"rld\", io.EOF", buf[:n], err)
		}
		for _, off := range []int64{11, 100} {
			if n, err := f.ReadAt(buf, off); err != io.EOF || n != 0 {
				t.Fatalf("ReadAt(%d) = %d, %v; want 0, io.EOF", off, n, err)
			}
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, name, "hello world")

		r, err := fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Write([]byte("x")); err == nil {
			t.Fatal("Write on a file opened read-only succeeded")
		}
		if err := r.Truncate(0); err == nil {
			t.Fatal("Truncate on a file opened read-only succeeded")
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, name, "hello world")
	})
}

func TestCreateTruncatesExisting(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "a")
		writeFile(t, fs, name, "a long first content")
		writeFile(t, fs, name, "short")
		mustRead(t, fs, name, "short")
	})
}

func TestOpenReadWriteAppends(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "a")
		writeFile(t, fs, name, "abc")
		f, err := fs.OpenReadWrite(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("def")); err != nil {
			t.Fatal(err)
		}
		if got, err := readAll(f); err != nil || got != "abcdef" {
			t.Fatalf("read through the handle = %q, %v", got, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, name, "abcdef")
		_, err = fs.OpenReadWrite(fs.PathJoin(dir, "missing"))
		mustNotExist(t, err, "OpenReadWrite(missing)")
	})
}

func TestTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		f, err := fs.Create(fs.PathJoin(dir, "a"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(4); err != nil {
			t.Fatal(err)
		}
		if got, err := readAll(f); err != nil || got != "0123" {
			t.Fatalf("after Truncate(4): %q, %v", got, err)
		}
		if err := f.Truncate(6); err != nil {
			t.Fatal(err)
		}
		if got, err := readAll(f); err != nil || got != "0123\x00\x00" {
			t.Fatalf("after Truncate(6): %q, %v", got, err)
		}
		// Truncate does not move the write position (os.File semantics):
		// the next Write lands at offset 10, leaving zeros before it.
		if _, err := f.Write([]byte("X")); err != nil {
			t.Fatal(err)
		}
		if got, err := readAll(f); err != nil || got != "0123\x00\x00\x00\x00\x00\x00X" {
			t.Fatalf("after Write: %q, %v", got, err)
		}
	})
}

func TestRenameReplaces(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		writeFile(t, fs, a, "new")
		writeFile(t, fs, b, "old")
		if err := fs.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		mustRead(t, fs, b, "new")
		_, err := fs.Stat(a)
		mustNotExist(t, err, "Stat(renamed-away name)")
		mustNotExist(t, fs.Rename(a, b), "Rename(missing)")
	})
}

// TestOpenFileSurvivesRenameAndRemove checks the POSIX behaviour that the
// Windows implementation reproduces with FILE_SHARE_DELETE.
func TestOpenFileSurvivesRenameAndRemove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		writeFile(t, fs, a, "content")
		f, err := fs.Open(a)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := fs.Rename(a, b); err != nil {
			t.Fatalf("rename of an open file: %v", err)
		}
		if err := fs.Remove(b); err != nil {
			t.Fatalf("remove of an open file: %v", err)
		}
		if got, err := readAll(f); err != nil || got != "content" {
			t.Fatalf("read after remove: %q, %v", got, err)
		}
		mustNotExist(t, fs.Remove(b), "Remove(removed)")
	})
}

// TestFollowedFileSurvivesRemove is what a secondary instance needs of a
// file its primary writes and removes (a WAL, a table): a reader opened
// beside the writer's handle (for random access, as tables are) sees what
// the writer appends, the writer can close and remove the file while the
// reader holds it (on Windows: FILE_SHARE_DELETE), the name is free at
// once, and the reader still reads every byte.
func TestFollowedFileSurvivesRemove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "000007.log")
		w, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("first;")); err != nil {
			t.Fatal(err)
		}
		readers := make([]File, 2)
		for i, opts := range [][]OpenOption{nil, {RandomAccess}} {
			if readers[i], err = fs.Open(name, opts...); err != nil {
				t.Fatalf("open beside the writer: %v", err)
			}
			defer readers[i].Close()
		}
		if _, err := w.Write([]byte("second")); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fs.Remove(name); err != nil {
			t.Fatalf("remove while readers hold the file: %v", err)
		}
		_, err = fs.Stat(name)
		mustNotExist(t, err, "Stat after remove")
		writeFile(t, fs, name, "another file")
		for i, r := range readers {
			if got, err := readAll(r); err != nil || got != "first;second" {
				t.Fatalf("reader %d after remove and re-create: %q, %v", i, got, err)
			}
		}
		mustRead(t, fs, name, "another file")
	})
}

func TestNotExist(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		missing := fs.PathJoin(dir, "missing")
		_, err := fs.Open(missing)
		mustNotExist(t, err, "Open")
		_, err = fs.OpenReadWrite(missing)
		mustNotExist(t, err, "OpenReadWrite")
		_, err = fs.OpenDir(missing)
		mustNotExist(t, err, "OpenDir")
		_, err = fs.Stat(missing)
		mustNotExist(t, err, "Stat")
		_, err = fs.List(missing)
		mustNotExist(t, err, "List")
		mustNotExist(t, fs.Remove(missing), "Remove")
		_, err = fs.Create(fs.PathJoin(missing, "x"))
		mustNotExist(t, err, "Create in a missing directory")
		if err := fs.RemoveAll(missing); err != nil {
			t.Fatalf("RemoveAll(missing) = %v, want nil", err)
		}
	})
}

func TestListStatDirs(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		sub := fs.PathJoin(dir, "sub", "deeper")
		if err := fs.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fs.MkdirAll(sub, 0o755); err != nil {
			t.Fatalf("MkdirAll of an existing dir: %v", err)
		}
		writeFile(t, fs, fs.PathJoin(dir, "000001.sst"), "12345")
		writeFile(t, fs, fs.PathJoin(dir, "CURRENT"), "")
		writeFile(t, fs, fs.PathJoin(sub, "x"), "x")

		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if want := []string{"000001.sst", "CURRENT", "sub"}; !slices.Equal(names, want) {
			t.Fatalf("List = %q, want %q", names, want)
		}
		fi, err := fs.Stat(fs.PathJoin(dir, "000001.sst"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != "000001.sst" || fi.Size() != 5 || fi.IsDir() {
			t.Fatalf("Stat = %s size %d dir %v", fi.Name(), fi.Size(), fi.IsDir())
		}
		if fi, err := fs.Stat(sub); err != nil || !fi.IsDir() || fi.Name() != "deeper" {
			t.Fatalf("Stat(dir) = %v, %v", fi, err)
		}
		if got := fs.PathBase(fs.PathJoin(dir, "x")); got != "x" {
			t.Fatalf("PathBase = %q", got)
		}
		if got := fs.PathDir(fs.PathJoin(dir, "x")); got != dir {
			t.Fatalf("PathDir = %q, want %q", got, dir)
		}

		top := fs.PathJoin(dir, "sub")
		if err := fs.Remove(top); err == nil {
			t.Fatal("Remove of a non-empty directory succeeded")
		}
		d, err := fs.OpenDir(top)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatalf("directory Sync: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fs.RemoveAll(top); err != nil {
			t.Fatal(err)
		}
		_, err = fs.Stat(fs.PathJoin(sub, "x"))
		mustNotExist(t, err, "Stat after RemoveAll")
		if err := fs.MkdirAll(fs.PathJoin(dir, "CURRENT", "x"), 0o755); err == nil {
			t.Fatal("MkdirAll through a file succeeded")
		}
	})
}

func TestLock(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "LOCK")
		l, err := fs.Lock(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Stat(name); err != nil {
			t.Fatalf("Lock did not create the file: %v", err)
		}
		// The same path spelled differently is the same lock.
		for _, other := range []string{name, dir + "/./LOCK", dir + "/sub/../LOCK"} {
			l2, err := fs.Lock(other)
			if err == nil {
				l2.Close()
				t.Fatalf("second Lock(%s) succeeded", other)
			}
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), other) {
				t.Fatalf("second Lock(%s) = %v, want ErrLocked naming the path", other, err)
			}
		}
		// Another lock file is independent.
		l3, err := fs.Lock(fs.PathJoin(dir, "LOCK2"))
		if err != nil {
			t.Fatal(err)
		}
		if err := l3.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err == nil {
			t.Fatal("second Close of a lock succeeded")
		}
		l, err = fs.Lock(name)
		if err != nil {
			t.Fatalf("Lock after Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = fs.Lock(fs.PathJoin(dir, "missing", "LOCK"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Lock in a missing directory = %v", err)
		}
	})
}

func TestPreallocateKeepsSize(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		f, err := fs.Create(fs.PathJoin(dir, "a"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		if err := f.Preallocate(0, 1<<20); err != nil {
			t.Fatal(err)
		}
		if size, err := f.Size(); err != nil || size != 3 {
			t.Fatalf("Size after Preallocate = %d, %v; want 3", size, err)
		}
	})
}

// TestReadWhileAppending reads with ReadAt through one handle while another
// appends; run with -race. Byte i of the file is always byte(i*7).
func TestReadWhileAppending(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "log")
		w, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		r, err := fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		const chunks, chunkSize = 300, 97
		var wg sync.WaitGroup
		var failed sync.Once
		var readErr error
		done := make(chan struct{})
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				buf := make([]byte, 64)
				for {
					select {
					case <-done:
						return
					default:
					}
					off := rng.Int64N(chunks * chunkSize)
					n, err := r.ReadAt(buf, off)
					if err != nil && err != io.EOF {
						failed.Do(func() { readErr = err })
						return
					}
					for i := range n {
						if buf[i] != byte((off+int64(i))*7) {
							failed.Do(func() { readErr = fmt.Errorf("byte %d = %d", off+int64(i), buf[i]) })
							return
						}
					}
				}
			}()
		}
		chunk := make([]byte, chunkSize)
		for c := range chunks {
			for i := range chunk {
				chunk[i] = byte((c*chunkSize + i) * 7)
			}
			if _, err := w.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		close(done)
		wg.Wait()
		if readErr != nil {
			t.Fatal(readErr)
		}
		if size, _ := r.Size(); size != chunks*chunkSize {
			t.Fatalf("size %d, want %d", size, chunks*chunkSize)
		}
	})
}

// TestOSAndMemAgree applies the same random operations to the OS file system
// and to a MemFS and compares every result and the final contents.
func TestOSAndMemAgree(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	osDir := testDir(t)
	mem := NewMem()
	if err := mem.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	type side struct {
		fs    FS
		dir   string
		files map[string]File // open writable handles by name
	}
	sides := []*side{{fs: Default, dir: osDir, files: map[string]File{}}, {fs: mem, dir: "/db", files: map[string]File{}}}
	defer func() {
		for _, s := range sides {
			for _, f := range s.files {
				f.Close()
			}
		}
	}()
	names := []string{"a", "b", "c", "d"}
	errKind := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, os.ErrNotExist):
			return "not-exist"
		default:
			return "error"
		}
	}
	for i := range 400 {
		name, other := names[rng.IntN(len(names))], names[rng.IntN(len(names))]
		op := rng.IntN(7)
		data := make([]byte, rng.IntN(40))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		size := rng.Int64N(60)
		var results []string
		for _, s := range sides {
			p, q := s.fs.PathJoin(s.dir, name), s.fs.PathJoin(s.dir, other)
			var res string
			switch op {
			case 0: // create (closing any handle of this name first)
				if f := s.files[name]; f != nil {
					f.Close()
					delete(s.files, name)
				}
				f, err := s.fs.Create(p)
				if err == nil {
					s.files[name] = f
				}
				res = "create " + errKind(err)
			case 1: // write through an open handle
				if f := s.files[name]; f != nil {
					n, err := f.Write(data)
					res = fmt.Sprintf("write %d %s", n, errKind(err))
				}
			case 2:
				if f := s.files[name]; f != nil {
					res = "truncate " + errKind(f.Truncate(size))
				}
			case 3: // reopen for appending
				if f := s.files[name]; f != nil {
					f.Close()
					delete(s.files, name)
				}
				f, err := s.fs.OpenReadWrite(p)
				if err == nil {
					s.files[name] = f
				}
				res = "reopen " + errKind(err)
			case 4:
				res = "rename " + errKind(s.fs.Rename(p, q))
			case 5:
				res = "remove " + errKind(s.fs.Remove(p))
			case 6:
				got, err := readFile(s.fs, p)
				res = fmt.Sprintf("read %q %s", got, errKind(err))
			}
			results = append(results, res)
		}
		if results[0] != results[1] {
			t.Fatalf("seed %d, op %d on %s/%s: os %s, mem %s", seed, i, name, other, results[0], results[1])
		}
	}
	for _, n := range names {
		a, errA := readFile(sides[0].fs, sides[0].fs.PathJoin(osDir, n))
		b, errB := readFile(mem, "/db/"+n)
		if a != b || errKind(errA) != errKind(errB) {
			t.Fatalf("seed %d: %s differs: os %q %v, mem %q %v", seed, n, a, errA, b, errB)
		}
	}
	osNames, _ := Default.List(osDir)
	memNames, _ := mem.List("/db")
	slices.Sort(osNames)
	if !slices.Equal(osNames, memNames) {
		t.Fatalf("seed %d: List differs: os %q, mem %q", seed, osNames, memNames)
	}
}

// TestLockRegistry checks the process-wide registry itself: on Linux flock
// would refuse a second lock anyway, but fcntl-based platforms rely on it.
func TestLockRegistry(t *testing.T) {
	dir := testDir(t)
	name := Default.PathJoin(dir, "LOCK")
	key, err := lockKey(dir + "/x/../LOCK")
	if err != nil {
		t.Fatal(err)
	}
	held := func() bool {
		heldLocks.Lock()
		defer heldLocks.Unlock()
		_, ok := heldLocks.paths[key]
		return ok
	}
	l, err := Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if !held() {
		t.Fatalf("registry lacks %s while locked", key)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if held() {
		t.Fatalf("registry still holds %s after Close", key)
	}
	// A failed lock (missing directory) must not leave its path behind.
	missing := Default.PathJoin(dir, "missing", "LOCK")
	if _, err := Default.Lock(missing); err == nil {
		t.Fatal("Lock in a missing directory succeeded")
	}
	mk, _ := lockKey(missing)
	heldLocks.Lock()
	_, ok := heldLocks.paths[mk]
	heldLocks.Unlock()
	if ok {
		t.Fatal("failed Lock left its path in the registry")
	}
}

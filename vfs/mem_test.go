package vfs

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func newMemDB(t *testing.T) *MemFS {
	t.Helper()
	fs := NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	return fs
}

func syncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, f File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestCrashDropsUnsyncedBytes(t *testing.T) {
	fs := newMemDB(t)
	f, err := fs.Create("/db/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs, "/db")
	write(t, f, "synced|")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	write(t, f, "unsynced")
	mustRead(t, fs, "/db/000001.log", "synced|unsynced")

	crashed := fs.CrashClone()
	mustRead(t, crashed, "/db/000001.log", "synced|")
	// The original is untouched and still usable.
	write(t, f, "+more")
	mustRead(t, fs, "/db/000001.log", "synced|unsynced+more")
	mustRead(t, crashed, "/db/000001.log", "synced|")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustRead(t, fs.CrashClone(), "/db/000001.log", "synced|unsynced+more")
}

func TestCrashNeverSyncedFileIsEmpty(t *testing.T) {
	fs := newMemDB(t)
	f, err := fs.Create("/db/a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "data")
	syncDir(t, fs, "/db")
	mustRead(t, fs.CrashClone(), "/db/a", "")
}

func TestCrashCreateNeedsDirSync(t *testing.T) {
	fs := newMemDB(t)
	writeFile(t, fs, "/db/a", "data") // file synced, directory not
	_, err := fs.CrashClone().Stat("/db/a")
	mustNotExist(t, err, "file created without directory sync after crash")
	syncDir(t, fs, "/db")
	mustRead(t, fs.CrashClone(), "/db/a", "data")
}

func TestCrashRenameNeedsDirSync(t *testing.T) {
	fs := newMemDB(t)
	writeFile(t, fs, "/db/CURRENT", "MANIFEST-1")
	writeFile(t, fs, "/db/tmp", "MANIFEST-2")
	syncDir(t, fs, "/db")
	if err := fs.Rename("/db/tmp", "/db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	mustRead(t, fs, "/db/CURRENT", "MANIFEST-2")

	crashed := fs.CrashClone()
	mustRead(t, crashed, "/db/CURRENT", "MANIFEST-1")
	mustRead(t, crashed, "/db/tmp", "MANIFEST-2")

	syncDir(t, fs, "/db")
	crashed = fs.CrashClone()
	mustRead(t, crashed, "/db/CURRENT", "MANIFEST-2")
	_, err := crashed.Stat("/db/tmp")
	mustNotExist(t, err, "renamed-away name after dir sync and crash")
}

func TestCrashRemoveNeedsDirSync(t *testing.T) {
	fs := newMemDB(t)
	writeFile(t, fs, "/db/a", "data")
	syncDir(t, fs, "/db")
	if err := fs.Remove("/db/a"); err != nil {
		t.Fatal(err)
	}
	mustRead(t, fs.CrashClone(), "/db/a", "data")
	syncDir(t, fs, "/db")
	_, err := fs.CrashClone().Stat("/db/a")
	mustNotExist(t, err, "removed file after dir sync and crash")
}

// TestCrashKeepsSyncedPrefix covers the copy-on-write of synced data: an
// unsynced truncate and overwrite must not leak into the durable copy.
func TestCrashKeepsSyncedPrefix(t *testing.T) {
	fs := newMemDB(t)
	writeFile(t, fs, "/db/a", "0123456789")
	syncDir(t, fs, "/db")
	f, err := fs.OpenReadWrite("/db/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	write(t, f, "XYZ") // at offset 10: zeros fill [3, 10)
	mustRead(t, fs, "/db/a", "012\x00\x00\x00\x00\x00\x00\x00XYZ")
	mustRead(t, fs.CrashClone(), "/db/a", "0123456789")

	// Create truncates in place; the old synced content survives a crash
	// until the new content is synced.
	g, err := fs.Create("/db/a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, g, "new")
	mustRead(t, fs.CrashClone(), "/db/a", "0123456789")
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	mustRead(t, fs.CrashClone(), "/db/a", "new")
}

func TestCrashCloneIsIndependent(t *testing.T) {
	fs := newMemDB(t)
	writeFile(t, fs, "/db/a", "orig")
	syncDir(t, fs, "/db")
	l, err := fs.Lock("/db/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	crashed := fs.CrashClone()
	// No locks survive a crash.
	l2, err := crashed.Lock("/db/LOCK")
	if err != nil {
		t.Fatalf("Lock in the clone: %v", err)
	}
	l2.Close()
	f, err := crashed.OpenReadWrite("/db/a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "+clone")
	if err := crashed.Rename("/db/a", "/db/b"); err != nil {
		t.Fatal(err)
	}
	mustRead(t, fs, "/db/a", "orig")
	mustRead(t, crashed, "/db/b", "orig+clone")
}

func TestMemString(t *testing.T) {
	fs := newMemDB(t)
	writeFile(t, fs, "/db/synced", "abc")
	syncDir(t, fs, "/db")
	f, err := fs.Create("/db/fresh")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "12345")
	if err := fs.Remove("/db/synced"); err != nil {
		t.Fatal(err)
	}
	got := fs.String()
	for _, want := range []string{
		"db/",
		"fresh  size=5 synced=0  [entry not synced]",
		"synced  size=3 synced=3  [removed; entry still durable]",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("String() lacks %q:\n%s", want, got)
		}
	}
}

func TestMemRelativePaths(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("db/sub/../x", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, "db/x/a", "v")
	mustRead(t, fs, "/db/x/a", "v")
	if names, err := fs.List("/db"); err != nil || !slices.Equal(names, []string{"x"}) {
		t.Fatalf("List(/db) = %q, %v", names, err)
	}
}

// crashModel is the reference for TestCrashModel: one directory of files,
// each file an inode with current and durable content.
type crashModel struct {
	inodes         []*modelInode
	entries        map[string]int // name -> inode
	durableEntries map[string]int
}

type modelInode struct {
	data, durable string
}

// modelWriteAt writes s at pos in data like a file write: a gap is zeros.
func modelWriteAt(data string, pos int, s string) string {
	if pos > len(data) {
		data += strings.Repeat("\x00", pos-len(data))
	}
	end := pos + len(s)
	if end < len(data) {
		return data[:pos] + s + data[end:]
	}
	return data[:pos] + s
}

type modelHandle struct {
	f   File
	ino int
	pos int
}

// TestCrashModel runs random operations on a MemFS and on crashModel, and at
// random points compares a CrashClone with the model's durable state.
func TestCrashModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := newMemDB(t)
	m := &crashModel{entries: map[string]int{}, durableEntries: map[string]int{}}
	// handles[name] is the handle last made by Create(name); it keeps its
	// inode when the name is renamed, removed or reused.
	handles := map[string]*modelHandle{}
	defer func() {
		for _, h := range handles {
			h.f.Close()
		}
	}()
	fail := func(i int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d op %d: %s\nfs:\n%s", seed, i, fmt.Sprintf(format, args...), fs)
	}
	names := []string{"a", "b", "c"}
	for i := range 3000 {
		name, other := names[rng.IntN(3)], names[rng.IntN(3)]
		p, q := "/db/"+name, "/db/"+other
		h := handles[name]
		switch op := rng.IntN(10); op {
		case 0: // create, or truncate in place
			ino, ok := m.entries[name]
			if !ok {
				m.inodes = append(m.inodes, &modelInode{})
				ino = len(m.inodes) - 1
				m.entries[name] = ino
			}
			m.inodes[ino].data = ""
			f, err := fs.Create(p)
			if err != nil {
				fail(i, "create: %v", err)
			}
			if h != nil {
				h.f.Close()
			}
			handles[name] = &modelHandle{f: f, ino: ino}
		case 1, 2, 3:
			if h != nil {
				s := strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(20))
				write(t, h.f, s)
				in := m.inodes[h.ino]
				in.data = modelWriteAt(in.data, h.pos, s)
				h.pos += len(s)
			}
		case 4:
			if h != nil {
				if err := h.f.Sync(); err != nil {
					fail(i, "sync: %v", err)
				}
				in := m.inodes[h.ino]
				in.durable = in.data
			}
		case 5:
			if h != nil {
				in := m.inodes[h.ino]
				size := rng.IntN(len(in.data) + 10)
				if err := h.f.Truncate(int64(size)); err != nil {
					fail(i, "truncate: %v", err)
				}
				if size < len(in.data) {
					in.data = in.data[:size]
				} else {
					in.data += strings.Repeat("\x00", size-len(in.data))
				}
			}
		case 6:
			ino, ok := m.entries[name]
			err := fs.Rename(p, q)
			if ok != (err == nil) {
				fail(i, "rename %s %s = %v, model has it: %v", p, q, err, ok)
			}
			if ok {
				delete(m.entries, name)
				m.entries[other] = ino
			}
		case 7:
			_, ok := m.entries[name]
			err := fs.Remove(p)
			if ok != (err == nil) {
				fail(i, "remove %s = %v, model has it: %v", p, err, ok)
			}
			delete(m.entries, name)
		case 8:
			syncDir(t, fs, "/db")
			m.durableEntries = maps.Clone(m.entries)
		case 9:
			crashed := fs.CrashClone()
			got := map[string]string{}
			list, err := crashed.List("/db")
			if err != nil {
				fail(i, "list: %v", err)
			}
			for _, n := range list {
				if got[n], err = readFile(crashed, "/db/"+n); err != nil {
					fail(i, "read: %v", err)
				}
			}
			want := map[string]string{}
			for n, ino := range m.durableEntries {
				want[n] = m.inodes[ino].durable
			}
			if !maps.Equal(got, want) {
				fail(i, "crash clone\n got %q\nwant %q", got, want)
			}
			// The current state must match the model too.
			for n, ino := range m.entries {
				if got, err := readFile(fs, "/db/"+n); err != nil || got != m.inodes[ino].data {
					fail(i, "current %s = %q, %v; want %q", n, got, err, m.inodes[ino].data)
				}
			}
		}
	}
}

package errorfs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"syscall"
	"testing"

	"github.com/shaledb/shale/vfs"
)

func TestFaultFSRules(t *testing.T) {
	ffs := New(vfs.NewMem(), 1)
	ffs.AddRule(Rule{Op: OpSync, PathContains: ".log", Nth: 3})
	f, err := ffs.Create("/a.log")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		err := f.Sync()
		if (i == 3) != (err != nil) {
			t.Fatalf("sync %d: %v", i, err)
		}
		if i == 3 && !errors.Is(err, ErrInjected) {
			t.Fatalf("sync 3: want ErrInjected, got %v", err)
		}
	}
	g, _ := ffs.Create("/b.sst")
	if err := g.Sync(); err != nil {
		t.Fatalf("rule must match the path: %v", err)
	}
	ffs.AddRule(Rule{Op: OpWrite, PathContains: "b.sst", NoSpace: true, ShortWrite: true})
	n, err := g.Write([]byte("0123456789"))
	if !errors.Is(err, syscall.ENOSPC) || n != 5 {
		t.Fatalf("short ENOSPC write: n=%d err=%v", n, err)
	}
	if sz, _ := g.Size(); sz != 5 {
		t.Fatalf("torn write left %d bytes, want 5", sz)
	}
	ffs.ClearRules()
	if _, err := g.Write([]byte("x")); err != nil {
		t.Fatalf("after ClearRules: %v", err)
	}
	if ffs.Injected() != 2 {
		t.Fatalf("Injected = %d, want 2", ffs.Injected())
	}
	ffs.AddRule(Rule{Op: OpRename})
	if err := ffs.Rename("/a.log", "/c.log"); !errors.Is(err, ErrInjected) {
		t.Fatalf("rename: %v", err)
	}
}

func TestFaultFSProbability(t *testing.T) {
	ffs := New(vfs.NewMem(), 42)
	ffs.AddRule(Rule{Op: OpRead, Probability: 0.25})
	f, _ := ffs.Create("/x")
	f.Write(make([]byte, 100))
	fails := 0
	buf := make([]byte, 10)
	for i := 0; i < 4000; i++ {
		if _, err := f.ReadAt(buf, 0); err != nil {
			fails++
		}
	}
	if fails < 800 || fails > 1200 {
		t.Fatalf("%d of 4000 reads failed with p=0.25", fails)
	}
}

// faultOpCase performs one operation of kind op on name through an FS;
// setup prepares the inner FS so the operation can succeed again and again.
type faultOpCase struct {
	op    Op
	setup func(t *testing.T, inner vfs.FS, name string)
	do    func(ffs *FS, files map[string]vfs.File, name string) error
}

func mustCreate(t *testing.T, fs vfs.FS, name string) {
	t.Helper()
	if err := fs.MkdirAll(fs.PathDir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("0123456789"))
	f.Close()
}

var faultOpCases = []faultOpCase{
	{op: OpRead, do: func(_ *FS, fs map[string]vfs.File, n string) error {
		_, err := fs[n].ReadAt(make([]byte, 4), 0)
		return err
	}},
	{op: OpWrite, do: func(_ *FS, fs map[string]vfs.File, n string) error { _, err := fs[n].Write([]byte("ab")); return err }},
	{op: OpSync, do: func(_ *FS, fs map[string]vfs.File, n string) error { return fs[n].Sync() }},
	{op: OpSync, do: func(_ *FS, fs map[string]vfs.File, n string) error { return fs[n].SyncData() }},
	{op: OpCreate, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		f, err := ffs.Create(n)
		if err == nil {
			f.Close()
		}
		return err
	}},
	{op: OpOpen, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		f, err := ffs.Open(n)
		if err == nil {
			f.Close()
		}
		return err
	}},
	{op: OpOpen, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		f, err := ffs.OpenReadWrite(n)
		if err == nil {
			f.Close()
		}
		return err
	}},
	{op: OpRename, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		mustCreateNoT(ffs.FS, n+".tmp")
		return ffs.Rename(n+".tmp", n)
	}},
	{op: OpRemove, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		mustCreateNoT(ffs.FS, n)
		return ffs.Remove(n)
	}},
	{op: OpRemove, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		mustCreateNoT(ffs.FS, n)
		return ffs.RemoveAll(n)
	}},
	{op: OpLock, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		c, err := ffs.Lock(n)
		if err == nil {
			c.Close()
		}
		return err
	}},
	{op: OpList, setup: func(t *testing.T, inner vfs.FS, n string) {
		if err := inner.MkdirAll(listDir(n), 0o755); err != nil {
			t.Fatal(err)
		}
	}, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		_, err := ffs.List(listDir(n))
		return err
	}},
	{op: OpTruncate, do: func(_ *FS, fs map[string]vfs.File, n string) error { return fs[n].Truncate(3) }},
	{op: OpPreallocate, do: func(_ *FS, fs map[string]vfs.File, n string) error { return fs[n].Preallocate(0, 4096) }},
	{op: OpStartWriteback, do: func(_ *FS, fs map[string]vfs.File, n string) error { return fs[n].StartWriteback(0, 10) }},
	// Link is matched on the new name, n: each call links n anew.
	{op: OpLink, do: func(ffs *FS, _ map[string]vfs.File, n string) error {
		mustCreateNoT(ffs.FS, n+".src")
		_ = ffs.FS.Remove(n)
		return ffs.Link(n+".src", n)
	}},
}

// listDir names a directory whose base name has the same extension as n.
func listDir(n string) string {
	ext := path.Ext(n)
	return n[:len(n)-len(ext)] + "-dir" + ext
}

func mustCreateNoT(fs vfs.FS, name string) {
	if f, err := fs.Create(name); err == nil {
		f.Close()
	}
}

// newFaultOpFS returns an FS over a MemFS holding the files (opened for
// reading and writing through the FS) that the case needs.
func newFaultOpFS(t *testing.T, c faultOpCase, seed uint64, names ...string) (*FS, map[string]vfs.File) {
	t.Helper()
	mem := vfs.NewMem()
	ffs := New(mem, seed)
	files := map[string]vfs.File{}
	for _, n := range names {
		mustCreate(t, mem, n)
		if c.setup != nil {
			c.setup(t, mem, n)
		}
		f, err := ffs.OpenReadWrite(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = f
	}
	return ffs, files
}

// TestFaultFSEveryOpByPatternAndCount fails the second matching operation
// of each kind by a base-name glob, and checks that other names, other
// operations and other counts are left alone.
func TestFaultFSEveryOpByPatternAndCount(t *testing.T) {
	const hit, miss, elsewhere = "/db/000007.sst", "/db/000008.log", "/other/x.sst.bak"
	for i, c := range faultOpCases {
		t.Run(fmt.Sprintf("%d-%v", i, c.op), func(t *testing.T) {
			ffs, files := newFaultOpFS(t, c, 1, hit, miss, elsewhere)
			ffs.AddRule(Rule{Op: c.op, PathPattern: "*.sst", Nth: 2})
			// A rule for another operation on the same files must not fire.
			ffs.AddRule(Rule{Op: (c.op + 1) % numOps, PathPattern: "*.sst"})
			for j := 1; j <= 3; j++ {
				if err := c.do(ffs, files, miss); err != nil {
					t.Fatalf("%s on %s (no match), call %d: %v", c.op, miss, j, err)
				}
				if err := c.do(ffs, files, elsewhere); err != nil {
					t.Fatalf("%s on %s (no match), call %d: %v", c.op, elsewhere, j, err)
				}
				err := c.do(ffs, files, hit)
				if j != 2 {
					if err != nil {
						t.Fatalf("%s on %s, call %d: %v", c.op, hit, j, err)
					}
					continue
				}
				var pe *os.PathError
				if !errors.Is(err, ErrInjected) || !errors.As(err, &pe) || pe.Op != c.op.String() || (pe.Path != hit && pe.Path != listDir(hit)) {
					t.Fatalf("%s on %s, call 2: want an injected %q PathError, got %v", c.op, hit, c.op, err)
				}
			}
			if ffs.Injected() != 1 {
				t.Fatalf("Injected = %d, want 1", ffs.Injected())
			}
		})
	}
}

// TestFaultFSEveryOpProbability checks probabilistic failure of each
// operation is reproducible from the seed and near its probability.
func TestFaultFSEveryOpProbability(t *testing.T) {
	const name = "/db/MANIFEST-000001"
	for i, c := range faultOpCases {
		t.Run(fmt.Sprintf("%d-%v", i, c.op), func(t *testing.T) {
			pattern := func(seed uint64) []bool {
				ffs, files := newFaultOpFS(t, c, seed, name)
				ffs.AddRule(Rule{Op: c.op, PathPattern: "MANIFEST-*", Probability: 0.5})
				out := make([]bool, 200)
				for j := range out {
					out[j] = c.do(ffs, files, name) != nil
				}
				return out
			}
			a, b, other := pattern(7), pattern(7), pattern(8)
			fails, diff := 0, 0
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("call %d: seed 7 failed %v then %v", j, a[j], b[j])
				}
				if a[j] {
					fails++
				}
				if a[j] != other[j] {
					diff++
				}
			}
			if fails < 60 || fails > 140 {
				t.Fatalf("%d of 200 failed with p=0.5", fails)
			}
			if diff == 0 {
				t.Fatal("another seed gave the same failures")
			}
		})
	}
}

func TestFaultFSPathFilters(t *testing.T) {
	mem := vfs.NewMem()
	ffs := New(mem, 1)
	for _, n := range []string{"/db/000007.sst", "/other/000007.sst", "/db/x.sst", "/db/[.sst"} {
		mustCreate(t, mem, n)
	}
	// Both filters must hold.
	ffs.AddRule(Rule{Op: OpOpen, PathContains: "/db/", PathPattern: "0*.sst"})
	// A malformed pattern matches nothing, not even a name equal to it.
	ffs.AddRule(Rule{Op: OpOpen, PathPattern: "["})
	for n, wantFail := range map[string]bool{"/db/000007.sst": true, "/other/000007.sst": false, "/db/x.sst": false, "/db/[.sst": false} {
		_, err := ffs.Open(n)
		if (err != nil) != wantFail {
			t.Errorf("open %s: err %v, want failure %v", n, err, wantFail)
		}
	}
	// Preallocation can report a full disk.
	f, _ := ffs.Create("/db/000009.sst")
	ffs.AddRule(Rule{Op: OpPreallocate, PathPattern: "*.sst", NoSpace: true})
	if err := f.Preallocate(0, 1<<20); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("preallocate: %v, want ENOSPC", err)
	}
	// A directory's Sync fails by OpSync rules.
	d, err := ffs.OpenDir("/db")
	if err != nil {
		t.Fatal(err)
	}
	ffs.AddRule(Rule{Op: OpSync, PathPattern: "db"})
	if err := d.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("dir sync: %v", err)
	}
	// Truncate really truncates when it is not failed.
	ffs.ClearRules()
	g, _ := ffs.OpenReadWrite("/db/x.sst")
	if err := g.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if sz, _ := g.Size(); sz != 4 {
		t.Fatalf("size %d after Truncate(4)", sz)
	}
}

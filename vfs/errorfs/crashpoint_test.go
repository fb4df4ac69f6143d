package errorfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// dumpMem lists every file under dir of fs with its full contents.
func dumpMem(t *testing.T, fs *vfs.MemFS, dir string) string {
	t.Helper()
	var b strings.Builder
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		p := fs.PathJoin(dir, name)
		fi, err := fs.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			fmt.Fprintf(&b, "%s/\n%s", p, dumpMem(t, fs, p))
			continue
		}
		f, err := fs.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, fi.Size())
		if _, err := f.ReadAt(data, 0); err != nil && len(data) > 0 {
			t.Fatal(err)
		}
		f.Close()
		fmt.Fprintf(&b, "%s %q\n", p, data)
	}
	return b.String()
}

// TestCrashPointFSCountsAndDurable runs random mutations through a
// CrashPointFS over a MemFS, crashes after each one, and checks that the
// mutations are numbered in order, that each is described, and that
// Durable is right: a crash after a mutation that is not durable leaves
// exactly what a crash after the previous durable one left.
func TestCrashPointFSCountsAndDurable(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := vfs.NewMem()
	var got []Mutation
	lastDurable := ""
	var cfs *CrashPointFS
	cfs = NewCrashPointFS(mem, func(m Mutation) {
		got = append(got, m)
		if m.Index != len(got) {
			t.Errorf("mutation %d reported as index %d", len(got), m.Index)
		}
		image := dumpMem(t, mem.CrashClone(), "/")
		if m.Durable() {
			lastDurable = image
		} else if image != lastDurable {
			t.Errorf("%s is not durable but changed what a crash leaves:\nbefore:\n%s\nafter:\n%s", m, lastDurable, image)
		}
	})
	if err := cfs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]vfs.File{}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("/d/f%d", rng.IntN(5))
		switch rng.IntN(8) {
		case 0:
			if f := files[name]; f != nil {
				f.Close()
			}
			f, err := cfs.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = f
		case 1, 2:
			if f := files[name]; f != nil {
				if _, err := f.Write([]byte(fmt.Sprintf("w%d;", i))); err != nil {
					t.Fatal(err)
				}
			}
		case 3:
			if f := files[name]; f != nil {
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		case 4:
			d, err := cfs.OpenDir("/d")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			d.Close()
		case 5:
			to := fmt.Sprintf("/d/f%d", rng.IntN(5))
			if err := cfs.Rename(name, to); err == nil && to != name {
				files[to], files[name] = files[name], nil
			}
		case 6:
			if err := cfs.Remove(name); err == nil {
				files[name] = nil
			}
		case 7:
			// A second name for the file: the open handle writes both.
			to := fmt.Sprintf("/d/f%d", rng.IntN(5))
			if err := cfs.Link(name, to); err == nil {
				files[to] = nil
			}
		}
	}
	if n := cfs.Mutations(); n != len(got) || n < 100 {
		t.Fatalf("Mutations() = %d, hook saw %d", n, len(got))
	}
	for _, m := range got {
		if !strings.HasPrefix(m.String(), fmt.Sprintf("op %d: ", m.Index)) {
			t.Fatalf("String() = %q", m.String())
		}
	}
}

// TestCrashPointFSDescribes checks the description of each kind of
// mutation, failed ones included, and that reads are not counted.
func TestCrashPointFSDescribes(t *testing.T) {
	var got []string
	cfs := NewCrashPointFS(vfs.NewMem(), func(m Mutation) { got = append(got, m.String()) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cfs.MkdirAll("/db", 0o755))
	f, err := cfs.Create("/db/a.tmp")
	must(err)
	_, err = f.Write([]byte("hello"))
	must(err)
	must(f.SyncData())
	must(f.Truncate(2))
	must(f.Close())
	r, err := cfs.Open("/db/a.tmp")
	must(err)
	buf := make([]byte, 2)
	if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != "he" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	r.Close()
	must(cfs.Rename("/db/a.tmp", "/db/CURRENT"))
	d, err := cfs.OpenDir("/db")
	must(err)
	must(d.Sync())
	d.Close()
	l, err := cfs.Lock("/db/LOCK")
	must(err)
	l.Close()
	must(cfs.Link("/db/CURRENT", "/db/CURRENT.link"))
	err = cfs.Remove("/db/missing")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	want := []string{
		"op 1: mkdir /db",
		"op 2: create /db/a.tmp",
		"op 3: write 5 bytes to /db/a.tmp",
		"op 4: sync /db/a.tmp",
		"op 5: truncate /db/a.tmp",
		"op 6: rename /db/a.tmp -> /db/CURRENT",
		"op 7: sync dir /db",
		"op 8: lock /db/LOCK",
		"op 9: link /db/CURRENT -> /db/CURRENT.link",
	}
	if len(got) != len(want)+1 {
		t.Fatalf("mutations:\n%s", strings.Join(got, "\n"))
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("mutation %d = %q, want %q", i+1, got[i], w)
		}
	}
	if last := got[len(want)]; !strings.HasPrefix(last, "op 10: remove /db/missing (failed: ") {
		t.Errorf("failed remove described as %q", last)
	}
}

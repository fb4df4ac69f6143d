package errorfs

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestFaultFSNthCountsEveryMatch: "the Nth sync" is the Nth sync the rule's
// filters match, whether or not another rule failed an earlier one. Before,
// a rule stopped counting the operations an earlier rule failed, so a sync
// failed by one rule shifted another rule's count by one.
func TestFaultFSNthCountsEveryMatch(t *testing.T) {
	ffs := New(vfs.NewMem(), 1)
	f, err := ffs.Create("/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	ffs.AddRule(Rule{Op: OpSync, PathPattern: "*.log", Nth: 2})
	ffs.AddRule(Rule{Op: OpSync, Nth: 4})
	for i := 1; i <= 6; i++ {
		err := f.Sync()
		if want := i == 2 || i == 4; (err != nil) != want {
			t.Fatalf("sync %d: err %v, want failure %v", i, err, want)
		}
	}
	if got := ffs.Injected(); got != 2 {
		t.Fatalf("Injected = %d, want 2", got)
	}
}

// TestFaultFSProbabilityPerRule: a seeded probabilistic rule fails the same
// calls of its own operation however the operations of other rules are
// interleaved with them. Before, all rules drew from one generator, so
// adding reads between syncs changed which syncs failed.
func TestFaultFSProbabilityPerRule(t *testing.T) {
	run := func(readsBetween int) []bool {
		mem := vfs.NewMem()
		mustCreate(t, mem, "/db/MANIFEST-000001")
		ffs := New(mem, 99)
		ffs.AddRule(Rule{Op: OpRead, Probability: 0.5})
		ffs.AddRule(Rule{Op: OpSync, Probability: 0.5})
		f, err := ffs.OpenReadWrite("/db/MANIFEST-000001")
		if err != nil {
			t.Fatal(err)
		}
		out := make([]bool, 100)
		buf := make([]byte, 4)
		for i := range out {
			for range (i * 7 % 3) * readsBetween {
				f.ReadAt(buf, 0)
			}
			err := f.Sync()
			if err != nil && !errors.Is(err, ErrInjected) {
				t.Fatal(err)
			}
			out[i] = err != nil
		}
		return out
	}
	alone, mixed := run(0), run(1)
	for i := range alone {
		if alone[i] != mixed[i] {
			t.Fatalf("sync %d failed %v without reads in between and %v with them", i+1, alone[i], mixed[i])
		}
	}
}

// TestFaultFSNthConcurrent: with 8 goroutines syncing at once, a rule for
// the 17th sync fails exactly one of 200 syncs.
func TestFaultFSNthConcurrent(t *testing.T) {
	ffs := New(vfs.NewMem(), 1)
	f, err := ffs.Create("/x.log")
	if err != nil {
		t.Fatal(err)
	}
	ffs.AddRule(Rule{Op: OpSync, Nth: 17})
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if f.Sync() != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() != 1 || ffs.Injected() != 1 {
		t.Fatalf("%d syncs failed (Injected %d), want exactly 1", failed.Load(), ffs.Injected())
	}
}

// TestFaultFSTornWriteOS: a torn write on the OS file system, buffered and
// DirectIO, leaves exactly the first half of the write after the bytes
// before it, and nothing else.
func TestFaultFSTornWriteOS(t *testing.T) {
	dir := testdir.New(t)
	for _, opts := range [][]vfs.OpenOption{nil, {vfs.DirectIO}} {
		name := vfs.Default.PathJoin(dir, "000003.log")
		ffs := New(vfs.Default, 1)
		f, err := ffs.Create(name, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("head:")); err != nil {
			t.Fatal(err)
		}
		ffs.AddRule(Rule{Op: OpWrite, PathPattern: "*.log", Nth: 1, ShortWrite: true, NoSpace: true})
		n, err := f.Write([]byte("0123456789abc"))
		if n != 6 || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%v: torn write = %d, %v; want 6, ENOSPC", opts, n, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(name); err != nil || string(got) != "head:012345" {
			t.Fatalf("%v: file holds %q, %v; want %q", opts, got, err, "head:012345")
		}
	}
}

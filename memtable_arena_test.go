package shale

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/offheap"
	"github.com/shaledb/shale/vfs"
)

// TestMemtableArenasFreedAtClose: the memtable arenas, which live outside
// the Go heap, are all freed by Close, except those an iterator left open
// still reads, which its Close frees; and the iterator's reads until then
// see the right data (a freed arena would fault or show poison).
func TestMemtableArenasFreedAtClose(t *testing.T) {
	before := offheap.LiveBytes()
	opts := testOptions(vfs.NewMem())
	opts.WriteBufferSize = 1 << 20
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	put := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			must(t, d.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(fmt.Sprintf("v%06d", i)), nil))
		}
	}
	put(0, 20000) // several memtables, flushed
	must(t, d.Flush())
	put(20000, 21000) // in the mutable memtable
	it := d.NewIterator(nil)
	if offheap.LiveBytes() == before {
		t.Skip("memtable arenas are on the Go heap on this platform")
	}
	must(t, d.Close())
	if offheap.LiveBytes() == before {
		t.Fatal("Close freed the arena of the memtable an open iterator reads")
	}
	n := 0
	for ok := it.Seek([]byte("k020000")); ok; ok = it.Next() {
		n++
	}
	_ = it.Close() // ErrClosed or nil: the reads after Close may fail, never fault
	if n != 0 && n != 1000 {
		t.Fatalf("the iterator left open saw %d of the memtable's 1000 keys", n)
	}
	if got := offheap.LiveBytes(); got != before {
		t.Fatalf("%d bytes of memtable arenas live after Close and the iterator's Close", got-before)
	}
}

// TestMemtableArenasFreedAfterReopen: Opens that replay the WAL into
// memtables, and the Closes after them, leave no arena behind.
func TestMemtableArenasFreedAfterReopen(t *testing.T) {
	before := offheap.LiveBytes()
	fs := vfs.NewMem()
	for range 3 {
		d, err := Open("db", testOptions(fs))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			must(t, d.Put([]byte(fmt.Sprintf("k%06d", i)), []byte("v"), nil))
		}
		must(t, d.Close())
	}
	if got := offheap.LiveBytes(); got != before {
		t.Fatalf("%d bytes of memtable arenas live after three Open/Close", got-before)
	}
}

// TestMemtableArenasFreedByReadOnlyAndSecondary: a read-only DB (which
// keeps the replayed memtables) and a secondary instance (which replays
// the primary's WALs at each catch-up) free every arena at Close.
func TestMemtableArenasFreedByReadOnlyAndSecondary(t *testing.T) {
	before := offheap.LiveBytes()
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.WriteBufferSize = 256 << 10
	primary, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := OpenAsSecondary("db", "sec", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		for i := range 3000 {
			must(t, primary.Put([]byte(fmt.Sprintf("k%d-%06d", round, i)), []byte("value"), nil))
		}
		must(t, sec.TryCatchUpWithPrimary())
		must(t, sec.TryCatchUpWithPrimary()) // nothing new
	}
	must(t, sec.Close())
	ro, err := OpenForReadOnly("db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ro.Get([]byte("k4-002999"), nil); err != nil || string(v) != "value" {
		t.Fatalf("read-only Get = %q, %v", v, err)
	}
	must(t, ro.Close())
	must(t, primary.Close())
	if got := offheap.LiveBytes(); got != before {
		t.Fatalf("%d bytes of memtable arenas live after closing a primary, a secondary and a read-only DB", got-before)
	}
}

// TestMemtableArenaSpareTakenWhileReleased: a rotation taking the spare
// arena while a release replaces (and frees) it, each with a size of its
// own, neither reads a freed arena (the race detector watches the spare's
// words) nor loses or leaks one: after Close every arena is freed.
func TestMemtableArenaSpareTakenWhileReleased(t *testing.T) {
	before := offheap.LiveBytes()
	d, err := Open("db", testOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g, capacity := range []int{64 << 10, 128 << 10} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				m, arena := d.memtableOnArena(capacity)
				if m == nil || len(arena.W) == 0 {
					t.Errorf("goroutine %d: no memtable", g)
					return
				}
				d.keepSpare(arena) // as releaseMemTable does
			}
		}()
	}
	wg.Wait()
	must(t, d.Close())
	if got := offheap.LiveBytes(); got != before {
		t.Fatalf("%d bytes of memtable arenas live after Close", got-before)
	}
}

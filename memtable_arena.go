package shale

import (
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/offheap"
)

// Memtable arenas are recycled: a fresh arena of WriteBufferSize costs a
// page fault per page on first touch (about 0.25 s for 64 MiB on a
// virtual machine, measured), paid under d.mu by the writer that rotates
// the memtable. Reusing the arena of a flushed memtable, still resident,
// costs nothing. The garbage collector no longer guards that memory, so
// reference counts do:
//
//   - memTable.refs holds one reference for the DB's list of memtables
//     (the mutable one and the flush queue), dropped by the flush that
//     installs the memtable's tables, and one per read state that includes
//     the memtable, dropped when the read state's last reader unrefs it.
//   - Every reader of a memtable's keys or values holds a read state
//     (Get and MultiGet until they return, after copying or handing out
//     values; iterators until Close), or is the flush itself or a writer
//     applying a batch, both of which run while the list holds it.
//   - Nothing keeps a slice of arena bytes past those holds: what outlives
//     them (table bounds, cache entries, values returned) is copied.
//
// Tests and invariants builds poison a released arena, so that a read of it
// after release shows as wrong data rather than passing by luck.

// poisonReleasedArenas makes releaseMemTable scribble over the arena it
// recycles. helpers_test.go turns it on for every test of the package.
var poisonReleasedArenas = invariants.Enabled

// arenaPoison is the byte a poisoned arena is filled with.
const arenaPoison = 0xdb

// memtableOnArena returns an empty memtable of the given capacity and the
// arena it lies on: the spare arena when it has that size, else a fresh one
// outside the Go heap (offheap), which the garbage collector neither scans
// nor counts toward its heap goal: 2-3 memtables of 73 MiB each on the heap
// let the heap grow by as much again before a collection (measured: peak
// RSS 487 MiB for 64 MiB memtables and a 64 MiB cache).
func (d *DB) memtableOnArena(capacity int) (*memtable.Memtable, *offheap.Words) {
	// A spare of another size (this memtable is sized for a large batch,
	// or WriteBufferSize changed) stays for the next memtable of its size.
	words := memtable.ArenaWords(capacity)
	// The spare is taken before its size is read: a spare only loaded may
	// be swapped out and freed by a releaseMemTable meanwhile (its Free
	// writes the W this would read).
	if spare := d.spareArena.Swap(nil); spare != nil {
		if len(spare.W) == words {
			return memtable.NewOnArena(d.cmp, spare.W), spare
		}
		d.keepSpare(spare) // for the next memtable of its size
	}
	arena := offheap.Alloc(words)
	return memtable.NewOnArena(d.cmp, arena.W), arena
}

// releaseMemTable drops one reference to m; the last makes its arena the
// spare one, freeing an older spare, or frees it once the DB is closed.
func (d *DB) releaseMemTable(m *memTable) {
	n := m.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		base.AssertionFailedf("memtable of WAL %s released more often than held", m.logNum)
	}
	d.releaseMemBlobs(m)
	arena := m.arena
	m.arena = nil
	if poisonReleasedArenas {
		poisonArena(arena.W)
	}
	if d.closed.Load() {
		arena.Free()
		return
	}
	d.keepSpare(arena)
}

// keepSpare makes arena the spare one, freeing the spare it replaces (an
// arena released meanwhile, when the caller had taken the spare out).
func (d *DB) keepSpare(arena *offheap.Words) {
	d.spareArena.Swap(arena).Free()
	if d.closed.Load() {
		// Close may have freed the spare before the Swap above.
		d.spareArena.Swap(nil).Free()
	}
}

// releaseMemTablesAtClose drops the DB list's holds on its memtables and
// frees the spare arena, once nothing else uses them: the arenas of
// memtables still held (by an iterator left open) are freed by its Close.
func (d *DB) releaseMemTablesAtClose() {
	d.mu.Lock()
	if d.mu.mem.released {
		d.mu.Unlock()
		return
	}
	// The pointers stay (calls after Close may read the memtables'
	// fields, never their entries); released makes this run once.
	d.mu.mem.released = true
	mutable, queue := d.mu.mem.mutable, d.mu.mem.queue
	d.mu.Unlock()
	for _, m := range queue {
		if m != mutable {
			d.releaseMemTable(m)
		}
	}
	if mutable != nil {
		d.releaseMemTable(mutable)
	}
	d.spareArena.Swap(nil).Free()
}

func poisonArena(words []uint64) {
	const w = uint64(arenaPoison) * 0x0101010101010101
	for i := range words {
		words[i] = w
	}
}

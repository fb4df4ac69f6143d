package shale

import (
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/memtable"
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

// memtableOnArena returns an empty memtable of the given capacity, on the
// spare arena when it has that size.
func (d *DB) memtableOnArena(capacity int) *memtable.Memtable {
	// A spare of another size (this memtable is sized for a large batch,
	// or WriteBufferSize changed) stays for the next memtable of its size.
	spare := d.spareArena.Load()
	if spare != nil && len(*spare) == memtable.ArenaWords(capacity) && d.spareArena.CompareAndSwap(spare, nil) {
		return memtable.NewOnArena(d.cmp, *spare)
	}
	return memtable.New(d.cmp, capacity)
}

// releaseMemTable drops one reference to m; the last makes its arena the
// spare one (replacing an older spare, which the garbage collector frees).
func (d *DB) releaseMemTable(m *memTable) {
	n := m.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		base.AssertionFailedf("memtable of WAL %s released more often than held", m.logNum)
	}
	arena := m.Arena()
	if poisonReleasedArenas {
		poisonArena(arena)
	}
	d.spareArena.Store(&arena)
}

func poisonArena(words []uint64) {
	const w = uint64(arenaPoison) * 0x0101010101010101
	for i := range words {
		words[i] = w
	}
}

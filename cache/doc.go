// Package cache owns the block cache: a sharded, byte-bounded cache of
// immutable blocks keyed by (namespace id, file offset). Each table reader
// takes a fresh namespace with NewID, so blocks of different files never
// collide, and the table cache drops a deleted file's blocks with EvictID.
//
// Eviction is CLOCK (second chance), not LRU: a hit takes only its shard's
// read lock and sets the block's referenced bit, so hits never write list
// links of other blocks; an insert that needs room sweeps the shard's clock
// hand, clearing set bits and evicting the first block it finds clear.
//
// Values are plain []byte slices kept alive by the garbage collector: a
// block evicted while a reader still uses it stays valid for that reader.
// A reader may also cache an object it built from a block (SetValue: a
// decoded index), charged what the reader says it holds, and pin it: a
// pinned entry counts against the capacity but the clock hand passes over
// it until its pins are given back (Unpin). The cache never copies or
// modifies a block, counts only pins (no references), and never does IO.
package cache

// Package cache owns the block cache: a sharded, byte-bounded cache of
// immutable blocks keyed by (namespace id, file offset). Each table reader
// takes a fresh namespace with NewID, so blocks of different files never
// collide, and the table cache drops a deleted file's blocks with EvictID.
//
// Eviction is CLOCK, not LRU: a hit takes only its shard's read lock and
// raises the entry's countdown, so hits never write list links of other
// blocks; an insert that needs room sweeps the shard's clock hand, counting
// down the entries it passes and evicting the first it finds at zero. A
// block gets a second chance (countdown 1); a value (SetValue: a decoded
// index or filter) is high priority, as RocksDB caches index and filter
// blocks, and survives three sweeps, within half of each shard.
//
// Values are plain []byte slices kept alive by the garbage collector: a
// block evicted while a reader still uses it stays valid for that reader.
// A reader may also cache an object it built from a block (SetValue: a
// decoded index), charged what the reader says it holds, and pin it: a
// pinned entry counts against the capacity but the clock hand passes over
// it until its pins are given back (Unpin). The cache never copies or
// modifies a block, counts only pins (no references), and never does IO.
package cache

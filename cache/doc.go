// Package cache owns the block cache: a sharded, byte-bounded LRU of
// immutable blocks keyed by (namespace id, file offset). Each table reader
// takes a fresh namespace with NewID, so blocks of different files never
// collide, and the table cache drops a deleted file's blocks with EvictID.
//
// Values are plain []byte slices kept alive by the garbage collector: a
// block evicted while a reader still uses it stays valid for that reader.
// The cache never copies, modifies or reference-counts a block, and never
// does IO.
package cache

// Package memtable owns the in-memory table that receives writes before they
// are flushed to an L0 SST: an arena-backed skiplist of point entries, and a
// second skiplist, in the same arena, of range tombstones; and, when asked
// (SetPrefixBloom), a bloom filter of the prefixes of the point keys, outside
// the arena (RocksDB's memtable prefix bloom), which lets a prefix seek
// (SeekPrefixGE of a NewIterWith iterator) skip the memtable.
//
// One goroutine at a time adds entries; any number of goroutines read
// concurrently without locks (Get, iterators, RangeTombstones). The package
// never does IO, never applies range tombstones to point entries (readers
// combine Get or NewIter with RangeTombstones), and never frees memory: a
// memtable's arena is allocated once by New (or handed to NewOnArena for
// reuse by its owner) and dropped as a whole.
//
// # Arena
//
// Everything lives in one []byte allocated at New. Offsets into it are
// uint32; offset 0 is reserved and means "no node". Nodes start 8-byte
// aligned:
//
//	offset  size       field
//	0       8          trailer: seqnum<<8 | kind (base.MakeTrailer)
//	8       4          key length K
//	12      4          value length V
//	16      4          height H (1..20)
//	20      4          offset of the value
//	24      4*H        tower: offset of the next node at levels 0..H-1
//	24+4*H  K          key (user key; for a range tombstone, its start)
//
// Nodes and keys are allocated from the front of the arena; values (for a
// range tombstone, its end key) from the back, growing down. The arena is
// full when the two meet. Keeping values apart packs what a search touches
// densely, so a search misses the CPU cache less often.
//
// Tower words are read and written with sync/atomic; everything else in a
// node is written before the node is published and never changed after.
//
// # Publication
//
// Add allocates and fully writes the node, sets its tower to its successors,
// and then links it in bottom-up, each link with one atomic store into the
// predecessor's tower. A reader that loads a link therefore sees the whole
// node; a reader racing with an insert sees the list with or without the new
// node at each level, and always in sorted order. Heights are drawn with
// p = 1/4.
//
// Backward iteration has no prev links: Prev searches from the head for the
// last node before the current key, which costs O(log n).
package memtable

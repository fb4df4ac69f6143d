// Package base owns the vocabulary every other shale package shares: internal
// keys (user key + sequence number + kind), the Comparer, the prefix
// extractor (SliceTransform, with RocksDB's fixed and capped transforms), the
// InternalIterator interface and its optional extensions (internal seeks,
// two-phase and prefix seeks), file numbers and names, and the error kinds.
//
// It never does IO and imports no other shale package.
//
// Internal key encoding (as stored in memtables, SST blocks and the MANIFEST):
//
//	+----------------+---------------------------------------+
//	| user key bytes | trailer: uint64 little-endian          |
//	|                | = seqnum<<8 | kind                     |
//	+----------------+---------------------------------------+
//
// Internal keys sort by user key ascending, then trailer descending, so the
// newest version of a user key comes first.
package base

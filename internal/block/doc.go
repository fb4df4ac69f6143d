// Package block is the block layer that tables (sstable) and blob files
// stand on: block handles and trailers, checksums, compression, and the
// read machinery — cached reads, direct-IO reads into pooled aligned
// buffers, batched async range reads (RangeRead, ReadAll, PendingRead,
// ReadGroup) that MultiGet and the two-phase Seek use, readahead through
// internal/readahead, and the read statistics (ReadStats).
//
// It never knows what a block holds: it does not parse entries, restart
// arrays, indexes, filters, footers or properties, and it never decides
// which blocks a file has or where they may lie (callers pass the limit a
// handle must stay below). It does not open, create or delete files; it
// reads the vfs.File its caller opened. It never imports sstable, so a
// second file format (blob files) reuses it without the table format.
//
// # Block handle
//
//	+------------------+------------------+
//	| offset (uvarint) | length (uvarint) |   at most MaxHandleLen (20) bytes
//	+------------------+------------------+
//
// A Handle locates the stored bytes of a block; length does not count the
// trailer that follows them.
//
// # Block trailer
//
// Every block is stored as its bytes (compressed or not) followed by a
// 5-byte trailer:
//
//	+----------------------+---------------------+-------------------------+
//	| block bytes (length) | type (1 byte)       | checksum (uint32 LE)    |
//	+----------------------+---------------------+-------------------------+
//	                       |<------------- trailer (5 bytes) ------------->|
//	|<--------- checksummed ------------------->|
//
// type is the compression of the block bytes: 0 none, 1 snappy, 7 zstd (a
// zstd block starts with the uvarint decompressed length); RocksDB's codes.
// The checksum covers the block bytes and the type byte. Its kind is chosen
// per file and recorded by the file's format (a table's footer):
//
//	1 CRC32C   masked as in LevelDB (internal/checksum.Mask)
//	3 xxhash64 the low 32 bits of XXH64 (seed 0)
//
// A stated decompressed length never sizes an allocation on trust: a snappy
// block stating more than 22 times its stored size is corruption (snappy
// cannot expand further), and a zstd block gets at most 64 times its stored
// size up front. A writer stores a block compressed only when that saves at
// least 1/8 of its size (Compress). No block decompresses to more than
// MaxLen (1 GiB).
//
// # Reads
//
// A File reads the blocks of one open file. ReadBlock checks the handle
// against the caller's limit, reads the block and its trailer (from a
// readahead window when the caller has one and it serves the block, else
// by a read of its own), verifies the checksum and decompresses; the
// result never aliases memory that is reused, so it may be cached. Damage
// is a base.CorruptionError naming the file and the block's offset: a bad
// checksum, a short read, a handle out of bounds, a block that does not
// decompress. Nothing read from a file makes the package panic.
//
// On a direct-IO file (vfs.Alignment > 1) every read is aligned: a
// RangeRead fetches the aligned range covering the bytes into pooled
// aligned memory. A RangeRead is also the unit of batched reads: callers
// plan several (adjacent blocks coalesced into one), submit them through a
// vfs.AsyncReader as one batch (ReadAll; ReadBlocks for a file's meta
// blocks), and decode each as it completes. A PendingRead is one block read
// submitted without waiting, alone or gathered with the reads of other
// iterators in a ReadGroup and submitted as one batch.
//
// The cache (package cache) holds blocks by (File.CacheID, offset), with an
// optional auxiliary buffer beside a block (a search structure the caller
// built); the block layer only looks up and inserts, and counts hits.
//
// ReadStats counts blocks read, read calls and bytes, direct reads,
// readahead bytes issued and used, cache hits, async requests, coalesced
// blocks and prefetch hits, in a File's shared stats and in a per-call
// Source.Stats when set.
//
// # Writes
//
// Writers of both formats append through a Sink: it preallocates ahead of
// the writes and starts writeback every BytesPerSync bytes, and Trim gives
// back what was reserved past the end.
package block

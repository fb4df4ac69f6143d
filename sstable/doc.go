// Package sstable owns the block-based table format (SST): the Writer that
// builds a table from sorted internal keys, and the Reader that opens one,
// answers point lookups (Get, with the bloom filter checked first) and
// iterates it (a two-level index -> data block iterator with bounds pushed
// down; SeekPrefixGE skips a table whose prefix filter rules the prefix
// out). It owns what is inside a table's blocks — data, index, filter,
// range-del, properties and metaindex blocks, the footer — and the full-file
// bloom filter (of keys, prefixes or both), table properties and property
// collectors.
//
// Everything below the contents of a block is internal/block's: handles,
// the block trailer (type byte and checksum), compression, and the reads
// (cached, direct IO, readahead, batched async reads for MultiGet and the
// two-phase Seek) with their counters. Compression, ChecksumType and
// ReadGroup are that package's types, and ReadStats embeds its counters.
//
// It never decides which tables exist or which entries are live: it does not
// apply range tombstones (it only stores and returns them), merge tables, or
// delete files. It does all IO through a vfs.File, and caches data blocks in
// a cache.Cache under the Reader's CacheID. The properties and range
// tombstones are read once at open and kept in the Reader; so are the index
// (decoded) and the filter, unless ReaderOptions.CacheIndexAndFilterBlocks
// puts them in the cache, evictable and read again on demand (pinned with
// PinIndexAndFilterBlocks; see index_cache.go). Of a partitioned index and
// filter only the top levels are kept so; the partitions go through the
// cache (partition.go).
//
// # File layout
//
//	+--------------------+  offset 0
//	| data block 0       |  each block is followed by its 5-byte trailer
//	| data block 1       |
//	| ...                |
//	+--------------------+
//	| filter block       |  optional: full-file bloom filter over user keys
//	| range-del block    |  optional: fragmented range tombstones
//	| index block        |  one entry per data block
//	| properties block   |
//	| metaindex block    |  meta block name -> handle
//	+--------------------+
//	| footer (53 bytes)  |
//	+--------------------+
//
// A block handle is uvarint(offset) uvarint(length); length excludes the
// trailer (internal/block draws both).
//
// With WriterOptions.IndexType = TwoLevelIndexSearch (format version 2)
// the index is cut into partitions, written after the data blocks and
// before the other blocks, with PartitionFilters the filter too:
//
//	+--------------------------+  offset 0
//	| data blocks              |
//	+--------------------------+
//	| filter partition 0..n-1  |  PartitionFilters: one per index partition
//	| top-level filter index   |  "partitionedfilter.shale.bloom" (or
//	|                          |  ".prefixbloom") in the metaindex
//	| range-del block          |
//	| index partition 0..n-1   |  about MetadataBlockSize bytes each
//	| top-level index          |  the footer's index handle
//	| properties block         |
//	| metaindex block          |
//	+--------------------------+
//	| footer, version 2        |
//	+--------------------------+
//
// A partition is an index block as above, for consecutive data blocks (at
// least one); the top-level index has one entry per partition: key = the
// partition's last separator, value = the partition's block handle. The
// top-level filter index has the same keys, its values the handles of the
// filter partitions, each a filter block (below) of the keys and prefixes
// of its partition's data blocks: a user key or prefix that goes on from
// one partition into the next is in both filters, so the partition a key
// seeks to in the top level always holds it. A reader knows the layout
// from the footer's format version alone (1: the footer's index handle is
// the single index; 2: a top-level index), and the filter from the
// metaindex name; properties record the index type and partition counts
// (rocksdb.block.based.table.index.type, rocksdb.index.partitions,
// rocksdb.top-level.index.size, shale.filter.partitions) for tools. A
// table without data blocks keeps the single index (format 1) whatever
// the option says. Readers from before version 2 refuse such a table as
// an unknown format version.
//
// # Blocks
//
// Data, index, range-del, properties and metaindex blocks share one format
// (RocksDB's and LevelDB's):
//
//	entry:    uvarint shared | uvarint unshared | uvarint value length |
//	          key[shared:] (unshared bytes) | value
//	block:    entry* | restart offset (uint32 LE)* | restart count (uint32 LE)
//
// Each entry's key shares its first `shared` bytes with the previous key;
// entries at restart points (every BlockRestartInterval entries in data
// blocks, every entry in the other blocks) have shared = 0 and are the
// binary-search points.
//
//	data block:       key = encoded internal key, value = the value
//	index block:      key = encoded internal key sep with
//	                  last key of block i <= sep < first key of block i+1
//	                  (Comparer.Separator, or Successor for the last block,
//	                  with trailer (SeqNumMax, KindMax) when shortened;
//	                  otherwise the block's last key), value = block handle,
//	                  then, in every entry of a table written with
//	                  WriterOptions.BlockAttr, the block's BlockProps (seven
//	                  uvarints, see blockprops.go); a reader takes entries
//	                  with or without them (all alike), an older reader
//	                  refuses the longer ones as bad block handles
//	range-del block:  key = internal key (start, seq, RangeDelete),
//	                  value = end; sorted, fragmented (equal starts have
//	                  equal ends, seqs descending)
//	properties block: key = property name, value = uvarint for numbers,
//	                  raw bytes for strings and user properties
//	                  (RocksDB's names where RocksDB has the property;
//	                  "shale.num.tombstone-dense-blocks" counts the data
//	                  blocks dense in point tombstones, see
//	                  WriterOptions.NumDeletionsThreshold; a table
//	                  without it predates it and reads 0;
//	                  "rocksdb.prefix.extractor.name" names the prefix
//	                  extractor, "nullptr" for none, and
//	                  "rocksdb.block.based.table.whole.key.filtering" and
//	                  ".prefix.filtering" are "1" or "0": what the filter
//	                  holds; a table without them holds whole keys only)
//	metaindex block:  "fullfilter.shale.bloom" or
//	                  "fullfilter.shale.prefixbloom", "rocksdb.properties",
//	                  "rocksdb.range_del" -> block handle
//
// # Block trailer
//
//	+------------------+-------------------------------------------+
//	| type (1 byte)    | checksum (uint32 LE) of block bytes + type |
//	+------------------+-------------------------------------------+
//
// The trailer is internal/block's (its doc gives the compression codes, the
// checksums and the bounds on stated lengths). A table compresses only its
// data and index blocks, with WriterOptions.Compression, and only when that
// saves at least 1/8 of a block; filter, range-del, properties and
// metaindex blocks are never compressed. The checksum is the footer's type:
// 1 = CRC32C masked as in LevelDB, 3 = low 32 bits of xxhash64.
//
// # Filter block
//
//	+----------------------------------+-----------+
//	| bit array (n bytes, 8n bits)     | k (1 byte)|
//	+----------------------------------+-----------+
//
// Each distinct user key h = xxhash64(key) sets k bits at (h + i*d) mod 8n,
// i < k, d = h rotated by 31 bits; k = round(bitsPerKey * ln 2) in [1, 30].
//
// With WriterOptions.PrefixExtractor the filter also holds the prefix of
// every point key in the extractor's domain (each distinct prefix once,
// hashed as a key is), as RocksDB's full filters do, and n counts them
// too. The block is then "fullfilter.shale.bloom" as before: whole keys
// and prefixes share one bit array, so either may make the other a false
// positive, never a false negative, and readers from before prefixes were
// added read it correctly. With DisableWholeKeyFiltering the filter holds
// prefixes only and is stored as "fullfilter.shale.prefixbloom", in the
// same layout: a reader that knows only the first name finds no filter and
// filters nothing, where it would otherwise take the prefixes for keys.
// Neither changes the layout of a block, so the format version stays 1. A
// reader uses the prefixes only for an extractor of the name the
// properties record (RocksDB's rule): a table written under another
// extractor, or none, is read as without a prefix filter.
//
// # Cached data blocks (in memory only)
//
// A data block read with FillCache goes into the cache as its raw bytes plus
// an auxiliary buffer (cache.SetAux, charged to the cache for both) built
// once from the checksum-verified block. With n entries whose user keys all
// start with a p-byte prefix:
//
//	+--------------------+----------+----------+------------+
//	| restart count (u32)| n (u32)  | p (u16)  | unused (6) |  16-byte header
//	+--------------------+----------+----------+------------+
//	| word[n]     u64 LE: the 8 user key bytes after the prefix,  |
//	|             big-endian, zero padded (as the index words)    |
//	| entryOff[n] u16 LE: entry offset in the raw block           |
//	| keyOff[n+1] u16 LE: key j's remainder is arena[keyOff[j]:   |
//	|             keyOff[j+1]] (user key after prefix + trailer)  |
//	| arena: prefix, then every key's remainder                   |
//	+--------------------------------------------------------------+
//
// SeekGE binary searches the words (the full remainders only where words
// tie), rebuilds the key it lands on from the arena and decodes that one
// entry from the block. n is 0 (the header alone, and seeks scan from
// restart points) for non-bytewise comparers, blocks over 64 KiB, and blocks
// whose entries do not decode; the format on disk is unchanged.
//
// # Footer
//
//	+----------+---------------------------------------+---------+---------+
//	| checksum | metaindex handle, index handle,       | format  | magic   |
//	| type (1) | zero padding to 40 bytes              | version | uint64  |
//	|          |                                       | uint32  | LE      |
//	+----------+---------------------------------------+---------+---------+
//
// Format version is 1, or 2 for a partitioned index (a new meta block or
// property that older readers can ignore safely needs no new version; a
// change to the layout of a block does); magic is 0x7368616c65535354 ("shaleSST"). An unknown
// magic, version or checksum type, a bad checksum or a malformed block is
// reported as a base.CorruptionError naming the file and block offset; the
// reader never panics on a damaged file.
//
// # Global seqnum
//
// A Reader opened with ReaderOptions.GlobalSeqNum (an ingested table, whose
// entries are all stored at seqnum 0, one per user key) gives every point
// entry and range tombstone that seqnum as it decodes it; the file is never
// changed. Keys compare as read, so seeks below the seqnum pass a key by; the
// index, whose separators are compared as stored, only ever positions at or
// before the answer. Cached blocks of such a table are searched without
// their search structure, which orders the keys as stored.
//
// # Reads and readahead
//
// An iterator reads the data blocks it does not find in the cache through
// its own internal/readahead state: automatic readahead from the third
// (with IterOptions.Async the second) sequential block read (ReaderOptions.MaxAutoReadaheadSize), or an explicit
// size (IterOptions.ReadaheadSize; compaction uses a large one). No window
// reaches past the end of the data blocks, nor past the end of the first
// block whose separator is at or above the iterator's upper bound. Get never
// reads ahead. A block served from a window is copied out only when it is
// stored uncompressed (the window is reused); a compressed block is
// decompressed straight from it.
//
// On a file opened with direct IO (vfs.Alignment > 1) every read is
// aligned: a single block read fetches the aligned range covering the block
// into a pooled aligned buffer (internal/block), and readahead windows are
// aligned, large ones split into concurrent requests through
// ReaderOptions.AsyncReader. ReaderOptions.Stats counts block reads, file
// reads and bytes, direct reads, readahead bytes issued and used, and bloom
// probes.
package sstable

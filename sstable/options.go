package sstable

import (
	"fmt"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// Compression selects the block compression of a table (block.Compression).
type Compression = block.Compression

// The compressions.
const (
	DefaultCompression = block.DefaultCompression // the zero value: snappy
	NoCompression      = block.NoCompression      // blocks stored as they are
	SnappyCompression  = block.SnappyCompression  // RocksDB's default where it has it
	ZstdCompression    = block.ZstdCompression
)

// ParseCompression parses the output of Compression.String.
func ParseCompression(s string) (Compression, error) { return block.ParseCompression(s) }

// ChecksumType selects the block checksum of a table; the values are the
// codes stored in the footer (RocksDB's).
type ChecksumType = block.ChecksumType

// The checksum types, by their footer codes.
const (
	ChecksumDefault  = block.ChecksumDefault  // 0, the zero value: CRC32C
	ChecksumCRC32C   = block.ChecksumCRC32C   // 1, masked CRC-32C
	ChecksumXXHash64 = block.ChecksumXXHash64 // 3, low 32 bits of xxhash64
)

// PropertyCollector gathers user properties of a table while it is written.
// Add sees every point entry and every range tombstone (with the tombstone's
// end key as value) in the order they are added; Finish adds the collected
// properties to props, which are stored in the properties block.
type PropertyCollector interface {
	Name() string
	Add(key base.InternalKey, value []byte)
	Finish(props map[string]string)
}

// NoFilter as WriterOptions.BloomBitsPerKey writes a table without a bloom
// filter (any negative value does).
const NoFilter = -1

// WriterOptions configure a Writer. Zero values take the defaults.
type WriterOptions struct {
	// BlockSize is the target uncompressed size of a data block. Default 4096.
	BlockSize int
	// BlockRestartInterval is the number of entries between restart points
	// of a data block. Default 16.
	BlockRestartInterval int
	// BloomBitsPerKey sizes the full-file bloom filter. Default 10; negative
	// (NoFilter) writes no filter.
	BloomBitsPerKey int
	// Compression of data and index blocks. Default snappy.
	Compression Compression
	// Comparer orders user keys. Default base.DefaultComparer.
	Comparer *base.Comparer
	// Checksum is the block checksum. Default CRC32C.
	Checksum ChecksumType
	// Collectors gather user properties.
	Collectors []PropertyCollector
	// TargetFileSize is the size the table is expected to reach. The
	// writer preallocates the file in steps of about this size (plus 10%)
	// as it grows, and trims what is left unused at Close. Default 0: no
	// preallocation.
	TargetFileSize int64
	// BytesPerSync makes the writer ask the OS to start writing back the
	// file (File.StartWriteback) every this many bytes, so that the final
	// sync has little left to do. Default 0 (or negative): never.
	BytesPerSync int64
	// NumDeletionsThreshold and DeletionSizeRatioThreshold decide which
	// data blocks count as tombstone-dense (Properties.
	// NumTombstoneDenseBlocks): a block is dense when it holds at least
	// NumDeletionsThreshold point tombstones (Delete and SingleDelete), or
	// when the bytes its point tombstones take in it (prefix-compressed key
	// and value) make up at least DeletionSizeRatioThreshold of its
	// uncompressed size. Pebble's options
	// of the same names and defaults: 100 and 0.5. A negative value turns
	// that test off.
	NumDeletionsThreshold      int
	DeletionSizeRatioThreshold float64
	// BlockAttr, when set, gives Sets a secondary attribute
	// (shale.Options.SecondaryDeleteKey), and every index entry records
	// its data block's BlockProps. Default nil: none (the index as before).
	BlockAttr func(key, value []byte) (uint64, bool)
	// PrefixExtractor, when set, puts the prefix of every point key in its
	// domain into the bloom filter besides the whole key (RocksDB's prefix
	// bloom), and its name into the properties: a prefix seek of a reader
	// with an extractor of that name skips the table when the filter rules
	// its prefix out. Default nil: whole keys only.
	PrefixExtractor base.SliceTransform
	// DisableWholeKeyFiltering, with a PrefixExtractor, keeps whole keys
	// out of the filter (RocksDB's whole_key_filtering=false): a smaller
	// filter of prefixes only, which point lookups then probe with the
	// key's prefix, and only through a reader with an extractor of the
	// table's name. Without a PrefixExtractor it changes nothing.
	DisableWholeKeyFiltering bool
	// IndexType selects the index: BinarySearchIndex (the zero value, one
	// index block) or TwoLevelIndexSearch (index partitions of about
	// MetadataBlockSize bytes under a top-level index).
	IndexType IndexType
	// PartitionFilters, with TwoLevelIndexSearch, writes one filter
	// partition per index partition under a top-level filter index,
	// instead of one filter for the table. Ignored otherwise.
	PartitionFilters bool
	// MetadataBlockSize is the target size of an index partition.
	// Default 4096.
	MetadataBlockSize int
}

// IndexType is a table's index layout (RocksDB's
// BlockBasedTableOptions::IndexType, with its numbers).
type IndexType uint64

// The index types.
const (
	// BinarySearchIndex is one index block, with an entry per data block,
	// that a Reader keeps (RocksDB's kBinarySearch). The zero value.
	BinarySearchIndex IndexType = 0
	// TwoLevelIndexSearch cuts the index into partitions of about
	// MetadataBlockSize bytes under a small top-level index: only the
	// top level stays with the Reader, the partitions go through the
	// block cache (RocksDB's kTwoLevelIndexSearch).
	TwoLevelIndexSearch IndexType = 2
)

// String returns the RocksDB name of t.
func (t IndexType) String() string {
	switch t {
	case BinarySearchIndex:
		return "kBinarySearch"
	case TwoLevelIndexSearch:
		return "kTwoLevelIndexSearch"
	}
	return fmt.Sprintf("IndexType(%d)", uint64(t))
}

func (o *WriterOptions) ensureDefaults() {
	if o.BlockSize <= 0 {
		o.BlockSize = 4096
	}
	if o.MetadataBlockSize <= 0 {
		o.MetadataBlockSize = 4096
	}
	if o.IndexType != TwoLevelIndexSearch {
		o.IndexType, o.PartitionFilters = BinarySearchIndex, false
	}
	if o.BlockRestartInterval <= 0 {
		o.BlockRestartInterval = 16
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = 10
	}
	if o.Compression == DefaultCompression {
		o.Compression = SnappyCompression
	}
	if o.Comparer == nil {
		o.Comparer = base.DefaultComparer
	}
	if o.Checksum == ChecksumDefault {
		o.Checksum = ChecksumCRC32C
	}
	if o.NumDeletionsThreshold == 0 {
		o.NumDeletionsThreshold = DefaultNumDeletionsThreshold
	}
	if o.DeletionSizeRatioThreshold == 0 {
		o.DeletionSizeRatioThreshold = DefaultDeletionSizeRatioThreshold
	}
}

// The defaults of WriterOptions.NumDeletionsThreshold and
// DeletionSizeRatioThreshold.
const (
	DefaultNumDeletionsThreshold      = 100
	DefaultDeletionSizeRatioThreshold = 0.5
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Comparer must have the name recorded in the table. Default
	// base.DefaultComparer.
	Comparer *base.Comparer
	// Cache caches data blocks; nil reads every block from the file.
	Cache *cache.Cache
	// CacheID, when not zero, is the namespace of the table's blocks in
	// Cache, from Cache.NewID: a table closed and opened again under the
	// ID it had finds the blocks it cached before (the DB's file cache
	// reopens tables it evicted). Zero takes a new ID.
	CacheID uint64
	// FileName names the file in errors.
	FileName string
	// MaxAutoReadaheadSize caps the automatic readahead of iterators, which
	// starts at the third sequential block read of the file (the second
	// with IterOptions.Async) at 8 KiB and doubles up to this. Default (0) 256 KiB; negative turns it off.
	MaxAutoReadaheadSize int64
	// AsyncReader, when set, reads large direct-IO readahead windows as
	// several concurrent requests. nil reads them with one ReadAt.
	AsyncReader vfs.AsyncReader
	// Stats, when set, receives the counts of the Reader's file reads, and
	// its memory in ReadersMem; many Readers may share one.
	Stats *ReadStats
	// CacheIndexAndFilterBlocks keeps the index and filter blocks in Cache
	// instead of in the Reader (RocksDB's cache_index_and_filter_blocks):
	// charged to the cache, evicted like data blocks, and read from the
	// file again when next needed. Without a Cache (or one with no room for
	// them) the Reader holds them, as it does by default.
	CacheIndexAndFilterBlocks bool
	// PinIndexAndFilterBlocks, with CacheIndexAndFilterBlocks, pins them in
	// the cache for the Reader's life: still charged to it, never evicted
	// (the DB sets it for L0 tables under
	// Options.PinL0FilterAndIndexBlocksInCache).
	PinIndexAndFilterBlocks bool
	// MmapReads maps the table read-only and reads its blocks from the
	// mapping instead of with ReadAt (RocksDB's allow_mmap_reads); a file
	// that cannot be mapped is read with ReadAt. Blocks are still verified
	// and cached as usual.
	MmapReads bool
	// PrefixExtractor lets point lookups (Get, MayContain, ProbeBloom)
	// probe a table whose filter holds prefixes only
	// (WriterOptions.DisableWholeKeyFiltering) with the key's prefix, when
	// the table was written with an extractor of its name. Default nil:
	// such a table's filter is not used by point lookups. Prefix seeks
	// name their extractor in IterOptions instead.
	PrefixExtractor base.SliceTransform
	// GlobalSeqNum, when not zero, is the seqnum of every point entry and
	// range tombstone of the table, whatever it stores (RocksDB's global
	// seqno of an ingested file, here recorded in the MANIFEST): the table
	// must hold each user key once, at seqnum 0, as an external table
	// does. Default 0: seqnums as stored.
	GlobalSeqNum base.SeqNum
}

// IterOptions configure a table iterator.
type IterOptions struct {
	// Lower and Upper bound the user keys the iterator returns:
	// Lower <= key < Upper. nil is unbounded.
	Lower, Upper []byte
	// FillCache adds the data blocks the iterator reads to the cache.
	FillCache bool
	// ReadaheadSize > 0 reads ahead this many bytes after each data block
	// read from the file, from the first read; 0 reads ahead automatically
	// (ReaderOptions.MaxAutoReadaheadSize); negative never reads ahead.
	ReadaheadSize int64
	// File, when set, is another open handle of the same table that the
	// iterator reads data blocks from (a direct-IO handle for compaction
	// inputs, so they bypass the page cache); the caller keeps it open until
	// the iterator is closed. Index and filter come from the Reader.
	File vfs.File
	// Async turns on the async read path (ReadOptions.AsyncIO): the first
	// phase of a two-phase seek (PrepareSeekGE) submits the read of the
	// data block a seek needs without waiting for it, and readahead is
	// double-buffered: the next window is read in the background, through
	// ReaderOptions.AsyncReader, while the iterator consumes the current
	// one. Without an AsyncReader it changes nothing.
	Async bool
	// Group, with Async, gathers the reads of the first phase of two-phase
	// seeks of many table iterators into one batch (submitted by
	// Group.Submit, or by the first iterator that waits); nil submits each
	// read on its own. The group must serve one goroutine and outlive the
	// iterators.
	Group *ReadGroup
	// Stats, when set, also receives the counts of this iterator's reads
	// (the Reader's own ReaderOptions.Stats always does): the per-call
	// counts behind the DB's PerfContext.
	Stats *ReadStats
	// SkipBlock, when set, is asked by First and Next before they read a
	// data block that has BlockProps: true skips it unread, as if it held
	// no entry. lower is the previous block's separator (the table's first
	// block: ok false), sep the block's own; every key of the block is
	// above lower's user key... and at most sep. For compaction inputs,
	// which move forward only; Seek, Last and Prev never skip.
	SkipBlock func(p *BlockProps, lower base.InternalKey, hasLower bool, sep base.InternalKey) bool
	// Skipped, when set, counts the blocks SkipBlock skipped.
	Skipped *int64
	// Deadline bounds the iterator's file reads (block reads, readahead
	// windows and their prefetches): one that cannot finish in time stops
	// the iterator with an error wrapping vfs.ErrDeadlineExceeded. Zero
	// bounds nothing.
	Deadline vfs.ReadDeadline
	// PrefixExtractor is the extractor of the prefixes SeekPrefixGE is
	// given: the table's prefix filter is consulted only when the table
	// was written with an extractor of the same name (any other table is
	// sought as by SeekGE). Default nil: SeekPrefixGE is SeekGE.
	PrefixExtractor base.SliceTransform
}

// ReadGroup gathers the reads of the first phase of two-phase seeks of many
// table iterators (IterOptions.Group) into one batch; see block.ReadGroup.
type ReadGroup = block.ReadGroup

// NewReadGroup returns an empty ReadGroup reading through r.
func NewReadGroup(r vfs.AsyncReader) *ReadGroup { return block.NewReadGroup(r) }

package shale

import (
	"fmt"
	"log/slog"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
)

// EntryType is the kind of an entry that a TablePropertiesCollector sees
// (RocksDB's EntryType).
type EntryType int

// The entry types.
const (
	EntryPut          EntryType = iota // a Put (Set)
	EntryDelete                        // a Delete tombstone
	EntrySingleDelete                  // a SingleDelete tombstone
	EntryMerge                         // a Merge operand
	// EntryRangeDeletion is a range tombstone: the key is its start, the
	// value its end.
	EntryRangeDeletion
	EntryBlobIndex // a reference to a value in a blob file
	EntryOther     // anything else
)

var entryTypeNames = [...]string{"Put", "Delete", "SingleDelete", "Merge", "RangeDeletion", "BlobIndex", "Other"}

// String returns the type's name, e.g. "Delete".
func (t EntryType) String() string {
	if t < 0 || int(t) >= len(entryTypeNames) {
		return fmt.Sprintf("EntryType(%d)", int(t))
	}
	return entryTypeNames[t]
}

func entryTypeOf(k base.Kind) EntryType {
	switch k {
	case base.KindSet:
		return EntryPut
	case base.KindDelete:
		return EntryDelete
	case base.KindSingleDelete:
		return EntrySingleDelete
	case base.KindMerge:
		return EntryMerge
	case base.KindRangeDelete:
		return EntryRangeDeletion
	case base.KindBlobIndex:
		return EntryBlobIndex
	}
	return EntryOther
}

// UserCollectedProperties are the properties collectors add to a table
// (RocksDB's UserCollectedProperties): names and values, stored in the
// table's properties block. A property named like one of the table's
// built-in properties (such as "rocksdb.num.entries") is not stored.
type UserCollectedProperties map[string]string

// TablePropertiesCollector gathers properties of one table while a flush
// or a compaction writes it (RocksDB's TablePropertiesCollector). A
// collector serves one table and is called from one goroutine.
type TablePropertiesCollector interface {
	// AddUserKey is called for every entry of the table, in the table's
	// order: point entries by key (a key's versions newest first), then the
	// range tombstones (type EntryRangeDeletion, the key is the start and
	// the value the end). seq is the entry's sequence number, fileSize the
	// bytes of the table's finished blocks so far. key and value are valid only during the call.
	// An error is logged and collection goes on; it never fails the write
	// (as in RocksDB).
	AddUserKey(key, value []byte, typ EntryType, seq uint64, fileSize uint64) error
	// Finish is called once the table holds every entry; it adds the
	// collected properties to props. On error the error is logged and
	// none of the collector's properties are stored.
	Finish(props UserCollectedProperties) error
	// Name names the collector in the log.
	Name() string
	// NeedCompact, asked after Finish, reports that the table should be
	// compacted: it is then marked for compaction, which the MANIFEST
	// records, and automatic compaction picks such tables first.
	NeedCompact() bool
}

// TablePropertiesCollectorContext describes the table a collector is made
// for.
type TablePropertiesCollectorContext struct {
	// Level is the level the table is written to: 0 for a flush (RocksDB's
	// level_at_creation).
	Level int
	// Flush is set when a flush writes the table, clear for a compaction.
	Flush bool
}

// TablePropertiesCollectorFactory makes one TablePropertiesCollector for
// every table written (RocksDB's TablePropertiesCollectorFactory); see
// Options.TablePropertiesCollectorFactories. It is called concurrently by
// flushes and compactions.
type TablePropertiesCollectorFactory interface {
	CreateTablePropertiesCollector(ctx TablePropertiesCollectorContext) TablePropertiesCollector
	// Name names the factory in the OPTIONS file.
	Name() string
}

// collectorAdapter runs a user's collector as one of the sstable writer's
// property collectors.
type collectorAdapter struct {
	c      TablePropertiesCollector
	w      *sstable.Writer // set once the writer exists, for the file size
	logger *slog.Logger
	file   string
	// addFailed is set after the first error of AddUserKey, which is the
	// only one logged for the table.
	addFailed bool
}

func (a *collectorAdapter) Name() string { return a.c.Name() }

func (a *collectorAdapter) Add(key base.InternalKey, value []byte) {
	var size uint64
	if a.w != nil {
		size = a.w.FileSize()
	}
	if err := a.c.AddUserKey(key.UserKey, value, entryTypeOf(key.Kind()), uint64(key.SeqNum()), size); err != nil && !a.addFailed {
		a.addFailed = true
		a.logger.Warn("table properties collector failed to add an entry (further errors for this table are not logged)",
			"collector", a.c.Name(), "table", a.file, "error", err)
	}
}

func (a *collectorAdapter) Finish(props map[string]string) {
	user := UserCollectedProperties{}
	if err := a.c.Finish(user); err != nil {
		a.logger.Warn("table properties collector failed to finish; its properties are not stored",
			"collector", a.c.Name(), "table", a.file, "error", err)
		return
	}
	for k, v := range user {
		props[k] = v
	}
}

// NewCompactOnDeletionCollectorFactory returns the factory of RocksDB's
// CompactOnDeletionCollector: a table is marked for compaction when some
// slidingWindowSize consecutive entries of it hold at least deletionTrigger
// deletions (Delete and SingleDelete entries; a range tombstone counts as
// an entry, not as a deletion), or when deletions make up at least
// deletionRatio of all its entries. A slidingWindowSize of 0 turns the
// window test off, and so does a deletionTrigger larger than the window; a
// deletionRatio outside (0, 1] turns the ratio test off. A deletionTrigger
// of 0 or 1 marks a table at its first deletion. The window is exact:
// RocksDB approximates it with 128 buckets of ⌈N/128⌉ entries, so its
// window may reach up to 127 entries further back (a window below 128
// entries spans 128). Negative arguments count as 0.
func NewCompactOnDeletionCollectorFactory(slidingWindowSize, deletionTrigger int, deletionRatio float64) TablePropertiesCollectorFactory {
	return &compactOnDeletionFactory{
		window:  max(slidingWindowSize, 0),
		trigger: max(deletionTrigger, 0),
		ratio:   deletionRatio,
	}
}

type compactOnDeletionFactory struct {
	window, trigger int
	ratio           float64
}

func (f *compactOnDeletionFactory) Name() string {
	return fmt.Sprintf("CompactOnDeletionCollector (Sliding window size = %d Deletion trigger = %d Deletion ratio = %g)",
		f.window, f.trigger, f.ratio)
}

func (f *compactOnDeletionFactory) CreateTablePropertiesCollector(TablePropertiesCollectorContext) TablePropertiesCollector {
	c := &compactOnDeletionCollector{window: uint64(f.window), trigger: uint64(max(f.trigger, 1))}
	if f.ratio > 0 && f.ratio <= 1 {
		c.ratio = f.ratio
	}
	if c.trigger > c.window {
		c.window = 0 // no window of that size can hold that many deletions
	}
	return c
}

// compactOnDeletionCollector is the collector of
// NewCompactOnDeletionCollectorFactory.
type compactOnDeletionCollector struct {
	window, trigger uint64 // window 0: no window test; trigger >= 1
	ratio           float64
	// entries and deletions count everything added so far (entry i is the
	// one added i-th, from 0).
	entries, deletions uint64
	// recent holds the positions of the last deletions, at most trigger of
	// them: appended until full, then a ring whose oldest element is at
	// next. Its memory is 8 bytes per deletion up to trigger.
	recent []uint64
	next   int
	need   bool
}

func (c *compactOnDeletionCollector) Name() string { return "CompactOnDeletionCollector" }

func (c *compactOnDeletionCollector) AddUserKey(_, _ []byte, typ EntryType, _ uint64, _ uint64) error {
	pos := c.entries
	c.entries++
	if typ != EntryDelete && typ != EntrySingleDelete {
		return nil
	}
	c.deletions++
	if c.need || c.window == 0 {
		return nil
	}
	// The window of the last `window` entries, which ends at this
	// deletion, holds `trigger` deletions when the trigger-th most recent
	// deletion (this one counted) lies in it.
	if uint64(len(c.recent)) < c.trigger {
		c.recent = append(c.recent, pos)
		if uint64(len(c.recent)) < c.trigger {
			return nil
		}
	} else {
		c.recent[c.next] = pos
		c.next = (c.next + 1) % len(c.recent)
	}
	if oldest := c.recent[c.next]; pos-oldest < c.window {
		c.need = true
	}
	return nil
}

func (c *compactOnDeletionCollector) Finish(UserCollectedProperties) error {
	if !c.need && c.ratio > 0 && c.entries > 0 && float64(c.deletions)/float64(c.entries) >= c.ratio {
		c.need = true
	}
	return nil
}

func (c *compactOnDeletionCollector) NeedCompact() bool { return c.need }

// TableProperties are the properties of one table (RocksDB's
// TableProperties), read from its properties block.
type TableProperties struct {
	// DataSize, IndexSize and FilterSize are the on-disk bytes of the data
	// blocks, the index block and the filter block.
	DataSize, IndexSize, FilterSize uint64
	// RawKeySize and RawValueSize are the uncompressed bytes of the
	// encoded internal keys and of the values.
	RawKeySize, RawValueSize uint64
	// NumDataBlocks counts the data blocks, NumTombstoneDenseBlocks those
	// dense in point tombstones (Options.NumDeletionsThreshold).
	NumDataBlocks, NumTombstoneDenseBlocks uint64
	// NumEntries counts point entries and range tombstones; NumDeletions
	// Delete, SingleDelete and range tombstone entries;
	// NumRangeDeletions range tombstones.
	NumEntries, NumDeletions, NumRangeDeletions uint64
	// ComparatorName and CompressionName name the key order and the block
	// compression the table was written with.
	ComparatorName, CompressionName string
	// CreationTime is when the table was written (unix seconds).
	CreationTime uint64
	// UserCollectedProperties are the properties the collectors of
	// Options.TablePropertiesCollectorFactories added.
	UserCollectedProperties UserCollectedProperties
	// PrefixExtractorName names the Options.PrefixExtractor the table was
	// written with ("" for none; RocksDB's prefix_extractor_name).
	// WholeKeyFiltering and PrefixFiltering say whether its bloom filter
	// holds the user keys and the extractor's prefixes.
	PrefixExtractorName                string
	WholeKeyFiltering, PrefixFiltering bool
	// IndexType is the table's index (Options.IndexType when it was
	// written; RocksDB's index_type property). IndexPartitions counts its
	// index partitions and TopLevelIndexSize is its top-level index's size
	// (RocksDB's index_partitions and top_level_index_size);
	// FilterPartitions counts its filter partitions. All 0 for a table
	// with one index block.
	IndexType                                            IndexType
	IndexPartitions, TopLevelIndexSize, FilterPartitions uint64
}

func tablePropertiesOf(p *sstable.Properties) *TableProperties {
	tp := &TableProperties{
		DataSize: p.DataSize, IndexSize: p.IndexSize, FilterSize: p.FilterSize,
		RawKeySize: p.RawKeySize, RawValueSize: p.RawValueSize,
		NumDataBlocks: p.NumDataBlocks, NumTombstoneDenseBlocks: p.NumTombstoneDenseBlocks,
		NumEntries: p.NumEntries, NumDeletions: p.NumDeletions, NumRangeDeletions: p.NumRangeDeletions,
		ComparatorName: p.ComparerName, CompressionName: p.CompressionName,
		CreationTime:            p.CreationTime,
		UserCollectedProperties: UserCollectedProperties{},
		PrefixExtractorName:     p.PrefixExtractorName,
		WholeKeyFiltering:       p.WholeKeyFiltering,
		PrefixFiltering:         p.PrefixFiltering,
		IndexType:               p.IndexType,
		IndexPartitions:         p.IndexPartitions,
		TopLevelIndexSize:       p.TopLevelIndexSize,
		FilterPartitions:        p.FilterPartitions,
	}
	for k, v := range p.User {
		tp.UserCollectedProperties[k] = v
	}
	return tp
}

// TablePropertiesCollection maps the path of each table to its properties
// (RocksDB's TablePropertiesCollection).
type TablePropertiesCollection map[string]*TableProperties

// GetPropertiesOfAllTables returns the properties of every live table
// (RocksDB's GetPropertiesOfAllTables), opening those not open.
func (d *DB) GetPropertiesOfAllTables() (TablePropertiesCollection, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	defer rs.unref()
	out := TablePropertiesCollection{}
	for _, files := range rs.version.Levels {
		for _, f := range files {
			t, err := d.fileCache.findTable(f.FileNum)
			if err != nil {
				return nil, err
			}
			out[d.tablePath(f.FileNum)] = tablePropertiesOf(t.reader.Properties())
			t.release()
		}
	}
	return out, nil
}

// LiveFileMetaData describes one live table (RocksDB's LiveFileMetaData),
// as the MANIFEST records it.
type LiveFileMetaData struct {
	// Name is the file's name in the database directory, e.g. "000012.sst".
	Name  string
	Level int
	Size  uint64
	// SmallestKey and LargestKey bound the user keys of the table.
	SmallestKey, LargestKey []byte
	// SmallestSeqno and LargestSeqno bound its sequence numbers.
	SmallestSeqno, LargestSeqno uint64
	// NumEntries and NumDeletions are its properties of those names.
	NumEntries, NumDeletions uint64
	// BeingCompacted is set while a compaction reads the table.
	BeingCompacted bool
	// MarkedForCompaction is set when a table properties collector asked
	// for the table to be compacted (NeedCompact).
	MarkedForCompaction bool
	// FileChecksum is the checksum of the whole file, raw bytes, made by
	// the generator FileChecksumFuncName names as the file was written
	// (RocksDB's file_checksum, file_checksum_func_name). A table recorded
	// without one has an empty FileChecksum and UnknownFileChecksumFuncName.
	FileChecksum         []byte
	FileChecksumFuncName string
}

// GetLiveFilesMetaData describes every live table, by level, L0 newest
// first (RocksDB's GetLiveFilesMetaData).
func (d *DB) GetLiveFilesMetaData() []LiveFileMetaData {
	if d.checkOpen() != nil {
		return nil
	}
	rs := d.loadReadState()
	if rs == nil {
		return nil
	}
	defer rs.unref()
	var out []LiveFileMetaData
	d.mu.Lock() // Compacting is guarded by d.mu
	defer d.mu.Unlock()
	for level, files := range rs.version.Levels {
		for _, f := range files {
			out = append(out, LiveFileMetaData{
				Name: base.MakeFilename(base.FileTypeTable, f.FileNum), Level: level, Size: f.Size,
				SmallestKey: append([]byte(nil), f.Smallest.UserKey...), LargestKey: append([]byte(nil), f.Largest.UserKey...),
				SmallestSeqno: uint64(f.SmallestSeq), LargestSeqno: uint64(f.LargestSeq),
				NumEntries: f.NumEntries, NumDeletions: f.NumDeletions,
				BeingCompacted: f.Compacting, MarkedForCompaction: f.MarkedForCompaction,
			})
			last := &out[len(out)-1]
			last.FileChecksum, last.FileChecksumFuncName = liveFileChecksum(f.FileChecksum, f.FileChecksumFuncName)
		}
	}
	return out
}

// LiveBlobFileMetaData describes one live blob file (RocksDB's
// BlobMetaData), as the MANIFEST records it.
type LiveBlobFileMetaData struct {
	// Name is the file's name in the database directory, e.g. "000013.blob".
	Name string
	Size uint64
	// TotalBlobCount and TotalBlobBytes are the blobs the file holds;
	// GarbageBlobCount and GarbageBlobBytes those no table references.
	TotalBlobCount, TotalBlobBytes     uint64
	GarbageBlobCount, GarbageBlobBytes uint64
	// FileChecksum and FileChecksumFuncName are the whole file's checksum
	// and its generator, as LiveFileMetaData's. A blob file recorded before
	// whole-file checksums has the blob format's checksum of the bytes
	// before its footer, named "crc32c" or "xxhash64".
	FileChecksum         []byte
	FileChecksumFuncName string
}

// GetLiveBlobFilesMetaData describes every live blob file, by number.
func (d *DB) GetLiveBlobFilesMetaData() []LiveBlobFileMetaData {
	if d.checkOpen() != nil {
		return nil
	}
	rs := d.loadReadState()
	if rs == nil {
		return nil
	}
	defer rs.unref()
	out := make([]LiveBlobFileMetaData, 0, len(rs.version.BlobFiles))
	for _, b := range rs.version.BlobFiles {
		m := LiveBlobFileMetaData{Name: base.MakeFilename(base.FileTypeBlob, b.FileNum), Size: b.Size,
			TotalBlobCount: b.TotalCount, TotalBlobBytes: b.TotalBytes, GarbageBlobCount: b.GarbageCount, GarbageBlobBytes: b.GarbageBytes}
		m.FileChecksum, m.FileChecksumFuncName = liveFileChecksum(b.ChecksumValue, b.ChecksumMethod)
		out = append(out, m)
	}
	return out
}

package sstable

import (
	"cmp"
	"encoding/binary"
	"sort"

	"github.com/shaledb/shale/internal/base"
)

// Properties describe a table; they are stored in its properties block.
type Properties struct {
	// NumEntries counts point entries and range tombstones, as RocksDB does.
	NumEntries uint64
	// NumDeletions counts Delete, SingleDelete and range tombstone entries.
	NumDeletions uint64
	// NumRangeDeletions counts range tombstone entries.
	NumRangeDeletions uint64
	// RawKeySize and RawValueSize sum the encoded internal keys and the
	// values of all entries (tombstone ends count as values).
	RawKeySize, RawValueSize uint64
	// NumDataBlocks counts the data blocks.
	NumDataBlocks uint64
	// NumTombstoneDenseBlocks counts the data blocks that are dense in
	// point tombstones (see WriterOptions.NumDeletionsThreshold); tables
	// written before it was recorded read 0.
	NumTombstoneDenseBlocks uint64
	// DataSize, IndexSize and FilterSize are the on-disk sizes of the data
	// blocks, the index block and the filter block, trailers included.
	DataSize, IndexSize, FilterSize uint64
	// ComparerName names the user key order the table was written with.
	ComparerName string
	// CompressionName is the Compression.String of the writer's setting.
	CompressionName string
	// CreationTime is the unix time (seconds) the writer was created.
	CreationTime uint64
	// SmallestSeq and LargestSeq bound the seqnums of all entries.
	SmallestSeq, LargestSeq base.SeqNum
	// User holds the properties of the PropertyCollectors.
	User map[string]string
	// PrefixExtractorName names the WriterOptions.PrefixExtractor the table
	// was written with ("" for none; stored as RocksDB's "nullptr").
	PrefixExtractorName string
	// WholeKeyFiltering says the bloom filter holds the user keys, and
	// PrefixFiltering that it holds the prefixes of PrefixExtractorName
	// (RocksDB's block-based table properties of those names). Tables
	// written before they were recorded read true and false.
	WholeKeyFiltering, PrefixFiltering bool
	// IndexType is the table's index: BinarySearchIndex (one index block)
	// or TwoLevelIndexSearch (RocksDB's
	// rocksdb.block.based.table.index.type, as its numbers).
	// IndexPartitions counts the index partitions and TopLevelIndexSize is
	// the top-level index block's size, trailer included (RocksDB's
	// rocksdb.index.partitions and rocksdb.top-level.index.size);
	// FilterPartitions counts the filter partitions (0 for a single
	// filter). All read 0 in a table with a single index block.
	IndexType                                            IndexType
	IndexPartitions, TopLevelIndexSize, FilterPartitions uint64
}

// Property names, RocksDB's where RocksDB has one.
const (
	propNumEntries        = "rocksdb.num.entries"
	propNumDeletions      = "rocksdb.deleted.keys"
	propNumRangeDeletions = "rocksdb.num.range-deletions"
	propRawKeySize        = "rocksdb.raw.key.size"
	propRawValueSize      = "rocksdb.raw.value.size"
	propNumDataBlocks     = "rocksdb.num.data.blocks"
	propNumDenseBlocks    = "shale.num.tombstone-dense-blocks"
	propDataSize          = "rocksdb.data.size"
	propIndexSize         = "rocksdb.index.size"
	propFilterSize        = "rocksdb.filter.size"
	propComparer          = "rocksdb.comparator"
	propCompression       = "rocksdb.compression"
	propCreationTime      = "rocksdb.creation.time"
	propSmallestSeq       = "shale.smallest.seqno"
	propLargestSeq        = "shale.largest.seqno"
	propPrefixExtractor   = "rocksdb.prefix.extractor.name"
	propWholeKeyFiltering = "rocksdb.block.based.table.whole.key.filtering"
	propPrefixFiltering   = "rocksdb.block.based.table.prefix.filtering"
	propIndexType         = "rocksdb.block.based.table.index.type"
	propIndexPartitions   = "rocksdb.index.partitions"
	propTopLevelIndexSize = "rocksdb.top-level.index.size"
	propFilterPartitions  = "shale.filter.partitions"
)

// noPrefixExtractor is RocksDB's rocksdb.prefix.extractor.name of a table
// written without one.
const noPrefixExtractor = "nullptr"

// boolProp renders a boolean property as RocksDB does.
func boolProp(b bool) []byte {
	if b {
		return []byte("1")
	}
	return []byte("0")
}

// uintProps maps the numeric property names to their fields.
func (p *Properties) uintProps() map[string]*uint64 {
	return map[string]*uint64{
		propNumEntries:        &p.NumEntries,
		propNumDeletions:      &p.NumDeletions,
		propNumRangeDeletions: &p.NumRangeDeletions,
		propRawKeySize:        &p.RawKeySize,
		propRawValueSize:      &p.RawValueSize,
		propNumDataBlocks:     &p.NumDataBlocks,
		propNumDenseBlocks:    &p.NumTombstoneDenseBlocks,
		propDataSize:          &p.DataSize,
		propIndexSize:         &p.IndexSize,
		propFilterSize:        &p.FilterSize,
		propCreationTime:      &p.CreationTime,
		propSmallestSeq:       (*uint64)(&p.SmallestSeq),
		propLargestSeq:        (*uint64)(&p.LargestSeq),
		propIndexType:         (*uint64)(&p.IndexType),
		propIndexPartitions:   &p.IndexPartitions,
		propTopLevelIndexSize: &p.TopLevelIndexSize,
		propFilterPartitions:  &p.FilterPartitions,
	}
}

// encode builds the properties block: sorted names, numbers as uvarints,
// strings as raw bytes. Built-in names win over user properties that reuse
// them.
func (p *Properties) encode(restartInterval int) []byte {
	vals := make(map[string][]byte, len(p.User)+15)
	for k, v := range p.User {
		vals[k] = []byte(v)
	}
	for k, v := range p.uintProps() {
		vals[k] = binary.AppendUvarint(nil, *v)
	}
	// The partitioned index's properties are written only when set: a
	// table with one index reads them as 0 and stays as it was before
	// they existed.
	for _, k := range []string{propIndexType, propIndexPartitions, propTopLevelIndexSize, propFilterPartitions} {
		if v, _ := binary.Uvarint(vals[k]); v == 0 {
			delete(vals, k)
		}
	}
	vals[propComparer] = []byte(p.ComparerName)
	vals[propCompression] = []byte(p.CompressionName)
	vals[propPrefixExtractor] = []byte(cmp.Or(p.PrefixExtractorName, noPrefixExtractor))
	vals[propWholeKeyFiltering] = boolProp(p.WholeKeyFiltering)
	vals[propPrefixFiltering] = boolProp(p.PrefixFiltering)
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	bw := blockWriter{restartInterval: restartInterval}
	for _, k := range names {
		bw.add([]byte(k), vals[k])
	}
	return bw.finish()
}

// decodeProperties parses a properties block; the error message is empty on
// success.
func decodeProperties(block []byte) (*Properties, string) {
	p := &Properties{User: map[string]string{}, WholeKeyFiltering: true}
	nums := p.uintProps()
	var it blockIter
	if !it.init(block, false) {
		return nil, "bad properties block"
	}
	var prev []byte
	for ok := it.first(); ok; ok = it.next() {
		if prev != nil && string(it.key) <= string(prev) {
			return nil, "properties out of order"
		}
		prev = append(prev[:0], it.key...)
		if dst, ok := nums[string(it.key)]; ok {
			v, n := binary.Uvarint(it.val)
			if n <= 0 || n != len(it.val) {
				return nil, "bad property " + string(it.key)
			}
			*dst = v
			continue
		}
		switch string(it.key) {
		case propComparer:
			p.ComparerName = string(it.val)
		case propCompression:
			p.CompressionName = string(it.val)
		case propPrefixExtractor:
			if p.PrefixExtractorName = string(it.val); p.PrefixExtractorName == noPrefixExtractor {
				p.PrefixExtractorName = ""
			}
		case propWholeKeyFiltering:
			p.WholeKeyFiltering = string(it.val) == "1"
		case propPrefixFiltering:
			p.PrefixFiltering = string(it.val) == "1"
		default:
			p.User[string(it.key)] = string(it.val)
		}
	}
	if it.corrupt {
		return nil, "bad properties block"
	}
	return p, ""
}

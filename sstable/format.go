package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
)

const (
	// footerLen is the fixed size of the footer.
	footerLen = 1 + 2*block.MaxHandleLen + 4 + 8
	// tableMagic ends every shale table ("shaleSST" read big-endian).
	tableMagic uint64 = 0x7368616c65535354
	// formatVersion is the format version of a table with a single index
	// block.
	formatVersion uint32 = 1
	// formatVersionTwoLevel marks a table whose footer's index handle
	// points at a top-level index over index partitions
	// (TwoLevelIndexSearch); readers from before it refuse the table with
	// an unknown-version error instead of misreading it.
	formatVersionTwoLevel uint32 = 2
)

// Meta block names in the metaindex block.
const (
	metaFilterName     = "fullfilter.shale.bloom"
	metaPropertiesName = "rocksdb.properties"
	metaRangeDelName   = "rocksdb.range_del"
	// metaPrefixFilterName names the filter of a table written without
	// whole keys (WriterOptions.DisableWholeKeyFiltering): the same block
	// layout, holding prefixes only. The other name keeps it from readers
	// that predate it, which would take its answers for whole keys; they
	// see no filter at all.
	metaPrefixFilterName = "fullfilter.shale.prefixbloom"
	// metaPartFilterName and metaPartPrefixFilterName name the top-level
	// filter index of a table with partitioned filters (only in format
	// version 2): an index block mapping the same separators as the
	// top-level index to filter partitions, each a filter block of the
	// keys (or prefixes only) of the data blocks of one index partition.
	metaPartFilterName       = "partitionedfilter.shale.bloom"
	metaPartPrefixFilterName = "partitionedfilter.shale.prefixbloom"
)

// footer is the fixed-size tail of a table.
type footer struct {
	checksum  ChecksumType
	metaindex block.Handle
	index     block.Handle
	// twoLevel says index is a top-level index over index partitions
	// (format version 2).
	twoLevel bool
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	b[0] = byte(f.checksum)
	h := f.metaindex.Append(b[1:1])
	f.index.Append(h)
	v := formatVersion
	if f.twoLevel {
		v = formatVersionTwoLevel
	}
	binary.LittleEndian.PutUint32(b[footerLen-12:], v)
	binary.LittleEndian.PutUint64(b[footerLen-8:], tableMagic)
	return b
}

// decodeFooter parses the footer b found at offset off of file.
func decodeFooter(file string, off int64, b []byte) (footer, error) {
	var f footer
	if magic := binary.LittleEndian.Uint64(b[footerLen-8:]); magic != tableMagic {
		return f, base.CorruptionErrorf(file, off, "bad table magic %#x (not a shale table)", magic)
	}
	switch v := binary.LittleEndian.Uint32(b[footerLen-12:]); v {
	case formatVersion:
	case formatVersionTwoLevel:
		f.twoLevel = true
	default:
		return f, base.CorruptionErrorf(file, off, "unknown table format version %d", v)
	}
	f.checksum = ChecksumType(b[0])
	if !f.checksum.Known() {
		return f, base.CorruptionErrorf(file, off, "unknown checksum type %d", b[0])
	}
	handles := b[1 : 1+2*block.MaxHandleLen]
	var n, m int
	f.metaindex, n = block.DecodeHandle(handles)
	if n > 0 {
		f.index, m = block.DecodeHandle(handles[n:])
	}
	if n <= 0 || m <= 0 {
		return f, base.CorruptionErrorf(file, off, "bad block handle in footer")
	}
	for _, c := range handles[n+m:] {
		if c != 0 {
			return f, base.CorruptionErrorf(file, off, "nonzero footer padding")
		}
	}
	if !bytes.Equal(f.encode(), b[:footerLen]) {
		// A handle varint with a redundant continuation byte decodes to
		// the same handle; only a damaged file has one, and a table
		// writes no footer any other way.
		return f, base.CorruptionErrorf(file, off, "footer is not in canonical form")
	}
	return f, nil
}

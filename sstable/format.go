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
	// formatVersion is the current table format version.
	formatVersion uint32 = 1
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
)

// footer is the fixed-size tail of a table.
type footer struct {
	checksum  ChecksumType
	metaindex block.Handle
	index     block.Handle
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	b[0] = byte(f.checksum)
	h := f.metaindex.Append(b[1:1])
	f.index.Append(h)
	binary.LittleEndian.PutUint32(b[footerLen-12:], formatVersion)
	binary.LittleEndian.PutUint64(b[footerLen-8:], tableMagic)
	return b
}

// decodeFooter parses the footer b found at offset off of file.
func decodeFooter(file string, off int64, b []byte) (footer, error) {
	var f footer
	if magic := binary.LittleEndian.Uint64(b[footerLen-8:]); magic != tableMagic {
		return f, base.CorruptionErrorf(file, off, "bad table magic %#x (not a shale table)", magic)
	}
	if v := binary.LittleEndian.Uint32(b[footerLen-12:]); v != formatVersion {
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

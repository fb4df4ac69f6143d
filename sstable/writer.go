package sstable

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// WriterMetadata describes a finished table.
type WriterMetadata struct {
	// Smallest and Largest bound every point entry and range tombstone.
	// When a tombstone ends after the last point key, Largest is
	// base.MakeRangeDeleteSentinel(end).
	Smallest, Largest base.InternalKey
	// SmallestSeq and LargestSeq bound the seqnums of all entries.
	SmallestSeq, LargestSeq base.SeqNum
	// Size is the file size.
	Size uint64
	// Props are the properties written to the table.
	Props Properties
}

// indexEntry is one finished data block waiting to be described in the
// index block.
type indexEntry struct {
	sep    []byte // encoded internal key
	handle block.Handle
	props  BlockProps // with WriterOptions.BlockAttr
}

// Writer writes one table. Entries are added in strictly increasing
// internal key order; Close writes the meta blocks, index and footer.
// A Writer is not safe for concurrent use.
type Writer struct {
	f        vfs.File
	name     string
	o        WriterOptions
	cmp      base.Compare
	sink     block.Sink
	out      *bufio.Writer
	offset   uint64
	err      error
	closed   bool
	data     blockWriter
	index    []indexEntry
	pending  bool // a data block was flushed; its index entry waits for the next key
	pendingH block.Handle
	// blockProps are the current data block's (WriterOptions.BlockAttr),
	// pendingProps the flushed block's, waiting for its index entry.
	blockProps, pendingProps BlockProps
	lastKey                  []byte // encoded internal key of the last point entry
	hasPoint                 bool
	hashes                   []uint64
	lastHash                 []byte // last user key added to hashes
	compBuf                  []byte
	sepBuf                   []byte
	trailer                  block.TrailerWriter

	rangeDels   blockWriter
	lastDel     base.InternalKey // owns its bytes
	lastDelEnd  []byte
	hasRangeDel bool
	firstDel    base.InternalKey

	props     Properties
	firstKey  []byte
	seqInited bool

	// blockDels and blockDelBytes count the point tombstones of the data
	// block being built and the bytes they take in it, to tell whether the block
	// is tombstone-dense when it is flushed.
	blockDels, blockDelBytes int

	// wholeKeys says the filter holds user keys; lastPrefix is the prefix
	// (WriterOptions.PrefixExtractor) of the last key in the filter, while
	// hasPrefix.
	wholeKeys  bool
	hasPrefix  bool
	lastPrefix []byte

	// With TwoLevelIndexSearch: partBytes estimates the index partition
	// being built (the entries in index); parts are the finished ones,
	// kept in memory and written after the data blocks at Close; with
	// PartitionFilters filterParts[i] is partition i's filter block (nil
	// when it has no keys).
	partBytes   int
	parts       []finishedPartition
	filterParts [][]byte
}

// finishedPartition is a finished index partition: its block (uncompressed)
// and its separator, the last entry's (an encoded internal key).
type finishedPartition struct {
	sep   []byte
	block []byte
}

// NewWriter returns a Writer that writes a table to f, which it owns from
// now on; fileName is used in error messages.
func NewWriter(f vfs.File, fileName string, o WriterOptions) *Writer {
	o.ensureDefaults()
	w := &Writer{
		f:    f,
		name: fileName,
		o:    o,
		cmp:  o.Comparer.Compare,
	}
	w.sink = block.NewSink(f, o.TargetFileSize, o.BytesPerSync)
	w.out = bufio.NewWriterSize(&w.sink, 256<<10)
	w.data.restartInterval = o.BlockRestartInterval
	w.rangeDels.restartInterval = 1
	w.props.ComparerName = o.Comparer.Name
	w.props.CompressionName = o.Compression.String()
	w.props.CreationTime = uint64(time.Now().Unix())
	w.wholeKeys = o.PrefixExtractor == nil || !o.DisableWholeKeyFiltering
	w.props.WholeKeyFiltering = w.wholeKeys
	if o.PrefixExtractor != nil {
		w.props.PrefixExtractorName = o.PrefixExtractor.Name()
		w.props.PrefixFiltering = true
	}
	return w
}

// addToFilter adds the user key of a new point key to the filter's hashes:
// the key itself unless whole keys are off, and its prefix when it has one
// other than the previous key's (keys come sorted, so the keys of a prefix
// come together) and other than the key itself, already in.
func (w *Writer) addToFilter(userKey []byte) {
	if w.wholeKeys {
		w.hashes = append(w.hashes, bloomHash(userKey))
	}
	tr := w.o.PrefixExtractor
	if tr == nil || !tr.InDomain(userKey) {
		return
	}
	p := tr.Transform(userKey)
	if w.hasPrefix && bytes.Equal(p, w.lastPrefix) {
		return
	}
	if !w.wholeKeys || !bytes.Equal(p, userKey) {
		w.hashes = append(w.hashes, bloomHash(p))
	}
	w.lastPrefix = append(w.lastPrefix[:0], p...)
	w.hasPrefix = true
}

func (w *Writer) noteSeq(s base.SeqNum) {
	if !w.seqInited {
		w.props.SmallestSeq, w.props.LargestSeq = s, s
		w.seqInited = true
		return
	}
	w.props.SmallestSeq = min(w.props.SmallestSeq, s)
	w.props.LargestSeq = max(w.props.LargestSeq, s)
}

// Add appends a point entry. Keys must be strictly increasing in internal
// order; range tombstones go through AddRangeTombstone.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("shale: sstable writer for %s is closed", w.name)
	}
	kind := key.Kind()
	if kind == base.KindRangeDelete || !kind.Valid() {
		return base.InvalidArgumentf("shale: sstable: cannot Add a key of kind %s", kind)
	}
	if w.hasPoint {
		last, _ := base.DecodeInternalKey(w.lastKey)
		if base.InternalCompare(w.cmp, last, key) >= 0 {
			return base.InvalidArgumentf("shale: sstable: key %s added after %s (keys must be strictly increasing)", key, last)
		}
	}
	if w.pending {
		w.addIndexEntry(key.UserKey)
	}
	if w.o.BloomBitsPerKey > 0 && (w.lastHash == nil || w.cmp(w.lastHash, key.UserKey) != 0) {
		w.addToFilter(key.UserKey)
		w.lastHash = append(w.lastHash[:0], key.UserKey...)
	}
	w.lastKey = key.AppendEncoded(w.lastKey[:0])
	if !w.hasPoint {
		w.firstKey = append([]byte(nil), w.lastKey...)
		w.hasPoint = true
	}
	before := len(w.data.buf)
	w.data.add(w.lastKey, value)
	if w.o.BlockAttr != nil {
		w.blockProps.add(key, value, w.o.BlockAttr)
	}
	w.noteSeq(key.SeqNum())
	w.props.NumEntries++
	if kind.IsTombstone() {
		w.props.NumDeletions++
		w.blockDels++
		// The bytes the entry takes in the block, after prefix compression.
		w.blockDelBytes += len(w.data.buf) - before
	}
	w.props.RawKeySize += uint64(len(w.lastKey))
	w.props.RawValueSize += uint64(len(value))
	for _, c := range w.o.Collectors {
		c.Add(key, value)
	}
	if w.data.estimatedSize() >= w.o.BlockSize {
		w.flushData()
	}
	return w.err
}

// addIndexEntry records the index entry of the flushed block, whose last
// key is w.lastKey, now that the next block's first user key is known (nil
// for the last block).
func (w *Writer) addIndexEntry(next []byte) {
	last, _ := base.DecodeInternalKey(w.lastKey)
	sep := last
	var u []byte
	if next == nil {
		u = w.o.Comparer.Successor(w.sepBuf[:0], last.UserKey)
	} else if w.cmp(last.UserKey, next) < 0 {
		u = w.o.Comparer.Separator(w.sepBuf[:0], last.UserKey, next)
	}
	w.sepBuf = u
	// A shortened user key k > last gets the smallest trailer, so that
	// (k, max) sorts after every entry of the block and, because k < next,
	// before the next block. Anything else keeps the block's last key.
	if u != nil && w.cmp(u, last.UserKey) > 0 && (next == nil || w.cmp(u, next) < 0) {
		sep = base.MakeInternalKey(u, base.SeqNumMax, base.KindMax)
	}
	w.pendingProps.Continues = next != nil && w.cmp(last.UserKey, next) == 0
	e := indexEntry{sep: sep.AppendEncoded(nil), handle: w.pendingH, props: w.pendingProps}
	w.index = append(w.index, e)
	w.pending = false
	if w.o.IndexType == TwoLevelIndexSearch {
		w.partBytes += len(e.sep) + block.MaxHandleLen + 3 // entry header and restart point, about
		if w.o.BlockAttr != nil {
			w.partBytes += 7 * 3
		}
		if w.partBytes >= w.o.MetadataBlockSize {
			w.cutPartition()
		}
	}
}

// encodeIndex builds an index block of entries.
func (w *Writer) encodeIndex(entries []indexEntry) []byte {
	ib := blockWriter{restartInterval: 1}
	var hb []byte
	for _, e := range entries {
		hb = e.handle.Append(hb[:0])
		if w.o.BlockAttr != nil {
			hb = e.props.append(hb)
		}
		ib.add(e.sep, hb)
	}
	return ib.finish()
}

// cutPartition ends the index partition of the entries in w.index and,
// with PartitionFilters, the filter partition of the keys added since the
// last cut: the keys of exactly those entries' data blocks, since a data
// block's index entry is added before the next key reaches the filter. The
// next partition's filter starts afresh (a user key or prefix that goes on
// in it is added to it again), so that a probe finds every key and prefix
// in the partition the index sends it to.
func (w *Writer) cutPartition() {
	if len(w.index) == 0 {
		return
	}
	sep := w.index[len(w.index)-1].sep
	w.parts = append(w.parts, finishedPartition{sep: sep, block: w.encodeIndex(w.index)})
	w.index = w.index[:0]
	w.partBytes = 0
	if w.o.PartitionFilters && w.o.BloomBitsPerKey > 0 {
		var f []byte
		if len(w.hashes) > 0 {
			f = buildBloom(w.hashes, w.o.BloomBitsPerKey)
		}
		w.filterParts = append(w.filterParts, f)
		w.hashes = w.hashes[:0]
		w.lastHash = w.lastHash[:0:0]
		w.hasPrefix = false
	}
}

func (w *Writer) flushData() {
	if w.data.entries == 0 {
		return
	}
	if w.blockDels > 0 {
		if w.tombstoneDense(w.data.estimatedSize()) {
			w.props.NumTombstoneDenseBlocks++
		}
		w.blockDels, w.blockDelBytes = 0, 0
	}
	h := w.writeBlock(w.data.finish(), true)
	w.data.reset()
	w.props.NumDataBlocks++
	w.props.DataSize += h.Length + block.TrailerLen
	w.pendingH = h
	w.pendingProps, w.blockProps = w.blockProps, BlockProps{}
	w.pending = true
}

// tombstoneDense reports whether the data block being flushed, of size
// uncompressed bytes, is dense in point tombstones.
func (w *Writer) tombstoneDense(size int) bool {
	if n := w.o.NumDeletionsThreshold; n >= 0 && w.blockDels >= n {
		return true
	}
	r := w.o.DeletionSizeRatioThreshold
	return r >= 0 && size > 0 && float64(w.blockDelBytes) >= r*float64(size)
}

// writeBlock writes a block and its trailer, compressing it if asked.
func (w *Writer) writeBlock(raw []byte, compress bool) block.Handle {
	if w.err != nil {
		return block.Handle{}
	}
	b, typ := raw, block.TypeNone
	if compress {
		b, typ, w.compBuf = block.Compress(w.o.Compression, raw, w.compBuf)
	}
	h := block.Handle{Offset: w.offset, Length: uint64(len(b))}
	if _, err := w.out.Write(b); err != nil {
		w.err = err
		return h
	}
	if _, err := w.out.Write(w.trailer.Trailer(w.o.Checksum, b, typ)); err != nil {
		w.err = err
		return h
	}
	w.offset += uint64(len(b)) + block.TrailerLen
	return h
}

// AddRangeTombstone adds the tombstone [start, end) at seq. Tombstones come
// already fragmented, sorted by start and, for one fragment, by seq
// descending: fragments with the same start have the same end, and a
// fragment starts at or after the end of the one before.
func (w *Writer) AddRangeTombstone(start, end []byte, seq base.SeqNum) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("shale: sstable writer for %s is closed", w.name)
	}
	if seq > base.SeqNumMax {
		return base.InvalidArgumentf("shale: sstable: seqnum %d out of range", seq)
	}
	if w.cmp(start, end) >= 0 {
		return base.InvalidArgumentf("shale: sstable: range tombstone [%q, %q) is empty", start, end)
	}
	key := base.MakeInternalKey(start, seq, base.KindRangeDelete)
	if w.hasRangeDel {
		if c := w.cmp(w.lastDel.UserKey, start); c == 0 {
			if key.Trailer >= w.lastDel.Trailer {
				return base.InvalidArgumentf("shale: sstable: range tombstone %s added after %s", key, w.lastDel)
			}
			if w.cmp(end, w.lastDelEnd) != 0 {
				return base.InvalidArgumentf("shale: sstable: range tombstones at %q are not fragmented (ends %q and %q)", start, w.lastDelEnd, end)
			}
		} else if c > 0 || w.cmp(start, w.lastDelEnd) < 0 {
			return base.InvalidArgumentf("shale: sstable: range tombstone [%q, %q) overlaps or precedes [%q, %q)", start, end, w.lastDel.UserKey, w.lastDelEnd)
		}
	}
	enc := key.AppendEncoded(w.sepBuf[:0])
	w.sepBuf = enc
	w.rangeDels.add(enc, end)
	w.lastDel = base.InternalKey{UserKey: append(w.lastDel.UserKey[:0], start...), Trailer: key.Trailer}
	w.lastDelEnd = append(w.lastDelEnd[:0], end...)
	if !w.hasRangeDel {
		w.firstDel = key.Clone()
		w.hasRangeDel = true
	}
	w.noteSeq(seq)
	w.props.NumEntries++
	w.props.NumDeletions++
	w.props.NumRangeDeletions++
	w.props.RawKeySize += uint64(len(enc))
	w.props.RawValueSize += uint64(len(end))
	for _, c := range w.o.Collectors {
		c.Add(key, end)
	}
	return nil
}

// FileSize returns the bytes of finished blocks written so far (RocksDB's
// TableBuilder::FileSize): it never decreases, unlike EstimatedSize, which
// counts the block being built uncompressed.
func (w *Writer) FileSize() uint64 { return w.offset }

// EstimatedSize returns the size the file would have if closed now, short
// of the meta blocks.
func (w *Writer) EstimatedSize() uint64 {
	return w.offset + uint64(w.data.estimatedSize())
}

// Close finishes the table: it writes the last data block, the filter,
// range-del, index, properties and metaindex blocks and the footer, syncs
// the data (SyncData) and closes the file. The file is closed even when Close fails.
func (w *Writer) Close() (*WriterMetadata, error) {
	if w.closed {
		return nil, fmt.Errorf("shale: sstable writer for %s is closed", w.name)
	}
	w.closed = true
	meta, err := w.finish()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return meta, nil
}

func (w *Writer) finish() (*WriterMetadata, error) {
	if w.err != nil {
		return nil, w.err
	}
	w.flushData()
	if w.pending {
		w.addIndexEntry(nil)
	}
	var metaNames []string
	var metaHandles []block.Handle
	// A table without data blocks keeps the single index (format 1).
	twoLevel := w.o.IndexType == TwoLevelIndexSearch && (len(w.parts) > 0 || len(w.index) > 0)
	if twoLevel {
		w.cutPartition()
	}
	if twoLevel && w.o.PartitionFilters && w.o.BloomBitsPerKey > 0 {
		name := metaPartFilterName
		if !w.wholeKeys {
			name = metaPartPrefixFilterName
		}
		top := blockWriter{restartInterval: 1}
		any := false
		for i, f := range w.filterParts {
			var h block.Handle
			if f == nil {
				// No keys: an empty bit array, which rules every key out.
				f = []byte{1}
			} else {
				any = true
			}
			h = w.writeBlock(f, false)
			w.props.FilterSize += h.Length + block.TrailerLen
			top.add(w.parts[i].sep, h.Append(nil))
		}
		if any {
			h := w.writeBlock(top.finish(), false)
			w.props.FilterSize += h.Length + block.TrailerLen
			w.props.FilterPartitions = uint64(len(w.filterParts))
			metaNames = append(metaNames, name)
			metaHandles = append(metaHandles, h)
		} else {
			w.props.FilterSize = 0
		}
	} else if w.o.BloomBitsPerKey > 0 && len(w.hashes) > 0 {
		h := w.writeBlock(buildBloom(w.hashes, w.o.BloomBitsPerKey), false)
		w.props.FilterSize = h.Length + block.TrailerLen
		name := metaFilterName
		if !w.wholeKeys {
			name = metaPrefixFilterName
		}
		metaNames = append(metaNames, name)
		metaHandles = append(metaHandles, h)
	}
	if w.hasRangeDel {
		h := w.writeBlock(w.rangeDels.finish(), false)
		metaNames = append(metaNames, metaRangeDelName)
		metaHandles = append(metaHandles, h)
	}
	var indexH block.Handle
	if twoLevel {
		top := blockWriter{restartInterval: 1}
		for _, p := range w.parts {
			h := w.writeBlock(p.block, true)
			w.props.IndexSize += h.Length + block.TrailerLen
			top.add(p.sep, h.Append(nil))
		}
		indexH = w.writeBlock(top.finish(), true)
		w.props.IndexSize += indexH.Length + block.TrailerLen
		w.props.TopLevelIndexSize = indexH.Length + block.TrailerLen
		w.props.IndexType = TwoLevelIndexSearch
		w.props.IndexPartitions = uint64(len(w.parts))
	} else {
		indexH = w.writeBlock(w.encodeIndex(w.index), true)
		w.props.IndexSize = indexH.Length + block.TrailerLen
	}
	if len(w.o.Collectors) > 0 {
		w.props.User = map[string]string{}
		for _, c := range w.o.Collectors {
			c.Finish(w.props.User)
		}
	}
	propsH := w.writeBlock(w.props.encode(1), false)
	metaNames = append(metaNames, metaPropertiesName)
	metaHandles = append(metaHandles, propsH)
	// The metaindex must be sorted by name; the names above were chosen so
	// that this insertion order is sorted, but sort anyway.
	mb := blockWriter{restartInterval: 1}
	for _, i := range sortedOrder(metaNames) {
		mb.add([]byte(metaNames[i]), metaHandles[i].Append(nil))
	}
	metaH := w.writeBlock(mb.finish(), false)
	if w.err != nil {
		return nil, w.err
	}
	ft := footer{checksum: w.o.Checksum, metaindex: metaH, index: indexH, twoLevel: twoLevel}
	if _, err := w.out.Write(ft.encode()); err != nil {
		return nil, err
	}
	w.offset += footerLen
	if err := w.out.Flush(); err != nil {
		return nil, err
	}
	if err := w.sink.Trim(); err != nil {
		return nil, err
	}
	// fdatasync suffices: the file is only appended to, and it makes the
	// size durable with the data (the metadata a read needs).
	if err := w.f.SyncData(); err != nil {
		return nil, err
	}
	m := &WriterMetadata{
		SmallestSeq: w.props.SmallestSeq,
		LargestSeq:  w.props.LargestSeq,
		Size:        w.offset,
		Props:       w.props,
	}
	if w.hasPoint {
		m.Smallest, _ = base.DecodeInternalKey(w.firstKey)
		lk, _ := base.DecodeInternalKey(w.lastKey)
		m.Largest = lk.Clone()
	}
	if w.hasRangeDel {
		if !w.hasPoint || base.InternalCompare(w.cmp, w.firstDel, m.Smallest) < 0 {
			m.Smallest = w.firstDel
		}
		s := base.MakeRangeDeleteSentinel(append([]byte(nil), w.lastDelEnd...))
		if !w.hasPoint || base.InternalCompare(w.cmp, s, m.Largest) > 0 {
			m.Largest = s
		}
	}
	return m, nil
}

// Abort closes the file without finishing the table; the caller removes it.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	if w.err == nil {
		w.err = errors.New("shale: sstable writer aborted")
	}
	w.f.Close()
}

func sortedOrder(names []string) []int {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && names[idx[j]] < names[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx
}

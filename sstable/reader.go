package sstable

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/internal/readahead"
	"github.com/shaledb/shale/vfs"
)

// Reader reads one table. The properties and range tombstones are read at
// open and kept in the Reader; so are the index and the filter, unless
// ReaderOptions.CacheIndexAndFilterBlocks puts them in the block cache.
// Data blocks go through the cache. A Reader is safe for concurrent use.
type Reader struct {
	// bf reads the table's blocks: handles, checksums, decompression, the
	// cache, direct IO (when the file's vfs.Alignment is above 1, every
	// read aligned, through pooled aligned buffers) and the counters.
	bf  block.File
	cmp base.Compare
	// metaStart is where the blocks after the data blocks begin; every data
	// block lies below it.
	metaStart uint64
	footOff   uint64
	dataEnd   uint64
	// ix and filter are the decoded index and the filter while the Reader
	// holds them: always by default, and with PinIndexAndFilterBlocks (or
	// when the cache has no room for them). Otherwise they are nil and the
	// cache holds them under indexH and filterH (index and filter read
	// them; see index_cache.go). filterInCache says a filter exists there.
	ix            *tableIndex
	filter        []byte
	indexH        block.Handle
	filterH       block.Handle
	filterInCache bool
	// indexPinned and filterPinned say the Reader holds a pin on the
	// cache's copy, given back at Close.
	indexPinned, filterPinned bool
	props                     *Properties
	rangeDels                 []rangedel.Span
	// bytewise is true when user keys order bytewise; only then do the
	// index and cached data blocks get a search structure.
	bytewise bool
	// heldMem is what the Reader added to stats.ReadersMem at open (the
	// memory it holds outside the cache); Close takes it back once.
	heldMem int64
	closed  atomic.Bool
	// stats is ReaderOptions.Stats (never nil): its block.ReadStats is
	// bf's, and it counts the bloom probes.
	stats   *ReadStats
	maxAuto int64 // automatic readahead cap; <= 0 is off
	// id numbers the Reader among all Readers of the process (MultiGetBatch
	// orders its reads by it).
	id uint64
	// filterWholeKeys says the filter holds the table's user keys (it is
	// the fullfilter block; otherwise it holds prefixes only). prefixName
	// names the extractor whose prefixes the filter holds ("" for none);
	// prefixTr is ReaderOptions.PrefixExtractor when it has that name, for
	// point lookups in a table without whole keys.
	filterWholeKeys bool
	prefixName      string
	prefixTr        base.SliceTransform
	// globalSeq is ReaderOptions.GlobalSeqNum: when not zero, the seqnum
	// of every point entry and range tombstone read.
	globalSeq base.SeqNum
	// twoLevel says the table's index is partitioned (format version 2):
	// ix (or the cache's copy under indexH) is then the top-level index,
	// and partition reads the partitions. filterTop, when not nil, is the
	// top-level filter index of partitioned filters, which the Reader
	// always holds (filter and filterInCache are then unused).
	twoLevel  bool
	filterTop *tableIndex
}

// fileAlignment is vfs.Alignment; tests replace it to read through a fake
// direct-IO file (vfs's alignment method cannot be implemented outside vfs).
var fileAlignment = vfs.Alignment

// getIterPool holds the block iterators of Get calls; with it, a Get whose
// block is cached does not allocate.
var getIterPool = sync.Pool{New: func() any { return new(blockIter) }}

// NewReader opens the table in f, which the Reader owns from now on (it is
// closed on error too). A damaged or foreign file returns an error matching
// base.ErrCorruption; a table written with another comparer returns an
// error matching base.ErrInvalidArgument.
func NewReader(f vfs.File, o ReaderOptions) (*Reader, error) {
	r, err := newReader(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func newReader(f vfs.File, o ReaderOptions) (_ *Reader, err error) {
	if o.Comparer == nil {
		o.Comparer = base.DefaultComparer
	}
	r := &Reader{cmp: o.Comparer.Compare, stats: o.Stats, maxAuto: o.MaxAutoReadaheadSize, id: readerIDs.Add(1),
		globalSeq: o.GlobalSeqNum}
	if r.stats == nil {
		r.stats = &discardStats
	}
	if r.maxAuto == 0 {
		r.maxAuto = block.DefaultMaxAutoReadahead
	}
	r.bf.Init(f, block.FileOptions{Name: o.FileName, Alignment: fileAlignment(f), Cache: o.Cache,
		CacheID: o.CacheID, AsyncReader: o.AsyncReader, Stats: &r.stats.ReadStats})
	r.bytewise = isBytewise(o.Comparer)
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size < footerLen {
		return nil, base.CorruptionErrorf(r.bf.Name(), 0, "file of %d bytes is too short for a table", size)
	}
	if o.MmapReads && r.bf.Map(size) {
		defer func() {
			if err != nil {
				r.bf.Unmap()
			}
		}()
	}
	footOff := size - footerLen
	// One read fetches the footer with the end of the file before it, where
	// the metaindex, properties, index and (for small tables) filter and
	// range-del blocks are; what it misses is read together afterwards. An
	// open costs one or two round trips to storage instead of six.
	tailOff := max(size-tailReadSize, 0)
	tail := make([]byte, size-tailOff)
	if err := r.bf.ReadAt(r.bf.Source(), tail, tailOff); err != nil {
		return nil, err
	}
	ft, err := decodeFooter(r.bf.Name(), footOff, tail[footOff-tailOff:])
	if err != nil {
		return nil, err
	}
	r.bf.SetChecksum(ft.checksum)
	r.footOff = uint64(footOff)
	r.metaStart = r.footOff // narrowed below once the meta blocks are known
	// The meta blocks within the tail are decoded from it; the others are
	// read by one batch.
	mt := block.Prefetched{Bytes: tail, Off: uint64(tailOff)}
	metaGot := [][]byte{nil}
	if err := r.bf.ReadBlocks(mt, []block.Handle{ft.metaindex}, r.footOff, metaGot); err != nil {
		return nil, err
	}
	meta := metaGot[0]
	handles := map[string]block.Handle{}
	if err := r.decodeMetaindex(ft.metaindex, meta, func(name string, h block.Handle) { handles[name] = h }); err != nil {
		return nil, err
	}
	ph, ok := handles[metaPropertiesName]
	if !ok {
		return nil, r.corruptf(ft.metaindex, "no properties block")
	}
	fh, hasFilter := handles[metaFilterName]
	r.filterWholeKeys = hasFilter
	if !hasFilter {
		fh, hasFilter = handles[metaPrefixFilterName]
	}
	r.twoLevel = ft.twoLevel
	partFilter := false
	if ft.twoLevel && !hasFilter {
		fh, partFilter = handles[metaPartFilterName]
		r.filterWholeKeys = partFilter
		if !partFilter {
			fh, partFilter = handles[metaPartPrefixFilterName]
		}
		hasFilter = partFilter
	}
	rh, hasRangeDels := handles[metaRangeDelName]
	r.metaStart = min(r.metaStart, ft.index.Offset, ph.Offset, ft.metaindex.Offset)
	if hasFilter {
		r.metaStart = min(r.metaStart, fh.Offset)
	}
	if hasRangeDels {
		r.metaStart = min(r.metaStart, rh.Offset)
	}
	r.indexH, r.filterH = ft.index, fh
	cacheIF := o.CacheIndexAndFilterBlocks && o.Cache != nil
	pin := cacheIF && o.PinIndexAndFilterBlocks
	defer func() {
		if err != nil {
			r.unpin() // the pins cachedIndexAtOpen and cachedFilterAtOpen took
		}
	}()
	// The properties, index, filter and range-del blocks, read together;
	// an index or filter the cache still holds from an earlier Reader of
	// the file (same CacheID) is taken from there.
	want := []block.Handle{ph}
	var ix *tableIndex
	if cacheIF {
		ix = r.cachedIndexAtOpen(pin)
	}
	ixFromCache := ix != nil
	if ix == nil {
		want = append(want, ft.index)
	}
	var filter []byte
	if hasFilter && cacheIF && !partFilter {
		filter = r.cachedFilterAtOpen(pin)
	}
	readFilter := hasFilter && filter == nil
	if readFilter {
		want = append(want, fh)
	}
	if hasRangeDels {
		want = append(want, rh)
	}
	got := make([][]byte, len(want))
	if err := r.bf.ReadBlocks(mt, want, r.footOff, got); err != nil {
		return nil, err
	}
	props, msg := decodeProperties(got[0])
	if msg != "" {
		return nil, r.corruptf(ph, "%s", msg)
	}
	r.props = props
	if props.ComparerName != o.Comparer.Name {
		return nil, fmt.Errorf("shale: table %s was written with comparer %q, not %q: %w",
			r.bf.Name(), props.ComparerName, o.Comparer.Name, base.ErrInvalidArgument)
	}
	if hasFilter && props.PrefixFiltering && props.PrefixExtractorName != "" {
		r.prefixName = props.PrefixExtractorName
		if t := o.PrefixExtractor; t != nil && t.Name() == r.prefixName {
			r.prefixTr = t
		}
	}
	if hasRangeDels {
		if err := r.decodeRangeDels(rh, got[len(got)-1]); err != nil {
			return nil, err
		}
	}
	if ix == nil {
		kind := indexSingle
		if r.twoLevel {
			kind = indexTop
		}
		if ix, err = r.decodeIndexBlock(ft.index, got[1], kind); err != nil {
			return nil, err
		}
	}
	if readFilter {
		filter = got[len(want)-1]
		if hasRangeDels {
			filter = got[len(want)-2]
		}
	}
	r.dataEnd = ix.dataEnd
	if r.twoLevel {
		if err := r.openTwoLevel(ix, fh, filter, partFilter); err != nil {
			return nil, err
		}
		if partFilter {
			filter, hasFilter = nil, false
		}
	}
	r.keepIndexAndFilter(ix, filter, ixFromCache, hasFilter && !readFilter, hasFilter, cacheIF, pin)
	if r.filterTop != nil {
		r.heldMem += r.filterTop.size
	}
	r.stats.ReadersMem.Add(r.heldMem)
	return r, nil
}

// tailReadSize is how much of the end of a table NewReader reads with the
// footer.
var tailReadSize int64 = 64 << 10 // a variable for tests

func (r *Reader) corruptf(h block.Handle, format string, args ...any) error {
	return r.bf.Corruptf(h, format, args...)
}

// checkHandle returns a corruption error unless h lies within the data
// blocks (dataBlock) or before the footer.
func (r *Reader) checkHandle(h block.Handle, dataBlock bool) error {
	return r.bf.CheckHandle(h, r.blockLimit(dataBlock))
}

// blockLimit is the end of the region a data block (dataBlock) or any
// other block lies in.
func (r *Reader) blockLimit(dataBlock bool) uint64 {
	if dataBlock {
		return r.metaStart
	}
	return r.footOff
}

// loadDataBlock points bi at the data block at h, from the cache when it is
// there. A block read from the file is cached (when fillCache) with the
// search structure that speeds up seeks in it (see blocksearch.go); seek
// says whether the caller seeks in the block next or scans it.
// A block read from the file goes through ra when it is not nil; a cached
// block is only reported to it.
func (r *Reader) loadDataBlock(bi *blockIter, h block.Handle, fillCache, seek bool, ra *readahead.State, src block.Source) error {
	if b, aux, ok := r.bf.Cached(h); ok {
		r.useCachedBlock(bi, h, b, aux, fillCache, seek, ra, src)
		return nil
	}
	b, err := r.bf.ReadBlock(h, r.metaStart, ra, src)
	if err != nil {
		return err
	}
	return r.installDataBlock(bi, h, b, fillCache)
}

func (r *Reader) decodeRangeDels(h block.Handle, b []byte) error {
	var it blockIter
	if !it.init(b, true) {
		return r.corruptf(h, "bad range-del block")
	}
	for ok := it.first(); ok; ok = it.next() {
		k := it.ikey
		if r.globalSeq != 0 {
			if k.SeqNum() != 0 {
				return r.corruptf(h, "range tombstone %s in a table read under global seqnum %d (its entries must be at seqnum 0)", k, r.globalSeq)
			}
			if n := len(r.rangeDels); n > 0 && r.cmp(r.rangeDels[n-1].Start, k.UserKey) == 0 {
				return r.corruptf(h, "range tombstones at %q not fragmented", k.UserKey)
			}
			k.Trailer = base.MakeTrailer(r.globalSeq, k.Kind())
		}
		if k.Kind() != base.KindRangeDelete || r.cmp(k.UserKey, it.val) >= 0 {
			return r.corruptf(h, "bad range tombstone %s", k)
		}
		if n := len(r.rangeDels); n > 0 {
			last := &r.rangeDels[n-1]
			if c := r.cmp(last.Start, k.UserKey); c == 0 {
				if r.cmp(last.End, it.val) != 0 || last.Seqs[len(last.Seqs)-1] <= k.SeqNum() {
					return r.corruptf(h, "range tombstones at %q not fragmented", k.UserKey)
				}
				last.Seqs = append(last.Seqs, k.SeqNum())
				continue
			} else if c > 0 || r.cmp(last.End, k.UserKey) > 0 {
				return r.corruptf(h, "range tombstones out of order at %q", k.UserKey)
			}
		}
		r.rangeDels = append(r.rangeDels, rangedel.Span{
			Start: append([]byte(nil), k.UserKey...),
			End:   append([]byte(nil), it.val...),
			Seqs:  []base.SeqNum{k.SeqNum()},
		})
	}
	if it.corrupt {
		return r.corruptf(h, "bad range-del block")
	}
	return nil
}

// pointProbe returns what a point lookup of userKey probes the filter
// with: the key, or in a table whose filter holds prefixes only, the key's
// prefix by the extractor the table was written with (ok false when the
// filter cannot answer for the key: no such extractor, or the key has no
// prefix).
func (r *Reader) pointProbe(userKey []byte) (probe []byte, ok bool) {
	if r.filterWholeKeys {
		return userKey, true
	}
	if t := r.prefixTr; t != nil && t.InDomain(userKey) {
		return t.Transform(userKey), true
	}
	return nil, false
}

// MayContain probes the bloom filter: false means the table has no entry
// for userKey. It does not allocate.
func (r *Reader) MayContain(userKey []byte) bool {
	probe, ok := r.pointProbe(userKey)
	if !ok {
		return true
	}
	if r.filterTop != nil {
		return r.partFilterMayContain(userKey, probe, r.bf.Source(), false)
	}
	f := r.filter
	if f == nil && r.filterInCache {
		f = r.cachedFilter(r.bf.Source())
	}
	if f == nil {
		return true
	}
	return bloomMayContain(f, bloomHash(probe))
}

// MayContainCached is MayContain reading nothing: with the filter in the
// block cache (CacheIndexAndFilterBlocks) and not there now, it reports
// true, as for a table without a filter.
func (r *Reader) MayContainCached(userKey []byte) bool {
	probe, ok := r.pointProbe(userKey)
	if !ok {
		return true
	}
	if r.filterTop != nil {
		return r.partFilterMayContain(userKey, probe, r.bf.Source(), true)
	}
	f := r.filter
	if f == nil && r.filterInCache {
		f = r.filterFromCache()
	}
	if f == nil {
		return true
	}
	return bloomMayContain(f, bloomHash(probe))
}

// PrefixExtractorName names the extractor whose prefixes the table's
// filter holds, "" when it holds none (no extractor, or no filter).
func (r *Reader) PrefixExtractorName() string { return r.prefixName }

// MayContainPrefix probes the table's prefix filter for prefix, a prefix
// of the extractor named extractor: false means no point key of the table
// has it. A table whose filter holds no prefixes of that extractor (no
// filter, none, or another extractor's) answers true, as does one whose
// filter cannot be read.
func (r *Reader) MayContainPrefix(extractor string, prefix []byte) bool {
	ok, _ := r.prefixMayMatch(extractor, prefix, r.bf.Source())
	return ok
}

// prefixMayMatch is MayContainPrefix reading a filter the cache no longer
// holds through src; probed says the filter answered.
func (r *Reader) prefixMayMatch(extractor string, prefix []byte, src block.Source) (ok, probed bool) {
	if r.prefixName == "" || extractor != r.prefixName {
		return true, false
	}
	if r.filterTop != nil {
		return r.partPrefixMayMatch(prefix, src)
	}
	f := r.filter
	if f == nil && r.filterInCache {
		f = r.cachedFilter(src)
	}
	if f == nil {
		return true, false
	}
	return bloomMayContain(f, bloomHash(prefix)), true
}

// ProbeBloom is MayContain counting the probe in c when c is not nil
// (Checks, and Useful when it rules the key out); extra, when not nil,
// counts the filter block's read when the block cache holds filters. A
// table without a filter is not probed and not counted.
func (r *Reader) ProbeBloom(userKey []byte, c *BloomCounts, extra *ReadStats) bool {
	probe, ok := r.pointProbe(userKey)
	if !ok {
		return true
	}
	f := r.filter
	if r.filterTop != nil {
		src := r.bf.Source()
		src.Stats = blockStats(extra)
		var inRange bool
		if f, _, inRange = r.filterPartitionFor(userKey, src, false); !inRange {
			// Every key of the table sorts below userKey: the top-level
			// filter index rules it out as a filter would.
			f = []byte{}
		}
	} else if f == nil && r.filterInCache {
		src := r.bf.Source()
		src.Stats = blockStats(extra)
		f = r.cachedFilter(src)
	}
	if f == nil {
		return true
	}
	ok = len(f) != 0 && bloomMayContain(f, bloomHash(probe))
	if c != nil {
		c.Checks++
		if !ok {
			c.Useful++
		}
	}
	return ok
}

// Get returns the newest point entry of key with seqnum <= snapshot. It
// checks the bloom filter first and does not allocate when the block is
// cached. value may alias a cached block and must not be modified.
func (r *Reader) Get(key []byte, snapshot base.SeqNum, fillCache bool) (value []byte, kind base.Kind, seq base.SeqNum, found bool, err error) {
	return r.GetCounted(key, snapshot, fillCache, nil, nil)
}

// GetCounted is Get also counting its bloom probe in bloom and its block
// reads in stats, each when not nil: the per-call counts behind the DB's
// statistics and PerfContext.
func (r *Reader) GetCounted(key []byte, snapshot base.SeqNum, fillCache bool, stats *ReadStats, bloom *BloomCounts) (value []byte, kind base.Kind, seq base.SeqNum, found bool, err error) {
	return r.GetDeadline(key, snapshot, fillCache, stats, bloom, vfs.ReadDeadline{})
}

// GetDeadline is GetCounted with its file reads (index and data blocks)
// bounded by dl: a read that cannot finish in time fails the call with an
// error wrapping vfs.ErrDeadlineExceeded, and caches nothing.
func (r *Reader) GetDeadline(key []byte, snapshot base.SeqNum, fillCache bool, stats *ReadStats, bloom *BloomCounts, dl vfs.ReadDeadline) (value []byte, kind base.Kind, seq base.SeqNum, found bool, err error) {
	if !r.ProbeBloom(key, bloom, stats) {
		return nil, 0, 0, false, nil
	}
	search := base.MakeInternalKey(key, min(snapshot, base.SeqNumMax), base.KindMax)
	src := r.bf.Source()
	src.Stats = blockStats(stats)
	src.Deadline = dl
	var c indexCursor
	if err := c.init(r, src); err != nil {
		return nil, 0, 0, false, err
	}
	if err := c.seek(search); err != nil {
		return nil, 0, 0, false, err
	}
	bi := getIterPool.Get().(*blockIter)
	defer putGetIter(bi)
	for ; c.valid(); err = c.next() {
		h := c.item().handle
		if err := r.loadDataBlock(bi, h, fillCache, true, nil, src); err != nil { // Get never reads ahead
			return nil, 0, 0, false, err
		}
		if bi.seekGE(search, r.cmp) {
			k := bi.ikey
			if r.cmp(k.UserKey, key) != 0 {
				return nil, 0, 0, false, nil
			}
			return bi.val, k.Kind(), k.SeqNum(), true, nil
		}
		if bi.corrupt {
			return nil, 0, 0, false, r.corruptf(h, "bad data block entry")
		}
		// Every entry of the block sorts before search; the answer, if
		// any, starts the next block, perhaps in the next partition.
	}
	return nil, 0, 0, false, err
}

// Versions calls fn with each point entry of key with seqnum <= snapshot,
// newest first (across data blocks), until fn returns false, and reports
// whether there was any; stats and bloom as GetCounted's. A value aliases
// block memory and is valid only during its call. It is how a read
// gathers the operands of a merge, which GetCounted's newest entry alone
// does not decide.
func (r *Reader) Versions(key []byte, snapshot base.SeqNum, fillCache bool, stats *ReadStats, bloom *BloomCounts,
	fn func(value []byte, kind base.Kind, seq base.SeqNum) bool) (found bool, err error) {
	return r.VersionsDeadline(key, snapshot, fillCache, stats, bloom, vfs.ReadDeadline{}, fn)
}

// VersionsDeadline is Versions with its file reads bounded by dl, as
// GetDeadline's are.
func (r *Reader) VersionsDeadline(key []byte, snapshot base.SeqNum, fillCache bool, stats *ReadStats, bloom *BloomCounts,
	dl vfs.ReadDeadline, fn func(value []byte, kind base.Kind, seq base.SeqNum) bool) (found bool, err error) {
	if !r.ProbeBloom(key, bloom, stats) {
		return false, nil
	}
	search := base.MakeInternalKey(key, min(snapshot, base.SeqNumMax), base.KindMax)
	src := r.bf.Source()
	src.Stats = blockStats(stats)
	src.Deadline = dl
	var c indexCursor
	if err := c.init(r, src); err != nil {
		return false, err
	}
	if err := c.seek(search); err != nil {
		return false, err
	}
	bi := getIterPool.Get().(*blockIter)
	defer putGetIter(bi)
	seek := true
	for ; c.valid(); err = c.next() {
		h := c.item().handle
		if err := r.loadDataBlock(bi, h, fillCache, seek, nil, src); err != nil {
			return found, err
		}
		var ok bool
		if seek {
			ok = bi.seekGE(search, r.cmp)
		} else {
			ok = bi.first()
		}
		for ; ok; ok = bi.next() {
			k := bi.ikey
			if r.cmp(k.UserKey, key) != 0 {
				return found, nil
			}
			found = true
			if !fn(bi.val, k.Kind(), k.SeqNum()) {
				return found, nil
			}
		}
		if bi.corrupt {
			return found, r.corruptf(h, "bad data block entry")
		}
		// The key's versions may go on in the next block.
		seek = false
	}
	return found, err
}

// GlobalSeqNum returns ReaderOptions.GlobalSeqNum: when not zero, the
// seqnum the Reader gives every entry in place of the stored 0.
func (r *Reader) GlobalSeqNum() base.SeqNum { return r.globalSeq }

// RangeTombstones returns the table's range tombstones as stored:
// fragmented, sorted by start, seqnums descending within each span. The
// caller must not modify them.
func (r *Reader) RangeTombstones() []rangedel.Span { return r.rangeDels }

// Properties returns the table's properties; the caller must not modify
// them.
func (r *Reader) Properties() *Properties { return r.props }

// ApproximateOffset returns the approximate file offset at which the entries
// of key would be found: the offset of the data block that would hold it, or
// the end of the data blocks.
// An index the Reader cannot read answers the end of the data blocks.
func (r *Reader) ApproximateOffset(key []byte) uint64 {
	var c indexCursor
	if c.init(r, r.bf.Source()) != nil || c.seek(base.MakeSearchKey(key)) != nil || !c.valid() {
		return r.dataEnd
	}
	return c.item().handle.Offset
}

// CacheID returns the namespace of this table's blocks in the cache; the
// table cache passes it to Cache.EvictID when the file is deleted.
func (r *Reader) CacheID() uint64 { return r.bf.CacheID() }

// Mapped reports whether blocks are read from a mapping of the file
// (ReaderOptions.MmapReads on a file that could be mapped).
func (r *Reader) Mapped() bool { return r.bf.Mapped() }

// Close unmaps and closes the file. Cached blocks stay cached; pinned
// index and filter blocks become evictable.
func (r *Reader) Close() error {
	if !r.closed.Swap(true) {
		r.unpin()
		r.stats.ReadersMem.Add(-r.heldMem)
	}
	return r.bf.Close()
}

func putGetIter(bi *blockIter) {
	bi.data, bi.key, bi.val, bi.ikey, bi.srch = nil, nil, nil, base.InternalKey{}, nil
	getIterPool.Put(bi)
}

// decodeMetaindex calls fn with each meta block's name and handle, in the
// order the metaindex block (at handle mh, contents meta) lists them; a
// metaindex that does not decode is corruption naming the file and offset.
func (r *Reader) decodeMetaindex(mh block.Handle, meta []byte, fn func(name string, h block.Handle)) error {
	var it blockIter
	if !it.init(meta, false) {
		return r.corruptf(mh, "bad metaindex block")
	}
	for ok := it.first(); ok; ok = it.next() {
		h, n := block.DecodeHandle(it.val)
		if n <= 0 || n != len(it.val) {
			return r.corruptf(mh, "bad handle for %q in metaindex", it.key)
		}
		fn(string(it.key), h)
	}
	if it.corrupt {
		return r.corruptf(mh, "bad metaindex block")
	}
	return nil
}

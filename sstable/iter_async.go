package sstable

import (
	"bytes"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/readahead"
)

// This file holds the data-block loading steps that the synchronous read
// path (loadDataBlock) and the iterators' async read path share, and the
// first phase of a two-phase seek.

// installDataBlock points bi at the data block b just read from the file
// at h, after checking its restart array, and caches it when fillCache.
func (r *Reader) installDataBlock(bi *blockIter, h block.Handle, b []byte, fillCache bool) error {
	if !blockValid(b) {
		return r.corruptf(h, "bad data block restart array")
	}
	if fillCache {
		r.bf.SetCached(h, b, nil)
	}
	bi.init(b, true)
	bi.globalSeq = r.globalSeq
	return nil
}

// useCachedBlock points bi at the data block b (with aux) that the cache
// holds for h, and counts the hit.
func (r *Reader) useCachedBlock(bi *blockIter, h block.Handle, b, aux []byte, fillCache, seek bool, ra *readahead.State, src block.Source) {
	r.bf.CountCacheHit(src)
	if ra != nil {
		ra.NoteCached(int64(h.Offset), int(h.Length)+block.TrailerLen)
	}
	if r.globalSeq != 0 {
		// The search structure orders keys by their bytes on disk; keys
		// under a global seqnum are compared as read (blockIter.seekGE).
		bi.init(b, true)
		bi.globalSeq = r.globalSeq
		return
	}
	if aux == nil {
		if !seek || !fillCache {
			bi.init(b, true) // validated before it was cached
			return
		}
		// The block is sought in again while cached: now its search
		// structure pays. Blocks that churn through a small cache
		// never pay for one.
		aux = buildBlockSearch(b, r.bytewise)
		r.bf.SetCached(h, b, aux)
	}
	bi.initCached(b, aux, seek)
}

// cachedDataBlock points bi at the data block at h for a seek when the
// cache holds it, counting the hit in src's stats too, and reports whether
// it did.
func (r *Reader) cachedDataBlock(bi *blockIter, h block.Handle, fillCache bool, src block.Source) bool {
	b, aux, ok := r.bf.Cached(h)
	if !ok {
		return false
	}
	r.useCachedBlock(bi, h, b, aux, fillCache, true, nil, src)
	return true
}

// pendingRead is the read of one data block that the first phase of a
// two-phase seek submitted and that the block's next load waits for.
//
// Invariant: while active and not cached the read may be in flight, and
// its buffer must be neither reused nor pooled; every path that drops the
// read (consume, discard) waits for it first.
type pendingRead struct {
	active bool
	// cached is set when the prepare found the block in the cache: block
	// and aux are what the cache held (blocks are immutable and kept alive
	// by the GC, so holding them is safe), and no read is in flight.
	cached     bool
	block, aux []byte
	handle     block.Handle
	read       block.PendingRead
}

// PrepareSeekGE is the first phase of a two-phase seek (IterOptions.Async):
// it finds the data block SeekGE(key) would load and, unless that block is
// loaded already, cached, or being read, submits its read through the
// Reader's AsyncReader without waiting. The SeekGE that loads the block
// waits for the read; a read no load uses is waited for and dropped at the
// next absolute positioning or Close. Without Async it does nothing.
func (it *tableIter) PrepareSeekGE(key []byte) {
	if !it.async {
		return
	}
	if it.lower != nil && it.cmp(key, it.lower) < 0 {
		key = it.lower
	}
	if it.upper != nil && it.cmp(key, it.upper) >= 0 {
		return
	}
	if !it.prepareIndex() {
		return
	}
	if it.top != nil {
		it.prepareAt(base.MakeSearchKey(key), false)
		return
	}
	i := it.ix.seek(base.MakeSearchKey(key), it.cmp)
	// The seek that follows finds the same index entry without a search.
	it.prepKey = append(it.prepKey[:0], key...)
	it.prepIdx, it.prepValid = i, true
	it.prepareBlock(i)
}

// prepareAt is the first phase for a table with a partitioned index: it
// submits the read of the first block whose separator is >= k (the last
// block when none is, if last), finding it in the partition that the cache
// holds or that it reads now, without moving the iterator.
func (it *tableIter) prepareAt(k base.InternalKey, last bool) {
	var c indexCursor
	c.r, c.src, c.top = it.r, it.src, it.top
	if c.seek(k) != nil {
		return
	}
	if !c.valid() {
		if !last {
			return
		}
		ix, err := it.r.partition(it.top, len(it.top.items)-1, it.src)
		if err != nil {
			return
		}
		c.ix, c.i = ix, len(ix.items)-1
	}
	it.prepareHandle(c.item().handle)
}

// seekIndexPrepared is seekIndex for SeekGE(key) (key clamped to the
// bounds), using the result of the PrepareSeekGE before it if it was for
// the same key.
func (it *tableIter) seekIndexPrepared(key []byte) (int, bool) {
	if it.prepValid {
		it.prepValid = false
		if bytes.Equal(key, it.prepKey) && it.top == nil {
			return it.prepIdx, true
		}
	}
	return it.seekIndex(base.MakeSearchKey(key))
}

// PrepareFirst is PrepareSeekGE for First.
func (it *tableIter) PrepareFirst() {
	if !it.async {
		return
	}
	if it.lower != nil {
		it.PrepareSeekGE(it.lower)
		return
	}
	if it.prepareIndex() {
		if it.top != nil {
			it.prepareAt(base.InternalKey{}, false)
			return
		}
		it.prepareBlock(0)
	}
}

// PrepareSeekLT is PrepareSeekGE for SeekLT(key): it submits the read of
// the block SeekLT loads first, the one whose entries reach key (the last
// block when none does).
func (it *tableIter) PrepareSeekLT(key []byte) {
	if !it.async {
		return
	}
	if it.upper != nil && it.cmp(key, it.upper) > 0 {
		key = it.upper
	}
	if it.lower != nil && it.cmp(key, it.lower) <= 0 {
		return
	}
	if !it.prepareIndex() {
		return
	}
	if it.top != nil {
		it.prepareAt(base.MakeSearchKey(key), true)
		return
	}
	i := it.ix.seek(base.MakeSearchKey(key), it.cmp)
	if i == len(it.ix.items) {
		if i == 0 {
			return
		}
		i--
	}
	it.prepareBlock(i)
}

// PrepareLast is PrepareSeekLT for Last.
func (it *tableIter) PrepareLast() {
	if !it.async {
		return
	}
	if it.upper != nil {
		it.PrepareSeekLT(it.upper)
		return
	}
	if !it.prepareIndex() {
		return
	}
	if it.top != nil {
		ix, err := it.r.partition(it.top, len(it.top.items)-1, it.src)
		if err == nil {
			it.prepareHandle(ix.items[len(ix.items)-1].handle)
		}
		return
	}
	if len(it.ix.items) > 0 {
		it.prepareBlock(len(it.ix.items) - 1)
	}
}

// prepareIndex is needIndex for a first phase, which only hints: a failure
// is left for the positioning that follows to report.
func (it *tableIter) prepareIndex() bool {
	if it.ix == nil && it.top == nil {
		ix, err := it.r.index(it.src)
		if err != nil {
			return false
		}
		if it.r.twoLevel {
			it.top = ix
		} else {
			it.ix = ix
		}
	}
	return true
}

// prepareBlock submits the read of data block i unless it needs none.
func (it *tableIter) prepareBlock(i int) {
	if i >= len(it.ix.items) || i == it.loaded {
		return
	}
	it.prepareHandle(it.ix.items[i].handle)
}

// prepareHandle submits the read of the data block at h unless it is the
// loaded block, pending already, or cached.
func (it *tableIter) prepareHandle(h block.Handle) {
	r := it.r
	if it.loaded >= 0 && it.ix != nil && it.loaded < len(it.ix.items) && it.ix.items[it.loaded].handle == h {
		return
	}
	if it.pend.active {
		if it.pend.handle == h {
			return
		}
		it.discardPending()
	}
	if b, aux, ok := r.bf.Cached(h); ok {
		// The load uses it without a second lookup.
		it.pend = pendingRead{active: true, cached: true, block: b, aux: aux, handle: h}
		return
	}
	if r.checkHandle(h, true) != nil {
		return // the load reports it
	}
	it.pend.handle = h
	it.pend.active = true
	r.bf.SubmitRead(&it.pend.read, it.src, h, it.group)
}

// awaitPending waits for the pending read and counts it; it returns the
// block's bytes (with trailer).
func (it *tableIter) awaitPending() (buf []byte, err error) {
	return it.r.bf.WaitRead(&it.pend.read, it.src)
}

// freePending forgets the (completed) pending read and frees its memory.
func (it *tableIter) freePending() {
	it.pend.read.Release()
	it.pend = pendingRead{}
}

// discardPending waits for a pending read that no load used and drops it.
func (it *tableIter) discardPending() {
	if !it.pend.active {
		return
	}
	if it.pend.cached {
		it.pend = pendingRead{}
		return
	}
	it.awaitPending()
	it.freePending()
}

// loadPending loads the data block of the pending read into it.data: it
// waits for the read, then verifies, decompresses and caches the block as
// a synchronous load does.
func (it *tableIter) loadPending(h block.Handle, seek bool) error {
	if it.pend.cached {
		b, aux := it.pend.block, it.pend.aux
		it.pend = pendingRead{}
		it.r.useCachedBlock(&it.data, h, b, aux, it.fillCache, seek, &it.ra, it.src)
		return nil
	}
	buf, err := it.awaitPending()
	defer it.freePending()
	if err == block.ErrPendingLost {
		return it.r.loadDataBlock(&it.data, h, it.fillCache, seek, &it.ra, it.src)
	}
	if err != nil {
		return err
	}
	total := int(h.Length) + block.TrailerLen
	it.ra.NoteRead(int64(h.Offset), total)
	b, err := it.r.bf.DecodeBlock(h, buf, it.pend.read.Pooled(), it.src)
	if err != nil {
		return err
	}
	return it.r.installDataBlock(&it.data, h, b, it.fillCache)
}

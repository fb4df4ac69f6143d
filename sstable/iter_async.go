package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/readahead"
	"github.com/shaledb/shale/vfs"
)

// This file holds the block-loading steps that the synchronous read path
// (readBlock, loadDataBlock) and the iterators' async read path share, and
// the first phase of a two-phase seek.

// checkHandle returns a corruption error unless h lies within the data
// blocks (dataBlock) or before the footer.
func (r *Reader) checkHandle(h blockHandle, dataBlock bool) error {
	limit := r.footOff
	if dataBlock {
		limit = r.metaStart
	}
	if h.length > maxBlockLen || h.offset > limit || h.length+blockTrailerLen > limit-h.offset {
		return r.corruptf(h, "block handle (offset %d, length %d) out of bounds", h.offset, h.length)
	}
	return nil
}

// decodeBlock verifies the checksum of the block at h read into buf (its
// bytes and trailer) and decompresses it. shared says buf is memory that is
// reused (a readahead window or a pooled direct-IO buffer): an uncompressed
// block is then copied out, so the result never aliases reused memory.
func (r *Reader) decodeBlock(h blockHandle, buf []byte, shared bool, src fileSource) ([]byte, error) {
	n := int(h.length)
	r.stats.BlockReads.Add(1)
	if src.stats != nil {
		src.stats.BlockReads.Add(1)
	}
	if want, got := binary.LittleEndian.Uint32(buf[n+1:]), checksum(r.checksum, buf[:n+1]); want != got {
		return nil, r.corruptf(h, "block checksum mismatch: stored %#x, computed %#x", want, got)
	}
	b, msg := decompressBlock(buf[n], buf[:n])
	if msg != "" {
		return nil, r.corruptf(h, "%s", msg)
	}
	if shared && buf[n] == blockTypeNone {
		b = append(make([]byte, 0, n), b...)
	}
	return b, nil
}

// installDataBlock points bi at the data block b just read from the file
// at h, after checking its restart array, and caches it when fillCache.
func (r *Reader) installDataBlock(bi *blockIter, h blockHandle, b []byte, fillCache bool) error {
	if !blockValid(b) {
		return r.corruptf(h, "bad data block restart array")
	}
	if fillCache && r.cache != nil {
		r.cache.SetAux(r.cacheID, h.offset, b, nil)
	}
	bi.init(b, true)
	return nil
}

// useCachedBlock points bi at the data block b (with aux) that the cache
// holds for h, and counts the hit.
func (r *Reader) useCachedBlock(bi *blockIter, h blockHandle, b, aux []byte, fillCache, seek bool, ra *readahead.State, src fileSource) {
	r.countCacheHit(src)
	if ra != nil {
		ra.NoteCached(int64(h.offset), int(h.length)+blockTrailerLen)
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
		r.cache.SetAux(r.cacheID, h.offset, b, aux)
	}
	bi.initCached(b, aux, seek)
}

// cachedDataBlock points bi at the data block at h for a seek when the
// cache holds it, counting the hit in src's stats too, and reports whether
// it did.
func (r *Reader) cachedDataBlock(bi *blockIter, h blockHandle, fillCache bool, src fileSource) bool {
	if r.cache == nil {
		return false
	}
	b, aux, ok := r.cache.GetAux(r.cacheID, h.offset)
	if !ok {
		return false
	}
	r.useCachedBlock(bi, h, b, aux, fillCache, true, nil, src)
	return true
}

// countFileRead counts one read of n bytes from src.
func (r *Reader) countFileRead(src fileSource, n int) {
	for _, s := range [2]*ReadStats{r.stats, src.stats} {
		if s == nil {
			continue
		}
		s.FileReads.Add(1)
		s.BytesRead.Add(uint64(n))
		if src.align > 1 {
			s.DirectReads.Add(1)
		}
	}
}

// countCacheHit counts a data block found in the cache.
func (r *Reader) countCacheHit(src fileSource) {
	r.stats.CacheHits.Add(1)
	if src.stats != nil {
		src.stats.CacheHits.Add(1)
	}
}

// addReadahead adds the readahead counters c to the Reader's stats and
// src's.
func (r *Reader) addReadahead(src fileSource, c readahead.Counters) {
	r.stats.addReadahead(c, src.align > 1)
	if src.stats != nil {
		src.stats.addReadahead(c, src.align > 1)
	}
}

// pendingRead is the read of one data block that the first phase of a
// two-phase seek submitted and that the block's next load waits for.
//
// Invariant: while active the read may be in flight, and its buffer
// (rr's) must be neither reused nor pooled; every path that drops the read
// (consume, discard) waits for it first.
type pendingRead struct {
	active bool
	// cached is set when the prepare found the block in the cache: block
	// and aux are what the cache held (blocks are immutable and kept alive
	// by the GC, so holding them is safe), and no read is in flight.
	cached     bool
	block, aux []byte
	// The read is batch's request, or with a ReadGroup the group's request
	// idx of generation gen.
	batch *vfs.ReadBatch
	group *ReadGroup
	gen   uint64
	idx   int
	// rr is the block's read; req is the copy of rr.req submitted (a
	// one-request batch), which receives the result.
	rr     rangeRead
	req    [1]vfs.ReadRequest
	handle blockHandle
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
	i := it.r.seekIndex(base.MakeSearchKey(key))
	// The seek that follows finds the same index entry without a search.
	it.prepKey = append(it.prepKey[:0], key...)
	it.prepIdx, it.prepValid = i, true
	it.prepareBlock(i)
}

// seekIndexPrepared is seekIndex for SeekGE(key) (key clamped to the
// bounds), using the result of the PrepareSeekGE before it if it was for
// the same key.
func (it *tableIter) seekIndexPrepared(key []byte) int {
	if it.prepValid {
		it.prepValid = false
		if bytes.Equal(key, it.prepKey) {
			return it.prepIdx
		}
	}
	return it.r.seekIndex(base.MakeSearchKey(key))
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
	it.prepareBlock(0)
}

// prepareBlock submits the read of data block i unless it needs none.
func (it *tableIter) prepareBlock(i int) {
	r := it.r
	if i >= len(r.index) || i == it.loaded {
		return
	}
	h := r.index[i].handle
	if it.pend.active {
		if it.pend.handle == h {
			return
		}
		it.discardPending()
	}
	if r.cache != nil {
		if b, aux, ok := r.cache.GetAux(r.cacheID, h.offset); ok {
			// The load uses it without a second lookup.
			it.pend = pendingRead{active: true, cached: true, block: b, aux: aux, handle: h}
			return
		}
	}
	if r.checkHandle(h, true) != nil {
		return // the load reports it
	}
	p := &it.pend
	p.rr = newRangeRead(it.src, int64(h.offset), int(h.length)+blockTrailerLen)
	p.req[0] = p.rr.req
	p.handle = h
	p.active = true
	r.stats.AsyncReads.Add(1)
	if it.src.stats != nil {
		it.src.stats.AsyncReads.Add(1)
	}
	if it.group != nil {
		p.group = it.group
		p.gen, p.idx = it.group.add(p.req[0])
		return
	}
	p.batch = r.async.Submit(p.req[:])
}

// errPendingLost says a pending read's result was dropped by its
// ReadGroup; the load reads the block by itself.
var errPendingLost = errors.New("sstable: pending read dropped")

// awaitPending waits for the pending read and counts it; it returns the
// block's bytes (with trailer) and whether they are in shared memory.
func (it *tableIter) awaitPending() (buf []byte, err error) {
	p := &it.pend
	req := &p.req[0]
	if p.group != nil {
		n, rerr, ok := p.group.wait(p.gen, p.idx)
		if !ok {
			return nil, errPendingLost
		}
		req.N, req.Err = n, rerr
	} else {
		p.batch.Wait()
		p.batch.Release()
		p.batch = nil
	}
	it.r.countFileRead(it.src, req.N)
	p.rr.req.N, p.rr.req.Err = req.N, req.Err
	return it.r.rangeBytes(&p.rr)
}

// freePending forgets the (completed) pending read and frees its memory.
func (it *tableIter) freePending() {
	p := &it.pend
	p.rr.release()
	*p = pendingRead{}
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
func (it *tableIter) loadPending(h blockHandle, seek bool) error {
	if it.pend.cached {
		b, aux := it.pend.block, it.pend.aux
		it.pend = pendingRead{}
		it.r.useCachedBlock(&it.data, h, b, aux, it.fillCache, seek, &it.ra, it.src)
		return nil
	}
	buf, err := it.awaitPending()
	defer it.freePending()
	if err == errPendingLost {
		return it.r.loadDataBlock(&it.data, h, it.fillCache, seek, &it.ra, it.src)
	}
	if err != nil {
		return err
	}
	total := int(h.length) + blockTrailerLen
	it.ra.NoteRead(int64(h.offset), total)
	b, err := it.r.decodeBlock(h, buf, it.pend.rr.pooled(), it.src)
	if err != nil {
		return err
	}
	return it.r.installDataBlock(&it.data, h, b, it.fillCache)
}

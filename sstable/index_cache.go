package sstable

import (
	"unsafe"

	"github.com/shaledb/shale/internal/block"
)

// The index and filter blocks in the block cache
// (ReaderOptions.CacheIndexAndFilterBlocks, RocksDB's
// cache_index_and_filter_blocks). The cache holds the decoded index as a
// value (cache.SetValue) charged its size, and the filter's bytes, under
// the Reader's CacheID at the offsets of their blocks. Either may be
// evicted; the next read that needs it reads the block from the file again,
// decodes it and caches it. An iterator, Get or MultiGet lookup keeps the
// index it started with until it is done, so an eviction never changes an
// index under a reader. With PinIndexAndFilterBlocks (the DB sets it for
// L0 tables) the Reader pins both in the cache for its life and holds them
// itself, so lookups need no cache probe. When the cache has no room for
// them, the Reader holds them as it does without the option.

// index returns the decoded index: the Reader's own, or the cache's (read
// from src and cached again when it was evicted).
func (r *Reader) index(src block.Source) (*tableIndex, error) {
	if ix := r.ix; ix != nil {
		return ix, nil
	}
	return r.cachedIndex(src)
}

// cachedIndex returns the index from the cache, reading, decoding and
// caching it again when it is not there.
func (r *Reader) cachedIndex(src block.Source) (*tableIndex, error) {
	if v, ok := r.bf.CachedValue(r.indexH); ok {
		if ix, ok := v.(*tableIndex); ok {
			return ix, nil
		}
	}
	b, err := r.bf.ReadBlock(r.indexH, r.footOff, nil, src)
	if err != nil {
		return nil, err
	}
	kind := indexSingle
	if r.twoLevel {
		kind = indexTop
	}
	ix, err := r.decodeIndexBlock(r.indexH, b, kind)
	if err != nil {
		return nil, err
	}
	r.bf.SetCachedValue(r.indexH, ix, ix.size, false)
	return ix, nil
}

// cachedFilter returns the filter from the cache, reading and caching it
// again when it is not there. A filter that cannot be read is no filter
// (nil): it only saves reads, and the table's data blocks report damage
// when they are read (RocksDB ignores such errors too).
func (r *Reader) cachedFilter(src block.Source) []byte {
	if f := r.filterFromCache(); f != nil {
		return f
	}
	f, err := r.bf.ReadBlock(r.filterH, r.footOff, nil, src)
	if err != nil {
		return nil
	}
	r.bf.SetCachedValue(r.filterH, f, int64(cap(f)), false)
	return f
}

// filterFromCache returns the filter block if the block cache holds it now,
// else nil; it reads nothing.
func (r *Reader) filterFromCache() []byte {
	v, _ := r.bf.CachedValue(r.filterH)
	f, _ := v.([]byte)
	return f
}

// cachedAtOpen returns what an earlier Reader of the file (same CacheID)
// left in the cache for the block at h, pinned when pin (pinned reports
// it), or nil.
func (r *Reader) cachedAtOpen(h block.Handle, pin bool) (v any, pinned bool) {
	if pin {
		v, ok := r.bf.PinCachedValue(h)
		return v, ok
	}
	v, _ = r.bf.CachedValue(h)
	return v, false
}

// cachedIndexAtOpen is cachedAtOpen for the index.
func (r *Reader) cachedIndexAtOpen(pin bool) *tableIndex {
	v, pinned := r.cachedAtOpen(r.indexH, pin)
	ix, _ := v.(*tableIndex)
	if pinned && ix == nil {
		r.bf.Unpin(r.indexH)
		pinned = false
	}
	r.indexPinned = pinned
	return ix
}

// cachedFilterAtOpen is cachedAtOpen for the filter.
func (r *Reader) cachedFilterAtOpen(pin bool) []byte {
	v, pinned := r.cachedAtOpen(r.filterH, pin)
	f, _ := v.([]byte)
	if pinned && f == nil {
		r.bf.Unpin(r.filterH)
		pinned = false
	}
	r.filterPinned = pinned
	return f
}

// keepIndexAndFilter decides, at open, who holds the index and the filter
// (fromCache says which came from the cache): with cacheIF the cache
// (caching them unless they came from there, pinned when pin) and, when
// pinned or not cached, the Reader too; without it the Reader alone. It
// sets heldMem to what the Reader then holds outside the cache.
func (r *Reader) keepIndexAndFilter(ix *tableIndex, filter []byte, ixFromCache, filterFromCache, hasFilter, cacheIF, pin bool) {
	r.heldMem = int64(unsafe.Sizeof(*r)) + r.props.memSize() + rangeDelsMemSize(r)
	if !cacheIF {
		r.ix, r.filter = ix, filter
		r.heldMem += ix.size + int64(cap(filter))
		return
	}
	switch {
	case !ixFromCache && !r.bf.SetCachedValue(r.indexH, ix, ix.size, pin):
		// No room in the cache: the Reader holds it.
		r.ix = ix
		r.heldMem += ix.size
	case pin:
		r.ix, r.indexPinned = ix, true
	}
	if !hasFilter {
		return
	}
	switch {
	case !filterFromCache && !r.bf.SetCachedValue(r.filterH, filter, int64(cap(filter)), pin):
		r.filter = filter
		r.heldMem += int64(cap(filter))
	case pin:
		r.filter, r.filterPinned = filter, true
	default:
		r.filterInCache = true
	}
}

// unpin gives back the pins the Reader holds on its index and filter.
func (r *Reader) unpin() {
	if r.indexPinned {
		r.bf.Unpin(r.indexH)
		r.indexPinned = false
	}
	if r.filterPinned {
		r.bf.Unpin(r.filterH)
		r.filterPinned = false
	}
}

// memSize estimates the memory p holds.
func (p *Properties) memSize() int64 {
	n := int64(unsafe.Sizeof(*p)) + int64(len(p.ComparerName)+len(p.CompressionName))
	for k, v := range p.User {
		n += int64(len(k)+len(v)) + 2*int64(unsafe.Sizeof(""))
	}
	return n
}

// rangeDelsMemSize estimates the memory r's range tombstones hold.
func rangeDelsMemSize(r *Reader) int64 {
	n := int64(cap(r.rangeDels)) * int64(unsafe.Sizeof(r.rangeDels[0]))
	for _, s := range r.rangeDels {
		n += int64(cap(s.Start)+cap(s.End)) + 8*int64(cap(s.Seqs))
	}
	return n
}

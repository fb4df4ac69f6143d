package sstable

import (
	"bytes"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
)

// Partitioned index and filters (WriterOptions.IndexType =
// TwoLevelIndexSearch, PartitionFilters; RocksDB's kTwoLevelIndexSearch and
// partition_filters). The footer's index handle points at a top-level
// index whose entries map the last separator of each index partition to
// the partition's block; a partition is an index block as in a table with
// one index (an entry per data block), over consecutive data blocks. The
// Reader keeps only the top level (or, with CacheIndexAndFilterBlocks, the
// cache does, as for a single index); partitions go through the block
// cache as decoded values charged their size, read and decoded again after
// an eviction, so the index memory of many large tables is bounded by the
// cache. A lookup, iterator or MultiGet lookup keeps the partition it works
// in until it moves to another one.
//
// With partitioned filters the top-level filter index maps the same
// separators to filter partitions, one per index partition, each a filter
// block of the keys (and prefixes) of that partition's data blocks; the
// Reader always holds this small top level and the partitions go through
// the cache as raw bytes.

// indexBlockKind says what an index block holds, for decodeIndexBlock.
type indexBlockKind int8

const (
	indexSingle    indexBlockKind = iota // the one index of a format-1 table
	indexPartition                       // an index partition
	indexTop                             // a top-level index or filter index
)

// partition returns index partition p of the top-level index top: from the
// cache, or read from src, decoded and cached.
func (r *Reader) partition(top *tableIndex, p int, src block.Source) (*tableIndex, error) {
	h := top.items[p].handle
	if v, ok := r.bf.CachedValue(h); ok {
		if ix, ok := v.(*tableIndex); ok {
			return ix, nil
		}
	}
	ix, err := r.readPartition(top, p, src)
	if err != nil {
		return nil, err
	}
	r.bf.SetCachedValue(h, ix, ix.size, false)
	return ix, nil
}

// readPartition reads and decodes index partition p from src, checking
// that it ends with the top level's separator for it.
func (r *Reader) readPartition(top *tableIndex, p int, src block.Source) (*tableIndex, error) {
	h := top.items[p].handle
	b, err := r.bf.ReadBlock(h, r.footOff, nil, src)
	if err != nil {
		return nil, err
	}
	ix, err := r.decodeIndexBlock(h, b, indexPartition)
	if err != nil {
		return nil, err
	}
	if last := ix.items[len(ix.items)-1].sep; base.InternalCompare(r.cmp, last, top.items[p].sep) != 0 {
		return nil, r.corruptf(h, "index partition %d ends at %s, the top-level index says %s", p, last, top.items[p].sep)
	}
	if p > 0 && base.InternalCompare(r.cmp, ix.items[0].sep, top.items[p-1].sep) <= 0 {
		return nil, r.corruptf(h, "index partition %d starts at or below the previous partition's separator", p)
	}
	return ix, nil
}

// indexCursor walks the data blocks of a table's index, one or two levels,
// for point lookups and whole-table walks.
type indexCursor struct {
	r   *Reader
	src block.Source
	top *tableIndex // nil for a single index
	ix  *tableIndex // the index, or the current partition
	p   int         // the current partition
	i   int         // the current item of ix
}

// init sets c up over r's index (read through src).
func (c *indexCursor) init(r *Reader, src block.Source) error {
	ix, err := r.index(src)
	if err != nil {
		return err
	}
	*c = indexCursor{r: r, src: src}
	if r.twoLevel {
		c.top = ix
	} else {
		c.ix = ix
	}
	return nil
}

// seek positions at the first data block whose separator is >= k; valid
// is then false when there is none.
func (c *indexCursor) seek(k base.InternalKey) error {
	if c.top == nil {
		c.i = c.ix.seek(k, c.r.cmp)
		return nil
	}
	c.p = c.top.seek(k, c.r.cmp)
	if c.p == len(c.top.items) {
		c.ix, c.i = nil, 0
		return nil
	}
	ix, err := c.r.partition(c.top, c.p, c.src)
	if err != nil {
		return err
	}
	c.ix, c.i = ix, ix.seek(k, c.r.cmp)
	return nil
}

// first positions at the first data block.
func (c *indexCursor) first() error {
	if c.top == nil {
		c.i = 0
		return nil
	}
	c.p = -1
	c.ix, c.i = nil, 0
	return c.nextPartition()
}

// nextPartition moves to the first block of the next partition.
func (c *indexCursor) nextPartition() error {
	c.p++
	if c.p >= len(c.top.items) {
		c.ix, c.i = nil, 0
		return nil
	}
	ix, err := c.r.partition(c.top, c.p, c.src)
	if err != nil {
		return err
	}
	c.ix, c.i = ix, 0
	return nil
}

// valid reports whether the cursor is at a data block.
func (c *indexCursor) valid() bool { return c.ix != nil && c.i < len(c.ix.items) }

// item returns the current data block's index item; valid must be true.
func (c *indexCursor) item() *indexItem { return &c.ix.items[c.i] }

// next moves to the next data block.
func (c *indexCursor) next() error {
	c.i++
	if c.top != nil && c.i >= len(c.ix.items) {
		return c.nextPartition()
	}
	return nil
}

// filterPartitionFor returns the filter partition that would hold userKey
// (the one of the index partition its entries start in), or ok false when
// every key of the table sorts below userKey. A partition that cannot be
// read is no filter (nil, ok true), as a damaged single filter is; with
// cachedOnly a partition the cache does not hold now is nil too.
func (r *Reader) filterPartitionFor(userKey []byte, src block.Source, cachedOnly bool) (f []byte, p int, ok bool) {
	top := r.filterTop
	p = top.seek(base.MakeSearchKey(userKey), r.cmp)
	if p == len(top.items) {
		return nil, p, false
	}
	h := top.items[p].handle
	if v, ok := r.bf.CachedValue(h); ok {
		if f, ok := v.([]byte); ok {
			return f, p, true
		}
	}
	if cachedOnly {
		return nil, p, true
	}
	f, err := r.bf.ReadBlock(h, r.footOff, nil, src)
	if err != nil {
		return nil, p, true
	}
	r.bf.SetCachedValue(h, f, int64(cap(f)), false)
	return f, p, true
}

// partFilterMayContain is the filter probe of a table with partitioned
// filters: probe (userKey or its prefix) in the partition of userKey.
func (r *Reader) partFilterMayContain(userKey, probe []byte, src block.Source, cachedOnly bool) bool {
	f, _, ok := r.filterPartitionFor(userKey, src, cachedOnly)
	if !ok {
		return false
	}
	if f == nil {
		return true
	}
	return bloomMayContain(f, bloomHash(probe))
}

// partPrefixMayMatch is prefixMayMatch for partitioned filters. The keys
// with the prefix sort at or after it, so they start in the partition the
// prefix itself seeks to; they go on into the next one only when that
// partition's separator still starts with the prefix (bytewise order only:
// under another comparer the filter is not consulted for prefixes).
func (r *Reader) partPrefixMayMatch(prefix []byte, src block.Source) (ok, probed bool) {
	if !r.bytewise {
		return true, false
	}
	f, p, ok := r.filterPartitionFor(prefix, src, false)
	if !ok {
		return false, true
	}
	if f == nil || bloomMayContain(f, bloomHash(prefix)) {
		return true, f != nil
	}
	if bytes.HasPrefix(r.filterTop.items[p].sep.UserKey, prefix) {
		return true, true
	}
	return false, true
}

// openTwoLevel finishes opening a table with a partitioned index: top is
// the top-level index and, with partFilter, fb the top-level filter index
// at fh. The partitions lie between the data blocks and the meta blocks,
// so they narrow r.metaStart; the data blocks end at DataSize.
func (r *Reader) openTwoLevel(top *tableIndex, fh block.Handle, fb []byte, partFilter bool) error {
	for _, it := range top.items {
		r.metaStart = min(r.metaStart, it.handle.Offset)
	}
	if partFilter {
		ft, err := r.decodeIndexBlock(fh, fb, indexTop)
		if err != nil {
			return err
		}
		if len(ft.items) != len(top.items) {
			return r.corruptf(fh, "top-level filter index has %d partitions, the index %d", len(ft.items), len(top.items))
		}
		for i, it := range ft.items {
			if base.InternalCompare(r.cmp, it.sep, top.items[i].sep) != 0 {
				return r.corruptf(fh, "top-level filter index entry %d differs from the index's", i)
			}
			r.metaStart = min(r.metaStart, it.handle.Offset)
		}
		r.filterTop = ft
	}
	r.dataEnd = r.props.DataSize
	if r.dataEnd > r.metaStart {
		return base.CorruptionErrorf(r.bf.Name(), 0, "data blocks end at %d (properties), past the index partitions at %d", r.dataEnd, r.metaStart)
	}
	return nil
}

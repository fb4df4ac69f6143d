package sstable

import (
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/readahead"
)

// iterPos is where a tableIter stands.
type iterPos int8

const (
	posInvalid     iterPos = iota // unpositioned, or stopped by an error
	posValid                      // at an entry
	posBeforeFirst                // moved before the first entry in bounds
	posAfterLast                  // moved after the last entry in bounds
)

// tableIter is the two-level iterator of a table: a position in the index
// (kept decoded in the Reader) and a blockIter over the current data block.
//
// Bounds are pushed down: moving forward stops at the first block whose
// separator is already >= Upper without reading it, and per-key bound
// checks are skipped within blocks that lie wholly inside the bounds.
// After a Next or Prev has run off the end, the opposite move returns to
// the last (or first) entry in bounds.
type tableIter struct {
	r   *Reader
	cmp base.Compare
	// ix is the table's index, which the iterator keeps from its first
	// positioning until Close (with CacheIndexAndFilterBlocks the cache may
	// evict it meanwhile); nil until then.
	ix *tableIndex
	// top, for a table with a partitioned index, is its top-level index
	// (kept as ix is) and ix is then partition part (nil, part -1, until
	// the first positioning); idx and loaded number the blocks of ix.
	top          *tableIndex
	part         int
	lower, upper []byte
	fillCache    bool
	idx          int // index entry of the current block
	loaded       int // index entry of the block in data, -1 if none
	data         blockIter
	// withinUpper (withinLower) is true when every key of the loaded block
	// is below Upper (at or above Lower).
	withinUpper, withinLower bool
	pos                      iterPos
	err                      error
	// raSize is IterOptions.ReadaheadSize; ra is the readahead of the data
	// blocks this iterator reads from the file, set up at its first block
	// load (raReady) because its limit needs an index search.
	raSize  int64
	raReady bool
	ra      readahead.State
	// src is where data blocks are read from: the Reader's handle, or
	// IterOptions.File; its Stats is IterOptions.Stats.
	src block.Source
	// async is IterOptions.Async with a Reader that has an AsyncReader;
	// pend is the read the first phase of a two-phase seek submitted.
	async bool
	pend  pendingRead
	group *ReadGroup
	// prepKey and prepIdx are the key of the last PrepareSeekGE (clamped)
	// and its index entry, while prepValid.
	prepKey   []byte
	prepIdx   int
	prepValid bool
	// skipBlock and skipped are IterOptions.SkipBlock and Skipped; only
	// set for an iterator without bounds.
	skipBlock func(p *BlockProps, lower base.InternalKey, hasLower bool, sep base.InternalKey) bool
	skipped   *int64
	// prefixFilter says SeekPrefixGE consults the table's prefix filter:
	// IterOptions.PrefixExtractor has the name of the extractor the table
	// was written with. stats is IterOptions.Stats (nil for none), which
	// counts its probes.
	prefixFilter bool
	stats        *ReadStats
}

var tableIterPool = sync.Pool{New: func() any { return new(tableIter) }}

var (
	_ base.InternalIterator   = (*tableIter)(nil)
	_ base.InternalSeeker     = (*tableIter)(nil)
	_ base.PrefixSeeker       = (*tableIter)(nil)
	_ base.PrefixSeekPreparer = (*tableIter)(nil)
)

// NewIter returns an iterator over the table's point entries. Range
// tombstones are not included; see RangeTombstones. Close returns the
// iterator to a pool: it must not be used afterwards.
func (r *Reader) NewIter(o IterOptions) base.InternalIterator {
	it := tableIterPool.Get().(*tableIter)
	it.r = r
	it.ix, it.top, it.part = r.ix, nil, -1
	if r.twoLevel {
		it.ix, it.top = nil, r.ix
	}
	it.cmp = r.cmp
	it.lower, it.upper = o.Lower, o.Upper
	it.fillCache = o.FillCache
	it.raSize, it.raReady = o.ReadaheadSize, false
	it.src = r.bf.Source()
	if o.File != nil {
		it.src = block.Source{File: o.File, Align: fileAlignment(o.File)}
	}
	it.src.Stats = blockStats(o.Stats)
	it.src.Deadline = o.Deadline
	it.async = o.Async && r.bf.AsyncReader() != nil
	it.group = o.Group
	it.idx, it.loaded = 0, -1
	it.pos = posInvalid
	it.err = nil
	it.skipBlock, it.skipped = nil, nil
	if o.Lower == nil && o.Upper == nil {
		it.skipBlock, it.skipped = o.SkipBlock, o.Skipped
	}
	it.prefixFilter = o.PrefixExtractor != nil && r.prefixName != "" && o.PrefixExtractor.Name() == r.prefixName
	it.stats = o.Stats
	return it
}

// skipFrom returns the first data block from i on that SkipBlock does not
// skip (len(items) when it skips them all).
func (it *tableIter) skipFrom(i int) int {
	if it.skipBlock == nil || it.ix.props == nil {
		return i
	}
	items := it.ix.items
	for ; i < len(items); i++ {
		lower, hasLower := it.prevSep(i)
		if !it.skipBlock(&it.ix.props[i], lower, hasLower, items[i].sep) {
			break
		}
		if it.skipped != nil {
			*it.skipped++
		}
	}
	return i
}

// needIndex makes sure the iterator has the table's index, reading it when
// the cache no longer holds it; a failure stops the iterator with the error.
func (it *tableIter) needIndex() bool {
	if it.ix != nil || it.top != nil {
		return true
	}
	ix, err := it.r.index(it.src)
	if err != nil {
		it.err = err
		it.pos = posInvalid
		return false
	}
	if it.r.twoLevel {
		it.top = ix
	} else {
		it.ix = ix
	}
	return true
}

// setPart makes partition p the iterator's ix (reading it when the cache
// does not hold it); a failure stops the iterator with the error.
func (it *tableIter) setPart(p int) bool {
	if p == it.part && it.ix != nil {
		return true
	}
	ix, err := it.r.partition(it.top, p, it.src)
	if err != nil {
		it.err = err
		it.pos = posInvalid
		it.loaded = -1
		return false
	}
	it.ix, it.part, it.loaded = ix, p, -1
	return true
}

// seekIndex returns the first block of ix whose separator is >= k, making
// the partition that holds it ix; len(it.ix.items) means no block of the
// table has one (ix is then the last partition). ok false is an error.
func (it *tableIter) seekIndex(k base.InternalKey) (i int, ok bool) {
	if it.top == nil {
		return it.ix.seek(k, it.cmp), true
	}
	p := it.top.seek(k, it.cmp)
	if p == len(it.top.items) {
		if !it.setPart(p - 1) {
			return 0, false
		}
		return len(it.ix.items), true
	}
	if !it.setPart(p) {
		return 0, false
	}
	return it.ix.seek(k, it.cmp), true
}

// prevSep returns the separator of the block before block i of ix, which
// may end the previous partition; ok is false for the table's first block.
func (it *tableIter) prevSep(i int) (sep base.InternalKey, ok bool) {
	if i > 0 {
		return it.ix.items[i-1].sep, true
	}
	if it.top != nil && it.part > 0 {
		return it.top.items[it.part-1].sep, true
	}
	return base.InternalKey{}, false
}

// forwardFrom returns the first block at or after block i of ix that
// SkipBlock does not skip, moving on through the partitions; ok is false
// at the end of the table, or on an error (it.err set).
func (it *tableIter) forwardFrom(i int) (int, bool) {
	for {
		i = it.skipFrom(i)
		if i < len(it.ix.items) {
			return i, true
		}
		if it.top == nil || it.part+1 >= len(it.top.items) {
			return i, false
		}
		if !it.setPart(it.part + 1) {
			return 0, false
		}
		i = 0
	}
}

// lastPart makes the last partition ix (a no-op for a single index).
func (it *tableIter) lastPart() bool {
	if it.top == nil {
		return true
	}
	return it.setPart(len(it.top.items) - 1)
}

func (it *tableIter) load(i int, seek bool) bool {
	it.idx = i
	if i == it.loaded {
		return true
	}
	h := it.ix.items[i].handle
	if !it.raReady {
		it.initReadahead()
	}
	var err error
	if it.pend.active && it.pend.handle == h {
		err = it.loadPending(h, seek)
	} else {
		err = it.r.loadDataBlock(&it.data, h, it.fillCache, seek, &it.ra, it.src)
	}
	// Counted as they happen, so that an iterator's Stats are current.
	it.r.bf.TakeReadahead(it.src, &it.ra)
	if err != nil {
		it.loaded = -1
		it.err = err
		it.pos = posInvalid
		return false
	}
	it.loaded = i
	it.withinUpper = it.upper == nil || it.cmp(it.ix.items[i].sep.UserKey, it.upper) < 0
	if it.lower == nil {
		it.withinLower = true
	} else {
		prev, ok := it.prevSep(i)
		it.withinLower = ok && it.cmp(prev.UserKey, it.lower) >= 0
	}
	return true
}

// initReadahead configures the readahead state. Its limit is the end of
// the data blocks or, with an upper bound, the end of the last block that
// may hold keys below it: the first block whose separator is >= Upper.
func (it *tableIter) initReadahead() {
	r := it.r
	cfg := readahead.Config{
		Limit:     int64(r.dataEnd),
		Alignment: it.src.Align,
		Reader:    r.bf.AsyncReader(),
		MaxAuto:   r.maxAuto,
		Async:     it.async,
		Deadline:  it.src.Deadline,
	}
	switch {
	case it.raSize > 0:
		cfg.Size = it.raSize
	case it.raSize < 0:
		cfg.MaxAuto = -1
	}
	if it.upper != nil {
		var c indexCursor
		c.r, c.src, c.top, c.ix = r, it.src, it.top, it.ix
		if c.seek(base.MakeSearchKey(it.upper)) == nil && c.valid() {
			cfg.Limit = int64(c.item().handle.End())
		}
	}
	it.ra.Init(it.src.File, cfg)
	it.raReady = true
}

func (it *tableIter) corrupt() bool {
	it.err = it.r.corruptf(it.ix.items[it.idx].handle, "bad data block entry")
	it.loaded = -1
	it.pos = posInvalid
	return false
}

func (it *tableIter) stop(p iterPos) bool {
	it.pos = p
	return false
}

// settleForward moves to the first entry at or after the data iterator's
// position (ok says whether it has one in the current block) and applies
// the upper bound.
func (it *tableIter) settleForward(ok bool) bool {
	for !ok {
		if it.data.corrupt {
			return it.corrupt()
		}
		if it.upper != nil && it.cmp(it.ix.items[it.idx].sep.UserKey, it.upper) >= 0 {
			return it.stop(posAfterLast)
		}
		next, more := it.forwardFrom(it.idx + 1)
		if !more {
			if it.err != nil {
				return false
			}
			return it.stop(posAfterLast)
		}
		if !it.load(next, false) {
			return false
		}
		ok = it.data.first()
	}
	if !it.withinUpper && it.upper != nil && it.cmp(it.data.ikey.UserKey, it.upper) >= 0 {
		return it.stop(posAfterLast)
	}
	it.pos = posValid
	return true
}

// settleBackward is settleForward in reverse, applying the lower bound.
func (it *tableIter) settleBackward(ok bool) bool {
	for !ok {
		if it.data.corrupt {
			return it.corrupt()
		}
		i := it.idx - 1
		if i < 0 {
			if it.top == nil || it.part <= 0 {
				return it.stop(posBeforeFirst)
			}
			if !it.setPart(it.part - 1) {
				return false
			}
			i = len(it.ix.items) - 1
		}
		// Block i holds keys <= its separator: if that is below Lower, so
		// is all of the block.
		if it.lower != nil && it.cmp(it.ix.items[i].sep.UserKey, it.lower) < 0 {
			return it.stop(posBeforeFirst)
		}
		if !it.load(i, false) {
			return false
		}
		ok = it.data.last()
	}
	if !it.withinLower && it.lower != nil && it.cmp(it.data.ikey.UserKey, it.lower) < 0 {
		return it.stop(posBeforeFirst)
	}
	it.pos = posValid
	return true
}

// seekGE is SeekGE but for the pending read.
func (it *tableIter) seekGE(key []byte) bool {
	it.err = nil
	if it.lower != nil && it.cmp(key, it.lower) < 0 {
		key = it.lower
	}
	if it.upper != nil && it.cmp(key, it.upper) >= 0 {
		return it.stop(posAfterLast)
	}
	if !it.needIndex() {
		return false
	}
	search := base.MakeSearchKey(key)
	i, ok := it.seekIndexPrepared(key)
	if !ok {
		return false
	}
	if i == len(it.ix.items) {
		return it.stop(posAfterLast)
	}
	if !it.load(i, true) {
		return false
	}
	return it.settleForward(it.data.seekGE(search, it.cmp))
}

// SeekGE positions at the first entry whose user key is >= key (and >=
// Lower). A read that PrepareSeekGE submitted is used by the load of its
// block or, when SeekGE does not need that block, dropped.
func (it *tableIter) SeekGE(key []byte) bool {
	ok := it.seekGE(key)
	if it.pend.active {
		it.discardPending()
	}
	return ok
}

// SeekPrefixGE is SeekGE(key) for the entries of prefix only
// (base.PrefixSeeker): when the table's prefix filter says no point key has
// the prefix, it returns false, reading no data block. The iterator is then
// unpositioned (Next and Prev return false). A table written with another
// extractor, or none, is sought as by SeekGE.
func (it *tableIter) SeekPrefixGE(prefix, key []byte) bool {
	if !it.prefixMayMatch(prefix, true) {
		it.err = nil
		it.prepValid = false
		if it.pend.active {
			it.discardPending()
		}
		return it.stop(posInvalid)
	}
	return it.SeekGE(key)
}

// PrepareSeekPrefixGE is PrepareSeekGE for SeekPrefixGE: a table the
// prefix filter rules out submits no read.
func (it *tableIter) PrepareSeekPrefixGE(prefix, key []byte) {
	if it.async && it.prefixMayMatch(prefix, false) {
		it.PrepareSeekGE(key)
	}
}

// prefixMayMatch probes the table's prefix filter for prefix, counting the
// probe in the iterator's stats when count.
func (it *tableIter) prefixMayMatch(prefix []byte, count bool) bool {
	if !it.prefixFilter {
		return true
	}
	ok, probed := it.r.prefixMayMatch(it.r.prefixName, prefix, it.src)
	if probed && count && it.stats != nil {
		it.stats.PrefixChecks.Add(1)
		if !ok {
			it.stats.PrefixUseful.Add(1)
		}
	}
	return ok
}

// SeekGEInternal positions at the first entry at or after key in
// internal-key order (and at or above Lower): the index and the block are
// searched with the whole internal key, as Get does.
func (it *tableIter) SeekGEInternal(key base.InternalKey) bool {
	if it.lower != nil && it.cmp(key.UserKey, it.lower) < 0 {
		// Every entry in bounds sorts after key.
		return it.SeekGE(it.lower)
	}
	it.err = nil
	it.prepValid = false
	ok := it.seekGEInternal(key)
	if it.pend.active {
		it.discardPending()
	}
	return ok
}

func (it *tableIter) seekGEInternal(key base.InternalKey) bool {
	if it.upper != nil && it.cmp(key.UserKey, it.upper) >= 0 {
		return it.stop(posAfterLast)
	}
	if !it.needIndex() {
		return false
	}
	i, ok := it.seekIndex(key)
	if !ok {
		return false
	}
	if i == len(it.ix.items) {
		return it.stop(posAfterLast)
	}
	if !it.load(i, true) {
		return false
	}
	return it.settleForward(it.data.seekGE(key, it.cmp))
}

// SeekLT positions at the last entry whose user key is < key (and < Upper).
func (it *tableIter) SeekLT(key []byte) bool {
	it.err = nil
	defer it.discardPending() // after the load that may use it (PrepareSeekLT)
	if it.upper != nil && it.cmp(key, it.upper) > 0 {
		key = it.upper
	}
	if it.lower != nil && it.cmp(key, it.lower) <= 0 {
		return it.stop(posBeforeFirst)
	}
	if !it.needIndex() {
		return false
	}
	search := base.MakeSearchKey(key)
	i, ok := it.seekIndex(search)
	if !ok {
		return false
	}
	if i == len(it.ix.items) {
		// Every entry sorts before search: the answer is the last one.
		if i == 0 {
			return it.stop(posBeforeFirst)
		}
		if !it.load(i-1, false) {
			return false
		}
		return it.settleBackward(it.data.last())
	}
	if !it.load(i, true) {
		return false
	}
	ok = false
	if it.data.seekGE(search, it.cmp) {
		ok = it.data.prev()
	} else if !it.data.corrupt {
		ok = it.data.last()
	}
	return it.settleBackward(ok)
}

// First positions at the first entry (at or above Lower).
func (it *tableIter) First() bool {
	it.err = nil
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	defer it.discardPending() // after the load that may use it
	if !it.needIndex() {
		return false
	}
	if it.top != nil && !it.setPart(0) {
		return false
	}
	first, ok := it.forwardFrom(0)
	if !ok {
		if it.err != nil {
			return false
		}
		return it.stop(posAfterLast)
	}
	if !it.load(first, false) {
		return false
	}
	return it.settleForward(it.data.first())
}

// Last positions at the last entry (below Upper).
func (it *tableIter) Last() bool {
	it.err = nil
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	defer it.discardPending() // after the load that may use it (PrepareLast)
	if !it.needIndex() {
		return false
	}
	if !it.lastPart() {
		return false
	}
	if len(it.ix.items) == 0 {
		return it.stop(posBeforeFirst)
	}
	if !it.load(len(it.ix.items)-1, false) {
		return false
	}
	return it.settleBackward(it.data.last())
}

// Next moves to the next entry.
func (it *tableIter) Next() bool {
	switch it.pos {
	case posValid:
		return it.settleForward(it.data.next())
	case posBeforeFirst:
		return it.First()
	}
	return false
}

// Prev moves to the previous entry.
func (it *tableIter) Prev() bool {
	switch it.pos {
	case posValid:
		return it.settleBackward(it.data.prev())
	case posAfterLast:
		return it.Last()
	}
	return false
}

// Key returns the current entry's internal key.
func (it *tableIter) Key() base.InternalKey { return it.data.ikey }

// Value returns the current entry's value; it may alias a cached block.
func (it *tableIter) Value() []byte { return it.data.val }

// Error returns the error that stopped iteration, if any.
func (it *tableIter) Error() error { return it.err }

// Close returns the iterator to the pool and returns its error.
func (it *tableIter) Close() error {
	err := it.err
	// A read still pending must complete before its memory goes.
	it.discardPending()
	// Release first: the counters must include the parts still in flight,
	// which it waits for.
	if c := it.ra.Release(); it.raReady {
		it.r.bf.AddReadahead(it.src, c)
	}
	keyBuf, prepKey := it.data.keyBuf, it.prepKey
	*it = tableIter{}
	it.data.keyBuf, it.prepKey = keyBuf[:0], prepKey[:0]
	tableIterPool.Put(it)
	return err
}

package sstable

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// maxRunBytes caps a coalesced read: adjacent blocks are read together up
// to about this many bytes, so one huge read does not delay the keys that
// wait for its first block.
const maxRunBytes = 256 << 10

// readerIDs numbers Readers, so a MultiGetBatch can order its block reads by
// table without comparing pointers.
var readerIDs atomic.Uint64

// MultiGetBatch looks up many keys in many tables with few rounds of file
// reads: each lookup finds its data block through the in-memory index and
// takes it from the block cache when it is there; the blocks still missing
// are read by one batch of concurrent reads per round (Read), adjacent
// blocks of a table sharing one read. A lookup whose answer starts the next
// block needs another round, unless that block is cached or came in by the
// same read.
//
// Lookups give the same answer as Reader.Get at the same snapshot. A
// MultiGetBatch is used by one goroutine at a time; reuse it after Reset.
type MultiGetBatch struct {
	// Stats, when set, also receives the counts of the batch's work (every
	// Reader's own ReaderOptions.Stats always does): the per-call counts
	// behind the DB's PerfContext.
	Stats *ReadStats
	// Deadline bounds the batch's file reads (index and data blocks): a
	// read that cannot finish in time fails its lookups with an error
	// wrapping vfs.ErrDeadlineExceeded. Zero bounds nothing.
	Deadline vfs.ReadDeadline

	lookups []lookup
	// open counts the lookups not done; ready holds the ids of those not
	// parked (and maybe some done since), which Read reads for.
	open  int
	ready []int
	// wants, reqs and runs are the working memory of Read, kept for reuse.
	wants []blockWant
	reqs  []vfs.ReadRequest
	runs  []blockRun
	carry []int
	bi    blockIter
	// onDone is Read's callback while it runs.
	onDone func(id int)
}

// lookup is one key looked up in one table.
type lookup struct {
	r *Reader
	// ix is r's index, which the lookup keeps until it is done; in a
	// table with a partitioned index it is partition part of top.
	ix     *tableIndex
	top    *tableIndex
	part   int
	key    []byte
	search base.InternalKey
	// block is the index entry of the data block to search next; while the
	// lookup is not done, that block is neither cached nor read yet.
	block int
	fill  bool
	// solo keeps the lookup's block out of coalesced reads: a shared read
	// that failed is retried block by block, so that the error reaches only
	// the lookups of the block that cannot be read.
	solo bool
	// parked keeps the pending lookup out of Read's rounds (Park).
	parked bool
	done   bool
	found  bool
	kind   base.Kind
	seq    base.SeqNum
	value  []byte
	err    error
}

// blockWant is a lookup waiting for a data block.
type blockWant struct {
	id    uint64 // r.id
	block int
	r     *Reader
	ix    *tableIndex // the lookup's
	l     int         // index in lookups
}

// blockRun is what one read request of a round fetches: data blocks
// first..last of r (adjacent in the file), needed by wants[wantLo:wantHi].
type blockRun struct {
	r              *Reader
	ix             *tableIndex
	first, last    int
	wantLo, wantHi int
	// rr is the run's read (its request is submitted as a copy, in reqs);
	// its pooled memory is put back once the run's blocks are decoded (they
	// never alias it).
	rr block.RangeRead
}

// Reset forgets every lookup, keeping the memory for reuse but no
// reference to a Reader, key or block.
func (b *MultiGetBatch) Reset() {
	clear(b.lookups)
	b.lookups = b.lookups[:0]
	b.open, b.ready = 0, b.ready[:0]
	b.bi.reset(nil, true)
}

// Add starts the lookup of key (which the caller keeps unchanged until the
// lookup is done) in r at snapshot, and returns its id for Result. The
// bloom filter is not probed: callers probe it first (ProbeBloom), as a key
// it rules out should not get this far. When the data block the key needs is
// cached the lookup may be done at once; otherwise Read reads the block.
// fillCache adds the blocks read for the lookup to the cache.
func (b *MultiGetBatch) Add(r *Reader, key []byte, snapshot base.SeqNum, fillCache bool) int {
	search := base.MakeInternalKey(key, min(snapshot, base.SeqNumMax), base.KindMax)
	var c indexCursor
	err := c.init(r, b.source(r))
	if err == nil {
		err = c.seek(search)
	}
	if err != nil {
		b.lookups = append(b.lookups, lookup{r: r, key: key, err: err, done: true})
		return len(b.lookups) - 1
	}
	if c.ix == nil {
		// Every key of the (partitioned) table sorts below the key.
		b.lookups = append(b.lookups, lookup{r: r, key: key, done: true})
		return len(b.lookups) - 1
	}
	b.lookups = append(b.lookups, lookup{r: r, ix: c.ix, top: c.top, part: c.p, key: key, search: search, block: c.i, fill: fillCache})
	id := len(b.lookups) - 1
	b.open++ // finish takes it back
	b.advance(id)
	if !b.lookups[id].done {
		b.ready = append(b.ready, id)
	}
	return id
}

// Result returns the outcome of lookup id: done is false while it still
// waits for a read. Once done, err is the error that stopped it, or found
// says whether r holds a point entry of the key at the snapshot, with the
// newest such entry's value, kind and seqnum. value aliases block memory
// and must not be modified.
func (b *MultiGetBatch) Result(id int) (value []byte, kind base.Kind, seq base.SeqNum, found, done bool, err error) {
	l := &b.lookups[id]
	return l.value, l.kind, l.seq, l.found, l.done, l.err
}

// Park keeps pending lookup id out of Read's rounds until Unpark: a caller
// that adds a lookup early, for the chance that its blocks are cached,
// leaves its read to the round it belongs to (its table's, say) without
// adding it again, which would probe the cache twice.
func (b *MultiGetBatch) Park(id int) {
	if l := &b.lookups[id]; !l.done && !l.parked {
		l.parked = true
		if n := len(b.ready); n > 0 && b.ready[n-1] == id {
			b.ready = b.ready[:n-1] // parked right after Add, the usual case
		} else {
			b.ready = slices.DeleteFunc(b.ready, func(x int) bool { return x == id })
		}
	}
}

// Unpark makes lookup id, parked, part of the next Read again.
func (b *MultiGetBatch) Unpark(id int) {
	if l := &b.lookups[id]; l.parked {
		l.parked = false
		b.ready = append(b.ready, id)
	}
}

// Pending returns the number of lookups that wait for a read, parked ones
// included.
func (b *MultiGetBatch) Pending() int { return b.open }

// advance moves lookup id forward through cached blocks until it is done or
// needs a block read from the file.
func (b *MultiGetBatch) advance(id int) {
	l := &b.lookups[id]
	r := l.r
	for !l.done {
		if l.block >= len(l.ix.items) {
			if l.top == nil || l.part+1 >= len(l.top.items) {
				b.finish(id)
				return
			}
			// The answer may start the next partition.
			ix, err := r.partition(l.top, l.part+1, b.source(r))
			if err != nil {
				b.fail(id, err)
				return
			}
			l.ix, l.part, l.block = ix, l.part+1, 0
			continue
		}
		h := l.ix.items[l.block].handle
		if !r.cachedDataBlock(&b.bi, h, l.fill, b.source(r)) {
			return
		}
		b.search(id, h)
	}
}

// search looks for lookup id's key in the block b.bi points at (the one at
// h); the lookup is done unless the answer may start the next block, to
// which it then moves.
func (b *MultiGetBatch) search(id int, h block.Handle) {
	l := &b.lookups[id]
	r := l.r
	if b.bi.seekGE(l.search, r.cmp) {
		k := b.bi.ikey
		if r.cmp(k.UserKey, l.key) == 0 {
			l.found, l.value, l.kind, l.seq = true, b.bi.val, k.Kind(), k.SeqNum()
		}
		b.finish(id)
		return
	}
	if b.bi.corrupt {
		l.err = r.corruptf(h, "bad data block entry")
		b.finish(id)
		return
	}
	// Every entry of the block sorts before the search key; the answer, if
	// any, starts the next block.
	l.block++
}

// fail ends lookup id with err.
func (b *MultiGetBatch) fail(id int, err error) {
	b.lookups[id].err = err
	b.finish(id)
}

// finish marks lookup id done and, during Read, tells the caller.
func (b *MultiGetBatch) finish(id int) {
	b.lookups[id].done = true
	b.open--
	if b.onDone != nil {
		b.onDone(id)
	}
}

// Read does one round of reads: every data block that a pending lookup not
// parked waits for is read, in one batch submitted through ar (nil reads the
// requests one after another with ReadAt), adjacent blocks of a table by one
// request; then each lookup searches its block. A failed read or a damaged
// block ends only the lookups that needed it, with the error. Lookups whose
// answer starts a block neither cached nor read with theirs stay pending for
// another round. Read
// never waits for anything but its own reads.
//
// onDone, when not nil, is called (from Read's goroutine) for each lookup as
// it is done, while other reads of the round may still be in flight; it may
// call Result but not Add, Read or Reset.
func (b *MultiGetBatch) Read(ar vfs.AsyncReader, onDone func(id int)) {
	b.onDone = onDone
	defer func() { b.onDone = nil }()
	b.wants = b.wants[:0]
	live := b.ready[:0]
	for _, i := range b.ready {
		if l := &b.lookups[i]; !l.done && !l.parked {
			b.wants = append(b.wants, blockWant{id: l.r.id, block: l.block, r: l.r, ix: l.ix, l: i})
			live = append(live, i)
		}
	}
	b.ready = live
	if len(b.wants) == 0 {
		return
	}
	slices.SortFunc(b.wants, func(x, y blockWant) int {
		if c := cmp.Compare(x.id, y.id); c != 0 {
			return c
		}
		// By file offset: the blocks of a partitioned index are numbered
		// within their partitions.
		if c := cmp.Compare(x.ix.items[x.block].handle.Offset, y.ix.items[y.block].handle.Offset); c != 0 {
			return c
		}
		return cmp.Compare(x.l, y.l)
	})
	b.planRuns()
	block.ReadAll(ar, b.reqs, b.finishRun)
	// The lookups whose answer starts a block not read yet stay for the
	// next round.
	b.ready = slices.DeleteFunc(b.ready, func(i int) bool { return b.lookups[i].done })
	// Drop the buffers and Readers; blocks still needed are referenced by
	// the cache or the lookups.
	clear(b.reqs)
	b.reqs = b.reqs[:0]
	clear(b.runs)
	b.runs = b.runs[:0]
	clear(b.wants)
	b.wants = b.wants[:0]
}

// planRuns groups the sorted wants into runs of adjacent blocks and makes
// one read request per run. A block handle out of place fails its lookups
// here, before any read.
func (b *MultiGetBatch) planRuns() {
	b.reqs, b.runs = b.reqs[:0], b.runs[:0]
	for w := 0; w < len(b.wants); {
		r, ix, first := b.wants[w].r, b.wants[w].ix, b.wants[w].block
		if err := r.checkHandle(ix.items[first].handle, true); err != nil {
			for ; w < len(b.wants) && b.wants[w].r == r && b.wants[w].ix == ix && b.wants[w].block == first; w++ {
				b.fail(b.wants[w].l, err)
			}
			continue
		}
		run := blockRun{r: r, ix: ix, first: first, last: first, wantLo: w}
		start := ix.items[first].handle.Offset
		solo := false
		for w < len(b.wants) && b.wants[w].r == r && b.wants[w].ix == ix {
			blk := b.wants[w].block
			if blk > run.last {
				h := ix.items[blk].handle
				if solo || b.lookups[b.wants[w].l].solo || blk != run.last+1 ||
					h.End()-start > maxRunBytes || r.checkHandle(h, true) != nil {
					break
				}
				run.last = blk
			}
			solo = solo || b.lookups[b.wants[w].l].solo
			w++
		}
		run.wantHi = w
		end := ix.items[run.last].handle.End()
		src := r.bf.Source()
		src.Deadline = b.Deadline
		run.rr = block.NewRangeRead(src, int64(start), int(end-start))
		b.runs = append(b.runs, run)
		b.reqs = append(b.reqs, run.rr.Req)
	}
}

// finishRun handles the completed request i: it counts it, verifies and
// decodes its blocks (caching them for lookups that fill the cache) and
// lets each waiting lookup search its block.
func (b *MultiGetBatch) finishRun(i int, async bool) {
	run, q := &b.runs[i], &b.reqs[i]
	r := run.r
	defer run.rr.Release()
	b.countRead(r, q.N, run.rr.Pooled(), async, run.last-run.first)
	first := run.ix.items[run.first].handle
	run.rr.Req.N, run.rr.Req.Err = q.N, q.Err
	data, err := r.bf.RangeBytes(&run.rr)
	if err != nil {
		for w := run.wantLo; w < run.wantHi; w++ {
			if run.first != run.last {
				b.lookups[b.wants[w].l].solo = true // retried alone next round
			} else {
				b.fail(b.wants[w].l, err)
			}
		}
		return
	}
	// Blocks of a pooled buffer or of a several-block read are copied out
	// when stored uncompressed: the cache must not pin a larger buffer.
	shared := run.rr.Pooled() || run.first != run.last
	// carry holds the lookups whose answer may start block blk, having
	// searched block blk-1 of this run: they search blk from this read
	// rather than wait for a read of their own in the next round.
	b.carry = b.carry[:0]
	w := run.wantLo
	for blk := run.first; blk <= run.last; blk++ {
		end := w
		fill := false
		for ; end < run.wantHi && b.wants[end].block == blk; end++ {
			fill = fill || b.lookups[b.wants[end].l].fill
		}
		carried := len(b.carry)
		for _, id := range b.carry {
			fill = fill || b.lookups[id].fill
		}
		if end == w && carried == 0 {
			continue // a block between two wanted ones is never read alone
		}
		h := run.ix.items[blk].handle
		rel := int(h.Offset - first.Offset)
		raw := data[rel : rel+int(h.Length)+block.TrailerLen]
		blk, err := r.bf.DecodeBlock(h, raw, shared, b.source(r))
		if err == nil {
			err = r.installDataBlock(&b.bi, h, blk, fill)
		}
		for ; w < end; w++ {
			b.searchRun(b.wants[w].l, h, blk, err, run.last)
		}
		// The lookups carried into blk are at the front of carry, the ones
		// carried on into blk+1 are appended behind them.
		for i := 0; i < carried; i++ {
			b.searchRun(b.carry[i], h, blk, err, run.last)
		}
		b.carry = append(b.carry[:0], b.carry[carried:]...)
	}
}

// searchRun lets lookup id search the data block at h that a read of run
// brought in (or fails it with err, the block's error); a lookup whose
// answer may start the next block is carried to it when the run holds it
// (up to block last), else moves on through the cache.
func (b *MultiGetBatch) searchRun(id int, h block.Handle, data []byte, err error, last int) {
	if err != nil {
		b.fail(id, err)
		return
	}
	b.bi.init(data, true)
	b.bi.globalSeq = b.lookups[id].r.globalSeq // init cleared it
	b.search(id, h)
	if l := &b.lookups[id]; !l.done && l.block <= last {
		b.carry = append(b.carry, id)
		return
	}
	b.advance(id)
}

// countRead counts one read request of n bytes; coalesced is the number of
// blocks it read beyond its first.
func (b *MultiGetBatch) countRead(r *Reader, n int, direct, async bool, coalesced int) {
	r.stats.AddRequest(n, direct, async, coalesced)
	if b.Stats != nil {
		b.Stats.AddRequest(n, direct, async, coalesced)
	}
}

// source is r's own handle with the batch's Stats as the extra counter
// sink, for the block-loading steps shared with Get and iterators.
func (b *MultiGetBatch) source(r *Reader) block.Source {
	src := r.bf.Source()
	src.Stats = blockStats(b.Stats)
	src.Deadline = b.Deadline
	return src
}

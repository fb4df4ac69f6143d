package blob

import (
	"errors"

	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// GetBatch resolves many blob indexes, of one or many Readers, with one
// batch of reads (MultiGet's values): Add takes each value from the cache
// when it is there and queues the read of the others in a ReadGroup, Submit
// sends the queue to the async reader as one batch, and Result waits for
// one read and verifies it as Get does. Without a group the reads are made
// one by one, by Result. Results are the same as Get's.
//
// A GetBatch is used by one goroutine at a time; Reset it before reuse.
// When its group is shared with other readers, reads another user adds
// after Submit drop the batch's results still in the group (see
// block.ReadGroup), which Result then reads again by itself.
type GetBatch struct {
	// Stats, when set, also receives the counts of the batch's reads (each
	// Reader's own ReaderOptions.Stats always does).
	Stats *ReadStats

	group *ReadGroup
	gets  []pendingGet
}

// pendingGet is one value of a GetBatch.
type pendingGet struct {
	r         *Reader
	x         Index
	key       []byte
	fill      bool
	submitted bool
	done      bool
	value     []byte
	err       error
	// p is the record's read while submitted and not done. It may move
	// with gets: a read through a group has its request in the group, and
	// its buffer on the heap.
	p block.PendingRead
}

// NewGetBatch returns an empty batch reading through g (from NewReadGroup
// over the DB's async reader); nil reads synchronously.
func NewGetBatch(g *ReadGroup) *GetBatch { return &GetBatch{group: g} }

// NewReadGroup returns an empty ReadGroup over ar, for NewGetBatch.
func NewReadGroup(ar vfs.AsyncReader) *ReadGroup { return block.NewReadGroup(ar) }

// Add queues the read of the value x locates, which must be key's (the
// caller keeps key unchanged until Result), and returns its id for Result.
// A value found in r's cache is done at once. fillCache caches the value
// read.
func (b *GetBatch) Add(r *Reader, x Index, key []byte, fillCache bool) int {
	b.gets = append(b.gets, pendingGet{r: r, x: x, key: key, fill: fillCache})
	id := len(b.gets) - 1
	g := &b.gets[id]
	if err := r.checkIndex(x); err != nil {
		g.done, g.err = true, err
		return id
	}
	src := b.source(r)
	if v, ok, err := r.cached(x, key, src); ok || err != nil {
		g.done, g.value, g.err = true, v, err
		return id
	}
	if b.group != nil {
		r.bf.SubmitRead(&g.p, src, recordSpan(x), b.group)
		g.submitted = true
	}
	return id
}

// recordSpan is the handle whose read (with its trailer) covers the whole
// record x locates: the length in front of the block, and the block.
func recordSpan(x Index) block.Handle {
	return block.Handle{Offset: x.Offset - lengthLen, Length: x.Size + lengthLen}
}

// Submit sends the reads queued since the last Submit as one batch.
func (b *GetBatch) Submit() {
	if b.group != nil {
		b.group.Submit()
	}
}

// Len returns the number of values added since the last Reset.
func (b *GetBatch) Len() int { return len(b.gets) }

// Result waits for the value id (submitting the queue if Submit was not
// called) and returns it, or the error that stopped its read. The value
// may alias cached memory and must not be modified.
func (b *GetBatch) Result(id int) ([]byte, error) {
	g := &b.gets[id]
	if g.done {
		return g.value, g.err
	}
	r := g.r
	src := b.source(r)
	if g.submitted {
		g.submitted = false
		buf, err := r.bf.WaitRead(&g.p, src)
		switch {
		case errors.Is(err, block.ErrPendingLost):
			g.p.Release()
			g.value, g.err = r.GetCounted(g.x, g.key, g.fill, b.Stats)
		case err != nil:
			g.p.Release()
			g.err = err
		default:
			g.value, g.err = r.decodeRecord(g.x, g.key, buf, g.p.Pooled(), g.fill, src)
			g.p.Release()
		}
	} else {
		g.value, g.err = r.GetCounted(g.x, g.key, g.fill, b.Stats)
	}
	g.done = true
	return g.value, g.err
}

// Reset waits for the reads still in flight and forgets every value,
// keeping the memory for reuse.
func (b *GetBatch) Reset() {
	for i := range b.gets {
		g := &b.gets[i]
		if g.submitted {
			g.r.bf.WaitRead(&g.p, b.source(g.r)) // a read in flight owns its buffer until it completes
			g.p.Release()
		}
	}
	clear(b.gets)
	b.gets = b.gets[:0]
}

// source is r's handle with the batch's counters.
func (b *GetBatch) source(r *Reader) block.Source {
	src := r.bf.Source()
	src.Stats = b.Stats
	return src
}

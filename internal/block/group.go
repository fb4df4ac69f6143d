package block

import "github.com/shaledb/shale/vfs"

// ReadGroup gathers the block reads that the first phase of a two-phase
// seek asks for across the iterators of one merged iterator (PendingRead
// through a group), so that Submit sends them to the AsyncReader as one
// batch: one io_uring submission for every L0 table and level. It is used
// by one goroutine at a time, like the iterator that owns it.
//
// Invariant: reqs does not grow or change while a batch of it is in flight
// (Add drains a submitted batch before starting the next one), since the
// reader writes each request's result in place. A request's buffer belongs
// to the iterator that added it, which frees it only after Wait reported it
// complete.
type ReadGroup struct {
	reader vfs.AsyncReader
	reqs   []vfs.ReadRequest
	done   []bool
	// batch is the submitted batch while some of its requests have not
	// been returned by Next; submitted says reqs went out (their results,
	// once done, stay readable until the next Add).
	batch     *vfs.ReadBatch
	submitted bool
	returned  int
	// gen counts the batches: a request added in an earlier generation was
	// drained and its result dropped.
	gen uint64
}

// NewReadGroup returns an empty ReadGroup reading through r.
func NewReadGroup(r vfs.AsyncReader) *ReadGroup { return &ReadGroup{reader: r} }

// Add queues req for the next Submit and returns its generation and index.
func (g *ReadGroup) Add(req vfs.ReadRequest) (gen uint64, idx int) {
	if g.submitted {
		g.drain()
		g.reqs, g.done = g.reqs[:0], g.done[:0]
		g.submitted = false
		g.gen++
	}
	g.reqs = append(g.reqs, req)
	g.done = append(g.done, false)
	return g.gen, len(g.reqs) - 1
}

// Submit sends the reads queued since the last Submit as one batch; it
// does nothing when none is queued.
func (g *ReadGroup) Submit() {
	if g == nil || g.submitted || len(g.reqs) == 0 {
		return
	}
	g.submitted = true
	g.returned = 0
	g.batch = g.reader.Submit(g.reqs)
}

// Wait waits for request idx of generation gen (submitting the queue if
// nobody did) and returns its result; ok is false when the request belongs
// to an earlier generation, whose results are gone.
func (g *ReadGroup) Wait(gen uint64, idx int) (n int, err error, ok bool) {
	if gen != g.gen {
		return 0, nil, false
	}
	g.Submit()
	for !g.done[idx] {
		g.next()
	}
	r := &g.reqs[idx]
	return r.N, r.Err, true
}

// next waits for one more request of the batch in flight.
func (g *ReadGroup) next() {
	i, _ := g.batch.Next()
	g.done[i] = true
	g.returned++
	if g.returned == len(g.reqs) {
		g.batch.Release()
		g.batch = nil
	}
}

// drain waits for every request in flight.
func (g *ReadGroup) drain() {
	for g.batch != nil {
		g.next()
	}
}

// Close waits for the reads in flight and forgets the queue; the group
// may be used again.
func (g *ReadGroup) Close() {
	if g == nil {
		return
	}
	// Reads queued but never submitted are dropped unsent (their
	// iterators waited for or dropped them already).
	g.drain()
	for i := range g.reqs {
		g.reqs[i] = vfs.ReadRequest{}
	}
	g.reqs, g.done = g.reqs[:0], g.done[:0]
	g.submitted = false
	g.gen++
}

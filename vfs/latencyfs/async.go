package latencyfs

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/vfs"
)

// WrapAsyncReader implements vfs.AsyncReaderWrapper. The reader it returns
// hands r the wrapped file of each request for a file of l, so r reads it
// natively (io_uring, for an OS file), and completes the request no earlier
// than the simulated deadline, as the file's ReadAt would return. Each such
// read holds one of r.QueueDepth() slots of a simulated device queue, from
// the moment its deadline is reserved until that deadline: a read that
// waits for a slot waits in the device's queue, as it would for a real
// device. Reads beyond the depth wait for slots in order on a goroutine,
// so Submit never waits. Requests for other files go to r unchanged. When
// the FS l wraps is itself a vfs.AsyncReaderWrapper, r is wrapped by it
// first. The reader's Close closes r.
func (l *FS) WrapAsyncReader(r vfs.AsyncReader) vfs.AsyncReader {
	if w, ok := l.FS.(vfs.AsyncReaderWrapper); ok {
		r = w.WrapAsyncReader(r)
	}
	return &asyncReader{fs: l, inner: r, slots: make(chan struct{}, r.QueueDepth())}
}

// asyncReader is the AsyncReader of WrapAsyncReader.
type asyncReader struct {
	fs    *FS
	inner vfs.AsyncReader
	// slots holds a token for each read of fs's files from the moment its
	// deadline is reserved until that deadline: the simulated device's
	// queue.
	slots chan struct{}

	reads, bytesRead, batches atomic.Uint64

	// gate is held by Submit while it counts its requests into work, and
	// shut by Close, so that Close waits for every request a Submit
	// accepted.
	gate      vfs.SubmitGate
	work      sync.WaitGroup // requests accepted and not yet complete
	closeOnce sync.Once
	closeErr  error
}

var _ vfs.AsyncReader = (*asyncReader)(nil)

// group is the requests of one batch that go to the inner reader in one
// Submit: the reads of fs's files that got a queue slot together, and the
// requests for other files among them.
type group struct {
	a     *asyncReader
	batch *vfs.ReadBatch
	outer []vfs.ReadRequest // the batch's requests
	// For each inner request: the index of its outer request, and its
	// deadline (zero for a file not of fs, which holds no slot).
	idx      []int
	deadline []time.Time
	reqs     []vfs.ReadRequest // the inner requests
}

var groupPool = sync.Pool{New: func() any { return new(group) }}

func (a *asyncReader) newGroup(b *vfs.ReadBatch, reqs []vfs.ReadRequest) *group {
	g := groupPool.Get().(*group)
	g.a, g.batch, g.outer = a, b, reqs
	return g
}

// add appends outer request i, to be read from f, with its deadline.
func (g *group) add(i int, f vfs.File, deadline time.Time) {
	out := &g.outer[i]
	g.idx = append(g.idx, i)
	g.deadline = append(g.deadline, deadline)
	g.reqs = append(g.reqs, vfs.ReadRequest{File: f, Off: out.Off, Buf: out.Buf, Deadline: out.Deadline})
}

// unwrap returns the file to hand the inner reader for f, and whether f is
// a file of this FS (whose read is delayed).
func (a *asyncReader) unwrap(f vfs.File) (vfs.File, bool) {
	if lf, ok := f.(*latencyFile); ok && lf.fs == a.fs {
		return lf.File, true
	}
	return f, false
}

// Submit starts the reads of reqs that get a queue slot at once and hands
// the rest to startLater.
func (a *asyncReader) Submit(reqs []vfs.ReadRequest) *vfs.ReadBatch {
	b := vfs.NewReadBatch(reqs)
	a.batches.Add(1)
	a.reads.Add(uint64(len(reqs)))
	if !a.gate.Enter() {
		// As the readers of vfs do after Close: synchronously, here
		// through the file's ReadAt, which sleeps out the delay.
		for i := range reqs {
			req := &reqs[i]
			req.N, req.Err = vfs.ReadAtDeadline(req.File, req.Buf, req.Off, req.Deadline)
			a.bytesRead.Add(uint64(req.N))
			b.Complete(i)
		}
		return b
	}
	a.work.Add(len(reqs))
	a.gate.Exit()
	g := a.newGroup(b, reqs)
	i := a.addReady(g, 0)
	a.submit(g)
	if i < len(reqs) {
		// The simulated queue is full: the rest start as slots free up,
		// without holding up the caller.
		go a.startLater(b, reqs, i)
	}
	return b
}

// addReady adds requests from, from+1, ... of g's batch to g in order while
// each read of fs's files gets a queue slot at once. It returns the index
// of the first read that found the queue full, or the number of requests
// when it added them all.
func (a *asyncReader) addReady(g *group, from int) int {
	for i := from; i < len(g.outer); i++ {
		f, delayed := a.unwrap(g.outer[i].File)
		if !delayed {
			g.add(i, f, time.Time{})
			continue
		}
		select {
		case a.slots <- struct{}{}:
		default:
			return i
		}
		g.add(i, f, a.fs.readDeadline(len(g.outer[i].Buf)))
	}
	return len(g.outer)
}

// startLater starts requests from, from+1, ... of b in order, each read of
// fs's files once it has a queue slot; request from is a read that found
// the queue full. Requests that got their slots together go to the inner
// reader in one Submit, sent before waiting for the next slot: the slots
// waited for may be theirs.
func (a *asyncReader) startLater(b *vfs.ReadBatch, reqs []vfs.ReadRequest, from int) {
	for from < len(reqs) {
		a.slots <- struct{}{}
		g := a.newGroup(b, reqs)
		f, _ := a.unwrap(reqs[from].File)
		g.add(from, f, a.fs.readDeadline(len(reqs[from].Buf)))
		from = a.addReady(g, from+1)
		a.submit(g)
	}
}

// submit sends g's requests to the inner reader and completes them, on a
// goroutine, as the inner reader reports them.
func (a *asyncReader) submit(g *group) {
	if len(g.reqs) == 0 {
		g.recycle()
		return
	}
	ib := a.inner.Submit(g.reqs)
	go g.collect(ib)
}

// collect completes g's requests as the inner batch reports them, each no
// earlier than its deadline, then recycles the inner batch and g.
func (g *group) collect(ib *vfs.ReadBatch) {
	a := g.a
	for {
		k, ok := ib.Next()
		if !ok {
			break
		}
		in := &g.reqs[k]
		i, deadline := g.idx[k], g.deadline[k]
		out := &g.outer[i]
		out.N, out.Err = in.N, in.Err
		if !deadline.IsZero() && !in.Deadline.IsZero() && in.Deadline.Before(deadline) {
			// The request's own deadline comes before the simulated
			// completion: like a device with a timeout, it ends at its
			// deadline with a timeout and no bytes. (The inner read is
			// done: its buffer is no longer written.)
			deadline = in.Deadline
			out.N, out.Err = 0, vfs.TimeoutError("read", out.File, in.Off)
		}
		a.bytesRead.Add(uint64(out.N))
		switch {
		case deadline.IsZero():
			a.complete(g.batch, i)
		case a.fs.now().Before(deadline):
			// Not on this goroutine, which completes the group's other
			// reads as they arrive; and through the FS's own sleep (on
			// Linux the precise waker), since Go timers wake up to a
			// millisecond late, more than the latencies simulated.
			b := g.batch
			go func() {
				a.fs.sleepUntil(deadline)
				<-a.slots
				a.complete(b, i)
			}()
		default:
			<-a.slots
			a.complete(g.batch, i)
		}
	}
	ib.Release()
	g.recycle()
}

// complete completes request i of b; nothing of b is touched after it.
func (a *asyncReader) complete(b *vfs.ReadBatch, i int) {
	b.Complete(i)
	a.work.Done()
}

// recycle clears g, dropping what it referenced, and pools it.
func (g *group) recycle() {
	clear(g.reqs)
	g.a, g.batch, g.outer = nil, nil, nil
	g.idx, g.deadline, g.reqs = g.idx[:0], g.deadline[:0], g.reqs[:0]
	groupPool.Put(g)
}

func (a *asyncReader) MultiRead(reqs []vfs.ReadRequest) error {
	b := a.Submit(reqs)
	err := b.Wait()
	b.Release()
	return err
}

// Stats returns the inner reader's counters, with Reads, BytesRead and
// Batches counted at this reader (one batch per Submit, however many
// Submits of the inner reader it took).
func (a *asyncReader) Stats() vfs.AsyncStats {
	s := a.inner.Stats()
	s.Reads, s.BytesRead, s.Batches = a.reads.Load(), a.bytesRead.Load(), a.batches.Load()
	return s
}

// Kind is the inner reader's.
func (a *asyncReader) Kind() string { return a.inner.Kind() }

// QueueDepth is the inner reader's, which is also the simulated queue's.
func (a *asyncReader) QueueDepth() int { return cap(a.slots) }

// Close waits for every request submitted so far, then closes the inner
// reader. Later Submits read synchronously.
func (a *asyncReader) Close() error {
	a.closeOnce.Do(func() {
		a.gate.Shut()
		a.work.Wait()
		a.closeErr = a.inner.Close()
	})
	return a.closeErr
}

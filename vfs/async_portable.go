package vfs

import "sync"

// goReads runs reads as positional ReadAt calls on goroutines, at most
// cap(sem) at once: the whole of the portable reader, and the io_uring
// reader's route for the requests its ring cannot read. No method waits for
// a read.
type goReads struct {
	sem      chan struct{} // one token per read in flight
	counters *asyncCounters
}

// tryStart starts request i of b on a goroutine if a token is free, and
// reports whether it did.
func (g *goReads) tryStart(b *ReadBatch, i int) bool {
	select {
	case g.sem <- struct{}{}:
	default:
		return false
	}
	g.start(b, i)
	return true
}

// startLater starts the requests idx of b in order on one goroutine, each
// as a token frees up, so that the caller does not wait for reads.
func (g *goReads) startLater(b *ReadBatch, idx []int) {
	go func() {
		for _, i := range idx {
			g.sem <- struct{}{}
			g.start(b, i)
		}
	}()
}

// start reads request i of b on a goroutine that holds a token of sem.
func (g *goReads) start(b *ReadBatch, i int) {
	go func() {
		req := &b.reqs[i]
		req.N, req.Err = ReadAtDeadline(req.File, req.Buf, req.Off, req.Deadline)
		g.counters.bytesRead.Add(uint64(req.N))
		<-g.sem
		b.complete(i) // last: the batch may be released after this
	}()
}

// portableReader is the AsyncReader of every platform without io_uring: each
// request is a positional ReadAt on its own goroutine, at most QueueDepth at
// once, so reads of one batch overlap in the device.
type portableReader struct {
	reads     goReads
	counters  asyncCounters
	closeOnce sync.Once
}

func newPortableReader(o AsyncOptions) *portableReader {
	r := &portableReader{}
	r.reads = goReads{sem: make(chan struct{}, o.QueueDepth), counters: &r.counters}
	return r
}

func (r *portableReader) Kind() string { return "portable" }

func (r *portableReader) QueueDepth() int { return cap(r.reads.sem) }

// Submit starts the reads of reqs, at most QueueDepth of this reader's
// reads in flight; when the queue is full it hands the rest to one
// goroutine that starts them in order as reads finish, so Submit never
// waits for a read.
func (r *portableReader) Submit(reqs []ReadRequest) *ReadBatch {
	b := acquireReadBatch(reqs)
	r.counters.batches.Add(1)
	r.counters.reads.Add(uint64(len(reqs)))
	for i := range reqs {
		if !r.reads.tryStart(b, i) {
			rest := make([]int, 0, len(reqs)-i)
			for j := i; j < len(reqs); j++ {
				rest = append(rest, j)
			}
			r.reads.startLater(b, rest)
			break
		}
	}
	return b
}

func (r *portableReader) MultiRead(reqs []ReadRequest) error { return r.Submit(reqs).Wait() }

func (r *portableReader) Stats() AsyncStats { return r.counters.stats() }

func (r *portableReader) Close() error { return nil }

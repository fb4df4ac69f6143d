package vfs

import "sync"

// portableReader is the AsyncReader of every platform without io_uring: each
// request is a positional ReadAt on its own goroutine, at most QueueDepth at
// once, so reads of one batch overlap in the device (and in a latency FS).
type portableReader struct {
	sem       chan struct{} // one token per read in flight
	counters  asyncCounters
	closeOnce sync.Once
}

func newPortableReader(o AsyncOptions) *portableReader {
	return &portableReader{sem: make(chan struct{}, o.QueueDepth)}
}

func (r *portableReader) Kind() string { return "portable" }

func (r *portableReader) Submit(reqs []ReadRequest) *ReadBatch {
	b := acquireReadBatch(reqs)
	r.counters.batches.Add(1)
	r.counters.reads.Add(uint64(len(reqs)))
	for i := range reqs {
		r.sem <- struct{}{}
		go func() {
			req := &reqs[i]
			req.N, req.Err = req.File.ReadAt(req.Buf, req.Off)
			r.counters.bytesRead.Add(uint64(req.N))
			<-r.sem
			b.complete(i)
		}()
	}
	return b
}

func (r *portableReader) MultiRead(reqs []ReadRequest) error { return r.Submit(reqs).Wait() }

func (r *portableReader) Stats() AsyncStats { return r.counters.stats() }

func (r *portableReader) Close() error { return nil }

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

// Submit starts the reads of reqs, at most QueueDepth of this reader's
// reads in flight; when the queue is full it hands the rest to one
// goroutine that starts them in order as reads finish, so Submit never
// waits for a read.
func (r *portableReader) Submit(reqs []ReadRequest) *ReadBatch {
	b := acquireReadBatch(reqs)
	r.counters.batches.Add(1)
	r.counters.reads.Add(uint64(len(reqs)))
	for i := range reqs {
		select {
		case r.sem <- struct{}{}:
			r.start(b, reqs, i)
		default:
			go func() {
				for j := i; j < len(reqs); j++ {
					r.sem <- struct{}{}
					r.start(b, reqs, j)
				}
			}()
			return b
		}
	}
	return b
}

// start reads reqs[i] on a goroutine that holds a token of sem.
func (r *portableReader) start(b *ReadBatch, reqs []ReadRequest, i int) {
	go func() {
		req := &reqs[i]
		req.N, req.Err = req.File.ReadAt(req.Buf, req.Off)
		r.counters.bytesRead.Add(uint64(req.N))
		<-r.sem
		b.complete(i) // last: the batch may be released after this
	}()
}

func (r *portableReader) MultiRead(reqs []ReadRequest) error { return r.Submit(reqs).Wait() }

func (r *portableReader) Stats() AsyncStats { return r.counters.stats() }

func (r *portableReader) Close() error { return nil }

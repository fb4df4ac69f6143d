package vfs

import (
	"errors"
	"sync/atomic"
	"time"
)

// ReadRequest is one read of a batch: up to len(Buf) bytes of File at Off.
// When the request completes, N and Err hold what File.ReadAt(Buf, Off)
// would have returned (a read that ends past the end of the file returns the
// bytes there are and io.EOF).
type ReadRequest struct {
	File File
	Off  int64
	Buf  []byte

	N   int
	Err error
}

// AsyncReader reads batches of requests concurrently, across any number of
// files. It is safe for concurrent use by many goroutines. A DB owns one.
//
// The contract: a request's Buf, and the request itself, belong to the
// reader from Submit until the batch reports that request complete (through
// Next or Wait); the caller must keep them alive and untouched until then,
// and must not resubmit a request that is in flight.
type AsyncReader interface {
	// Submit starts every read of reqs and returns without waiting for
	// them; reads beyond QueueDepth start as earlier ones finish. (Only
	// the io_uring reader, when QueueDepth of its ring reads are in
	// flight, waits in Submit for a ring slot, as it must for a device's
	// queue; reads of a latency FS file hold their slot until their
	// simulated completion.) The reads complete in any order.
	Submit(reqs []ReadRequest) *ReadBatch
	// MultiRead submits reqs and waits for all of them; it returns the first
	// error by request index (io.EOF included), or nil.
	MultiRead(reqs []ReadRequest) error
	// Stats returns the counters of reads done so far.
	Stats() AsyncStats
	// Kind names the mechanism in use: "io_uring" or "portable".
	Kind() string
	// Close releases the reader's resources (the ring). Batches still in
	// flight complete first; Submit after Close reads synchronously.
	Close() error
}

// AsyncOptions configure NewAsyncReader.
type AsyncOptions struct {
	// DisableIOUring forces the portable implementation on Linux.
	DisableIOUring bool
	// SQPoll asks for a kernel thread that polls the submission queue, which
	// saves the io_uring_enter call of each batch but keeps a core busy.
	SQPoll bool
	// QueueDepth is the number of reads the reader keeps in flight at once
	// (the ring's size); 0 means 128.
	QueueDepth int
	// Logf, when set, is told once why io_uring could not be used.
	Logf func(format string, args ...any)
}

// AsyncStats counts the work of an AsyncReader.
type AsyncStats struct {
	// Reads is the number of requests submitted; BytesRead the bytes they
	// returned.
	Reads, BytesRead uint64
	// Batches is the number of Submit calls.
	Batches uint64
	// Enters is the number of io_uring_enter calls made to submit, and SQEs
	// the submission queue entries they carried (0 on the portable reader).
	Enters, SQEs uint64
}

// asyncCounters are the atomics behind AsyncStats.
type asyncCounters struct {
	reads, bytesRead, batches, enters, sqes atomic.Uint64
}

func (c *asyncCounters) stats() AsyncStats {
	return AsyncStats{
		Reads: c.reads.Load(), BytesRead: c.bytesRead.Load(), Batches: c.batches.Load(),
		Enters: c.enters.Load(), SQEs: c.sqes.Load(),
	}
}

// ReadBatch is a submitted batch of reads. Next and Wait may be called by
// one goroutine at a time.
type ReadBatch struct {
	reqs []ReadRequest
	// done receives the index of each request as it completes; it has room
	// for every request, so completing never blocks.
	done     chan int
	returned int
	// pending counts requests not yet completed; the completion that takes
	// it to zero sends on all, so Wait wakes once for the whole batch
	// rather than once per request (each wake is a thread hand-off).
	pending atomic.Int32
	all     chan struct{}
}

// complete records that request i finished; called once per request by the
// implementation, after N and Err are set.
//
// The send on done comes last: once a consumer has received every index,
// no completer touches the batch again (Release relies on it), and the
// token on all is already there.
func (b *ReadBatch) complete(i int) {
	if b.pending.Add(-1) == 0 {
		b.all <- struct{}{}
	}
	b.done <- i
}

// Next blocks until one more request of the batch completes and returns its
// index; ok is false once every request has been returned.
func (b *ReadBatch) Next() (i int, ok bool) {
	if b.returned == len(b.reqs) {
		return 0, false
	}
	i = <-b.done
	b.returned++
	return i, true
}

// Wait blocks until every request has completed and returns the first
// error by request index, or nil.
func (b *ReadBatch) Wait() error {
	if b.returned < len(b.reqs) {
		<-b.all
		for b.returned < len(b.reqs) {
			<-b.done // sent right after the token, if not already
			b.returned++
		}
	}
	for i := range b.reqs {
		if err := b.reqs[i].Err; err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of requests in the batch.
func (b *ReadBatch) Len() int { return len(b.reqs) }

// NewAsyncReader returns the best AsyncReader this platform offers: io_uring
// on Linux when the kernel allows it (and o.DisableIOUring is false), else
// concurrent positional reads on a bounded number of goroutines.
func NewAsyncReader(o AsyncOptions) AsyncReader {
	if o.QueueDepth <= 0 {
		o.QueueDepth = 128
	}
	if !o.DisableIOUring {
		if r, err := platformAsyncReader(o); err == nil {
			return r
		} else if o.Logf != nil && err != errNoPlatformAsync {
			o.Logf("shale: io_uring unavailable, reading with goroutines instead: %v", err)
		}
	}
	return newPortableReader(o)
}

// platformAsyncReader is newPlatformAsyncReader; tests replace it to see the
// fallback when the kernel refuses io_uring.
var platformAsyncReader = newPlatformAsyncReader

// errNoPlatformAsync says a platform has no native async reader; it is not
// worth a LOG line.
var errNoPlatformAsync = errors.New("shale: no native asynchronous reads on this platform")

// delayedFile is implemented by the files of the latency-injecting FS. An
// AsyncReader that reads a file natively (io_uring) reads delayedInner()
// instead and completes the request no earlier than the time readDeadline
// returned at submission; ReadAt of a delayedFile sleeps by itself, so the
// portable reader needs nothing special.
type delayedFile interface {
	File
	// delayedInner is the wrapped file the data comes from.
	delayedInner() File
	// readDeadline reserves the simulated device for a read of n bytes
	// submitted now and returns when that read completes.
	readDeadline(n int) time.Time
}

package vfs

import (
	"errors"
	"sync"
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
	// Deadline, when not zero, bounds the read: one that cannot finish by
	// then completes by then, or as soon after as the file allows, with an
	// error wrapping ErrDeadlineExceeded (see ReadAtDeadline; the io_uring
	// reader cancels the read in the kernel with a linked timeout). Either
	// way the request completes only once nothing writes into Buf any more.
	Deadline time.Time

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
	// queue.) The reads complete in any order.
	Submit(reqs []ReadRequest) *ReadBatch
	// MultiRead submits reqs and waits for all of them; it returns the first
	// error by request index (io.EOF included), or nil.
	MultiRead(reqs []ReadRequest) error
	// Stats returns the counters of reads done so far.
	Stats() AsyncStats
	// Kind names the mechanism in use: "io_uring" or "portable".
	Kind() string
	// QueueDepth returns the number of reads the reader keeps in flight at
	// once (AsyncOptions.QueueDepth, as the reader applied it).
	QueueDepth() int
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

// NewReadBatch returns a batch of reqs for an AsyncReader implemented
// outside this package, such as the one an AsyncReaderWrapper returns: its
// Submit returns the batch and calls Complete once for each request. The
// batch may be one that Release recycled.
func NewReadBatch(reqs []ReadRequest) *ReadBatch { return acquireReadBatch(reqs) }

// Complete records that request i has finished; the AsyncReader that made
// the batch calls it once per request, after setting the request's N and
// Err, and touches neither the request nor the batch afterwards (the batch
// may be released as soon as its last request completes). Callers of
// Submit never call it.
func (b *ReadBatch) Complete(i int) { b.complete(i) }

// SubmitGate lets an AsyncReader's Close wait for the Submits midway
// through handing on their requests: a Submit holds the gate from Enter to
// Exit, and Close shuts it, which waits for every holder. After Shut, Enter
// reports false and the Submit reads synchronously, as every reader of this
// package does after Close. The zero value is open.
type SubmitGate struct {
	mu     sync.RWMutex
	closed bool
}

// Enter reports whether the gate is open and, when it is, holds it open
// until Exit.
func (g *SubmitGate) Enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

// Exit releases the gate an Enter that returned true holds.
func (g *SubmitGate) Exit() { g.mu.RUnlock() }

// Shut closes the gate for good, once every Submit that entered has exited.
func (g *SubmitGate) Shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

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

// AsyncReaderWrapper is implemented by a file system that wraps another
// and has something of its own to do around each read of its files (a
// simulated delay, say), when an AsyncReader should still read those files
// natively. An AsyncReader reads natively only this package's OS files; a
// wrapping FS's files it reads through their own ReadAt, on its goroutines,
// which is correct but not native. WrapAsyncReader returns an AsyncReader
// over r that unwraps them: it hands r the files they wrap and does around
// each request what the file's ReadAt does around a read. Requests for
// other files go to r as they are. The returned reader owns r: its Close
// closes r.
//
// Whoever makes the AsyncReader for a file system wraps it once, right
// after NewAsyncReader, when the file system implements this interface (the
// DB does, for Options.FS). A wrapper whose own inner FS implements it
// wraps r with that first, so a chain of such file systems unwraps level by
// level.
type AsyncReaderWrapper interface {
	WrapAsyncReader(r AsyncReader) AsyncReader
}

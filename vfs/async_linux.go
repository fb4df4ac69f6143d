package vfs

import (
	"fmt"
	"io"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// newPlatformAsyncReader returns the io_uring reader, or an error saying why
// the kernel refused one. When only SQ polling is refused, it says so through
// o.Logf and returns a ring without it.
func newPlatformAsyncReader(o AsyncOptions) (AsyncReader, error) {
	r, err := newURingReader(o)
	if err != nil && o.SQPoll {
		o.SQPoll = false
		if r, err2 := newURingReader(o); err2 == nil {
			if o.Logf != nil {
				o.Logf("shale: io_uring SQ polling unavailable, submitting with io_uring_enter instead: %v", err)
			}
			return r, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// closeUserData marks the NOP that Close submits to wake the reaper; slot
// indexes, the user_data of reads, are far below it.
const closeUserData = 1 << 63

// timeoutUserData marks the linked timeout of the read of slot
// userData&^timeoutUserData.
const timeoutUserData = 1 << 62

// uringReader is the io_uring AsyncReader: one ring shared by every
// goroutine of a DB.
//
// Submission: Submit reserves slots (one per request in flight; the SQ has
// two entries per slot, since a read with a deadline takes two SQEs, the
// read and its linked timeout, so the SQ always has room for what the
// reserved slots submit and the CQ, twice the SQ's size, can never
// overflow), fills them, and submits each run of reserved slots with one
// io_uring_enter: a batch no larger than the free slots costs one enter.
//
// Deadlines: a request with a Deadline has each of its SQEs linked to an
// IORING_OP_LINK_TIMEOUT, which cancels the read in the kernel at the
// deadline; the reaper finishes the slot only once both CQEs are in, so no
// buffer is handed back while the kernel may still write into it.
//
// Completion: a reaper goroutine blocks in io_uring_enter(GETEVENTS,
// min_complete=1) and completes each request as its CQE arrives. We chose it
// over "the waiter reaps" because CQEs of one ring belong to many batches of
// many goroutines: a waiting goroutine would have to reap and hand over
// others' completions and elect who waits in the kernel, while the reaper
// keeps that in one place. It costs one parked OS thread, no polling.
//
// Memory: the slot table (indexed by user_data) holds each in-flight
// request's buffer slice, batch and file until its CQE is reaped, so the GC
// keeps alive what the kernel writes into; Go's heap does not move objects,
// so the address in the SQE stays valid. (Buffers passed to Submit escape to
// the heap, because the slot table stores them.)
type uringReader struct {
	ring     *uring
	counters asyncCounters
	// maxSQELen caps one SQE's length; longer requests continue in further
	// SQEs like short reads do. Tests lower it to exercise that path.
	maxSQELen uint32
	// waitEnters counts the reaper's io_uring_enter calls (for benchmarks;
	// AsyncStats.Enters counts only submissions).
	waitEnters atomic.Uint64

	// gate is held by Submit and shut by Close, so that Close knows no
	// Submit is midway through the ring.
	gate       SubmitGate
	closeOnce  sync.Once
	closeErr   error
	ringWork   sync.WaitGroup // requests sent to the ring and not yet complete
	reaperDone chan struct{}

	// sqMu serializes pushing SQEs and io_uring_enter.
	sqMu sync.Mutex

	slotMu      sync.Mutex
	slotFreed   sync.Cond // signalled when slots return to free
	free        []int32   // stack of free slot indexes
	maxInflight int       // high-water mark of slots in use, for tests
	slots       []uringSlot

	// The reaper's own state, touched only by the reaper goroutine.
	onCQE                      func(userData uint64, res int32)
	reapFreed                  []int32
	resubmitHead, resubmitTail int32
	resubmitN                  int
	stopping                   bool

	portable goReads // the requests the ring does not read, at most QueueDepth at once
}

// uringSlot is one read in flight through the ring.
type uringSlot struct {
	// published is set by the submitter after it filled the slot and read by
	// the reaper before it reads the slot: the kernel's CQE orders the two,
	// but the race detector needs to see an edge it understands.
	published atomic.Uint32
	batch     *ReadBatch
	idx       int
	file      *osFile // keeps the descriptor open (os.File has a finalizer)
	fd        int32
	align     int
	buf       []byte // the part of the request's Buf still to read
	off       int64  // the file offset of buf
	asked     uint32 // length of the SQE in flight
	n         int    // bytes read so far
	next      int32  // link in the free, chunk and resubmit lists

	// deadline is the request's Deadline (zero: none). With one, each SQE
	// of the read is linked to a timeout that cancels it at the deadline
	// (when the kernel has IORING_OP_LINK_TIMEOUT), and the slot is
	// finished only once the CQEs of both are reaped, so neither the
	// buffer nor the slot is reused while the kernel may still write or
	// read them.
	deadline time.Time
	ts       [2]int64 // the linked timeout's __kernel_timespec
	// Reaper-only state of a linked read: the CQEs still expected, the
	// read's result once its CQE is in, and whether the timeout fired.
	awaiting int
	readRes  int32
	haveRead bool
	timedOut bool
}

func newURingReader(o AsyncOptions) (*uringReader, error) {
	depth := min(max(o.QueueDepth, 1), maxRingEntries)
	entries := uint32(1) << bits.Len(uint(depth-1)) // a power of two
	// The ring has two SQEs per slot: a read with a deadline takes a read
	// and its linked timeout.
	ring, err := newURing(2*entries, o.SQPoll)
	if err != nil {
		return nil, err
	}
	if ring.cqEntries < ring.sqEntries {
		_ = ring.close()
		return nil, fmt.Errorf("shale: io_uring: completion ring (%d) smaller than submission ring (%d)", ring.cqEntries, ring.sqEntries)
	}
	if ring.sqEntries < 2*entries {
		_ = ring.close()
		return nil, fmt.Errorf("shale: io_uring: submission ring of %d entries, asked for %d", ring.sqEntries, 2*entries)
	}
	n := int(entries)
	r := &uringReader{
		ring:         ring,
		maxSQELen:    1 << 30,
		reaperDone:   make(chan struct{}),
		free:         make([]int32, n),
		slots:        make([]uringSlot, n),
		reapFreed:    make([]int32, 0, n),
		resubmitHead: -1,
	}
	r.portable = goReads{sem: make(chan struct{}, n), counters: &r.counters}
	for i := range r.free {
		r.free[i] = int32(n - 1 - i)
	}
	r.slotFreed.L = &r.slotMu
	r.onCQE = r.handleCQE
	go r.reap()
	return r, nil
}

func (r *uringReader) Kind() string { return "io_uring" }

func (r *uringReader) QueueDepth() int { return len(r.slots) }

func (r *uringReader) Stats() AsyncStats { return r.counters.stats() }

func (r *uringReader) MultiRead(reqs []ReadRequest) error {
	b := r.Submit(reqs)
	err := b.Wait()
	b.Release()
	return err
}

// route says how a request is served.
type route uint8

const (
	routeRing     route = iota // an SQE
	routeInline                // ReadAt in Submit: it returns without IO
	routePortable              // ReadAt on a goroutine
)

// classify picks the route of req. For the ring it returns the *osFile to
// read and its alignment. Only the OS files of this package go to the ring:
// the file of a wrapping FS (fault injection, latency) is read through its
// own ReadAt, which is what gives the wrapper its say over the read.
func (r *uringReader) classify(req *ReadRequest) (rt route, f *osFile, fd int32, align int) {
	f, ok := req.File.(*osFile)
	if !ok {
		return routePortable, nil, 0, 0
	}
	raw := f.fd()
	if len(req.Buf) == 0 || req.Off < 0 || raw == ^uintptr(0) {
		// Nothing to read, a negative offset or a closed file: ReadAt
		// answers without a system call, with the error it would give.
		return routeInline, nil, 0, 0
	}
	if f.dio != nil {
		if _, writing := f.dio.size(); writing {
			// A DirectIO file being written holds its newest bytes in its
			// write buffer, which only its ReadAt sees.
			return routePortable, nil, 0, 0
		}
	}
	align = Alignment(f)
	if align > 1 && !IsAligned(req.Buf, req.Off, align) {
		return routePortable, nil, 0, 0 // the file's ReadAt bounces
	}
	return routeRing, f, int32(raw), align
}

// Submit sends every request that qualifies through the ring and the others
// (files not backed by the OS, unaligned direct-IO reads) to goroutines.
func (r *uringReader) Submit(reqs []ReadRequest) *ReadBatch {
	b := acquireReadBatch(reqs)
	r.counters.batches.Add(1)
	r.counters.reads.Add(uint64(len(reqs)))
	if !r.gate.Enter() {
		for i := range reqs {
			r.readNow(b, i)
		}
		return b
	}
	var (
		free, head, tail int32 = -1, -1, -1
		nfree, nchunk    int
		deferred         []int // portable requests waiting for a token
	)
	for i := range reqs {
		req := &reqs[i]
		rt, f, fd, align := r.classify(req)
		switch rt {
		case routeInline:
			r.readNow(b, i)
			continue
		case routePortable:
			if !r.portable.tryStart(b, i) {
				deferred = append(deferred, i)
			}
			continue
		}
		if nfree == 0 {
			// Submit what is filled before blocking for more slots: the
			// slots we wait for may be the ones we hold.
			if nchunk > 0 {
				r.submitChunk(head, nchunk, true)
				head, nchunk = -1, 0
			}
			free, nfree = r.acquireSlots(len(reqs) - i)
		}
		id := free
		s := &r.slots[id]
		free, nfree = s.next, nfree-1
		s.batch, s.idx, s.file, s.fd, s.align = b, i, f, fd, align
		s.buf, s.off, s.n, s.next = req.Buf, req.Off, 0, -1
		s.deadline = req.Deadline
		if head < 0 {
			head = id
		} else {
			r.slots[tail].next = id
		}
		tail = id
		nchunk++
	}
	if nchunk > 0 {
		r.submitChunk(head, nchunk, true)
	}
	if nfree > 0 {
		r.releaseList(free, nfree)
	}
	r.gate.Exit()
	if len(deferred) > 0 {
		// QueueDepth portable reads are in flight: start these as they
		// finish, without holding up the caller.
		r.portable.startLater(b, deferred)
	}
	return b
}

// readNow reads request i synchronously and completes it.
func (r *uringReader) readNow(b *ReadBatch, i int) {
	req := &b.reqs[i]
	req.N, req.Err = ReadAtDeadline(req.File, req.Buf, req.Off, req.Deadline)
	r.counters.bytesRead.Add(uint64(req.N))
	b.complete(i)
}

// acquireSlots blocks until a slot is free and takes up to want of them,
// returned as a list linked through next.
func (r *uringReader) acquireSlots(want int) (head int32, n int) {
	r.slotMu.Lock()
	for len(r.free) == 0 {
		r.slotFreed.Wait()
	}
	n = min(want, len(r.free))
	head = -1
	for range n {
		id := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.slots[id].next = head
		head = id
	}
	r.maxInflight = max(r.maxInflight, len(r.slots)-len(r.free))
	r.slotMu.Unlock()
	return head, n
}

// releaseList returns n slots linked through next to the free stack.
func (r *uringReader) releaseList(head int32, n int) {
	r.slotMu.Lock()
	for range n {
		r.free = append(r.free, head)
		head = r.slots[head].next
	}
	r.slotFreed.Broadcast()
	r.slotMu.Unlock()
}

// releaseIDs returns slots to the free stack.
func (r *uringReader) releaseIDs(ids []int32) {
	r.slotMu.Lock()
	r.free = append(r.free, ids...)
	r.slotFreed.Broadcast()
	r.slotMu.Unlock()
}

// submitChunk pushes an SQE for each of n filled slots linked from head and
// submits them with as few io_uring_enter calls as the kernel allows (one,
// unless it is interrupted or refuses some). fresh says the requests are new
// (not continuations), so Close must wait for them.
func (r *uringReader) submitChunk(head int32, n int, fresh bool) {
	if fresh {
		r.ringWork.Add(n)
	}
	r.sqMu.Lock()
	id := head
	pushed := uint32(0)
	for range n {
		// Read what the SQE needs before publishing the slot: once it is
		// published the reaper may own it.
		s := &r.slots[id]
		next, fd, buf, off := s.next, s.fd, s.buf, s.off
		asked := uint32(min(len(buf), int(r.maxSQELen)))
		s.asked = asked
		linked := !s.deadline.IsZero() && r.ring.linkTimeout
		if linked {
			// Relative to now; a deadline already past still gets its
			// read submitted, cancelled at once, to keep one path.
			d := max(time.Until(s.deadline), time.Microsecond)
			s.ts = [2]int64{int64(d / time.Second), int64(d % time.Second)}
			s.awaiting, s.haveRead, s.timedOut = 2, false, false
		} else {
			s.awaiting = 1
		}
		s.published.Store(1)
		if linked {
			r.ring.pushReadWithin(fd, buf, asked, off, uint64(id), &s.ts, uint64(id)|timeoutUserData)
			pushed += 2
		} else {
			r.ring.pushRead(fd, buf, asked, off, uint64(id))
			pushed++
		}
		id = next
	}
	enters, dropped, err := r.ring.enterSubmit()
	var failed []int32
	for k := range dropped {
		// The SQEs the kernel did not take are still ours to read. A
		// dropped linked timeout goes with its read, pushed right before
		// it (the kernel takes SQEs in order and a failing enter takes
		// none, so a read and its timeout are dropped together).
		if ud := r.ring.sqe(r.ring.sqLocalTail + k).userData; ud&timeoutUserData == 0 {
			failed = append(failed, int32(ud))
		}
	}
	r.sqMu.Unlock()
	r.counters.enters.Add(uint64(enters))
	r.counters.sqes.Add(uint64(pushed - dropped))
	if len(failed) > 0 {
		// The kernel refused the ring itself (not a read): fail the
		// requests it did not take.
		for _, id := range failed {
			r.finish(id, err)
		}
		r.releaseIDs(failed)
	}
}

// reap is the reaper goroutine: it waits for CQEs and completes requests
// until it reaps the NOP of Close.
func (r *uringReader) reap() {
	defer close(r.reaperDone)
	for {
		err := r.ring.waitCQE()
		r.waitEnters.Add(1)
		if err != nil && err != unix.EINTR && err != unix.EAGAIN && err != unix.EBUSY {
			// Not expected from a live ring; back off rather than spin.
			time.Sleep(time.Millisecond)
		}
		r.ring.popCQEs(r.onCQE)
		if len(r.reapFreed) > 0 {
			r.releaseIDs(r.reapFreed)
			r.reapFreed = r.reapFreed[:0]
		}
		if r.resubmitN > 0 {
			head, n := r.resubmitHead, r.resubmitN
			r.resubmitHead, r.resubmitN = -1, 0
			r.submitChunk(head, n, false)
		}
		if r.stopping {
			return
		}
	}
}

// handleCQE handles one completion; it runs on the reaper.
func (r *uringReader) handleCQE(userData uint64, res int32) {
	if userData == closeUserData {
		r.stopping = true
		return
	}
	if userData&timeoutUserData != 0 && userData&^timeoutUserData < uint64(len(r.slots)) {
		r.handleTimeoutCQE(int32(userData&^timeoutUserData), res)
		return
	}
	if userData >= uint64(len(r.slots)) {
		panic(fmt.Sprintf("shale: vfs: io_uring completion for unknown slot %d (invariant: user_data is a slot index)", userData))
	}
	id := int32(userData)
	s := &r.slots[id]
	if s.published.Load() != 1 {
		panic(fmt.Sprintf("shale: vfs: io_uring completion for idle slot %d (invariant: one CQE per SQE)", id))
	}
	if s.awaiting--; s.awaiting > 0 {
		// The linked timeout's CQE is still to come: the read is finished
		// (or resubmitted) only then, when the slot is ours again.
		s.readRes, s.haveRead = res, true
		return
	}
	r.handleRead(id, res)
}

// handleTimeoutCQE handles the CQE of the linked timeout of slot id; it
// runs on the reaper.
func (r *uringReader) handleTimeoutCQE(id int32, res int32) {
	s := &r.slots[id]
	if s.published.Load() != 1 {
		panic(fmt.Sprintf("shale: vfs: io_uring timeout completion for idle slot %d (invariant: one CQE per SQE)", id))
	}
	if res == -int32(unix.ETIME) {
		s.timedOut = true
	}
	if s.awaiting--; s.awaiting > 0 {
		return // the read's CQE is still to come
	}
	r.handleRead(id, s.readRes)
}

// handleRead handles the result res of the read of slot id, once every CQE
// of the read's SQEs is reaped; it runs on the reaper.
func (r *uringReader) handleRead(id int32, res int32) {
	s := &r.slots[id]
	s.haveRead = false
	if !s.deadline.IsZero() && (s.timedOut || res == -int32(unix.ECANCELED) || !time.Now().Before(s.deadline)) {
		// Cancelled by its timeout, or (without IORING_OP_LINK_TIMEOUT,
		// or resubmitted too late) done after the deadline: timed out,
		// like a synchronous read past its deadline.
		r.end(id, TimeoutError("read", s.file, s.off))
		return
	}
	switch {
	case res == -int32(unix.EINTR) || res == -int32(unix.EAGAIN):
		r.resubmit(id)
	case res < 0:
		r.end(id, &os.PathError{Op: "read", Path: s.file.file.Name(), Err: unix.Errno(-res)})
	case res == 0:
		// os.File.ReadAt reports the end of the file the same way: a
		// read of 0 bytes before the buffer is full.
		r.end(id, io.EOF)
	case uint32(res) > s.asked:
		r.end(id, fmt.Errorf("shale: io_uring read of %s returned %d bytes for a read of %d", s.file.file.Name(), res, s.asked))
	default:
		s.n += int(res)
		s.buf = s.buf[res:]
		s.off += int64(res)
		switch {
		case len(s.buf) == 0:
			r.end(id, nil)
		case s.align > 1 && !IsAligned(s.buf, s.off, s.align):
			// A short direct-IO read left an unaligned rest (typically at
			// the end of the file): the file's own ReadAt handles it.
			r.finishPortable(id)
			r.reapFreed = append(r.reapFreed, id)
		default:
			r.resubmit(id) // a short read, or a request longer than one SQE
		}
	}
}

// resubmit queues slot id for another SQE at its current offset.
func (r *uringReader) resubmit(id int32) {
	r.slots[id].next = -1
	if r.resubmitN == 0 {
		r.resubmitHead = id
	} else {
		r.slots[r.resubmitTail].next = id
	}
	r.resubmitTail = id
	r.resubmitN++
}

// end finishes slot id with err on the reaper and frees the slot.
func (r *uringReader) end(id int32, err error) {
	r.finish(id, err)
	r.reapFreed = append(r.reapFreed, id)
}

// finish records the result of slot id in its request, clears the slot and
// completes the request. The caller frees the slot.
func (r *uringReader) finish(id int32, err error) {
	s := &r.slots[id]
	b, i, n := s.batch, s.idx, s.n
	r.clearSlot(s)
	req := &b.reqs[i]
	req.N, req.Err = n, err
	r.counters.bytesRead.Add(uint64(n))
	r.deliver(b, i)
}

// finishPortable hands the rest of slot id to the file's ReadAt on a
// goroutine. The caller frees the slot.
func (r *uringReader) finishPortable(id int32) {
	s := &r.slots[id]
	b, i, n, f, rest, off, deadline := s.batch, s.idx, s.n, s.file, s.buf, s.off, s.deadline
	r.clearSlot(s)
	go func() {
		m, err := ReadAtDeadline(f, rest, off, deadline)
		req := &b.reqs[i]
		req.N, req.Err = n+m, err
		r.counters.bytesRead.Add(uint64(n + m))
		r.deliver(b, i)
	}()
}

// clearSlot drops the slot's references so that a free slot pins nothing.
func (r *uringReader) clearSlot(s *uringSlot) {
	s.published.Store(0)
	s.batch, s.file, s.buf = nil, nil, nil
	s.deadline, s.timedOut, s.haveRead = time.Time{}, false, false
}

// deliver completes request i of b, a request sent to the ring.
func (r *uringReader) deliver(b *ReadBatch, i int) {
	b.complete(i)
	r.ringWork.Done()
}

// Close waits for the reads in the ring, stops the reaper and releases the
// ring. Later Submits read synchronously.
func (r *uringReader) Close() error {
	r.closeOnce.Do(func() {
		r.gate.Shut()
		r.ringWork.Wait()
		r.sqMu.Lock()
		r.ring.pushNop(closeUserData)
		_, _, err := r.ring.enterSubmit()
		r.sqMu.Unlock()
		if err != nil {
			// The reaper cannot be woken; leave the ring mapped for it
			// rather than unmap memory it may still read.
			r.closeErr = err
			return
		}
		<-r.reaperDone
		if n := r.ring.overflowed(); n != 0 {
			r.closeErr = fmt.Errorf("shale: io_uring: %d completions overflowed the completion ring (invariant: at most the SQ size in flight)", n)
		}
		if err := r.ring.close(); err != nil && r.closeErr == nil {
			r.closeErr = err
		}
	})
	return r.closeErr
}

// reaperEnters returns the reaper's io_uring_enter calls, which AsyncStats
// leaves out; benchmarks add them to count system calls per read.
func (r *uringReader) reaperEnters() uint64 { return r.waitEnters.Load() }

package vfs

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the io_uring ring itself: the kernel's structures, setup,
// the mmap of the rings, the opcode probe, and the two halves of the
// protocol (pushing SQEs, popping CQEs). async_linux.go builds the
// AsyncReader on top of it. The layouts and constants below are those of
// include/uapi/linux/io_uring.h; the kernel guarantees them as ABI.

const (
	// io_uring_setup flags.
	ioringSetupSQPoll = 1 << 1

	// features reported by io_uring_setup.
	ioringFeatSingleMmap     = 1 << 0
	ioringFeatSQPollNonfixed = 1 << 7 // since Linux 5.11

	// io_uring_enter flags.
	ioringEnterGetEvents = 1 << 0
	ioringEnterSQWakeup  = 1 << 1

	// flags of the SQ ring's flags word.
	ioringSQNeedWakeup = 1 << 0

	// mmap offsets of the three regions.
	ioringOffSQRing = 0
	ioringOffCQRing = 0x8000000
	ioringOffSQEs   = 0x10000000

	// opcodes.
	ioringOpNop         = 0
	ioringOpLinkTimeout = 15 // since Linux 5.5
	ioringOpRead        = 22 // since Linux 5.6

	// SQE flags.
	ioringSQEIOLink = 1 << 2 // the next SQE of the submission is linked to this one

	// io_uring_register opcodes.
	ioringRegisterProbe = 8
	ioUringOpSupported  = 1 << 0

	// maxRingEntries bounds QueueDepth; the kernel allows 32768, but a DB
	// never needs that many reads in flight and the rings cost memory.
	maxRingEntries = 4096
)

// uringSQOffsets is struct io_sqring_offsets.
type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// uringCQOffsets is struct io_cqring_offsets.
type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringParams is struct io_uring_params, filled in by io_uring_setup.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uringSQE is struct io_uring_sqe (64 bytes), with the unions flattened to
// the members a read uses.
type uringSQE struct {
	opcode, flags         uint8
	ioprio                uint16
	fd                    int32
	off, addr             uint64
	len, rwFlags          uint32
	userData              uint64
	bufIndex, personality uint16
	spliceFDIn            int32
	addr3, pad            uint64
}

// uringCQE is struct io_uring_cqe (16 bytes, without the CQE32 extension).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringProbe is struct io_uring_probe followed by room for every opcode.
type uringProbe struct {
	lastOp, opsLen uint8
	resv           uint16
	resv2          [3]uint32
	ops            [256]struct {
		op, resv uint8
		flags    uint16
		resv2    uint32
	}
}

// Compile-time checks that the layouts match the kernel's sizes: a wrong
// size makes a constant index out of range (or a constant overflow).
var (
	_ = [1]int{}[unsafe.Sizeof(uringParams{})-120]
	_ = [1]int{}[unsafe.Sizeof(uringSQE{})-64]
	_ = [1]int{}[unsafe.Sizeof(uringCQE{})-16]
	_ = [1]int{}[unsafe.Sizeof(uringProbe{})-(16+256*8)]
)

// uring is one io_uring instance with its rings mapped. Pushing SQEs
// (pushRead, pushNop, enterSubmit) needs the caller to serialize; popping
// CQEs is done by one goroutine at a time (the reaper). The two sides may run
// at once: that is how the kernel's rings are meant to be shared.
type uring struct {
	fd     int
	sqpoll bool

	sqRing, cqRing, sqeMem []byte // the mappings; cqRing aliases sqRing with IORING_FEAT_SINGLE_MMAP

	sqHead, sqTail, sqFlags *uint32
	sqMask, sqEntries       uint32
	sqes                    unsafe.Pointer // sqEntries uringSQEs

	cqHead, cqTail, cqOverflow *uint32
	cqMask, cqEntries          uint32
	cqes                       unsafe.Pointer // cqEntries uringCQEs

	// sqLocalTail is the tail including SQEs written but not yet published
	// with publish.
	sqLocalTail uint32
	// linkTimeout says the kernel supports IORING_OP_LINK_TIMEOUT, which
	// bounds a read that has a deadline.
	linkTimeout bool
}

// newURing sets up a ring of entries SQEs (a power of two) and maps it. It
// fails when the kernel has no io_uring (ENOSYS), forbids it (EPERM from
// seccomp or kernel.io_uring_disabled), is out of locked memory (ENOMEM), or
// lacks IORING_OP_READ; the error says which.
func newURing(entries uint32, sqpoll bool) (*uring, error) {
	var p uringParams
	if sqpoll {
		p.flags |= ioringSetupSQPoll
		// The polling thread sleeps after 10 ms without submissions, rather
		// than the default second: it is a core we would rather give back.
		p.sqThreadIdle = 10
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, setupError(errno, sqpoll)
	}
	u := &uring{fd: int(fd), sqpoll: sqpoll}
	if err := checkFeatures(&p, sqpoll); err != nil {
		_ = u.close()
		return nil, err
	}
	if err := u.mmap(&p); err != nil {
		_ = u.close()
		return nil, err
	}
	if err := u.probeRead(); err != nil {
		_ = u.close()
		return nil, err
	}
	return u, nil
}

// checkFeatures refuses a ring whose kernel lacks what the reader relies
// on: SQ polling before Linux 5.11 reads only registered files, which the
// reader does not use, so every read would fail with EBADF.
func checkFeatures(p *uringParams, sqpoll bool) error {
	if sqpoll && p.features&ioringFeatSQPollNonfixed == 0 {
		return errors.New("shale: io_uring: SQ polling of unregistered files needs Linux 5.11 (IORING_FEAT_SQPOLL_NONFIXED)")
	}
	return nil
}

// setupError explains a failed io_uring_setup.
func setupError(errno unix.Errno, sqpoll bool) error {
	var why string
	switch errno {
	case unix.ENOSYS:
		why = "the kernel has no io_uring (older than 5.1, or built without it)"
	case unix.EPERM:
		why = "io_uring is not permitted (seccomp filter, or kernel.io_uring_disabled / io_uring_group)"
		if sqpoll {
			why = "SQ polling or io_uring is not permitted (SQ polling needs CAP_SYS_NICE before Linux 5.11; seccomp; kernel.io_uring_disabled)"
		}
	case unix.ENOMEM:
		why = "not enough locked memory for the rings (RLIMIT_MEMLOCK)"
	case unix.EINVAL:
		why = "the kernel rejected the ring parameters"
	default:
		why = "unexpected error"
	}
	return fmt.Errorf("shale: io_uring_setup failed: %s: %w", why, errno)
}

// mmap maps the SQ ring, the CQ ring and the SQE array, and resolves the
// pointers into them.
func (u *uring) mmap(p *uringParams) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(uringCQE{}))
	single := p.features&ioringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
		cqSize = sqSize
	}
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	var err error
	if u.sqRing, err = unix.Mmap(u.fd, ioringOffSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("shale: io_uring: mapping the submission ring: %w", err)
	}
	if single {
		u.cqRing = u.sqRing
	} else if u.cqRing, err = unix.Mmap(u.fd, ioringOffCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("shale: io_uring: mapping the completion ring: %w", err)
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(uringSQE{}))
	if u.sqeMem, err = unix.Mmap(u.fd, ioringOffSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("shale: io_uring: mapping the submission entries: %w", err)
	}

	word := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	u.sqHead, u.sqTail, u.sqFlags = word(u.sqRing, p.sqOff.head), word(u.sqRing, p.sqOff.tail), word(u.sqRing, p.sqOff.flags)
	u.sqMask, u.sqEntries = *word(u.sqRing, p.sqOff.ringMask), p.sqEntries
	u.sqes = unsafe.Pointer(&u.sqeMem[0])
	u.cqHead, u.cqTail, u.cqOverflow = word(u.cqRing, p.cqOff.head), word(u.cqRing, p.cqOff.tail), word(u.cqRing, p.cqOff.overflow)
	u.cqMask, u.cqEntries = *word(u.cqRing, p.cqOff.ringMask), p.cqEntries
	u.cqes = unsafe.Pointer(&u.cqRing[p.cqOff.cqes])

	// The SQ array maps ring positions to SQE indexes; we keep the identity
	// mapping, so the SQE of ring position t is sqes[t&mask].
	for i := uint32(0); i < p.sqEntries; i++ {
		*word(u.sqRing, p.sqOff.array+4*i) = i
	}
	u.sqLocalTail = atomic.LoadUint32(u.sqTail)
	return nil
}

// probeRead asks the kernel whether it supports IORING_OP_READ.
func (u *uring) probeRead() error {
	var pr uringProbe
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(u.fd), ioringRegisterProbe,
		uintptr(unsafe.Pointer(&pr)), uintptr(len(pr.ops)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("shale: io_uring: the kernel cannot be probed for IORING_OP_READ (IORING_REGISTER_PROBE needs Linux 5.6): %w", errno)
	}
	if pr.lastOp < ioringOpRead || pr.ops[ioringOpRead].flags&ioUringOpSupported == 0 {
		return errors.New("shale: io_uring: the kernel does not support IORING_OP_READ (needs Linux 5.6)")
	}
	u.linkTimeout = pr.ops[ioringOpLinkTimeout].flags&ioUringOpSupported != 0
	return nil
}

// sqe returns the SQE at ring position pos.
func (u *uring) sqe(pos uint32) *uringSQE {
	return (*uringSQE)(unsafe.Add(u.sqes, uintptr(pos&u.sqMask)*unsafe.Sizeof(uringSQE{})))
}

// pushRead writes an IORING_OP_READ SQE at the local tail. The caller
// guarantees there is a free slot (the reader never has more requests in
// flight than the SQ has entries) and keeps buf alive until its CQE.
func (u *uring) pushRead(fd int32, buf []byte, n uint32, off int64, userData uint64) {
	*u.sqe(u.sqLocalTail) = uringSQE{
		opcode:   ioringOpRead,
		fd:       fd,
		off:      uint64(off),
		addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))),
		len:      n,
		userData: userData,
	}
	u.sqLocalTail++
}

// pushReadWithin writes an IORING_OP_READ SQE linked to an
// IORING_OP_LINK_TIMEOUT SQE that cancels it after the relative time *ts
// (which the caller keeps alive and unchanged until both CQEs are reaped).
// The read's CQE has userData, the timeout's timeoutUserData: -ETIME when
// it fired (the read then ends with -ECANCELED, or -EINTR if it was
// interrupted midway), -ECANCELED or -ENOENT when the read finished first.
func (u *uring) pushReadWithin(fd int32, buf []byte, n uint32, off int64, userData uint64, ts *[2]int64, timeoutUserData uint64) {
	u.pushRead(fd, buf, n, off, userData)
	u.sqe(u.sqLocalTail - 1).flags |= ioringSQEIOLink
	*u.sqe(u.sqLocalTail) = uringSQE{
		opcode:   ioringOpLinkTimeout,
		addr:     uint64(uintptr(unsafe.Pointer(ts))),
		len:      1,
		userData: timeoutUserData,
	}
	u.sqLocalTail++
}

// pushNop writes an IORING_OP_NOP SQE, used to wake the reaper.
func (u *uring) pushNop(userData uint64) {
	*u.sqe(u.sqLocalTail) = uringSQE{opcode: ioringOpNop, userData: userData}
	u.sqLocalTail++
}

// enterSubmit publishes the pushed SQEs and, unless a polling thread is
// awake to take them, calls io_uring_enter until the kernel has consumed all
// of them. It returns the number of io_uring_enter calls made. On an error
// other than EINTR/EAGAIN/EBUSY, the SQEs the kernel did not consume are
// withdrawn and their number returned as dropped, for the caller to fail
// (they are the last dropped of those pushed).
func (u *uring) enterSubmit() (enters int, dropped uint32, err error) {
	// The atomic store orders the SQE writes before the tail the kernel
	// reads (a store-release); Go's atomics are sequentially consistent.
	atomic.StoreUint32(u.sqTail, u.sqLocalTail)
	if u.sqpoll {
		// The load of the flags must not move before the tail store; with
		// sequentially consistent atomics it cannot.
		if atomic.LoadUint32(u.sqFlags)&ioringSQNeedWakeup != 0 {
			for {
				_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), 0, 0, ioringEnterSQWakeup, 0, 0)
				enters++
				if errno != unix.EINTR {
					break
				}
			}
		}
		return enters, 0, nil
	}
	for {
		pending := u.sqLocalTail - atomic.LoadUint32(u.sqHead)
		if pending == 0 {
			return enters, 0, nil
		}
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(pending), 0, 0, 0, 0)
		enters++
		switch errno {
		case 0, unix.EINTR:
		case unix.EAGAIN, unix.EBUSY:
			// Out of kernel memory for requests, or completions to reap
			// first: the reaper makes progress without us.
			runtime.Gosched()
		default:
			// Without a polling thread the kernel reads the SQ only in
			// io_uring_enter, so moving the tail back is safe.
			head := atomic.LoadUint32(u.sqHead)
			dropped = u.sqLocalTail - head
			u.sqLocalTail = head
			atomic.StoreUint32(u.sqTail, head)
			return enters, dropped, fmt.Errorf("shale: io_uring_enter failed submitting reads: %w", errno)
		}
	}
}

// waitCQE blocks until at least one CQE is ready. The thread blocks in the
// kernel (the Go scheduler hands its P to another thread); nothing spins.
func (u *uring) waitCQE() error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), 0, 1, ioringEnterGetEvents, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// popCQEs calls fn for each ready CQE and then frees their ring entries.
// It returns how many it saw.
func (u *uring) popCQEs(fn func(userData uint64, res int32)) int {
	head := atomic.LoadUint32(u.cqHead)
	tail := atomic.LoadUint32(u.cqTail) // load-acquire: CQE contents are visible
	n := int(tail - head)
	for ; head != tail; head++ {
		c := (*uringCQE)(unsafe.Add(u.cqes, uintptr(head&u.cqMask)*unsafe.Sizeof(uringCQE{})))
		fn(c.userData, c.res)
	}
	atomic.StoreUint32(u.cqHead, head)
	return n
}

// overflowed returns the kernel's count of completions it had to drop or
// hold back because the CQ was full; the reader keeps it at 0.
func (u *uring) overflowed() uint32 { return atomic.LoadUint32(u.cqOverflow) }

// close unmaps the rings and closes the ring's descriptor.
func (u *uring) close() error {
	var errs []error
	if u.sqeMem != nil {
		errs = append(errs, unix.Munmap(u.sqeMem))
	}
	if u.cqRing != nil && unsafe.SliceData(u.cqRing) != unsafe.SliceData(u.sqRing) {
		errs = append(errs, unix.Munmap(u.cqRing))
	}
	if u.sqRing != nil {
		errs = append(errs, unix.Munmap(u.sqRing))
	}
	u.sqeMem, u.cqRing, u.sqRing = nil, nil, nil
	errs = append(errs, unix.Close(u.fd))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shale: io_uring: releasing the ring: %w", err)
	}
	return nil
}

//go:build linux

package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file measures what io_uring's registered files and buffers would buy
// the reader (docs/decisions.md, "io_uring"), with the ring of
// uring_linux.go driven directly so that the three variants differ in
// nothing but registration:
//
//	reg=none      IORING_OP_READ on the file's descriptor (what the reader does)
//	reg=file      IORING_OP_READ with IOSQE_FIXED_FILE on a slot of
//	              IORING_REGISTER_FILES: no fget/fput of the file per read
//	reg=file+buf  IORING_OP_READ_FIXED into buffers of
//	              IORING_REGISTER_BUFFERS, on the registered file: no
//	              pinning or mapping of user pages per read either
//
// Each op reads 64 random 4 KiB blocks submitted with one io_uring_enter
// that also waits for the 64 completions, so the op is the kernel's own
// per-read cost plus one system call per 64 reads: the case most favourable
// to registration, since the reader adds a reaper wake-up per batch on top.

const (
	// io_uring_register opcodes (include/uapi/linux/io_uring.h).
	ioringRegisterBuffers = 0
	ioringRegisterFiles   = 2
	// IORING_OP_READ_FIXED reads into a registered buffer.
	ioringOpReadFixed = 4
	// IOSQE_FIXED_FILE: the SQE's fd is an index into the registered files.
	iosqeFixedFile = 1 << 0
)

// uringRegVariant is one way of naming the file and the buffers in an SQE.
type uringRegVariant int

const (
	regNone uringRegVariant = iota
	regFile
	regFileBuf
)

func (v uringRegVariant) String() string {
	return [...]string{"none", "file", "file+buf"}[v]
}

// uringRegister calls io_uring_register.
func uringRegister(ring *uring, op uintptr, arg unsafe.Pointer, n int) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(ring.fd), op, uintptr(arg), uintptr(n), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// regReadRig is a ring set up for one variant, reading blocks of one
// descriptor into buffers mapped outside the Go heap (so that registering
// them pins nothing the GC owns; every variant uses the same memory).
type regReadRig struct {
	ring    *uring
	variant uringRegVariant
	fd      int32
	block   int
	mem     []byte   // the mapping of all buffers
	bufs    [][]byte // len(bufs) blocks of mem
	got     []int32  // res of each buffer's CQE
}

// newRegReadRig makes a ring of depth entries for v on fd, with depth
// buffers of block bytes, and registers what v needs. It returns an error
// when the kernel refuses the ring or the registration.
func newRegReadRig(fd int, v uringRegVariant, depth, block int) (*regReadRig, error) {
	ring, err := newURing(uint32(depth), false)
	if err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(-1, 0, depth*block, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		_ = ring.close()
		return nil, fmt.Errorf("mapping the buffers: %w", err)
	}
	g := &regReadRig{ring: ring, variant: v, fd: int32(fd), block: block, mem: mem, got: make([]int32, depth)}
	for i := range depth {
		g.bufs = append(g.bufs, mem[i*block:(i+1)*block:(i+1)*block])
	}
	if v >= regFile {
		fds := []int32{int32(fd)}
		if err := uringRegister(ring, ioringRegisterFiles, unsafe.Pointer(&fds[0]), len(fds)); err != nil {
			g.close()
			return nil, fmt.Errorf("IORING_REGISTER_FILES: %w", err)
		}
		g.fd = 0 // the slot
	}
	if v >= regFileBuf {
		iov := make([]unix.Iovec, depth)
		for i, b := range g.bufs {
			iov[i].Base = &b[0]
			iov[i].SetLen(len(b))
		}
		if err := uringRegister(ring, ioringRegisterBuffers, unsafe.Pointer(&iov[0]), len(iov)); err != nil {
			g.close()
			return nil, fmt.Errorf("IORING_REGISTER_BUFFERS: %w", err)
		}
	}
	return g, nil
}

// close releases the ring (which drops its registrations) and the buffers.
func (g *regReadRig) close() {
	_ = g.ring.close()
	_ = unix.Munmap(g.mem)
}

// readBatch reads block-sized blocks at offs (at most len(g.bufs)) into
// g.bufs[i], with one io_uring_enter that submits them all and waits for
// every completion (more only if interrupted), and returns an error unless
// every read returned a whole block.
func (g *regReadRig) readBatch(offs []int64) error {
	u := g.ring
	for i, off := range offs {
		sqe := uringSQE{
			opcode:   ioringOpRead,
			fd:       g.fd,
			off:      uint64(off),
			addr:     uint64(uintptr(unsafe.Pointer(&g.bufs[i][0]))),
			len:      uint32(g.block),
			userData: uint64(i),
		}
		if g.variant >= regFile {
			sqe.flags = iosqeFixedFile
		}
		if g.variant >= regFileBuf {
			sqe.opcode, sqe.bufIndex = ioringOpReadFixed, uint16(i)
		}
		*u.sqe(u.sqLocalTail) = sqe
		u.sqLocalTail++
	}
	atomic.StoreUint32(u.sqTail, u.sqLocalTail)
	done := 0
	for done < len(offs) {
		pending := u.sqLocalTail - atomic.LoadUint32(u.sqHead)
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(pending), uintptr(len(offs)-done), ioringEnterGetEvents, 0, 0)
		if errno != 0 && errno != unix.EINTR && errno != unix.EAGAIN && errno != unix.EBUSY {
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		done += u.popCQEs(func(userData uint64, res int32) { g.got[userData] = res })
	}
	for i := range offs {
		if g.got[i] != int32(g.block) {
			if g.got[i] < 0 {
				return fmt.Errorf("read %d at %d (reg=%v): %w", i, offs[i], g.variant, unix.Errno(-g.got[i]))
			}
			return fmt.Errorf("read %d at %d (reg=%v): %d bytes, want %d", i, offs[i], g.variant, g.got[i], g.block)
		}
	}
	return nil
}

// writeRegBenchFile writes size bytes of random data to a new file under
// dir, synced (so that O_DIRECT reads need no writeback first) and dropped
// from the page cache, and returns its name.
func writeRegBenchFile(t testing.TB, dir string, size int) string {
	t.Helper()
	name := filepath.Join(dir, "data")
	chunk := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	w, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for written := 0; written < size; written += len(chunk) {
		for i := range chunk {
			chunk[i] = byte(rng.Uint32())
		}
		if _, err := w.Write(chunk[:min(len(chunk), size-written)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(w.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestURingRegisteredReads checks the benchmark's rig: each variant reads
// the file's bytes, through the page cache and with O_DIRECT.
func TestURingRegisteredReads(t *testing.T) {
	const block, depth = 4096, 16
	name := writeRegBenchFile(t, testDir(t), 1<<20)
	ref, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, direct := range []bool{false, true} {
		flags := unix.O_RDONLY | unix.O_CLOEXEC
		if direct {
			flags |= unix.O_DIRECT
		}
		fd, err := unix.Open(name, flags, 0)
		if errors.Is(err, unix.EINVAL) && direct {
			t.Logf("no O_DIRECT on this file system: %v", err)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		for _, v := range []uringRegVariant{regNone, regFile, regFileBuf} {
			g, err := newRegReadRig(fd, v, depth, block)
			if err != nil {
				t.Skipf("io_uring or its registration unavailable: %v", err)
			}
			offs := make([]int64, depth)
			for i := range offs {
				offs[i] = int64((i*37)%256) * block
			}
			err = g.readBatch(offs)
			for i, off := range offs {
				if err == nil && !bytes.Equal(g.bufs[i], ref[off:off+block]) {
					err = fmt.Errorf("direct %v reg=%v: block at %d differs from the file's", direct, v, off)
				}
			}
			g.close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkURingRegistered reads 64 random 4 KiB blocks per op from one file
// with each registration variant (see the top of this file):
//
//	cached/  a 64 MiB file read once first, so every read is a page-cache
//	         copy and the kernel's per-read overhead is what differs
//	direct/  a 512 MiB file opened with O_DIRECT: every read goes to the
//	         device (what registered buffers avoid there is pinning the
//	         user pages of each read)
//
// ns/read is wall time per read; cpu-ns/read is the process's user+system
// CPU time (getrusage, every thread, so it includes io-wq workers) per read.
// Compare the variants with benchstat -col /reg.
//
// On a 2-vCPU EPYC VM (Linux 6.18, ext4 on virtio) registered files saved
// 5-9% of a cached read's time and CPU (50-75 ns of 720-840 ns), registered
// buffers nothing more; with O_DIRECT neither changed wall time, and
// registered buffers cut CPU per read by 12%. The reader adds its own work
// per read (on a quiet machine a cached 64-read batch took 58-68 µs through
// it against 46-55 µs here), so the share there is smaller still: below the
// bar for a sparse registered file table that tracks the table cache
// (docs/decisions.md, "io_uring").
func BenchmarkURingRegistered(b *testing.B) {
	const (
		block = 4 << 10
		depth = 64
	)
	dir := testDir(b)
	for _, c := range []struct {
		name   string
		size   int
		direct bool
	}{
		{"cached", 64 << 20, false},
		{"direct", 512 << 20, true},
	} {
		name := writeRegBenchFile(b, dir, c.size)
		flags := unix.O_RDONLY | unix.O_CLOEXEC
		if c.direct {
			flags |= unix.O_DIRECT
		}
		fd, err := unix.Open(name, flags, 0)
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		offsets := make([]int64, 1<<16)
		for i := range offsets {
			offsets[i] = int64(rng.IntN(c.size/block)) * block
		}
		if !c.direct {
			// Fault the whole file into the page cache.
			buf := make([]byte, 1<<20)
			for off := 0; off < c.size; off += len(buf) {
				if _, err := unix.Pread(fd, buf, int64(off)); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, v := range []uringRegVariant{regNone, regFile, regFileBuf} {
			b.Run(fmt.Sprintf("%s/reg=%v", c.name, v), func(b *testing.B) {
				g, err := newRegReadRig(fd, v, depth, block)
				if err != nil {
					b.Skipf("io_uring or its registration unavailable: %v", err)
				}
				defer g.close()
				b.SetBytes(depth * block)
				next := 0
				var ru0, ru1 unix.Rusage
				_ = unix.Getrusage(unix.RUSAGE_SELF, &ru0)
				b.ResetTimer()
				for range b.N {
					offs := offsets[next : next+depth]
					next = (next + depth) % len(offsets)
					if err := g.readBatch(offs); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				_ = unix.Getrusage(unix.RUSAGE_SELF, &ru1)
				reads := float64(b.N * depth)
				cpu := rusageCPU(&ru1) - rusageCPU(&ru0)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/reads, "ns/read")
				b.ReportMetric(float64(cpu.Nanoseconds())/reads, "cpu-ns/read")
			})
		}
		_ = unix.Close(fd)
		if err := os.Remove(name); err != nil {
			b.Fatal(err)
		}
	}
}

// rusageCPU is the user plus system time of ru.
func rusageCPU(ru *unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

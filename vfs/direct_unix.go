//go:build !windows

package vfs

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	// directWriteBufSize is the aligned buffer a DirectIO file being written
	// gathers appends in; it is written with one pwrite when full.
	directWriteBufSize = 256 << 10
	// bounceSize is the size of the pooled bounce buffers of unaligned
	// direct reads; longer reads go through one in several pieces.
	bounceSize = 256 << 10
	// bounceAlign is the address alignment of pooled bounce buffers; a file
	// that needs more (none known) gets a fresh buffer per read.
	bounceAlign = 4096
	// defaultDirectAlign is used where the OS does not tell: a multiple of
	// every logical block size in use (512 and 4096).
	defaultDirectAlign = 4096
)

var bouncePool = sync.Pool{New: func() any {
	b := AlignedBuffer(bounceSize, bounceAlign)
	return &b
}}

// directFile is the direct-IO layer of an osFile on POSIX: O_DIRECT on
// Linux, F_NOCACHE on macOS. Reads that are aligned (offset, length and
// buffer address multiples of align) go to the file as they are; others
// read the covering aligned range into a bounce buffer. Appends are gathered
// in an aligned buffer and written in whole blocks.
type directFile struct {
	file *os.File
	fd   int
	// closed is set by Close before the descriptor is closed: a read or
	// write after Close fails instead of using a descriptor number the OS
	// may have given to another file. (A call racing with Close is the
	// caller's bug, as with any file.)
	closed atomic.Bool
	name   string
	align  int

	// Counters, for tests: reads served without and with a bounce buffer.
	alignedReads, bouncedReads atomic.Uint64

	// mu guards the write state below; only a writable file uses it.
	mu       sync.Mutex
	writable bool
	// buf holds the current contents of [bufOff, bufOff+len(buf)), newer
	// than the file's; bufOff is aligned, and every byte before bufOff
	// is in the file. The file's position (where Write writes) is pos;
	// when pos != bufOff+len(buf) (after Truncate) Write reloads buf.
	buf    []byte
	bufOff int64
	pos    int64
	sz     int64 // the true size, which the file itself reaches at flush
	dirty  bool  // buf holds bytes not yet written
	err    error // sticky: after a failed write the file's content is unknown
}

var _ directIO = (*directFile)(nil)

// newDirectFile wraps f, already opened for direct IO with the given
// alignment. A file opened for writing starts with its position at 0
// (Create truncates it).
func newDirectFile(f *os.File, align int, writable bool) *directFile {
	d := &directFile{file: f, fd: int(f.Fd()), name: f.Name(), align: align, writable: writable}
	if writable {
		if fi, err := f.Stat(); err == nil {
			d.sz = fi.Size()
		}
		d.buf = AlignedBuffer(max(directWriteBufSize, align), align)[:0]
	}
	return d
}

func (d *directFile) alignment() int { return d.align }

func (d *directFile) pathErr(op string, err error) error {
	return &os.PathError{Op: op, Path: d.name, Err: err}
}

// preadFull reads len(p) bytes at off, both aligned, looping over short
// reads. A read that ends inside a block can only be the end of the file.
func (d *directFile) preadFull(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		if d.closed.Load() {
			return n, d.pathErr("read", os.ErrClosed)
		}
		m, err := unix.Pread(d.fd, p[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, d.pathErr("read", err)
		}
		n += m
		if m == 0 || n%d.align != 0 {
			if n < len(p) {
				return n, io.EOF
			}
		}
	}
	return n, nil
}

// pwriteFull writes p at off, both aligned.
func (d *directFile) pwriteFull(p []byte, off int64) error {
	for len(p) > 0 {
		if d.closed.Load() {
			return d.pathErr("write", os.ErrClosed)
		}
		m, err := unix.Pwrite(d.fd, p, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return d.pathErr("write", err)
		}
		if m == 0 {
			return d.pathErr("write", io.ErrShortWrite)
		}
		p, off = p[m:], off+int64(m)
	}
	return nil
}

// readFile reads from the file itself, as os.File.ReadAt does: a read that
// ends past the end of the file returns what is there and io.EOF.
func (d *directFile) readFile(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, d.pathErr("read", errInvalid)
	}
	if len(p) == 0 {
		if d.closed.Load() {
			return 0, d.pathErr("read", os.ErrClosed)
		}
		return 0, nil // as os.File.ReadAt, even at or past the end
	}
	if IsAligned(p, off, d.align) {
		d.alignedReads.Add(1)
		return d.preadFull(p, off)
	}
	d.bouncedReads.Add(1)
	var bp *[]byte
	var b []byte
	if d.align <= bounceAlign {
		bp = bouncePool.Get().(*[]byte)
		b = *bp
		defer bouncePool.Put(bp)
	} else {
		b = AlignedBuffer(int(AlignUp(bounceSize, d.align)), d.align)
	}
	return readBounced(p, off, b, d.align, d.preadFull)
}

func (d *directFile) readAt(p []byte, off int64) (int, error) {
	if !d.writable || len(p) == 0 {
		return d.readFile(p, off)
	}
	if off < 0 {
		return 0, d.pathErr("read", errInvalid)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if off >= d.sz {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), d.sz)
	q := p[:end-off]
	bufEnd := d.bufOff + int64(len(d.buf))
	// Outside buf the file has the bytes (zeros where a Truncate grew it).
	if lo := min(end, d.bufOff); lo > off {
		if err := d.readFileZeroFill(q[:lo-off], off); err != nil {
			return 0, err
		}
	}
	if b0, b1 := max(off, d.bufOff), min(end, bufEnd); b1 > b0 {
		copy(q[b0-off:], d.buf[b0-d.bufOff:b1-d.bufOff])
	}
	if hi := max(off, bufEnd); end > hi {
		if err := d.readFileZeroFill(q[hi-off:], hi); err != nil {
			return 0, err
		}
	}
	if len(q) < len(p) {
		return len(q), io.EOF
	}
	return len(q), nil
}

func (d *directFile) readFileZeroFill(p []byte, off int64) error {
	n, err := d.readFile(p, off)
	if err != nil && err != io.EOF {
		return err
	}
	clear(p[n:])
	return nil
}

func (d *directFile) write(p []byte) (int, error) {
	if !d.writable {
		return 0, d.pathErr("write", errReadOnly)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return 0, d.err
	}
	if d.pos != d.bufOff+int64(len(d.buf)) {
		if err := d.reloadLocked(); err != nil {
			return 0, err
		}
	}
	n := 0
	for n < len(p) {
		k := len(d.buf)
		c := copy(d.buf[k:cap(d.buf)], p[n:])
		d.buf = d.buf[:k+c]
		d.dirty = true
		n += c
		d.pos += int64(c)
		d.sz = max(d.sz, d.pos)
		if len(d.buf) == cap(d.buf) {
			if err := d.pwriteFull(d.buf, d.bufOff); err != nil {
				d.err = err
				return n - c, err
			}
			d.bufOff += int64(len(d.buf))
			d.buf = d.buf[:0]
			d.dirty = false
		}
	}
	return n, nil
}

// reloadLocked makes buf start at the block holding pos, with the bytes of
// the file before pos in that block, after writing out what buf holds.
func (d *directFile) reloadLocked() error {
	if err := d.flushLocked(); err != nil {
		return err
	}
	d.bufOff = AlignDown(d.pos, d.align)
	k := int(d.pos - d.bufOff)
	d.buf = d.buf[:k]
	if k > 0 {
		m, err := d.preadFull(d.buf[:d.align], d.bufOff)
		if err != nil && err != io.EOF {
			d.buf = d.buf[:0]
			return err
		}
		if m < k {
			clear(d.buf[m:k]) // a hole: the file was truncated below pos
		}
		d.buf = d.buf[:k]
	}
	return nil
}

func (d *directFile) markClosed() {
	d.closed.Store(true)
	if !d.writable {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = d.pathErr("write", os.ErrClosed)
	}
}

func (d *directFile) flush() error {
	if !d.writable {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushLocked()
}

// flushLocked writes buf, its last block padded with zeros, and cuts the
// file back to its true size; the partial last block stays in buf, so the
// next flush writes that block again with what was appended to it.
func (d *directFile) flushLocked() error {
	if d.err != nil {
		return d.err
	}
	if !d.dirty {
		return nil
	}
	k := len(d.buf)
	padded := int(AlignUp(int64(k), d.align))
	clear(d.buf[k:padded])
	if err := d.pwriteFull(d.buf[:padded], d.bufOff); err != nil {
		d.err = err
		return err
	}
	if end := d.bufOff + int64(padded); end > d.sz {
		if err := d.file.Truncate(d.sz); err != nil {
			d.err = err
			return err
		}
	}
	d.dirty = false
	if whole := int(AlignDown(int64(k), d.align)); whole > 0 {
		d.buf = d.buf[:copy(d.buf, d.buf[whole:k])]
		d.bufOff += int64(whole)
	}
	return nil
}

func (d *directFile) size() (int64, bool) {
	if !d.writable {
		return 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sz, true
}

func (d *directFile) truncate(size int64) error {
	if !d.writable {
		return d.pathErr("truncate", errReadOnly)
	}
	if size < 0 {
		return d.pathErr("truncate", errInvalid)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.flushLocked(); err != nil {
		return err
	}
	if err := d.file.Truncate(size); err != nil {
		return err
	}
	d.sz = size
	if size < d.bufOff+int64(len(d.buf)) {
		// buf holds bytes cut off; the next Write reloads from the file.
		d.bufOff = AlignDown(size, d.align)
		d.buf = d.buf[:0]
	}
	return nil
}

// willCreate reports whether opening name with flag creates it, so that a
// direct-IO open the file system then refuses can remove what it created.
func willCreate(name string, flag int) bool {
	if flag&os.O_CREATE == 0 {
		return false
	}
	_, err := os.Lstat(name)
	return errors.Is(err, os.ErrNotExist)
}

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// osFile is the Windows File: a handle from CreateFile, read and written only
// at explicit offsets (ReadFile/WriteFile with an OVERLAPPED offset), the
// counterpart of pread/pwrite. The handle's own file pointer is never relied
// on: a positional ReadFile on a synchronous handle moves it, so Write keeps
// its append position in pos instead.
type osFile struct {
	// file owns the handle: Close closes it, and platformLock hands it on.
	// os.go moves its file pointer after OpenReadWrite, which is harmless.
	file   *os.File
	handle windows.Handle
	name   string
	// pos is where the next Write goes; only Write reads or moves it (File
	// writers are not concurrent), Truncate leaves it, as on POSIX.
	pos int64
	// direct is set for files opened with DirectIO (FILE_FLAG_NO_BUFFERING).
	direct *directState
	// life guards the handle: every call that uses it holds a read lock,
	// and Close takes the write lock, so the handle is never closed under a
	// call, and a call after Close fails with os.ErrClosed instead of using
	// a handle value Windows may have given to another file since. (os.File
	// does the same with a reference count in its poll.FD.)
	life   sync.RWMutex
	closed bool
}

// enter takes the handle for one call; it fails with os.ErrClosed once the
// file is closed. leave ends the call.
func (f *osFile) enter(op string) error {
	f.life.RLock()
	if f.closed {
		f.life.RUnlock()
		return &os.PathError{Op: op, Path: f.name, Err: os.ErrClosed}
	}
	return nil
}

func (f *osFile) leave() { f.life.RUnlock() }

var _ File = (*osFile)(nil)

// maxIOChunk bounds one ReadFile or WriteFile: their lengths are 32-bit. It
// is a multiple of every sector size, so chunks of an aligned request stay
// aligned.
const maxIOChunk = 1 << 30

// inChunks hands p, to be read or written at off, to op in pieces of at
// most maxIOChunk bytes, each at its own offset and starting where op's
// count of the last piece left off, until p is done or op fails. It returns
// the bytes done.
func inChunks(p []byte, off int64, op func(chunk []byte, at int64) (int, error)) (int, error) {
	n := 0
	for n < len(p) {
		done, err := op(p[n:min(len(p), n+maxIOChunk)], off+int64(n))
		n += done
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// openOSFile opens name through CreateFile with shareAll (os.OpenFile would
// leave out FILE_SHARE_DELETE). flag is one of the combinations osFS uses;
// DirectIO adds FILE_FLAG_NO_BUFFERING, and FILE_FLAG_WRITE_THROUGH when the
// file is writable.
func openOSFile(name string, flag int, o OpenOption) (*osFile, error) {
	var access, disposition uint32
	switch {
	case flag&os.O_CREATE != 0 && flag&os.O_TRUNC != 0:
		access, disposition = windows.GENERIC_READ|windows.GENERIC_WRITE, windows.CREATE_ALWAYS
	case flag&os.O_CREATE != 0:
		access, disposition = windows.GENERIC_READ|windows.GENERIC_WRITE, windows.OPEN_ALWAYS
	case flag&os.O_RDWR != 0:
		access, disposition = windows.GENERIC_READ|windows.GENERIC_WRITE, windows.OPEN_EXISTING
	default:
		access, disposition = windows.GENERIC_READ, windows.OPEN_EXISTING
	}
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	if o&DirectIO != 0 {
		attrs |= windows.FILE_FLAG_NO_BUFFERING
		if access&windows.GENERIC_WRITE != 0 {
			attrs |= windows.FILE_FLAG_WRITE_THROUGH
		}
	}
	if o&RandomAccess != 0 {
		attrs |= windows.FILE_FLAG_RANDOM_ACCESS
	} else if o&SequentialAccess != 0 {
		attrs |= windows.FILE_FLAG_SEQUENTIAL_SCAN
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	h, err := windows.CreateFile(p, access, shareAll, nil, disposition, attrs, 0)
	if err != nil {
		// The Errno maps ERROR_FILE_NOT_FOUND and ERROR_PATH_NOT_FOUND to
		// os.ErrNotExist for errors.Is.
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := &osFile{file: os.NewFile(uintptr(h), name), handle: h, name: name}
	if flag&os.O_RDWR != 0 && flag&os.O_CREATE == 0 {
		// OpenReadWrite: Write appends after what is there.
		size, err := f.Size()
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		f.pos = size
	}
	if o&DirectIO != 0 {
		d, err := newDirectState(f)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		f.direct = d
	}
	return f, nil
}

func (f *osFile) Close() error {
	f.life.Lock()
	if f.closed {
		f.life.Unlock()
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	f.life.Unlock()
	err := f.file.Close()
	if err != nil {
		return fmt.Errorf("shale: close %s: %w", f.name, err)
	}
	return nil
}

// ReadAt is ReadFile at an OVERLAPPED offset: it never uses the position
// Write appends at and is safe for concurrent use. On a DirectIO file,
// requests that are not sector-aligned go through an aligned bounce buffer.
func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: errors.New("negative offset")}
	}
	if err := f.enter("read"); err != nil {
		return 0, err
	}
	defer f.leave()
	if f.direct != nil {
		return f.direct.readAt(f, p, off)
	}
	return f.preadFull(p, off)
}

// preadFull reads len(p) bytes at off, looping over short reads; a read that
// reaches the end of the file returns the bytes there are and io.EOF.
func (f *osFile) preadFull(p []byte, off int64) (int, error) {
	n, err := inChunks(p, off, func(chunk []byte, at int64) (int, error) {
		done, err := pread(f.handle, chunk, at)
		if err == windows.ERROR_HANDLE_EOF || (err == nil && done == 0) {
			return done, io.EOF
		}
		if err != nil {
			// As os.File.ReadAt reports it on every platform.
			return done, &os.PathError{Op: "read", Path: f.name, Err: err}
		}
		return done, nil
	})
	runtime.KeepAlive(f.file) // the handle must stay open until here
	return n, err
}

// pread is one ReadFile of p at off.
func pread(h windows.Handle, p []byte, off int64) (int, error) {
	return atOffset(windows.ReadFile, h, p, off)
}

// pwrite is one WriteFile of p at off.
func pwrite(h windows.Handle, p []byte, off int64) (int, error) {
	return atOffset(windows.WriteFile, h, p, off)
}

// atOffset is one call of p at off to transfer (ReadFile or WriteFile, which
// take the same arguments), the offset given in an OVERLAPPED.
func atOffset(transfer func(windows.Handle, []byte, *uint32, *windows.Overlapped) error, h windows.Handle, p []byte, off int64) (int, error) {
	ov := windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	var done uint32
	err := transfer(h, p, &done, &ov)
	return int(done), err
}

// pwriteFull writes all of p at off, looping over partial writes.
func (f *osFile) pwriteFull(p []byte, off int64) (int, error) {
	n, err := inChunks(p, off, func(chunk []byte, at int64) (int, error) {
		done, err := pwrite(f.handle, chunk, at)
		if err != nil {
			return done, &os.PathError{Op: "write", Path: f.name, Err: err}
		}
		if done == 0 {
			return 0, fmt.Errorf("shale: write %s at %d: %w", f.name, at, io.ErrShortWrite)
		}
		return done, nil
	})
	runtime.KeepAlive(f.file)
	return n, err
}

// Write is WriteFile at the handle's append position, which starts at 0 after
// Create and at the end of the file after OpenReadWrite.
func (f *osFile) Write(p []byte) (int, error) {
	if err := f.enter("write"); err != nil {
		return 0, err
	}
	defer f.leave()
	if f.direct != nil {
		return f.direct.write(f, p)
	}
	n, err := f.pwriteFull(p, f.pos)
	f.pos += int64(n)
	return n, err
}

// Sync is FlushFileBuffers, which writes data and metadata.
func (f *osFile) Sync() error {
	if err := f.enter("sync"); err != nil {
		return err
	}
	defer f.leave()
	if err := windows.FlushFileBuffers(f.handle); err != nil {
		return fmt.Errorf("shale: sync %s: %w", f.name, err)
	}
	return nil
}

// SyncData is Sync: Windows has no call that flushes data without metadata.
func (f *osFile) SyncData() error { return f.Sync() }

// StartWriteback does nothing: Windows has no sync_file_range.
func (f *osFile) StartWriteback(off, n int64) error { return nil }

func (f *osFile) Size() (int64, error) {
	if err := f.enter("stat"); err != nil {
		return 0, err
	}
	defer f.leave()
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(f.handle, &info); err != nil {
		return 0, fmt.Errorf("shale: size of %s: %w", f.name, err)
	}
	return int64(info.FileSizeHigh)<<32 | int64(info.FileSizeLow), nil
}

// Truncate sets the end of file with SetFileInformationByHandle
// (FileEndOfFileInfo); like ftruncate it does not move the position Write
// appends at.
func (f *osFile) Truncate(size int64) error {
	if size < 0 {
		return fmt.Errorf("shale: truncate %s: negative size %d", f.name, size)
	}
	if err := f.enter("truncate"); err != nil {
		return err
	}
	defer f.leave()
	if err := setEndOfFile(f.handle, size); err != nil {
		return fmt.Errorf("shale: truncate %s to %d: %w", f.name, size, err)
	}
	if f.direct != nil {
		f.direct.truncated(size)
	}
	return nil
}

func setEndOfFile(h windows.Handle, size int64) error {
	eof := size // FILE_END_OF_FILE_INFO is one LARGE_INTEGER
	return windows.SetFileInformationByHandle(h, windows.FileEndOfFileInfo,
		(*byte)(unsafe.Pointer(&eof)), uint32(unsafe.Sizeof(eof)))
}

// Preallocate reserves disk space for the file up to off+n with
// SetFileInformationByHandle(FileAllocationInfo), which leaves the size
// readers see unchanged. It never shrinks an allocation, and a file system or
// emulator that cannot do it (ERROR_INVALID_PARAMETER, ERROR_NOT_SUPPORTED,
// ERROR_CALL_NOT_IMPLEMENTED, ERROR_INVALID_FUNCTION) is not an error: the
// reservation is only a hint.
func (f *osFile) Preallocate(off, n int64) error {
	if n <= 0 {
		return nil
	}
	if off < 0 {
		return fmt.Errorf("shale: preallocate %s: negative offset %d", f.name, off)
	}
	if err := f.enter("preallocate"); err != nil {
		return err
	}
	defer f.leave()
	var std fileStandardInfo
	err := windows.GetFileInformationByHandleEx(f.handle, windows.FileStandardInfo,
		(*byte)(unsafe.Pointer(&std)), uint32(unsafe.Sizeof(std)))
	if err == nil && std.AllocationSize >= off+n {
		return nil
	}
	alloc := off + n // FILE_ALLOCATION_INFO is one LARGE_INTEGER
	err = windows.SetFileInformationByHandle(f.handle, windows.FileAllocationInfo,
		(*byte)(unsafe.Pointer(&alloc)), uint32(unsafe.Sizeof(alloc)))
	if err != nil && !isUnsupported(err) {
		return fmt.Errorf("shale: preallocate %s to %d bytes: %w", f.name, alloc, err)
	}
	return nil
}

// fileStandardInfo is FILE_STANDARD_INFO.
type fileStandardInfo struct {
	AllocationSize, EndOfFile int64
	NumberOfLinks             uint32
	DeletePending, Directory  bool
}

// isUnsupported reports whether err says the call, an information class or
// one of its flags is not available on this system or file system.
func isUnsupported(err error) bool {
	return errors.Is(err, windows.ERROR_INVALID_PARAMETER) ||
		errors.Is(err, windows.ERROR_NOT_SUPPORTED) ||
		errors.Is(err, windows.ERROR_CALL_NOT_IMPLEMENTED) ||
		errors.Is(err, windows.ERROR_INVALID_FUNCTION)
}

// Alignment implements Aligner: the sector size direct IO needs, or 1 for
// a buffered file.
func (f *osFile) Alignment() int {
	if f.direct == nil {
		return 1
	}
	return f.direct.align
}

// WriteZeros implements ZeroWriter with positional writes, which leave the
// append position alone. A DirectIO file cannot.
func (f *osFile) WriteZeros(off, n int64) error {
	if err := f.enter("write"); err != nil {
		return err
	}
	defer f.leave()
	if f.direct != nil {
		return ErrZerosUnsupported
	}
	return writeZerosWith(f.pwriteFull, off, n)
}

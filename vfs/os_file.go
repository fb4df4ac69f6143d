//go:build !windows

package vfs

import "os"

// osFile is a File backed by an *os.File. It stays a concrete type of its own
// so that platform layers (asynchronous reads, direct IO) can be added to it
// without touching the FS code.
type osFile struct {
	file *os.File
	// dio is set for a file opened with DirectIO: it owns the aligned
	// reads and the buffered, aligned appends (direct_unix.go). nil for a
	// buffered file.
	dio directIO
}

// directIO is what a DirectIO file adds to an osFile. It is an interface so
// that this file builds on every platform, whether or not the platform has
// a direct-IO layer.
type directIO interface {
	readAt(p []byte, off int64) (int, error)
	write(p []byte) (int, error)
	// flush writes what Write buffered, the last partial block padded with
	// zeros and the file then cut back to its true size.
	flush() error
	// markClosed makes every later write fail with os.ErrClosed (reads
	// fail once the descriptor is closed); Close calls it after flush.
	markClosed()
	// size reports the true size of a file being written; ok is false for
	// a read-only file, whose size the OS knows.
	size() (n int64, ok bool)
	truncate(size int64) error
	alignment() int
}

var _ File = (*osFile)(nil)

// Close writes what a DirectIO file still buffers, then closes the file;
// the file is closed even when that write fails.
func (f *osFile) Close() error {
	if f.dio != nil {
		err := f.dio.flush()
		f.dio.markClosed()
		if cerr := f.file.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return f.file.Close()
}

// ReadAt is a positional read (pread on POSIX); it does not move the position
// Write appends at, and is safe for concurrent use.
func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	if f.dio != nil {
		return f.dio.readAt(p, off)
	}
	return f.file.ReadAt(p, off)
}

// Write appends at the handle's position. A DirectIO file buffers the bytes
// and writes whole aligned blocks; Sync, SyncData and Close write the rest.
func (f *osFile) Write(p []byte) (int, error) {
	if f.dio != nil {
		return f.dio.write(p)
	}
	return f.file.Write(p)
}

// Sync is fsync on POSIX (F_FULLFSYNC on macOS, through os.File.Sync) and
// FlushFileBuffers on Windows.
func (f *osFile) Sync() error {
	if f.dio != nil {
		if err := f.dio.flush(); err != nil {
			return err
		}
	}
	return f.file.Sync()
}

// SyncData is fdatasync on Linux and Sync elsewhere.
func (f *osFile) SyncData() error {
	if f.dio != nil {
		if err := f.dio.flush(); err != nil {
			return err
		}
	}
	return syncData(f.file)
}

// StartWriteback is sync_file_range(SYNC_FILE_RANGE_WRITE) on Linux and a
// no-op elsewhere. On a DirectIO file it is a no-op in effect: written blocks
// bypass the page cache and are already on their way to the device.
func (f *osFile) StartWriteback(off, n int64) error { return startWriteback(f.file, off, n) }

func (f *osFile) Size() (int64, error) {
	if f.dio != nil {
		if n, ok := f.dio.size(); ok {
			return n, nil
		}
	}
	fi, err := f.file.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f *osFile) Preallocate(off, n int64) error {
	if n <= 0 {
		return nil
	}
	return preallocate(f.file, off, n)
}

// Truncate changes the size; like os.File it does not move the position
// Write appends at.
func (f *osFile) Truncate(size int64) error {
	if f.dio != nil {
		return f.dio.truncate(size)
	}
	return f.file.Truncate(size)
}

// Alignment implements Aligner: the direct-IO block size, or 1.
func (f *osFile) Alignment() int {
	if f.dio != nil {
		return f.dio.alignment()
	}
	return 1
}

// fd returns the file's descriptor (handle on Windows) for native
// asynchronous reads, or ^uintptr(0) once the file is closed.
func (f *osFile) fd() uintptr { return f.file.Fd() }

// WriteZeros implements ZeroWriter with positional writes (pwrite), which
// leave the append position alone. A DirectIO file cannot.
func (f *osFile) WriteZeros(off, n int64) error {
	if f.dio != nil {
		return ErrZerosUnsupported
	}
	return writeZerosWith(f.file.WriteAt, off, n)
}

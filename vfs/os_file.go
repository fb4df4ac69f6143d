//go:build !windows

package vfs

import "os"

// osFile is a File backed by an *os.File. It stays a concrete type of its own
// so that platform layers (asynchronous reads, direct IO) can be added to it
// without touching the FS code.
type osFile struct {
	file *os.File
}

var _ File = (*osFile)(nil)

func (f *osFile) Close() error { return f.file.Close() }

// ReadAt is a positional read (pread on POSIX); it does not move the position
// Write appends at, and is safe for concurrent use.
func (f *osFile) ReadAt(p []byte, off int64) (int, error) { return f.file.ReadAt(p, off) }

func (f *osFile) Write(p []byte) (int, error) { return f.file.Write(p) }

// Sync is fsync on POSIX (F_FULLFSYNC on macOS, through os.File.Sync) and
// FlushFileBuffers on Windows.
func (f *osFile) Sync() error { return f.file.Sync() }

// SyncData is fdatasync on Linux and Sync elsewhere.
func (f *osFile) SyncData() error { return syncData(f.file) }

// StartWriteback is sync_file_range(SYNC_FILE_RANGE_WRITE) on Linux and a
// no-op elsewhere.
func (f *osFile) StartWriteback(off, n int64) error { return startWriteback(f.file, off, n) }

func (f *osFile) Size() (int64, error) {
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
func (f *osFile) Truncate(size int64) error { return f.file.Truncate(size) }

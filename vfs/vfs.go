package vfs

import (
	"errors"
	"io"
	"os"
)

// File is an open file. Files opened for reading are read with ReadAt (safe
// for concurrent use); files created for writing are written with Write,
// which appends, and are not used concurrently.
type File interface {
	io.Closer
	io.ReaderAt
	io.Writer
	// Sync makes everything written so far durable.
	Sync() error
	// SyncData makes the data written so far durable, like Sync, but may skip
	// metadata a later read does not need (fdatasync on Linux; Sync
	// elsewhere).
	SyncData() error
	// StartWriteback asks the OS to begin writing [off, off+n) to the device
	// without waiting (sync_file_range on Linux), so that a later Sync has
	// less to do and IO is spread evenly (Options.BytesPerSync). It makes
	// nothing durable; a no-op where the platform has no such call.
	StartWriteback(off, n int64) error
	// Size returns the current size of the file.
	Size() (int64, error)
	// Preallocate reserves space for [off, off+n) without changing the size
	// visible to readers where the platform allows; a no-op elsewhere.
	Preallocate(off, n int64) error
	// Truncate changes the size of the file.
	Truncate(size int64) error
}

// FS is the file system shale does all its IO through. Paths are joined with
// PathJoin; the OS implementation uses the platform's separator.
type FS interface {
	// Create creates or truncates name for writing (and reading).
	Create(name string, opts ...OpenOption) (File, error)
	// Open opens name read-only.
	Open(name string, opts ...OpenOption) (File, error)
	// OpenReadWrite opens an existing file for reading and appending.
	OpenReadWrite(name string) (File, error)
	// OpenDir opens a directory so that Sync makes its entries durable.
	OpenDir(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a directory tree; used by tests and the bench tool.
	RemoveAll(name string) error
	// Rename atomically renames oldname to newname, replacing newname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the base names of the entries of dir, in no set order.
	List(dir string) ([]string, error)
	// Stat describes a file.
	Stat(name string) (os.FileInfo, error)
	// Lock takes an exclusive advisory lock on name, creating it if needed;
	// it fails at once if another process or another Lock in this process
	// holds it. Closing the returned Closer releases it.
	Lock(name string) (io.Closer, error)
	// PathJoin joins path elements.
	PathJoin(elem ...string) string
	// PathBase returns the last element of a path.
	PathBase(path string) string
	// PathDir returns all but the last element of a path.
	PathDir(path string) string
}

// OpenOption modifies how Open and Create open a file. File systems that have
// no use for an option ignore it, except DirectIO, which an OS file system
// that cannot bypass its cache refuses with an error wrapping
// ErrDirectIOUnsupported.
type OpenOption uint8

const (
	// DirectIO bypasses the operating system's page cache: O_DIRECT on
	// Linux, F_NOCACHE on macOS, FILE_FLAG_NO_BUFFERING on Windows. The
	// file's ReadAt and Write accept any offset, length and buffer (they go
	// through an aligned bounce buffer when needed); callers that want to
	// avoid the copy use Alignment and aligned buffers (AlignedBuffer).
	DirectIO OpenOption = 1 << iota
	// RandomAccess hints that reads will be random, so the OS should not read
	// ahead (posix_fadvise(POSIX_FADV_RANDOM)); ignored where unsupported.
	RandomAccess
	// SequentialAccess hints that the file will be read from start to end
	// (posix_fadvise(POSIX_FADV_SEQUENTIAL)); ignored where unsupported.
	SequentialAccess
)

// openFlags folds a list of options into one set.
func openFlags(opts []OpenOption) OpenOption {
	var o OpenOption
	for _, x := range opts {
		o |= x
	}
	return o
}

// ErrDirectIOUnsupported is wrapped by the error of Open or Create with
// DirectIO on a file system that refuses to bypass its cache (tmpfs before
// Linux 6.6, some FUSE and network file systems, operating systems other
// than Linux, macOS and Windows). MemFS accepts DirectIO.
var ErrDirectIOUnsupported = errors.New("shale: direct IO is not supported by this file system")

// Alignment returns the alignment, in bytes, that offsets, lengths and
// buffer addresses of f's reads need to avoid a bounce buffer: the logical
// block size of a file opened with DirectIO, and 1 for every other file.
func Alignment(f File) int {
	if a, ok := f.(Aligner); ok {
		return a.Alignment()
	}
	return 1
}

// Aligner is implemented by the files whose reads Alignment reports on: the
// OS and MemFS files, and the files of a wrapping FS, which return
// Alignment of the file they wrap. A File without it has an alignment of 1.
type Aligner interface {
	// Alignment is what Alignment(f) returns for the file.
	Alignment() int
}

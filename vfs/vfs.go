package vfs

import (
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
	Create(name string) (File, error)
	// Open opens name read-only.
	Open(name string) (File, error)
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

package vfs

import (
	"io"
	"os"
	"path/filepath"
)

// Default is the operating system's file system. On Windows, files are opened
// with sharing flags that let another handle rename or delete them, as POSIX
// allows.
var Default FS = osFS{}

// osFS implements FS on the os package; the platform-specific parts (how files
// are opened, how directories are synced, how locks are taken) live in
// os_unix.go, os_windows.go and the lock_*.go files.
type osFS struct{}

var _ FS = osFS{}

func (osFS) Create(name string, opts ...OpenOption) (File, error) {
	return openOSFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, openFlags(opts))
}

func (osFS) Open(name string, opts ...OpenOption) (File, error) {
	return openOSFile(name, os.O_RDONLY, openFlags(opts))
}

func (osFS) OpenReadWrite(name string) (File, error) {
	f, err := openOSFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	// Write appends: start the handle's position at the end of the file.
	if _, err := f.file.Seek(0, io.SeekEnd); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func (osFS) OpenDir(name string) (File, error) { return openOSDir(name) }

// Remove and RemoveAll delete with POSIX semantics on Windows too: the name
// is gone at once even if another handle has the file open (names_*.go).
func (osFS) Remove(name string) error { return removeFile(name) }

func (osFS) RemoveAll(name string) error { return removeAll(name) }

// Rename replaces newname if it exists: rename(2) on POSIX, MoveFileEx with
// MOVEFILE_REPLACE_EXISTING|MOVEFILE_WRITE_THROUGH on Windows.
func (osFS) Rename(oldname, newname string) error { return renameFile(oldname, newname) }

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return listHidden(names), err
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) Lock(name string) (io.Closer, error) { return lockOSFile(name) }

func (osFS) PathJoin(elem ...string) string { return filepath.Join(elem...) }

func (osFS) PathBase(path string) string { return filepath.Base(path) }

func (osFS) PathDir(path string) string { return filepath.Dir(path) }

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// shareAll lets other handles read, write, rename and delete a file we hold
// open, which POSIX allows and the rest of shale relies on (an SST may be
// deleted while an iterator still reads it). RocksDB's Windows port opens its
// files the same way.
const shareAll = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE

// openOSDir checks that name is a directory and returns a handle whose Sync
// does nothing: Windows offers no directory fsync, and NTFS journals the
// metadata of renames and creations itself.
func openOSDir(name string) (File, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &os.PathError{Op: "opendir", Path: name, Err: errNotDir}
	}
	return &windowsDir{name: name}, nil
}

// windowsDir is the File OpenDir returns on Windows: only Sync and Close work.
type windowsDir struct {
	name string
}

func (d *windowsDir) errf(op string) error {
	return &os.PathError{Op: op, Path: d.name, Err: errors.New("not supported on a directory handle")}
}

func (d *windowsDir) Close() error                            { return nil }
func (d *windowsDir) Sync() error                             { return nil }
func (d *windowsDir) ReadAt(p []byte, off int64) (int, error) { return 0, d.errf("read") }
func (d *windowsDir) Write(p []byte) (int, error)             { return 0, d.errf("write") }
func (d *windowsDir) Size() (int64, error)                    { return 0, d.errf("size") }
func (d *windowsDir) SyncData() error                         { return nil }
func (d *windowsDir) StartWriteback(off, n int64) error       { return nil }
func (d *windowsDir) Preallocate(off, n int64) error          { return d.errf("preallocate") }
func (d *windowsDir) Truncate(size int64) error               { return d.errf("truncate") }

var _ File = (*windowsDir)(nil)

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncData is fdatasync: the data and the metadata needed to read it back
// (the size), not the timestamps.
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// startWriteback starts writeback of [off, off+n) and returns without waiting
// for it; file systems that cannot are not an error (it is only a hint).
func startWriteback(f *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	err := unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	switch {
	case err == nil, errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ESPIPE):
		return nil
	default:
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
	}
}

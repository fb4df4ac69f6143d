package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// preallocate reserves blocks with fallocate(FALLOC_FL_KEEP_SIZE), so the size
// readers see is unchanged. File systems that cannot (EOPNOTSUPP, ENOSYS) are
// not an error: preallocation is only a hint.
func preallocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		default:
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
	}
}

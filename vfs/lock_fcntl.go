//go:build aix || illumos || solaris

package vfs

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes a whole-file fcntl write lock on f with F_SETLK: these
// systems have no flock. fcntl locks belong to the process, which is why
// the registry in lock.go exists. A lock held elsewhere fails with
// lockedError.
func tryLock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES):
		return lockedError(f.Name())
	default:
		return &os.PathError{Op: "fcntl", Path: f.Name(), Err: err}
	}
}

func platformUnlock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart}
	return unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
}

//go:build aix || illumos || solaris

package vfs

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// platformLock opens (creating) name and takes a whole-file fcntl write lock
// with F_SETLK: these systems have no flock. fcntl locks belong to the
// process, which is why the registry in lock.go exists.
func platformLock(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, lockedError(name)
		}
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return f, nil
}

func platformUnlock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart}
	return unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
}

func normalizeLockKey(key string) string { return key }

//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// platformLock opens (creating) name and takes flock(LOCK_EX|LOCK_NB) on it.
func platformLock(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, lockedError(name)
		}
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	return f, nil
}

func platformUnlock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

func normalizeLockKey(key string) string { return key }

//go:build aix || darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd || solaris

package vfs

import "os"

// platformLock opens (creating) name and takes tryLock's exclusive lock on
// it: flock where the system has it (lock_flock.go), else fcntl
// (lock_fcntl.go).
func platformLock(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := tryLock(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func normalizeLockKey(key string) string { return key }

//go:build !windows && !(darwin || dragonfly || freebsd || linux || netbsd || openbsd) && !(aix || illumos || solaris)

package vfs

import "os"

// platformLock only creates name: on these platforms (wasip1, plan9, hurd, ...)
// there is no OS lock, and only the in-process registry of lock.go excludes
// a second user.
func platformLock(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}

func platformUnlock(f *os.File) error { return nil }

func normalizeLockKey(key string) string { return key }

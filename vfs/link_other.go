//go:build !windows

package vfs

import (
	"errors"
	"syscall"
)

// linkUnsupported reports whether a failed link(2) means that the two names
// cannot share a file here, so that a copy is the way: EXDEV (different
// devices), EPERM (the file system has no hard links, as FAT), ENOTSUP and
// EOPNOTSUPP (some FUSE and network file systems), EMLINK (too many links).
func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) ||
		errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.EMLINK)
}

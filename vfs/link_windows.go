package vfs

import (
	"errors"

	"golang.org/x/sys/windows"
)

// linkUnsupported reports whether a failed CreateHardLink means that the two
// names cannot share a file here, so that a copy is the way:
// ERROR_NOT_SAME_DEVICE (different volumes), ERROR_INVALID_FUNCTION and
// ERROR_NOT_SUPPORTED (FAT, exFAT, some network shares), ERROR_ACCESS_DENIED
// (shares that refuse links), ERROR_TOO_MANY_LINKS (1023 names on NTFS).
func linkUnsupported(err error) bool {
	return errors.Is(err, windows.ERROR_NOT_SAME_DEVICE) || errors.Is(err, windows.ERROR_INVALID_FUNCTION) ||
		errors.Is(err, windows.ERROR_NOT_SUPPORTED) || errors.Is(err, windows.ERROR_ACCESS_DENIED) ||
		errors.Is(err, windows.ERROR_TOO_MANY_LINKS)
}

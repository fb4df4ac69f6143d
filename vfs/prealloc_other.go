//go:build !linux

package vfs

import "os"

// preallocate is a no-op outside Linux for now (F_PREALLOCATE on macOS and
// SetFileInformationByHandle on Windows could be added).
func preallocate(f *os.File, off, n int64) error { return nil }

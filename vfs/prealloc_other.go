//go:build !linux && !darwin

package vfs

import "os"

// preallocate is a no-op where shale has no preallocation call (Windows
// may add SetFileInformationByHandle in its own file).
func preallocate(f *os.File, off, n int64) error { return nil }

//go:build !linux && !darwin && !windows

package vfs

import (
	"fmt"
	"os"
)

// openDirect refuses: shale bypasses the page cache only on Linux, macOS
// and Windows.
func openDirect(name string, flag int, o OpenOption) (*osFile, error) {
	return nil, &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w on this operating system", ErrDirectIOUnsupported)}
}

// adviseAccess does nothing where shale does not pass hints to the OS.
func adviseAccess(f *os.File, o OpenOption) {}

//go:build !windows

package vfs

import "os"

// openOSFile opens name with os.OpenFile, or through openDirect
// (direct_linux.go, direct_darwin.go) for DirectIO, and passes access hints
// to the OS.
func openOSFile(name string, flag int, o OpenOption) (*osFile, error) {
	if o&DirectIO != 0 {
		return openDirect(name, flag, o)
	}
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	adviseAccess(f, o)
	return &osFile{file: f}, nil
}

// openOSDir opens a directory read-only; Sync on it fsyncs the directory, which
// makes entries created, renamed or removed in it durable.
func openOSDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &osFile{file: f}, nil
}

//go:build !windows

package vfs

import "os"

func openOSFile(name string, flag int) (*osFile, error) {
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
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

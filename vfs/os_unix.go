//go:build !windows

package vfs

import "os"

func openOSFile(name string, flag int, o OpenOption) (*osFile, error) {
	if o&DirectIO != 0 {
		// TODO(directio): O_DIRECT / F_NOCACHE with aligned bounce buffers.
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrDirectIOUnsupported}
	}
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

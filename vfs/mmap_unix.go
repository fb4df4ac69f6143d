//go:build !windows

package vfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MapReadOnly maps the file with mmap(PROT_READ, MAP_SHARED). A DirectIO
// file is not mapped: its reads bypass the page cache, which a mapping
// reads through.
func (f *osFile) MapReadOnly(size int64) ([]byte, func() error, error) {
	if f.dio != nil {
		return nil, nil, ErrMapUnsupported
	}
	if st, err := f.file.Stat(); err != nil {
		return nil, nil, err
	} else if st.Size() < size {
		return nil, nil, fmt.Errorf("shale: mapping %d bytes of %s, which has %d", size, f.file.Name(), st.Size())
	}
	data, err := unix.Mmap(int(f.file.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("shale: mmap %s: %w", f.file.Name(), err)
	}
	return data, func() error { return unix.Munmap(data) }, nil
}

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

// MapWritable extends the file with ftruncate when it is shorter than size
// and maps [off, size) with mmap(PROT_READ|PROT_WRITE, MAP_SHARED). A
// DirectIO file is not mapped.
func (f *osFile) MapWritable(off, size int64) ([]byte, func() error, func() error, error) {
	if f.dio != nil {
		return nil, nil, nil, ErrMapUnsupported
	}
	st, err := f.file.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	if st.Size() < size {
		if err := f.file.Truncate(size); err != nil {
			return nil, nil, nil, fmt.Errorf("shale: extending %s to %d bytes for a mapping: %w", f.file.Name(), size, err)
		}
	}
	data, err := unix.Mmap(int(f.file.Fd()), off, int(size-off), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("shale: mmap %s for writing: %w", f.file.Name(), err)
	}
	flush := func() error { return unix.Msync(data, unix.MS_SYNC) }
	return data, flush, func() error { return unix.Munmap(data) }, nil
}

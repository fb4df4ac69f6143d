package vfs

import (
	"errors"
	"fmt"
)

// ErrMapUnsupported is what MapReadOnly returns for a file that cannot be
// mapped: one opened with DirectIO, or of a file system without mappings
// (wrappers such as errorfs and latencyfs, whose faults and latencies a
// mapping would bypass). Callers then read with ReadAt.
var ErrMapUnsupported = errors.New("shale: file cannot be memory-mapped")

// Mappable is implemented by files whose contents can be mapped into memory
// read-only: the OS files (mmap on POSIX, a file mapping view on Windows)
// and MemFS files (a view of their bytes).
type Mappable interface {
	// MapReadOnly maps the first size bytes of the file, which must be
	// that long. The bytes stay valid until unmap is called, Close of the
	// file notwithstanding; they must never be written, and a read of them
	// after unmap faults. unmap is called once.
	MapReadOnly(size int64) (data []byte, unmap func() error, err error)
}

// MapReadOnly maps the first size bytes of f read-only, or returns
// ErrMapUnsupported (wrapped) when f cannot be mapped.
func MapReadOnly(f File, size int64) (data []byte, unmap func() error, err error) {
	m, ok := f.(Mappable)
	if !ok {
		return nil, nil, fmt.Errorf("%w (%T)", ErrMapUnsupported, f)
	}
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("shale: cannot map %d bytes", size)
	}
	return m.MapReadOnly(size)
}

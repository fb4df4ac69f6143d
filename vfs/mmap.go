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

// MapWriteAlignment is the alignment MapWritable's offsets need: Windows'
// allocation granularity, a multiple of every page size.
const MapWriteAlignment = 64 << 10

// WritableMappable is implemented by the OS files, whose contents can be
// written through a shared, writable memory mapping (mmap PROT_WRITE,
// MAP_SHARED on POSIX; a read-write file mapping view on Windows). What is
// copied into the mapping is the file's content at once: other readers see
// it, and it is in the page cache, so it survives a crash of the process;
// SyncData makes it durable like written bytes (the mapping's Flush first).
type WritableMappable interface {
	// MapWritable extends the file to size bytes when it is shorter (the
	// new bytes read as zeros) and maps [off, size) read-write; off is a
	// multiple of MapWriteAlignment. flush writes the mapping's dirty pages
	// back to the file (msync; FlushViewOfFile), for the file's sync to
	// make durable; unmap is called once, after which data must not be
	// touched. Truncating the file while it is mapped is not allowed.
	MapWritable(off, size int64) (data []byte, flush, unmap func() error, err error)
}

// MapWritable maps [off, size) of f read-write (WritableMappable), or
// returns ErrMapUnsupported (wrapped) when f cannot be.
func MapWritable(f File, off, size int64) (data []byte, flush, unmap func() error, err error) {
	m, ok := f.(WritableMappable)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w (%T)", ErrMapUnsupported, f)
	}
	if off < 0 || off%MapWriteAlignment != 0 || size <= off || int64(int(size-off)) != size-off {
		return nil, nil, nil, fmt.Errorf("shale: cannot map [%d, %d) for writing", off, size)
	}
	return m.MapWritable(off, size)
}

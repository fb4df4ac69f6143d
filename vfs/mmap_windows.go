package vfs

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// MapReadOnly maps the file with a read-only file mapping and a view of its
// first size bytes; the mapping handle is closed at once (the view keeps
// the section alive). A DirectIO file is not mapped: its reads bypass the
// cache manager, which a view reads through.
func (f *osFile) MapReadOnly(size int64) ([]byte, func() error, error) {
	if f.direct != nil {
		return nil, nil, ErrMapUnsupported
	}
	if err := f.enter("mmap"); err != nil {
		return nil, nil, err
	}
	defer f.leave()
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(f.handle, &fi); err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: f.name, Err: err}
	}
	if have := int64(fi.FileSizeHigh)<<32 | int64(fi.FileSizeLow); have < size {
		return nil, nil, fmt.Errorf("shale: mapping %d bytes of %s, which has %d", size, f.name, have)
	}
	m, err := windows.CreateFileMapping(f.handle, nil, windows.PAGE_READONLY, uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, nil, &os.PathError{Op: "CreateFileMapping", Path: f.name, Err: err}
	}
	addr, err := windows.MapViewOfFile(m, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	windows.CloseHandle(m)
	if err != nil {
		return nil, nil, &os.PathError{Op: "MapViewOfFile", Path: f.name, Err: err}
	}
	// The view is memory outside Go's heap at addr: a slice header over it
	// (converting addr to an unsafe.Pointer directly is what vet flags).
	var data []byte
	h := (*struct {
		data     uintptr
		len, cap int
	})(unsafe.Pointer(&data))
	h.data, h.len, h.cap = addr, int(size), int(size)
	return data, func() error { return windows.UnmapViewOfFile(addr) }, nil
}

// MapWritable maps [off, size) with a read-write file mapping (which
// extends the file to size when it is shorter) and a view of that range;
// the mapping handle is closed at once. A DirectIO file is not mapped.
func (f *osFile) MapWritable(off, size int64) ([]byte, func() error, func() error, error) {
	if f.direct != nil {
		return nil, nil, nil, ErrMapUnsupported
	}
	if err := f.enter("mmap"); err != nil {
		return nil, nil, nil, err
	}
	defer f.leave()
	m, err := windows.CreateFileMapping(f.handle, nil, windows.PAGE_READWRITE, uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, nil, nil, &os.PathError{Op: "CreateFileMapping", Path: f.name, Err: err}
	}
	n := uintptr(size - off)
	addr, err := windows.MapViewOfFile(m, windows.FILE_MAP_WRITE, uint32(uint64(off)>>32), uint32(off), n)
	windows.CloseHandle(m)
	if err != nil {
		return nil, nil, nil, &os.PathError{Op: "MapViewOfFile", Path: f.name, Err: err}
	}
	var data []byte
	h := (*struct {
		data     uintptr
		len, cap int
	})(unsafe.Pointer(&data))
	h.data, h.len, h.cap = addr, int(n), int(n)
	flush := func() error { return windows.FlushViewOfFile(addr, n) }
	return data, flush, func() error { return windows.UnmapViewOfFile(addr) }, nil
}

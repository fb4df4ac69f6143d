package vfs

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Direct IO on Windows is FILE_FLAG_NO_BUFFERING: every ReadFile and
// WriteFile must have an offset, a length and a buffer address that are
// multiples of the volume's logical sector size. Windows fails requests that
// are not; Wine does not check, so this file checks alignment itself, in
// rawRead and rawWrite, and counts any violation (a bug) instead of relying
// on the OS to catch it.

// Defaults and bounds of the sector size used for direct IO.
const (
	defaultSectorSize = 4096
	minSectorSize     = 512
	maxSectorSize     = 64 << 10
	// directStageSize is the size of the aligned buffers that unaligned reads
	// bounce through and unaligned writes are staged in: a multiple of every
	// sector size, and as large as the largest readahead window.
	directStageSize = 256 << 10
)

// directState is the direct-IO side of an osFile.
type directState struct {
	name  string
	align int

	// Counters of the read paths: reads passed straight to ReadFile,
	// reads that went through a bounce buffer, and raw requests refused for
	// being unaligned (always 0 unless this file has a bug).
	alignedReads, bounceReads, unaligned atomic.Uint64
	alignedWrites, stagedWrites          atomic.Uint64

	bounce sync.Pool // of *[]byte, directStageSize bytes, aligned

	// The write side, used only by Write and Truncate, which are not
	// concurrent. size is the file's true size as this handle knows it.
	size  int64
	stage []byte // aligned staging buffer, allocated at the first Write
	// tail holds the bytes of the last, partial sector written (the sector at
	// tailOff, tailLen bytes valid), so that the next Write can rewrite that
	// sector without reading it back; tailOff is -1 when tail holds nothing.
	tail    []byte
	tailOff int64
	tailLen int
}

func newDirectState(f *osFile) (*directState, error) {
	d := &directState{name: f.name, align: sectorSize(f.handle, f.name), tailOff: -1}
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	d.size = size
	d.bounce.New = func() any {
		b := AlignedBuffer(directStageSize, d.align)
		return &b
	}
	return d, nil
}

// fileStorageInfo is FILE_STORAGE_INFO.
type fileStorageInfo struct {
	LogicalBytesPerSector                                 uint32
	PhysicalBytesPerSectorForAtomicity                    uint32
	PhysicalBytesPerSectorForPerformance                  uint32
	FileSystemEffectivePhysicalBytesPerSectorForAtomicity uint32
	Flags                                                 uint32
	ByteOffsetForSectorAlignment                          uint32
	ByteOffsetForPartitionAlignment                       uint32
}

var procGetDiskFreeSpaceW = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetDiskFreeSpaceW")

// sectorSize returns the logical sector size of the volume holding the file:
// from FileStorageInfo (Windows 8 and later), else from GetDiskFreeSpace of
// the volume root, else defaultSectorSize. A value that is not a power of two
// between 512 bytes and 64 KiB is not believed.
func sectorSize(h windows.Handle, name string) int {
	valid := func(n uint32) bool {
		return n >= minSectorSize && n <= maxSectorSize && n&(n-1) == 0
	}
	var si fileStorageInfo
	if windows.GetFileInformationByHandleEx(h, windows.FileStorageInfo,
		(*byte)(unsafe.Pointer(&si)), uint32(unsafe.Sizeof(si))) == nil && valid(si.LogicalBytesPerSector) {
		return int(si.LogicalBytesPerSector)
	}
	if p, err := windows.UTF16PtrFromString(name); err == nil {
		var root [windows.MAX_PATH + 1]uint16
		if windows.GetVolumePathName(p, &root[0], uint32(len(root))) == nil && procGetDiskFreeSpaceW.Find() == nil {
			var sectorsPerCluster, bytesPerSector, free, total uint32
			r, _, _ := procGetDiskFreeSpaceW.Call(uintptr(unsafe.Pointer(&root[0])),
				uintptr(unsafe.Pointer(&sectorsPerCluster)), uintptr(unsafe.Pointer(&bytesPerSector)),
				uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
			if r != 0 && valid(bytesPerSector) {
				return int(bytesPerSector)
			}
		}
	}
	return defaultSectorSize
}

var errUnalignedDirectIO = errors.New("shale: internal error: unaligned request reached a direct-IO handle")

// rawRead is the only way a direct file is read: one aligned ReadFile per
// chunk. A short read is the end of the file (direct reads cannot resume at
// an unaligned offset), reported as io.EOF with the count.
func (d *directState) rawRead(f *osFile, p []byte, off int64) (int, error) {
	if !IsAligned(p, off, d.align) {
		d.unaligned.Add(1)
		return 0, fmt.Errorf("%w: read %s at %d, %d bytes", errUnalignedDirectIO, d.name, off, len(p))
	}
	return inChunks(p, off, func(chunk []byte, at int64) (int, error) {
		done, err := pread(f.handle, chunk, at)
		if err == windows.ERROR_HANDLE_EOF || (err == nil && done < len(chunk)) {
			return done, io.EOF
		}
		if err != nil {
			return done, fmt.Errorf("shale: direct read %s at %d: %w", d.name, at+int64(done), err)
		}
		return done, nil
	})
}

// rawWrite is the only way a direct file is written: aligned WriteFile calls.
func (d *directState) rawWrite(f *osFile, p []byte, off int64) error {
	if !IsAligned(p, off, d.align) {
		d.unaligned.Add(1)
		return fmt.Errorf("%w: write %s at %d, %d bytes", errUnalignedDirectIO, d.name, off, len(p))
	}
	_, err := f.pwriteFull(p, off)
	return err
}

// readAt reads p at off: straight into p when the request is aligned, else
// through a pooled aligned buffer, sector-rounded chunk by chunk.
func (d *directState) readAt(f *osFile, p []byte, off int64) (int, error) {
	if IsAligned(p, off, d.align) {
		d.alignedReads.Add(1)
		return d.rawRead(f, p, off)
	}
	d.bounceReads.Add(1)
	bp := d.bounce.Get().(*[]byte)
	defer d.bounce.Put(bp)
	return readBounced(p, off, *bp, d.align, func(b []byte, at int64) (int, error) {
		return d.rawRead(f, b, at)
	})
}

// write appends p at f.pos; like every File writer it assumes it is the
// file's only writer. Aligned runs of p (at an aligned position and
// address) are written from p itself; the rest is staged in an aligned
// buffer and written in whole sectors, the last one padded. When padding
// goes past the true end of the file, the end is set back with
// FileEndOfFileInfo, and the partial sector stays in tail for the next Write.
func (d *directState) write(f *osFile, p []byte) (int, error) {
	a := d.align
	written := 0
	for len(p) > 0 {
		pos := f.pos
		if pos%int64(a) == 0 && len(p) >= a && IsAligned(p[:a], 0, a) {
			k := min(AlignDown(int64(len(p)), a), maxIOChunk)
			if err := d.rawWrite(f, p[:k], pos); err != nil {
				d.tailOff = -1
				return written, err
			}
			d.alignedWrites.Add(1)
			d.advance(f, int(k))
			written += int(k)
			p = p[k:]
			d.tailOff = -1 // the cached sector, if any, may just have been overwritten
			continue
		}
		if d.stage == nil {
			d.stage = AlignedBuffer(directStageSize, a)
			d.tail = AlignedBuffer(a, a)
		}
		d.stagedWrites.Add(1)
		stage := d.stage
		chunkStart := AlignDown(pos, a)
		head := int(pos - chunkStart)
		if head > 0 {
			if d.tailOff == chunkStart && d.tailLen >= head {
				copy(stage, d.tail[:head])
			} else if err := d.readSector(f, stage[:a], chunkStart); err != nil {
				return written, err
			}
		}
		n := min(len(p), len(stage)-head)
		copy(stage[head:], p[:n])
		end := head + n
		padded := int(AlignUp(int64(end), a))
		lastStart := int(AlignDown(int64(end), a))
		// The padding is zeros: past the end of data this handle wrote there
		// is nothing else (a direct file has one writer) but zeros left by a
		// Truncate that grew the file.
		clear(stage[end:padded])
		if err := d.rawWrite(f, stage[:padded], chunkStart); err != nil {
			d.tailOff = -1
			return written, err
		}
		d.advance(f, n)
		written += n
		p = p[n:]
		if padded > end {
			d.tailLen = copy(d.tail, stage[lastStart:end])
			d.tailOff = chunkStart + int64(lastStart)
		} else {
			d.tailOff = -1
		}
		if chunkStart+int64(padded) > d.size {
			// Cut the padding: the file ends where the data does.
			if err := setEndOfFile(f.handle, d.size); err != nil {
				return written, fmt.Errorf("shale: direct write %s: set end of file to %d: %w", d.name, d.size, err)
			}
		}
	}
	return written, nil
}

// advance moves the append position past n written bytes.
func (d *directState) advance(f *osFile, n int) {
	f.pos += int64(n)
	d.size = max(d.size, f.pos)
}

// readSector fills the aligned sector buffer b with the file's bytes at off,
// zeros past the end of the file.
func (d *directState) readSector(f *osFile, b []byte, off int64) error {
	n, err := d.rawRead(f, b, off)
	if err != nil && err != io.EOF {
		return err
	}
	clear(b[n:])
	return nil
}

// truncated records that the file's size is now size; the cached tail
// sector may no longer match the file, so it is dropped.
func (d *directState) truncated(size int64) {
	d.size = size
	d.tailOff = -1
}

// directStats are the direct-IO counters of a file, for tests.
type directStats struct {
	alignedReads, bounceReads, unaligned, alignedWrites, stagedWrites uint64
}

func (d *directState) stats() directStats {
	return directStats{
		alignedReads: d.alignedReads.Load(), bounceReads: d.bounceReads.Load(),
		unaligned: d.unaligned.Load(), alignedWrites: d.alignedWrites.Load(),
		stagedWrites: d.stagedWrites.Load(),
	}
}

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Linker is implemented by file systems that can give an existing file a
// second name (a hard link): the OS file system (link(2) on POSIX,
// CreateHardLink on Windows) and MemFS. Wrapping file systems forward it when
// the file system they wrap has it. Link fails if newname exists.
type Linker interface {
	// Link makes newname a second name of the file oldname. Both names
	// reach the same data, so a change through one shows through the
	// other: callers link only files that are never written again.
	Link(oldname, newname string) error
}

// ErrLinkUnsupported is returned (wrapped) by Link of a wrapping file system
// whose inner file system cannot link. LinkOrCopy copies instead.
var ErrLinkUnsupported = errors.New("shale: hard links are not supported by this file system")

// Link implements Linker with os.Link: link(2) on POSIX, CreateHardLink on
// Windows.
func (osFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

var _ Linker = osFS{}

// Link implements Linker: newname becomes another entry for oldname's node,
// so the two names share their data, written and durable alike, as on a
// POSIX file system. Like Create, the new entry is durable only once its
// directory is synced; crash clones keep nodes shared by several names
// shared.
func (fs *MemFS) Link(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	oldp, newp := memClean(oldname), memClean(newname)
	n, err := fs.walkLocked("link", oldname, oldp)
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.Unwrap(err)}
	}
	if n.isDir {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errIsDir}
	}
	dir, base, err := fs.parentLocked("link", newname, newp)
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.Unwrap(err)}
	}
	if dir.entries[base] != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: os.ErrExist}
	}
	dir.entries[base] = n
	return nil
}

var _ Linker = (*MemFS)(nil)

// LinkOrCopy gives newname the content of oldname: a hard link when fs is a
// Linker and the file system can link the two names (linked is true), else
// a copy of oldname, synced (linked is false). It copies when the link is
// refused because the names are on different devices or the file system
// has no hard links (linkUnsupported); any other failure of Link is
// returned. A failed copy removes what it wrote. Use it only for files
// that are never written again (a link shares the data).
func LinkOrCopy(fs FS, oldname, newname string) (linked bool, err error) {
	if l, ok := fs.(Linker); ok {
		err := l.Link(oldname, newname)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ErrLinkUnsupported) && !linkUnsupported(err) {
			return false, err
		}
	}
	src, err := fs.Open(oldname, SequentialAccess)
	if err != nil {
		return false, err
	}
	defer src.Close()
	size, err := src.Size()
	if err != nil {
		return false, err
	}
	return false, CopyN(fs, src, newname, size)
}

// copyChunk is the size of the reads and writes of CopyN.
const copyChunk = 1 << 20

// CopyN creates newname (it must not exist) holding the first n bytes of
// src, read with ReadAt, and syncs it. On failure it removes newname. A
// src shorter than n is an error wrapping io.ErrUnexpectedEOF.
func CopyN(fs FS, src File, newname string, n int64) (err error) {
	if _, err := fs.Stat(newname); err == nil {
		return &os.PathError{Op: "copy", Path: newname, Err: os.ErrExist}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := fs.Create(newname)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dst.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = fs.Remove(newname)
		}
	}()
	buf := make([]byte, min(n, copyChunk))
	for off := int64(0); off < n; {
		p := buf[:min(int64(len(buf)), n-off)]
		m, rerr := src.ReadAt(p, off)
		if m < len(p) {
			if rerr == nil || rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("shale: copying to %s: reading %d bytes at offset %d: %w", newname, len(p), off, rerr)
		}
		if _, err := dst.Write(p); err != nil {
			return err
		}
		off += int64(m)
	}
	return dst.Sync()
}

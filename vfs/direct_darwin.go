package vfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens name and turns its caching off with F_NOCACHE. macOS
// does not require aligned IO for F_NOCACHE, but only aligned IO bypasses
// the cache, so the file is read and written in blocks of the file system's
// block size like an O_DIRECT file on Linux.
func openDirect(name string, flag int, o OpenOption) (*osFile, error) {
	created := willCreate(name, flag)
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_NOCACHE, 1); err != nil {
		_ = f.Close()
		if created {
			_ = os.Remove(name)
		}
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: fmt.Errorf("%w (F_NOCACHE: %w)", ErrDirectIOUnsupported, err)}
	}
	return &osFile{file: f, dio: newDirectFile(f, directAlignment(f), flag&(os.O_WRONLY|os.O_RDWR) != 0)}, nil
}

// directAlignment is the file system's block size (f_bsize), or 4096.
func directAlignment(f *os.File) int {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err == nil {
		if a := int(st.Bsize); a >= 512 && a <= 1<<16 && a&(a-1) == 0 {
			return a
		}
	}
	return defaultDirectAlign
}

// adviseAccess does nothing: macOS has no posix_fadvise.
func adviseAccess(f *os.File, o OpenOption) {}

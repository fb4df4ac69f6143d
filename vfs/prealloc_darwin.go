package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// preallocate reserves blocks with fcntl(F_PREALLOCATE), which extends the
// allocation past the physical end of the file without changing its size:
// first as one contiguous extent, then in any extents (F_ALLOCATEALL). It is
// only a hint, so a file system that cannot is not an error.
func preallocate(f *os.File, off, n int64) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil
	}
	allocated := st.Blocks * 512
	if off+n <= allocated {
		return nil
	}
	fst := unix.Fstore_t{
		Flags:   unix.F_ALLOCATECONTIG | unix.F_ALLOCATEALL,
		Posmode: unix.F_PEOFPOSMODE,
		Length:  off + n - allocated,
	}
	if err := unix.FcntlFstore(f.Fd(), unix.F_PREALLOCATE, &fst); err != nil {
		fst.Flags = unix.F_ALLOCATEALL
		_ = unix.FcntlFstore(f.Fd(), unix.F_PREALLOCATE, &fst)
	}
	return nil
}

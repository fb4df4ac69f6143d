package vfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens name with O_DIRECT. A file system that refuses O_DIRECT
// (EINVAL from open: tmpfs before Linux 6.6, some FUSE and network file
// systems) gets an error wrapping ErrDirectIOUnsupported; a file the refused
// open created is removed again.
func openDirect(name string, flag int, o OpenOption) (*osFile, error) {
	created := willCreate(name, flag)
	f, err := os.OpenFile(name, flag|unix.O_DIRECT, 0o644)
	if err != nil {
		err = directOpenError(name, err)
		if created && errors.Is(err, ErrDirectIOUnsupported) {
			_ = os.Remove(name)
		}
		return nil, err
	}
	align, err := directAlignment(f)
	if err != nil {
		_ = f.Close()
		if created {
			_ = os.Remove(name)
		}
		return nil, err
	}
	adviseAccess(f, o)
	return &osFile{file: f, dio: newDirectFile(f, align, flag&(os.O_WRONLY|os.O_RDWR) != 0)}, nil
}

// directOpenError maps the EINVAL with which Linux refuses O_DIRECT to an
// error wrapping ErrDirectIOUnsupported that names the path.
func directOpenError(name string, err error) error {
	if errors.Is(err, unix.EINVAL) {
		return &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (open with O_DIRECT: %w)", ErrDirectIOUnsupported, unix.EINVAL)}
	}
	return err
}

// directAlignment asks statx (STATX_DIOALIGN, Linux 6.1) for the alignment
// direct IO on f needs: the larger of the buffer-address and the
// offset/length alignments. Where statx cannot tell, 4096 is safe.
func directAlignment(f *os.File) (int, error) {
	var st unix.Statx_t
	err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st)
	if err != nil || st.Mask&unix.STATX_DIOALIGN == 0 {
		return defaultDirectAlign, nil
	}
	if st.Dio_offset_align == 0 {
		// The kernel says this file cannot do direct IO at all.
		return 0, &os.PathError{Op: "statx", Path: f.Name(), Err: fmt.Errorf("%w (STATX_DIOALIGN reports no alignment)", ErrDirectIOUnsupported)}
	}
	a := int(max(st.Dio_mem_align, st.Dio_offset_align))
	if a&(a-1) != 0 || a > 1<<16 {
		return defaultDirectAlign, nil
	}
	return a, nil
}

// adviseAccess passes RandomAccess or SequentialAccess to posix_fadvise. It
// is a hint: errors are ignored.
func adviseAccess(f *os.File, o OpenOption) {
	switch {
	case o&RandomAccess != 0:
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
	case o&SequentialAccess != 0:
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_SEQUENTIAL)
	}
}

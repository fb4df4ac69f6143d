package vfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DropCache evicts the OS file name from the page cache, so that the next
// read of it comes from the device: fdatasync first (dirty pages cannot be
// dropped), then posix_fadvise(POSIX_FADV_DONTNEED) over the whole file.
// Benchmarks call it between trials. It is a no-op outside Linux.
func DropCache(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("shale: dropping %s from the page cache: %w", name, err)
	}
	defer f.Close()
	fd := int(f.Fd())
	for {
		err = unix.Fdatasync(fd)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("shale: dropping %s from the page cache: fdatasync: %w", name, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("shale: dropping %s from the page cache: posix_fadvise: %w", name, err)
	}
	return nil
}

package vfs

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// ReadFile returns the whole content of the file name, as os.ReadFile does,
// through fs: small files (CURRENT, OPTIONS, a MANIFEST to copy). A file
// too large for one buffer, or one that ends before the size it reported,
// is an error naming it.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("shale: %s: %d bytes is too large to read whole", name, size)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if int64(n) == size {
		return buf, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("shale: reading %s: %d of %d bytes: %w", name, n, size, err)
}

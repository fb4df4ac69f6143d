package vfs

import (
	"errors"
	"fmt"
)

// ZeroWriter is implemented by files that can write zeros at an offset,
// past their end too, without moving their write position: the OS and
// MemFS files (not DirectIO ones), and the files of a wrapping FS, which
// pass the call on. WriteZeros is how callers use it.
type ZeroWriter interface {
	// WriteZeros writes n zero bytes at off, extending the file when
	// off+n is past its end; the position Write appends at is unchanged.
	WriteZeros(off, n int64) error
}

// ErrZerosUnsupported is returned by WriteZeros for a file that cannot
// write zeros at an offset (no ZeroWriter, or a DirectIO file).
var ErrZerosUnsupported = errors.New("shale: file cannot write zeros at an offset")

// WriteZeros writes n zero bytes at off in f, extending f when off+n is past
// its end, and leaves the position f.Write appends at where it was. A file
// with blocks already written there is overwritten in place by later
// appends: a WAL extended this way ahead of its records changes neither its
// size nor its block map when it is appended to, so fdatasync writes the
// data only. Errors wrap ErrZerosUnsupported when f cannot do it.
func WriteZeros(f File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	if off < 0 {
		return fmt.Errorf("shale: write zeros at %d: negative offset", off)
	}
	z, ok := f.(ZeroWriter)
	if !ok {
		return fmt.Errorf("%w (%T)", ErrZerosUnsupported, f)
	}
	return z.WriteZeros(off, n)
}

// zeroChunk is the zeros written per system call.
var zeroChunk = make([]byte, 64<<10)

// writeZerosWith writes n zero bytes at off through writeAt, in chunks.
func writeZerosWith(writeAt func(p []byte, off int64) (int, error), off, n int64) error {
	for n > 0 {
		c := zeroChunk[:min(n, int64(len(zeroChunk)))]
		k, err := writeAt(c, off)
		if err != nil {
			return err
		}
		if k != len(c) {
			return fmt.Errorf("shale: short write of %d of %d zeros at %d", k, len(c), off)
		}
		off, n = off+int64(k), n-int64(k)
	}
	return nil
}

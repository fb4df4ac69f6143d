package vfs

import (
	"fmt"
	"os"
	"time"
)

// ErrDeadlineExceeded is the error (wrapped) of a read that could not
// finish by its deadline: os.ErrDeadlineExceeded, so that errors.Is works
// with either name. The DB reports it as shale.ErrTimedOut.
var ErrDeadlineExceeded = os.ErrDeadlineExceeded

// ReadDeadline bounds the reads of one call in time (RocksDB's
// ReadOptions::deadline and io_timeout). The zero value bounds nothing.
type ReadDeadline struct {
	// Deadline is the absolute time by which the whole call must finish;
	// zero is none.
	Deadline time.Time
	// IOTimeout bounds each file read of the call, from its start; zero
	// is none.
	IOTimeout time.Duration
}

// IsZero reports whether d bounds nothing.
func (d ReadDeadline) IsZero() bool { return d.Deadline.IsZero() && d.IOTimeout <= 0 }

// Expired reports whether the call's Deadline has passed (never, without
// one).
func (d ReadDeadline) Expired() bool {
	return !d.Deadline.IsZero() && !time.Now().Before(d.Deadline)
}

// ForRead returns the deadline of one file read starting now: the earlier
// of Deadline and now+IOTimeout, or zero when d bounds nothing. It reads
// the clock only when d is not zero.
func (d ReadDeadline) ForRead() time.Time {
	if d.IOTimeout <= 0 {
		return d.Deadline
	}
	t := time.Now().Add(d.IOTimeout)
	if !d.Deadline.IsZero() && d.Deadline.Before(t) {
		return d.Deadline
	}
	return t
}

// DeadlineReaderAt is implemented by a file that can itself stop a read at
// a deadline (the latency FS's files, whose simulated delay ends there).
// ReadAtDeadline is ReadAt that, when the read cannot finish by deadline
// (not zero), returns by then with an error wrapping ErrDeadlineExceeded.
type DeadlineReaderAt interface {
	ReadAtDeadline(p []byte, off int64, deadline time.Time) (int, error)
}

// ReadAtDeadline reads len(p) bytes of f at off as f.ReadAt does, bounded
// by deadline (zero: unbounded, exactly f.ReadAt). A deadline already past
// returns a timeout without any IO. A file that implements
// DeadlineReaderAt stops the read at the deadline; any other file's ReadAt
// (a pread of the OS, a copy from MemFS) is not interrupted once started,
// and a read that returns after the deadline reports the timeout instead
// of its bytes.
func ReadAtDeadline(f File, p []byte, off int64, deadline time.Time) (int, error) {
	if deadline.IsZero() {
		return f.ReadAt(p, off)
	}
	if !time.Now().Before(deadline) {
		return 0, TimeoutError("read", f, off)
	}
	if d, ok := f.(DeadlineReaderAt); ok {
		return d.ReadAtDeadline(p, off, deadline)
	}
	n, err := f.ReadAt(p, off)
	if time.Now().After(deadline) {
		return 0, TimeoutError("read", f, off)
	}
	return n, err
}

// TimeoutError returns the error of a read of f at off that passed its
// deadline: an *os.PathError wrapping ErrDeadlineExceeded.
func TimeoutError(op string, f File, off int64) error {
	return &os.PathError{Op: op, Path: fileName(f), Err: fmt.Errorf("at offset %d: %w", off, ErrDeadlineExceeded)}
}

// fileName names f in errors, when it can say.
func fileName(f File) string {
	if n, ok := f.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "file"
}

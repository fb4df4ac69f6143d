package shale

import (
	"errors"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// readDeadline returns the bounds ro puts on the file reads of one call
// (ReadOptions.Deadline and IOTimeout); zero for nil ro.
func (ro *ReadOptions) readDeadline() vfs.ReadDeadline {
	if ro == nil {
		return vfs.ReadDeadline{}
	}
	return vfs.ReadDeadline{Deadline: ro.Deadline, IOTimeout: ro.IOTimeout}
}

// errDeadlinePassed is the error of a call, or of a step of an iterator,
// whose ReadOptions.Deadline passed before it could finish: it is
// returned before any further IO.
func errDeadlinePassed() error {
	return base.KindErrorf(base.ErrTimedOut, "shale: read deadline (ReadOptions.Deadline) passed")
}

// readError makes the error of a file read that passed its deadline (one
// wrapping vfs.ErrDeadlineExceeded) match ErrTimedOut as well, keeping its
// message (which names the file and offset); other errors are returned as
// they are.
func readError(err error) error {
	if err != nil && errors.Is(err, vfs.ErrDeadlineExceeded) && !errors.Is(err, ErrTimedOut) {
		return &timedOutError{err: err}
	}
	return err
}

// timedOutError is a read error that matches both ErrTimedOut and the
// error it wraps.
type timedOutError struct{ err error }

func (e *timedOutError) Error() string   { return e.err.Error() }
func (e *timedOutError) Unwrap() []error { return []error{base.ErrTimedOut, e.err} }

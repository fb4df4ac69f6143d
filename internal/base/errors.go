package base

import (
	"errors"
	"fmt"
)

// The error kinds. Public errors are these sentinels, wrapped with context;
// callers test with errors.Is.
var (
	ErrNotFound        = errors.New("shale: not found")
	ErrCorruption      = errors.New("shale: corruption")
	ErrClosed          = errors.New("shale: closed")
	ErrReadOnly        = errors.New("shale: read-only")
	ErrInvalidArgument = errors.New("shale: invalid argument")
	// ErrBusy: a write conflicted with another (a transaction's conflict).
	ErrBusy = errors.New("shale: busy")
	// ErrDeadlock: waiting would close a cycle of waiters.
	ErrDeadlock = errors.New("shale: deadlock")
	// ErrTimedOut: an operation gave up at its deadline or timeout.
	ErrTimedOut = errors.New("shale: timed out")
)

// KindErrorf returns an error that matches kind (one of the error kinds
// above) with errors.Is and reads exactly as formatted; the message should
// start with "shale: " and say what failed.
func KindErrorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }

// Is makes errors.Is(err, kind) true.
func (e *kindError) Is(target error) bool { return target == e.kind }

// CorruptionError reports damaged or foreign on-disk data, naming the file and
// the offset where it was found. It matches ErrCorruption with errors.Is.
type CorruptionError struct {
	File   string
	Offset int64
	Msg    string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("shale: corruption in %s at offset %d: %s", e.File, e.Offset, e.Msg)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// CorruptionErrorf returns a CorruptionError for file at offset.
func CorruptionErrorf(file string, offset int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// InvalidArgumentf returns an error that matches ErrInvalidArgument with
// errors.Is and reads exactly as formatted; the message should start with
// "shale: " and name what was refused.
func InvalidArgumentf(format string, args ...any) error {
	return &invalidArgumentError{msg: fmt.Sprintf(format, args...)}
}

type invalidArgumentError struct{ msg string }

func (e *invalidArgumentError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *invalidArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// AssertionFailedf panics: for broken internal invariants only, never for
// anything that came from disk or from a user.
func AssertionFailedf(format string, args ...any) {
	panic(fmt.Sprintf("shale: invariant violated: "+format, args...))
}

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
)

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

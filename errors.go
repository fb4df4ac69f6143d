package shale

import "github.com/shaledb/shale/internal/base"

// The errors shale returns, tested with errors.Is. Corruption errors carry
// the file name and offset (see base.CorruptionError).
var (
	// ErrNotFound: Get found no value for the key.
	ErrNotFound = base.ErrNotFound
	// ErrCorruption: on-disk data failed a checksum or format check.
	ErrCorruption = base.ErrCorruption
	// ErrClosed: the DB (or iterator) was used after Close.
	ErrClosed = base.ErrClosed
	// ErrReadOnly: a background error stopped writes (see DB.Resume).
	ErrReadOnly = base.ErrReadOnly
	// ErrInvalidArgument: an option or argument was refused.
	ErrInvalidArgument = base.ErrInvalidArgument
)

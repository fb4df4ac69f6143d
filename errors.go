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
	// ErrBusy: a transaction conflicted with another write (an optimistic
	// commit's validation, or a pessimistic lock of a key written after
	// the transaction's snapshot); retry the transaction.
	ErrBusy = base.ErrBusy
	// ErrDeadlock: a transaction's lock wait would close a cycle of
	// waiting transactions; roll it back and retry.
	ErrDeadlock = base.ErrDeadlock
	// ErrTimedOut: an operation waited past its timeout (a transaction's
	// lock wait, TxnOptions.LockTimeout).
	ErrTimedOut = base.ErrTimedOut
)

package itertest

import (
	"errors"
	"fmt"

	"github.com/shaledb/shale/internal/base"
)

// Positioner is what the moves of a script need of an iterator: the
// positioning methods of base.InternalIterator, which the user-level
// dbiter.Iter has too.
type Positioner interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
}

// Move makes the move of a script line, split into its fields f, on it:
// first, last, next, prev, seek-ge k or seek-lt k. It returns what the move
// returned; known is false, and it does not move, for another operation. A
// seek without exactly one key is an error.
func Move(it Positioner, f []string) (ok, known bool, err error) {
	switch f[0] {
	case "first":
		return it.First(), true, nil
	case "last":
		return it.Last(), true, nil
	case "next":
		return it.Next(), true, nil
	case "prev":
		return it.Prev(), true, nil
	case "seek-ge", "seek-lt":
		if len(f) != 2 {
			return false, true, fmt.Errorf("itertest: %s takes a key", f[0])
		}
		if f[0] == "seek-ge" {
			return it.SeekGE([]byte(f[1])), true, nil
		}
		return it.SeekLT([]byte(f[1])), true, nil
	}
	return false, false, nil
}

// DescribeErr prints the outcome of Close, or the error of an iterator, as
// scripts show it: "ok", or the error, marked when it is a corruption.
func DescribeErr(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, base.ErrCorruption):
		return fmt.Sprintf("error (ErrCorruption): %v", err)
	}
	return fmt.Sprintf("error: %v", err)
}

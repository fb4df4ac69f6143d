package itertest

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/shaledb/shale/internal/base"
)

// Entry is one internal entry of a SliceIter.
type Entry struct {
	Key   base.InternalKey
	Value []byte
}

// ErrInjected is the error a SliceIter with FailAfter set fails with.
var ErrInjected = errors.New("injected failure")

// SliceIter is an InternalIterator over sorted entries. It copies the current
// key and value into buffers it overwrites on every move, so a caller that
// keeps a key across a move sees garbage, as with a real block iterator.
type SliceIter struct {
	// Entries are the entries, sorted in internal key order.
	Entries []Entry
	// FailAfter, when > 0, makes the FailAfter-th positioning call fail
	// with ErrInjected.
	FailAfter int
	// Alias returns the entries' own memory, for benchmarks that should
	// not measure the copying.
	Alias bool
	// CloseErr is what Close returns.
	CloseErr error

	pos    int // -1 or len(Entries) when exhausted
	valid  bool
	keyBuf []byte
	valBuf []byte
	key    base.InternalKey
	ops    int
	err    error
	closed bool
}

var _ base.InternalIterator = (*SliceIter)(nil)

func (s *SliceIter) set(pos int) bool {
	s.ops++
	if s.FailAfter > 0 && s.ops >= s.FailAfter {
		s.err = ErrInjected
		s.valid = false
		return false
	}
	s.err = nil
	s.pos = pos
	s.valid = pos >= 0 && pos < len(s.Entries)
	if !s.valid {
		return false
	}
	e := s.Entries[pos]
	if s.Alias {
		s.key, s.valBuf = e.Key, e.Value
		return true
	}
	// Scribble over the previous key before reusing the buffer.
	for i := range s.keyBuf {
		s.keyBuf[i] = 0xee
	}
	s.keyBuf = append(s.keyBuf[:0], e.Key.UserKey...)
	s.key = base.InternalKey{UserKey: s.keyBuf, Trailer: e.Key.Trailer}
	for i := range s.valBuf {
		s.valBuf[i] = 0xee
	}
	s.valBuf = append(s.valBuf[:0], e.Value...)
	return true
}

// SeekGE moves to the first entry whose user key is >= key.
func (s *SliceIter) SeekGE(key []byte) bool {
	return s.set(sort.Search(len(s.Entries), func(i int) bool {
		return bytes.Compare(s.Entries[i].Key.UserKey, key) >= 0
	}))
}

// SeekLT moves to the last entry whose user key is < key.
func (s *SliceIter) SeekLT(key []byte) bool {
	return s.set(sort.Search(len(s.Entries), func(i int) bool {
		return bytes.Compare(s.Entries[i].Key.UserKey, key) >= 0
	}) - 1)
}

// First moves to the first entry.
func (s *SliceIter) First() bool { return s.set(0) }

// Last moves to the last entry.
func (s *SliceIter) Last() bool { return s.set(len(s.Entries) - 1) }

// Next moves to the next entry; it panics when the iterator is exhausted,
// since the iterators under test must never call it then.
func (s *SliceIter) Next() bool {
	if !s.valid {
		panic(fmt.Sprintf("test invariant: Next on exhausted child (pos %d)", s.pos))
	}
	return s.set(s.pos + 1)
}

// Prev moves to the previous entry; it panics when the iterator is exhausted.
func (s *SliceIter) Prev() bool {
	if !s.valid {
		panic(fmt.Sprintf("test invariant: Prev on exhausted child (pos %d)", s.pos))
	}
	return s.set(s.pos - 1)
}

// Key returns the current key; its memory is overwritten by the next move.
func (s *SliceIter) Key() base.InternalKey { return s.key }

// Value returns the current value; its memory is overwritten by the next move.
func (s *SliceIter) Value() []byte { return s.valBuf }

// Error returns the injected failure of the last positioning call, if any.
func (s *SliceIter) Error() error { return s.err }

// Close marks the iterator closed and returns CloseErr; it panics on a
// second Close.
func (s *SliceIter) Close() error {
	if s.closed {
		panic("test invariant: double close")
	}
	s.closed = true
	return s.CloseErr
}

// Closed reports whether Close was called.
func (s *SliceIter) Closed() bool { return s.closed }

package mergeiter

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/shaledb/shale/internal/base"
)

// entry is one internal entry of a test iterator.
type entry struct {
	key   base.InternalKey
	value []byte
}

// sliceIter is an InternalIterator over sorted entries. It copies the current
// key and value into buffers it overwrites on every move, so a caller that
// keeps a key across a move sees garbage, as with a real block iterator.
type sliceIter struct {
	entries []entry
	pos     int // -1 or len(entries) when exhausted
	valid   bool
	keyBuf  []byte
	valBuf  []byte
	key     base.InternalKey
	// failAfter, when > 0, makes the failAfter-th positioning call fail.
	failAfter int
	ops       int
	err       error
	closed    bool
	// alias returns the entries' own memory, for benchmarks that should
	// not measure the copying.
	alias    bool
	closeErr error
}

var errInjected = errors.New("injected failure")

func (s *sliceIter) set(pos int) bool {
	s.ops++
	if s.failAfter > 0 && s.ops >= s.failAfter {
		s.err = errInjected
		s.valid = false
		return false
	}
	s.err = nil
	s.pos = pos
	s.valid = pos >= 0 && pos < len(s.entries)
	if !s.valid {
		return false
	}
	e := s.entries[pos]
	if s.alias {
		s.key, s.valBuf = e.key, e.value
		return true
	}
	// Scribble over the previous key before reusing the buffer.
	for i := range s.keyBuf {
		s.keyBuf[i] = 0xee
	}
	s.keyBuf = append(s.keyBuf[:0], e.key.UserKey...)
	s.key = base.InternalKey{UserKey: s.keyBuf, Trailer: e.key.Trailer}
	for i := range s.valBuf {
		s.valBuf[i] = 0xee
	}
	s.valBuf = append(s.valBuf[:0], e.value...)
	return true
}

func (s *sliceIter) SeekGE(key []byte) bool {
	return s.set(sort.Search(len(s.entries), func(i int) bool {
		return bytes.Compare(s.entries[i].key.UserKey, key) >= 0
	}))
}

func (s *sliceIter) SeekLT(key []byte) bool {
	return s.set(sort.Search(len(s.entries), func(i int) bool {
		return bytes.Compare(s.entries[i].key.UserKey, key) >= 0
	}) - 1)
}

func (s *sliceIter) First() bool { return s.set(0) }
func (s *sliceIter) Last() bool  { return s.set(len(s.entries) - 1) }

func (s *sliceIter) Next() bool {
	if !s.valid {
		panic(fmt.Sprintf("test invariant: Next on exhausted child (pos %d)", s.pos))
	}
	return s.set(s.pos + 1)
}

func (s *sliceIter) Prev() bool {
	if !s.valid {
		panic(fmt.Sprintf("test invariant: Prev on exhausted child (pos %d)", s.pos))
	}
	return s.set(s.pos - 1)
}

func (s *sliceIter) Key() base.InternalKey { return s.key }
func (s *sliceIter) Value() []byte         { return s.valBuf }
func (s *sliceIter) Error() error          { return s.err }
func (s *sliceIter) Close() error {
	if s.closed {
		panic("test invariant: double close")
	}
	s.closed = true
	return s.closeErr
}

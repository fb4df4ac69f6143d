package mergeiter

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
)

// closeErrIter is a SliceIter whose Close returns its iteration error, as
// a table iterator's does, and whose Next fails once when failNext is set.
type closeErrIter struct {
	*itertest.SliceIter
	failNext *bool
	err      error
}

func (c *closeErrIter) Next() bool {
	if *c.failNext {
		*c.failNext = false
		c.err = itertest.ErrInjected
		return false
	}
	return c.SliceIter.Next()
}

func (c *closeErrIter) SeekGE(key []byte) bool { c.err = nil; return c.SliceIter.SeekGE(key) }
func (c *closeErrIter) SeekLT(key []byte) bool { c.err = nil; return c.SliceIter.SeekLT(key) }
func (c *closeErrIter) First() bool            { c.err = nil; return c.SliceIter.First() }
func (c *closeErrIter) Last() bool             { c.err = nil; return c.SliceIter.Last() }

func (c *closeErrIter) Error() error {
	if c.err != nil {
		return c.err
	}
	return c.SliceIter.Error()
}

func (c *closeErrIter) Close() error {
	err := c.Error()
	if cerr := c.SliceIter.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestLevelIterSeekAfterReadError checks that a read error, once reported,
// does not fail the next positioning call as well: the file iterator that
// failed returns the error again from Close when the seek moves to another
// file, and that is not a new error. With and without a prepare phase.
func TestLevelIterSeekAfterReadError(t *testing.T) {
	for _, twoPhase := range []bool{false, true} {
		t.Run(fmt.Sprintf("twoPhase=%v", twoPhase), func(t *testing.T) {
			var files [][]itertest.Entry
			var bounds []FileBounds
			for f := 0; f < 3; f++ {
				var es []itertest.Entry
				for k := 0; k < 4; k++ {
					uk := itertest.UserKey(10*f + k)
					es = append(es, itertest.Entry{Key: base.MakeInternalKey(uk, 1, base.KindSet), Value: uk})
				}
				files = append(files, es)
				bounds = append(bounds, FileBounds{Smallest: es[0].Key, Largest: es[len(es)-1].Key})
			}
			failNext := false
			li := NewLevelIter(bytes.Compare, NewLevel(bytes.Compare, bounds, nil), func(i int) (base.InternalIterator, error) {
				return &closeErrIter{SliceIter: &itertest.SliceIter{Entries: files[i]}, failNext: &failNext}, nil
			}, nil, nil)
			defer li.Close()
			if !li.First() {
				t.Fatalf("First: %v", li.Error())
			}
			failNext = true
			if li.Next() || !errors.Is(li.Error(), itertest.ErrInjected) {
				t.Fatalf("Next with a failing read: valid %v, error %v", li.valid, li.Error())
			}
			// The failure is reported; a seek into another file must work.
			key := itertest.UserKey(20)
			if twoPhase {
				li.PrepareSeekGE(key)
			}
			if !li.SeekGE(key) || !bytes.Equal(li.Key().UserKey, key) || li.Error() != nil {
				t.Fatalf("SeekGE(%s) after the reported error: valid %v at %s, error %v", key, li.valid, li.Key(), li.Error())
			}
			if err := li.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

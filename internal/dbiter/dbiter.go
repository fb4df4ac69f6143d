package dbiter

import (
	"fmt"

	"github.com/shaledb/shale/internal/base"
)

// RangeDelChecker answers whether a range tombstone visible at snapshot
// deletes the entry (key, seq). *rangedel.List implements it.
type RangeDelChecker interface {
	Covers(key []byte, seq, snapshot base.SeqNum) bool
}

// Options configure an Iter.
type Options struct {
	// Cmp orders user keys; nil means base.DefaultComparer.
	Cmp *base.Comparer
	// Snapshot is the seqnum the reader sees: entries with a greater seqnum
	// are invisible. base.SeqNumMax sees everything.
	Snapshot base.SeqNum
	// Lower (inclusive) and Upper (exclusive) bound the user keys returned;
	// nil means unbounded.
	Lower, Upper []byte
	// RangeDels applies range tombstones; a nil interface means none.
	RangeDels RangeDelChecker
	// ValueResolver turns the value of a Merge or BlobIndex entry into the
	// user value; nil returns it unchanged. TODO: merge operands and blob
	// references will be resolved here.
	ValueResolver func(kind base.Kind, value []byte) ([]byte, error)
}

// pos says where the iterator is and how the child is placed relative to it.
type pos int8

const (
	posUnpositioned pos = iota
	// posForward: the child is at the entry that decided the current key.
	posForward
	// posReverse: the child is just before the current key's first entry
	// (at the previous key's last entry, below Lower, or, when !childValid,
	// exhausted).
	posReverse
	posExhaustedForward
	posExhaustedReverse
	posError
)

// Iter is the user-visible iterator over one snapshot of a merged internal
// iterator. Key and Value stay valid until the next positioning call.
type Iter struct {
	it         base.InternalIterator
	cmp        base.Compare
	opts       Options
	pos        pos
	childValid bool
	key        []byte
	value      []byte
	// keyBuf owns the current user key: the child's key memory changes as
	// it moves, and moving it is how Next and Prev find the neighbours.
	keyBuf []byte
	// valBuf owns the current value when iterating backward, where the
	// child has already moved past the deciding entry.
	valBuf []byte
	err    error
}

// New returns an iterator over it with the options o. The iterator takes
// ownership of it: Close closes it.
func New(it base.InternalIterator, o Options) *Iter {
	if o.Cmp == nil {
		o.Cmp = base.DefaultComparer
	}
	return &Iter{it: it, cmp: o.Cmp.Compare, opts: o}
}

func (i *Iter) fail(err error) bool {
	i.err = err
	i.pos = posError
	i.key, i.value = nil, nil
	return false
}

// exhausted records that iteration ran off one end (or failed, when the
// child reports an error).
func (i *Iter) exhausted(p pos) bool {
	if err := i.it.Error(); err != nil {
		return i.fail(err)
	}
	return i.outOfBounds(p)
}

// outOfBounds records that a seek fell outside the bounds, without touching
// the child.
func (i *Iter) outOfBounds(p pos) bool {
	i.pos = p
	i.key, i.value = nil, nil
	return false
}

func badKind(k base.InternalKey) error {
	return fmt.Errorf("%w: dbiter: entry %s has unknown kind", base.ErrCorruption, k)
}

// resolve returns the user value of an entry of kind k.
func (i *Iter) resolve(kind base.Kind, value []byte) ([]byte, error) {
	if kind == base.KindSet || i.opts.ValueResolver == nil {
		return value, nil
	}
	return i.opts.ValueResolver(kind, value)
}

// findNextEntry moves the child forward from an entry (ok) or from
// exhaustion (!ok) to the newest visible entry of the next present key.
func (i *Iter) findNextEntry(ok bool) bool {
	snap, upper := i.opts.Snapshot, i.opts.Upper
	for ok {
		k := i.it.Key()
		if upper != nil && i.cmp(k.UserKey, upper) >= 0 {
			break
		}
		if k.SeqNum() > snap {
			ok = i.it.Next()
			continue
		}
		switch kind := k.Kind(); kind {
		case base.KindSet, base.KindMerge, base.KindBlobIndex:
			i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
			if i.opts.RangeDels == nil || !i.opts.RangeDels.Covers(i.keyBuf, k.SeqNum(), snap) {
				v, err := i.resolve(kind, i.it.Value())
				if err != nil {
					return i.fail(err)
				}
				i.key, i.value, i.pos = i.keyBuf, v, posForward
				return true
			}
			ok = i.skipKey()
		case base.KindDelete, base.KindSingleDelete:
			i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
			ok = i.skipKey()
		case base.KindRangeDelete, base.KindLogData:
			ok = i.it.Next()
		default:
			return i.fail(badKind(k))
		}
	}
	return i.exhausted(posExhaustedForward)
}

// skipKey moves the child forward past the remaining entries of keyBuf.
func (i *Iter) skipKey() bool {
	for i.it.Next() {
		if i.cmp(i.it.Key().UserKey, i.keyBuf) != 0 {
			return true
		}
	}
	return false
}

// findPrevEntry moves the child backward from an entry (ok) or from
// exhaustion (!ok) over every entry of a user key, keeping the newest
// visible one, until it finds a present key; it leaves the child one entry
// before that key.
func (i *Iter) findPrevEntry(ok bool) bool {
	snap, lower := i.opts.Snapshot, i.opts.Lower
	have, live := false, false
	var liveSeq base.SeqNum
	var liveKind base.Kind
	for ok {
		k := i.it.Key()
		if lower != nil && i.cmp(k.UserKey, lower) < 0 {
			break
		}
		if have && i.cmp(k.UserKey, i.keyBuf) != 0 {
			if live {
				if found, err := i.decide(liveSeq, liveKind); err != nil {
					return i.fail(err)
				} else if found {
					i.childValid = true
					return true
				}
			}
			have = false
		}
		if !have {
			i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
			have, live = true, false
		}
		// Going backward, seqnums of one user key ascend: the last visible
		// entry seen is the newest.
		if seq := k.SeqNum(); seq <= snap {
			switch kind := k.Kind(); kind {
			case base.KindSet, base.KindMerge, base.KindBlobIndex:
				live, liveSeq, liveKind = true, seq, kind
				i.valBuf = append(i.valBuf[:0], i.it.Value()...)
			case base.KindDelete, base.KindSingleDelete:
				live = false
			case base.KindRangeDelete, base.KindLogData:
			default:
				return i.fail(badKind(k))
			}
		}
		ok = i.it.Prev()
	}
	if !ok {
		if err := i.it.Error(); err != nil {
			return i.fail(err)
		}
	}
	if have && live {
		if found, err := i.decide(liveSeq, liveKind); err != nil {
			return i.fail(err)
		} else if found {
			i.childValid = ok
			return true
		}
	}
	return i.exhausted(posExhaustedReverse)
}

// decide settles the key in keyBuf, whose newest visible entry is a value
// at seq in valBuf, while iterating backward.
func (i *Iter) decide(seq base.SeqNum, kind base.Kind) (bool, error) {
	if i.opts.RangeDels != nil && i.opts.RangeDels.Covers(i.keyBuf, seq, i.opts.Snapshot) {
		return false, nil
	}
	v, err := i.resolve(kind, i.valBuf)
	if err != nil {
		return false, err
	}
	i.key, i.value, i.pos = i.keyBuf, v, posReverse
	return true, nil
}

// First positions at the first key, returning whether there is one.
func (i *Iter) First() bool {
	i.err = nil
	if i.opts.Lower != nil {
		return i.findNextEntry(i.it.SeekGE(i.opts.Lower))
	}
	return i.findNextEntry(i.it.First())
}

// Last positions at the last key, returning whether there is one.
func (i *Iter) Last() bool {
	i.err = nil
	if i.opts.Upper != nil {
		return i.findPrevEntry(i.it.SeekLT(i.opts.Upper))
	}
	return i.findPrevEntry(i.it.Last())
}

// SeekGE positions at the first key >= key.
func (i *Iter) SeekGE(key []byte) bool {
	i.err = nil
	if i.opts.Lower != nil && i.cmp(key, i.opts.Lower) < 0 {
		key = i.opts.Lower
	}
	if i.opts.Upper != nil && i.cmp(key, i.opts.Upper) >= 0 {
		return i.outOfBounds(posExhaustedForward)
	}
	return i.findNextEntry(i.it.SeekGE(key))
}

// SeekLT positions at the last key < key.
func (i *Iter) SeekLT(key []byte) bool {
	i.err = nil
	if i.opts.Upper != nil && i.cmp(key, i.opts.Upper) > 0 {
		key = i.opts.Upper
	}
	if i.opts.Lower != nil && i.cmp(key, i.opts.Lower) <= 0 {
		return i.outOfBounds(posExhaustedReverse)
	}
	return i.findPrevEntry(i.it.SeekLT(key))
}

// SeekForPrev positions at the last key <= key.
func (i *Iter) SeekForPrev(key []byte) bool {
	i.err = nil
	if i.opts.Lower != nil && i.cmp(key, i.opts.Lower) < 0 {
		return i.outOfBounds(posExhaustedReverse)
	}
	if i.opts.Upper != nil && i.cmp(key, i.opts.Upper) >= 0 {
		return i.Last()
	}
	// The child can only seek strictly below a key, so place it after
	// key's entries and step back once.
	ok := i.it.SeekGE(key)
	for ok && i.cmp(i.it.Key().UserKey, key) == 0 {
		ok = i.it.Next()
	}
	if ok {
		ok = i.it.Prev()
	} else {
		if err := i.it.Error(); err != nil {
			return i.fail(err)
		}
		ok = i.it.Last()
	}
	return i.findPrevEntry(ok)
}

// Next moves to the next key.
func (i *Iter) Next() bool {
	switch i.pos {
	case posForward:
		// Skip the older versions of the current key.
		ok := i.it.Next()
		for ok && i.cmp(i.it.Key().UserKey, i.key) == 0 {
			ok = i.it.Next()
		}
		return i.findNextEntry(ok)
	case posReverse:
		var ok bool
		if i.childValid {
			ok = i.it.Next()
		} else {
			ok = i.it.First()
		}
		for ok && i.cmp(i.it.Key().UserKey, i.key) <= 0 {
			ok = i.it.Next()
		}
		return i.findNextEntry(ok)
	case posUnpositioned, posExhaustedReverse:
		return i.First()
	}
	return false
}

// Prev moves to the previous key.
func (i *Iter) Prev() bool {
	switch i.pos {
	case posForward:
		// Step back over the newer, invisible versions of the current key.
		ok := i.it.Prev()
		for ok && i.cmp(i.it.Key().UserKey, i.key) == 0 {
			ok = i.it.Prev()
		}
		return i.findPrevEntry(ok)
	case posReverse:
		if !i.childValid {
			return i.outOfBounds(posExhaustedReverse)
		}
		return i.findPrevEntry(true)
	case posUnpositioned, posExhaustedForward:
		return i.Last()
	}
	return false
}

// Valid reports whether the iterator is at a key.
func (i *Iter) Valid() bool { return i.pos == posForward || i.pos == posReverse }

// Key returns the current user key, nil when not Valid.
func (i *Iter) Key() []byte { return i.key }

// Value returns the current value, nil when not Valid.
func (i *Iter) Value() []byte { return i.value }

// Error returns the error that stopped iteration, if any.
func (i *Iter) Error() error { return i.err }

// Close closes the internal iterator and returns the iteration error, or
// else the error from closing.
func (i *Iter) Close() error {
	err := i.it.Close()
	if i.err != nil {
		err = i.err
	}
	i.pos = posError
	i.key, i.value = nil, nil
	return err
}

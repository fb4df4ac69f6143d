package shale

import (
	"slices"
	"sort"

	"github.com/shaledb/shale/internal/base"
)

// baseDeltaIter is the iterator of NewIteratorWithBase (RocksDB's
// BaseDeltaIterator): a merge, by user key, of a DB iterator (base) and
// the sorted view of a batch (delta). At a key both hold, the batch's entry
// decides. Moving forward, both sides sit at or after the current key and
// the current key is the smaller of the two; backward, at or before it and
// the larger. A direction change repositions both sides strictly past the
// current key.
type baseDeltaIter struct {
	db   *DB
	base *Iterator
	wb   *WriteBatchWithIndex
	view *batchView
	cmp  base.Compare
	// lower and upper are base's bounds, which the batch's keys obey too.
	lower, upper []byte
	// prefix confines the batch's keys after a seek in prefix mode
	// (base's ReadOptions.PrefixSameAsStart), as base confines its own:
	// nil when not confined.
	prefix  []byte
	forward bool
	// di is the position in view.entries.
	di int
	// valid says the iterator is at key; fromDelta that key is the
	// batch's (and value its resolved value).
	valid     bool
	fromDelta bool
	key       []byte
	value     []byte
	err       error
}

func (bd *baseDeltaIter) deltaValid() bool {
	if bd.di < 0 || bd.di >= len(bd.view.entries) {
		return false
	}
	k := bd.view.entries[bd.di].key
	if bd.prefix != nil {
		tr := bd.base.prefixTr
		if !tr.InDomain(k) || bd.cmp(tr.Transform(k), bd.prefix) != 0 {
			return false
		}
	}
	return (bd.lower == nil || bd.cmp(k, bd.lower) >= 0) && (bd.upper == nil || bd.cmp(k, bd.upper) < 0)
}

// confineTo confines the batch's keys to key's prefix in prefix mode (a
// seek), and lifts the confinement otherwise (nil key: First, Last).
func (bd *baseDeltaIter) confineTo(key []byte) {
	bd.prefix = nil
	if tr := bd.base.prefixTr; tr != nil && key != nil && tr.InDomain(key) {
		bd.prefix = slices.Clone(tr.Transform(key))
	}
}

// deltaSeekGE positions di at the first entry >= k.
func (bd *baseDeltaIter) deltaSeekGE(k []byte) {
	bd.di = sort.Search(len(bd.view.entries), func(i int) bool { return bd.cmp(bd.view.entries[i].key, k) >= 0 })
}

// deltaSeekGT positions di at the first entry > k.
func (bd *baseDeltaIter) deltaSeekGT(k []byte) {
	bd.di = sort.Search(len(bd.view.entries), func(i int) bool { return bd.cmp(bd.view.entries[i].key, k) > 0 })
}

func (bd *baseDeltaIter) first() bool {
	bd.forward, bd.err = true, nil
	bd.confineTo(nil)
	bd.base.First()
	if bd.lower != nil {
		bd.deltaSeekGE(bd.lower)
	} else {
		bd.di = 0
	}
	return bd.settleForward()
}

func (bd *baseDeltaIter) last() bool {
	bd.forward, bd.err = false, nil
	bd.confineTo(nil)
	bd.base.Last()
	if bd.upper != nil {
		bd.deltaSeekGE(bd.upper)
		bd.di--
	} else {
		bd.di = len(bd.view.entries) - 1
	}
	return bd.settleBackward()
}

func (bd *baseDeltaIter) seek(k []byte) bool {
	bd.forward, bd.err = true, nil
	bd.confineTo(k)
	bd.base.Seek(k)
	if bd.lower != nil && bd.cmp(k, bd.lower) < 0 {
		k = bd.lower
	}
	bd.deltaSeekGE(k)
	return bd.settleForward()
}

func (bd *baseDeltaIter) seekForPrev(k []byte) bool {
	bd.forward, bd.err = false, nil
	bd.confineTo(k)
	bd.base.SeekForPrev(k)
	if bd.upper != nil && bd.cmp(k, bd.upper) >= 0 {
		bd.deltaSeekGE(bd.upper)
	} else {
		bd.deltaSeekGT(k)
	}
	bd.di--
	return bd.settleBackward()
}

func (bd *baseDeltaIter) next() bool {
	if !bd.valid {
		return false
	}
	if !bd.forward {
		k := slices.Clone(bd.key)
		bd.forward = true
		if bd.base.Seek(k) && bd.cmp(bd.base.Key(), k) == 0 {
			bd.base.Next()
		}
		bd.deltaSeekGT(k)
		return bd.settleForward()
	}
	if bd.fromDelta {
		if bd.base.Valid() && bd.cmp(bd.base.Key(), bd.key) == 0 {
			bd.base.Next()
		}
		bd.di++
	} else {
		bd.base.Next()
	}
	return bd.settleForward()
}

func (bd *baseDeltaIter) prev() bool {
	if !bd.valid {
		return false
	}
	if bd.forward {
		k := slices.Clone(bd.key)
		bd.forward = false
		bd.base.SeekLT(k)
		bd.deltaSeekGE(k)
		bd.di--
		return bd.settleBackward()
	}
	if bd.fromDelta {
		if bd.base.Valid() && bd.cmp(bd.base.Key(), bd.key) == 0 {
			bd.base.Prev()
		}
		bd.di--
	} else {
		bd.base.Prev()
	}
	return bd.settleBackward()
}

// stop ends the iteration, with err when not nil.
func (bd *baseDeltaIter) stop(err error) bool {
	bd.valid, bd.fromDelta, bd.key, bd.value = false, false, nil, nil
	if err != nil {
		bd.err = err
	}
	return false
}

// settleForward lands on the smaller of the two sides' keys, skipping the
// batch's deletions (and base's entry of the same key) and base's keys a
// range deletion of the batch hides.
func (bd *baseDeltaIter) settleForward() bool {
	for {
		bOK := bd.base.Valid()
		if !bOK {
			if err := bd.base.Err(); err != nil {
				return bd.stop(err)
			}
		}
		dOK := bd.deltaValid()
		if !dOK && !bOK {
			return bd.stop(nil)
		}
		if dOK {
			e := &bd.view.entries[bd.di]
			c := -1
			if bOK {
				c = bd.cmp(e.key, bd.base.Key())
			}
			if c <= 0 {
				if e.r.state == lookupDeleted {
					bd.di++
					if c == 0 {
						bd.base.Next()
					}
					continue
				}
				return bd.landDelta(e, c == 0)
			}
		}
		if bd.view.hides(bd.base.Key()) {
			bd.base.Next()
			continue
		}
		bd.valid, bd.fromDelta, bd.key, bd.value = true, false, bd.base.Key(), nil
		return true
	}
}

// settleBackward is settleForward backward: the larger key wins.
func (bd *baseDeltaIter) settleBackward() bool {
	for {
		bOK := bd.base.Valid()
		if !bOK {
			if err := bd.base.Err(); err != nil {
				return bd.stop(err)
			}
		}
		dOK := bd.deltaValid()
		if !dOK && !bOK {
			return bd.stop(nil)
		}
		if dOK {
			e := &bd.view.entries[bd.di]
			c := 1
			if bOK {
				c = bd.cmp(e.key, bd.base.Key())
			}
			if c >= 0 {
				if e.r.state == lookupDeleted {
					bd.di--
					if c == 0 {
						bd.base.Prev()
					}
					continue
				}
				return bd.landDelta(e, c == 0)
			}
		}
		if bd.view.hides(bd.base.Key()) {
			bd.base.Prev()
			continue
		}
		bd.valid, bd.fromDelta, bd.key, bd.value = true, false, bd.base.Key(), nil
		return true
	}
}

// landDelta makes the batch's entry e current; withBase says base is at
// the same key (its value is what the batch's merges apply to when the
// batch does not decide their base).
func (bd *baseDeltaIter) landDelta(e *viewEntry, withBase bool) bool {
	v := e.r.value
	if e.r.state == lookupMerge {
		var err error
		switch {
		case e.r.baseKnown:
			v, err = bd.db.fullMerge(e.key, e.r.value, e.r.hasBase, e.r.operands)
		case withBase:
			bv := bd.base.Value()
			if bv == nil {
				if err := bd.base.Err(); err != nil {
					return bd.stop(err)
				}
			}
			v, err = bd.db.fullMerge(e.key, bv, true, e.r.operands)
		default:
			v, err = bd.db.fullMerge(e.key, nil, false, e.r.operands)
		}
		if err != nil {
			return bd.stop(err)
		}
	}
	bd.valid, bd.fromDelta, bd.key, bd.value = true, true, e.key, v
	return true
}

func (bd *baseDeltaIter) currentValue() []byte {
	if bd.fromDelta {
		return bd.value
	}
	v := bd.base.Value()
	if v == nil && !bd.base.Valid() {
		// base failed to read the value (from a blob file) and holds the
		// error: this iterator stops too, as Iterator.Value promises, and
		// error() returns base's.
		bd.stop(nil)
	}
	return v
}

func (bd *baseDeltaIter) error() error {
	if bd.err != nil {
		return bd.err
	}
	return bd.base.Err()
}

func (bd *baseDeltaIter) setBounds(lower, upper []byte) error {
	bd.stop(nil)
	bd.lower, bd.upper = lower, upper
	return bd.base.SetBounds(lower, upper)
}

func (bd *baseDeltaIter) refresh() error {
	bd.stop(nil)
	bd.err = nil
	bd.view = bd.wb.sortedView(bd.db.cmp)
	return bd.base.Refresh()
}

package shale

import "iter"

// Range-over-func iteration (issue 19, item 3): DB.Scan, DB.ScanReverse,
// Transaction.Scan, Transaction.ScanReverse, Iterator.All and
// Iterator.Backward. Each is a thin loop over an Iterator; the sequence's
// second value is the error, so that a loop naming both variables cannot
// compile without using it (a loop naming only kv drops it: always name
// err):
//
//	for kv, err := range db.Scan(nil, lower, upper) {
//		if err != nil {
//			return err
//		}
//		use(kv.Key, kv.Value)
//	}

// KV is one key and its value, as a scan yields them. Both slices are valid
// only until the loop body returns (the next step of the scan reuses or
// releases their memory); keep them with bytes.Clone.
type KV struct {
	Key, Value []byte
}

// Scan returns the keys in [lower, upper) in ascending order, with their
// values, as read with ro (its Snapshot, or the latest state at the first
// step). A nil lower or upper means ro's LowerBound or UpperBound (nil: no
// bound). An error ends the sequence, yielded once as (KV{}, err): range
// with both variables (for kv, err := range) to see it. The iterator
// behind it is closed when the sequence ends, the loop breaks or its body
// panics. Each range over the sequence is a new scan.
func (d *DB) Scan(ro *ReadOptions, lower, upper []byte) iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		scanOwned(d.NewIterator(scanReadOptions(ro, lower, upper)), false, yield)
	}
}

// ScanReverse is Scan in descending order: the same keys, last first.
func (d *DB) ScanReverse(ro *ReadOptions, lower, upper []byte) iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		scanOwned(d.NewIterator(scanReadOptions(ro, lower, upper)), true, yield)
	}
}

// Scan is DB.Scan over the transaction's writes laid over the DB
// (Transaction.NewIterator): it sees the writes made before each range
// over it starts.
func (t *Transaction) Scan(ro *ReadOptions, lower, upper []byte) iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		scanOwned(t.NewIterator(scanReadOptions(ro, lower, upper)), false, yield)
	}
}

// ScanReverse is Transaction.Scan in descending order.
func (t *Transaction) ScanReverse(ro *ReadOptions, lower, upper []byte) iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		scanOwned(t.NewIterator(scanReadOptions(ro, lower, upper)), true, yield)
	}
}

// All returns the iterator's keys and values from First to the end, an
// error as Scan does. The iterator stays the caller's: All neither closes
// it nor restores its position, and it must not move inside the loop.
func (i *Iterator) All() iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		if scanSteps(i, false, yield) {
			if err := i.Err(); err != nil {
				yield(KV{}, err)
			}
		}
	}
}

// Backward is All from Last to the start.
func (i *Iterator) Backward() iter.Seq2[KV, error] {
	return func(yield func(KV, error) bool) {
		if scanSteps(i, true, yield) {
			if err := i.Err(); err != nil {
				yield(KV{}, err)
			}
		}
	}
}

// scanReadOptions returns a copy of ro (nil: the defaults) with lower and
// upper, where set, as its bounds. The copy keeps Scan from changing the
// caller's ReadOptions, which may be shared.
func scanReadOptions(ro *ReadOptions, lower, upper []byte) *ReadOptions {
	var o ReadOptions
	if ro != nil {
		o = *ro
	}
	if lower != nil {
		o.LowerBound = lower
	}
	if upper != nil {
		o.UpperBound = upper
	}
	return &o
}

// scanOwned runs a scan over it, which it closes whatever happens: at the
// end, when yield asks to stop, or when yield panics (the deferred Close).
// The error yielded last is Err's or, when Err has none, Close's.
func scanOwned(it *Iterator, reverse bool, yield func(KV, error) bool) {
	closed := false
	defer func() {
		if !closed {
			it.Close()
		}
	}()
	if !scanSteps(it, reverse, yield) {
		return
	}
	err := it.Err()
	closed = true
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		yield(KV{}, err)
	}
}

// scanSteps yields every entry of it in the direction asked; it returns
// false as soon as yield does (yield is then never called again), true
// once the iterator is exhausted or stopped by an error.
func scanSteps(it *Iterator, reverse bool, yield func(KV, error) bool) bool {
	var ok bool
	if reverse {
		ok = it.Last()
	} else {
		ok = it.First()
	}
	for ok {
		// Value first: a value in a blob file is read by it, and a failed
		// read leaves the iterator invalid, with the error in Err.
		v := it.Value()
		if !it.Valid() {
			break
		}
		if !yield(KV{Key: it.Key(), Value: v}, nil) {
			return false
		}
		if reverse {
			ok = it.Prev()
		} else {
			ok = it.Next()
		}
	}
	return true
}

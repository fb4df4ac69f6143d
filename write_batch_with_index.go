package shale

import (
	"slices"
	"sort"

	"github.com/shaledb/shale/internal/base"
)

// WriteBatchWithIndex is a Batch that can also be read: its entries are
// indexed by key, so that GetFromBatch, GetFromBatchAndDB and the iterator
// of NewIteratorWithBase see what it holds over what a DB holds (RocksDB's
// WriteBatchWithIndex). Transactions keep their writes in one. Write its
// Batch with DB.Write. It is not safe for concurrent use.
type WriteBatchWithIndex struct {
	batch *Batch
	// entries logs every write in order; a write's position is its index.
	entries []indexedEntry
	// keys lists, per key, the positions of its point writes, oldest first.
	keys map[string][]int32
	// rangeDels lists the positions of the range deletions.
	rangeDels []int32
	// savePoints are the lengths to go back to, innermost last.
	savePoints []batchSavePoint
	// view is the sorted view the last iterator took, valid while gen and
	// the comparer are unchanged; gen counts changes.
	view    *batchView
	viewAt  uint64
	viewCmp *base.Comparer
	gen     uint64
}

// indexedEntry is one write of a WriteBatchWithIndex: for a range deletion
// key is the start and value the end.
type indexedEntry struct {
	kind       base.Kind
	key, value []byte
}

// batchSavePoint is what RollbackToSavePoint restores.
type batchSavePoint struct {
	entries    int
	data       int
	count      uint32
	memBytes   int
	tombstones bool
	merges     bool
}

// NewWriteBatchWithIndex returns an empty indexed batch.
func NewWriteBatchWithIndex() *WriteBatchWithIndex {
	return &WriteBatchWithIndex{batch: newBatch(), keys: make(map[string][]int32)}
}

func (wb *WriteBatchWithIndex) add(kind base.Kind, key, value []byte, hasValue bool) {
	wb.batch.add(kind, key, value, hasValue)
	e := indexedEntry{kind: kind, key: slices.Clone(key)}
	if hasValue {
		e.value = append([]byte{}, value...)
	}
	pos := int32(len(wb.entries))
	wb.entries = append(wb.entries, e)
	if kind == base.KindRangeDelete {
		wb.rangeDels = append(wb.rangeDels, pos)
	} else {
		k := string(key)
		wb.keys[k] = append(wb.keys[k], pos)
	}
	wb.gen++
}

// Put adds a Set of key to value.
func (wb *WriteBatchWithIndex) Put(key, value []byte) { wb.add(base.KindSet, key, value, true) }

// Delete adds a tombstone for key.
func (wb *WriteBatchWithIndex) Delete(key []byte) { wb.add(base.KindDelete, key, nil, false) }

// SingleDelete adds a single-delete tombstone for key (Batch.SingleDelete);
// reads through the index treat it as a Delete.
func (wb *WriteBatchWithIndex) SingleDelete(key []byte) {
	wb.add(base.KindSingleDelete, key, nil, false)
}

// Merge adds a merge of operand into key's value; reads through the index
// apply it with the DB's Options.MergeOperator.
func (wb *WriteBatchWithIndex) Merge(key, operand []byte) { wb.add(base.KindMerge, key, operand, true) }

// DeleteRange deletes every key in [start, end): reads through the index
// hide the DB's keys in the range and the batch's earlier writes to them.
// An empty range (start == end) adds nothing; start after end is refused
// with an error matching ErrInvalidArgument. Ranges are compared bytewise
// (the comparer of the DB the batch is read over decides for reads).
func (wb *WriteBatchWithIndex) DeleteRange(start, end []byte) error {
	switch c := base.DefaultComparer.Compare(start, end); {
	case c == 0:
		return nil
	case c > 0:
		return base.InvalidArgumentf("shale: DeleteRange start %q must be before end %q", start, end)
	}
	wb.add(base.KindRangeDelete, start, end, true)
	return nil
}

// Batch returns the batch of the writes, for DB.Write. It stays the
// indexed batch's own: modify it only through the indexed batch.
func (wb *WriteBatchWithIndex) Batch() *Batch { return wb.batch }

// Len returns the number of writes in the batch.
func (wb *WriteBatchWithIndex) Len() int { return len(wb.entries) }

// Clear empties the batch and drops its save points.
func (wb *WriteBatchWithIndex) Clear() {
	wb.batch.Reset()
	wb.entries = wb.entries[:0]
	clear(wb.keys)
	wb.rangeDels = wb.rangeDels[:0]
	wb.savePoints = wb.savePoints[:0]
	wb.view = nil
	wb.gen++
}

// SetSavePoint records the batch's state; RollbackToSavePoint returns to
// it. Save points nest.
func (wb *WriteBatchWithIndex) SetSavePoint() {
	b := wb.batch
	b.init()
	wb.savePoints = append(wb.savePoints, batchSavePoint{entries: len(wb.entries), data: len(b.data),
		count: b.count, memBytes: b.memBytes, tombstones: b.tombstones, merges: b.merges})
}

// errNoSavePoint is RollbackToSavePoint's error without a save point.
var errNoSavePoint = base.KindErrorf(base.ErrNotFound, "shale: RollbackToSavePoint: no save point is set")

// RollbackToSavePoint discards the writes made since the innermost save
// point and removes that save point. Without one it returns an error
// matching ErrNotFound (RocksDB's NotFound) and changes nothing.
func (wb *WriteBatchWithIndex) RollbackToSavePoint() error {
	n := len(wb.savePoints)
	if n == 0 {
		return errNoSavePoint
	}
	sp := wb.savePoints[n-1]
	wb.savePoints = wb.savePoints[:n-1]
	for i := len(wb.entries) - 1; i >= sp.entries; i-- {
		e := wb.entries[i]
		if e.kind == base.KindRangeDelete {
			wb.rangeDels = wb.rangeDels[:len(wb.rangeDels)-1]
			continue
		}
		k := string(e.key)
		if ps := wb.keys[k]; len(ps) <= 1 {
			delete(wb.keys, k)
		} else {
			wb.keys[k] = ps[:len(ps)-1]
		}
	}
	clear(wb.entries[sp.entries:])
	wb.entries = wb.entries[:sp.entries]
	b := wb.batch
	b.data = b.data[:sp.data]
	b.count, b.memBytes, b.tombstones, b.merges = sp.count, sp.memBytes, sp.tombstones, sp.merges
	wb.gen++
	return nil
}

// popSavePoint drops the innermost save point without rolling back.
func (wb *WriteBatchWithIndex) popSavePoint() {
	if n := len(wb.savePoints); n > 0 {
		wb.savePoints = wb.savePoints[:n-1]
	}
}

// lookupState is what the batch says about one key.
type lookupState uint8

const (
	// lookupAbsent: the batch has no write of the key; the DB decides.
	lookupAbsent lookupState = iota
	// lookupValue: the batch decides the value (a Set).
	lookupValue
	// lookupDeleted: the batch deletes the key.
	lookupDeleted
	// lookupMerge: merge operands to apply, over the batch's own base
	// (baseKnown: a Set, or nothing after a delete) or over the DB's value.
	lookupMerge
)

// batchLookup is the batch's answer for one key.
type batchLookup struct {
	state lookupState
	// value is the Set's value (lookupValue), or the base of the operands
	// when baseKnown and hasBase.
	value     []byte
	baseKnown bool
	hasBase   bool
	// operands are the merge operands, oldest first.
	operands [][]byte
}

// lookup resolves key in the batch under cmp (range deletions compare by
// it; point writes match by bytes).
func (wb *WriteBatchWithIndex) lookup(cmp base.Compare, key []byte) batchLookup {
	return wb.resolve(cmp, key, wb.keys[string(key)])
}

// resolve folds the writes of key (at positions ps, oldest first) and the
// range deletions covering it into one answer.
func (wb *WriteBatchWithIndex) resolve(cmp base.Compare, key []byte, ps []int32) batchLookup {
	rd := int32(-1)
	for _, p := range wb.rangeDels {
		e := &wb.entries[p]
		if p > rd && cmp(e.key, key) <= 0 && cmp(key, e.value) < 0 {
			rd = p
		}
	}
	// The newest write that is not a merge, and the merges after it.
	j := len(ps) - 1
	for j >= 0 && wb.entries[ps[j]].kind == base.KindMerge {
		j--
	}
	var r batchLookup
	first := j + 1 // the first merge operand's index in ps
	switch {
	case rd >= 0 && (j < 0 || rd > ps[j]):
		// A range deletion after every other write: nothing under the
		// merges that follow it.
		r.baseKnown = true
		first = sort.Search(len(ps), func(i int) bool { return ps[i] > rd })
	case j >= 0:
		r.baseKnown = true
		if e := &wb.entries[ps[j]]; e.kind == base.KindSet {
			r.value, r.hasBase = e.value, true
		}
	}
	for _, p := range ps[first:] {
		r.operands = append(r.operands, wb.entries[p].value)
	}
	switch {
	case len(r.operands) > 0:
		r.state = lookupMerge
	case !r.baseKnown:
		r.state = lookupAbsent
	case r.hasBase:
		r.state = lookupValue
	default:
		r.state, r.value = lookupDeleted, nil
	}
	return r
}

// GetFromBatch returns the value the batch alone gives key: ErrNotFound
// when it deletes the key or does not write it, and an error matching
// ErrInvalidArgument when only merges would decide it (use
// GetFromBatchAndDB). Range deletions compare bytewise.
func (wb *WriteBatchWithIndex) GetFromBatch(key []byte) ([]byte, error) {
	r := wb.lookup(base.DefaultComparer.Compare, key)
	switch r.state {
	case lookupValue:
		return slices.Clone(r.value), nil
	case lookupMerge:
		return nil, base.InvalidArgumentf("shale: GetFromBatch: key %q has merge operands; use GetFromBatchAndDB", key)
	}
	return nil, ErrNotFound
}

// GetFromBatchAndDB returns key's value as the batch leaves it over db
// (read at ro: its snapshot, if any): the batch's own value, deletion or
// merges (applied over db's value with Options.MergeOperator), and db's
// value for a key the batch does not touch.
func (wb *WriteBatchWithIndex) GetFromBatchAndDB(db *DB, ro *ReadOptions, key []byte) ([]byte, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	r := wb.lookup(db.cmp.Compare, key)
	switch r.state {
	case lookupValue:
		return slices.Clone(r.value), nil
	case lookupDeleted:
		return nil, ErrNotFound
	case lookupMerge:
		if r.baseKnown {
			return db.fullMerge(key, r.value, r.hasBase, r.operands)
		}
		v, err := db.Get(key, ro)
		switch {
		case err == nil:
			return db.fullMerge(key, v, true, r.operands)
		case err == ErrNotFound:
			return db.fullMerge(key, nil, false, r.operands)
		default:
			return nil, err
		}
	}
	return db.Get(key, ro)
}

// batchView is a sorted, immutable picture of a batch for an iterator:
// every key the batch writes, resolved, and the union of its range
// deletions (which hide the DB's keys the batch does not write).
type batchView struct {
	cmp     base.Compare
	entries []viewEntry
	// hidden are disjoint, sorted [start, end) ranges.
	hidden [][2][]byte
}

type viewEntry struct {
	key []byte
	r   batchLookup
}

// sortedView returns the batch's view under cmp, built once per change.
func (wb *WriteBatchWithIndex) sortedView(c *base.Comparer) *batchView {
	if v := wb.view; v != nil && wb.viewAt == wb.gen && wb.viewCmp == c {
		return v
	}
	cmp := c.Compare
	v := &batchView{cmp: cmp, entries: make([]viewEntry, 0, len(wb.keys))}
	for k, ps := range wb.keys {
		key := []byte(k)
		v.entries = append(v.entries, viewEntry{key: key, r: wb.resolve(cmp, key, ps)})
	}
	slices.SortFunc(v.entries, func(a, b viewEntry) int { return cmp(a.key, b.key) })
	if len(wb.rangeDels) > 0 {
		ranges := make([][2][]byte, 0, len(wb.rangeDels))
		for _, p := range wb.rangeDels {
			ranges = append(ranges, [2][]byte{wb.entries[p].key, wb.entries[p].value})
		}
		slices.SortFunc(ranges, func(a, b [2][]byte) int { return cmp(a[0], b[0]) })
		for _, r := range ranges {
			if n := len(v.hidden); n > 0 && cmp(r[0], v.hidden[n-1][1]) <= 0 {
				if cmp(r[1], v.hidden[n-1][1]) > 0 {
					v.hidden[n-1][1] = r[1]
				}
				continue
			}
			v.hidden = append(v.hidden, r)
		}
	}
	wb.view, wb.viewAt, wb.viewCmp = v, wb.gen, c
	return v
}

// hides reports whether a range deletion of the batch covers key.
func (v *batchView) hides(key []byte) bool {
	i := sort.Search(len(v.hidden), func(i int) bool { return v.cmp(v.hidden[i][0], key) > 0 })
	return i > 0 && v.cmp(key, v.hidden[i-1][1]) < 0
}

// NewIteratorWithBase returns an iterator over the batch's writes laid
// over base (RocksDB's NewIteratorWithBase), within base's bounds: the
// batch's values replace base's, its deletions and range deletions hide
// base's keys, and its merges apply over base's values. It takes base
// over: closing it closes base. It sees the batch as it is now; later
// writes to the batch need a new iterator (or Refresh). In prefix mode
// (base's ReadOptions.PrefixSameAsStart) a seek confines the batch's keys
// to the seek key's prefix as it confines base's; after First and Last
// the batch's keys are not confined.
func (wb *WriteBatchWithIndex) NewIteratorWithBase(base *Iterator) *Iterator {
	switch {
	case base == nil:
		return &Iterator{err: errNoBaseIterator}
	case base.delta != nil:
		base.Close()
		return &Iterator{err: errBaseHasBatch}
	case base.it == nil:
		return base // an iterator that failed: its error stands
	}
	d := base.db
	bd := &baseDeltaIter{db: d, base: base, wb: wb, view: wb.sortedView(d.cmp), cmp: d.cmp.Compare}
	bd.lower, bd.upper = base.ro.LowerBound, base.ro.UpperBound
	return &Iterator{db: d, delta: bd}
}

var (
	errNoBaseIterator = base.InvalidArgumentf("shale: NewIteratorWithBase needs a base iterator")
	errBaseHasBatch   = base.InvalidArgumentf("shale: NewIteratorWithBase: the base iterator already has a batch over it")
)

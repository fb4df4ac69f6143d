package shale

import (
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// CompactionFilterValueType says what a compaction filter is shown
// (RocksDB's CompactionFilter::ValueType).
type CompactionFilterValueType int

const (
	// ValueTypeValue is a key's value: a Put, inline or in a blob file.
	ValueTypeValue CompactionFilterValueType = iota
	// ValueTypeMergeOperand is one merge operand (Options.MergeOperator).
	ValueTypeMergeOperand
)

// CompactionFilterDecision is what a compaction filter does with an entry
// (RocksDB's CompactionFilter::Decision).
type CompactionFilterDecision int

const (
	// DecisionKeep keeps the entry as it is.
	DecisionKeep CompactionFilterDecision = iota
	// DecisionRemove removes it: a value is replaced by a tombstone (dropped
	// where nothing older of the key can lie below), so older versions stay
	// hidden; an operand is dropped, and the merge goes on without it.
	DecisionRemove
	// DecisionChangeValue replaces the value or operand with newValue.
	DecisionChangeValue
	// DecisionRemoveAndSkipUntil removes the key, and every key from it up
	// to skipUntil (exclusive) without calling the filter for them: each is
	// removed as by DecisionRemove, so, unlike RocksDB, no older version
	// comes back. A skipUntil not after the key is taken as DecisionKeep,
	// as RocksDB does.
	DecisionRemoveAndSkipUntil
)

// CompactionFilter decides, during compactions (not flushes, as RocksDB's
// default), the fate of each entry a compaction keeps that no open snapshot
// can see: the newest version of a key newer than every snapshot, and,
// when that is a merge operand, the operands and value under it in the
// same range. Options.CompactionFilter is shared by concurrent
// compactions; Options.CompactionFilterFactory makes one per compaction.
type CompactionFilter interface {
	// Name identifies the filter (recorded in the OPTIONS file).
	Name() string
	// Filter is called with the compaction's input level, the key, what the
	// entry is, and value, which returns the value or operand: a value in a
	// blob file is read only when value is called, so a filter that decides
	// on the key alone never reads blob files. The slices are valid only
	// during the call. An error from value fails the compaction.
	Filter(level int, key []byte, valueType CompactionFilterValueType, value func() ([]byte, error)) (decision CompactionFilterDecision, newValue, skipUntil []byte)
}

// CompactionFilterContext describes the compaction a factory makes a
// filter for (RocksDB's CompactionFilter::Context).
type CompactionFilterContext struct {
	// IsFullCompaction says every table of the database is an input.
	IsFullCompaction bool
	// IsManualCompaction says CompactRange asked for it.
	IsManualCompaction bool
	// InputLevel and OutputLevel are the compaction's levels.
	InputLevel, OutputLevel int
}

// CompactionFilterFactory makes a CompactionFilter for each compaction
// (RocksDB's CompactionFilterFactory); a filter it makes is used by one
// compaction at a time.
type CompactionFilterFactory interface {
	// Name identifies the factory (recorded in the OPTIONS file).
	Name() string
	// CreateCompactionFilter returns the filter of one compaction, or nil
	// for none.
	CreateCompactionFilter(ctx CompactionFilterContext) CompactionFilter
}

// hasCompactionFilter reports whether compactions run a filter.
func (d *DB) hasCompactionFilter() bool {
	return d.opts.CompactionFilter != nil || d.opts.CompactionFilterFactory != nil
}

// compactionFilterFor returns the filter of a compaction, or nil:
// Options.CompactionFilter when set (RocksDB's precedence), else the
// factory's.
func (d *DB) compactionFilterFor(ctx CompactionFilterContext) CompactionFilter {
	if f := d.opts.CompactionFilter; f != nil {
		return f
	}
	if fac := d.opts.CompactionFilterFactory; fac != nil {
		return fac.CreateCompactionFilter(ctx)
	}
	return nil
}

// isFullCompaction reports whether inputs are every table of v.
func isFullCompaction(v *manifest.Version, inputs int) bool {
	n := 0
	for _, files := range v.Levels {
		n += len(files)
	}
	return n == inputs
}

// filterIter applies a compaction filter to a compaction's merged input,
// between it and compact.Run: a removed value becomes a Delete at its
// seqnum, a removed operand is skipped, a changed one carries its new
// value (a changed blob value becomes a Set). Only entries newer than
// every snapshot (seq > newest) are shown to the filter, and of a key only
// its newest entry and, while they are merge operands, the entries under
// it; the rest pass unchanged, to be shadowed or kept by Run as before.
type filterIter struct {
	base.InternalIterator
	d      *DB
	f      CompactionFilter
	level  int
	newest base.SeqNum
	cmp    base.Compare

	// curKey is the user key of the last entry seen; filtering says its
	// entries are still shown to the filter.
	curKey    []byte
	filtering bool
	// skipUntil, while skipping, ends the keys removed unasked
	// (DecisionRemoveAndSkipUntil).
	skipUntil []byte
	skipping  bool

	// key and value are the current entry, as changed.
	key   base.InternalKey
	value []byte
	err   error
	// blobValue caches the current entry's blob value for value().
	blobValue []byte
	blobRead  bool
	blobErr   error
}

func (d *DB) newFilterIter(it base.InternalIterator, f CompactionFilter, level int, snaps []base.SeqNum) *filterIter {
	var newest base.SeqNum
	if len(snaps) > 0 {
		newest = snaps[len(snaps)-1]
	}
	return &filterIter{InternalIterator: it, d: d, f: f, level: level, newest: newest, cmp: d.cmp.Compare}
}

// First implements base.InternalIterator.
func (i *filterIter) First() bool {
	i.curKey, i.filtering, i.skipping = nil, false, false
	return i.settle(i.InternalIterator.First())
}

// Next implements base.InternalIterator.
func (i *filterIter) Next() bool { return i.settle(i.InternalIterator.Next()) }

// Key implements base.InternalIterator.
func (i *filterIter) Key() base.InternalKey { return i.key }

// Value implements base.InternalIterator.
func (i *filterIter) Value() []byte { return i.value }

// Error implements base.InternalIterator.
func (i *filterIter) Error() error {
	if i.err != nil {
		return i.err
	}
	return i.InternalIterator.Error()
}

// settle decides the entry the input is at (ok), skipping the operands the
// filter removes.
func (i *filterIter) settle(ok bool) bool {
	for ; ok; ok = i.InternalIterator.Next() {
		k := i.InternalIterator.Key()
		i.key, i.value = k, i.InternalIterator.Value()
		newKey := i.curKey == nil || i.cmp(k.UserKey, i.curKey) != 0
		if newKey {
			i.curKey = append(i.curKey[:0], k.UserKey...)
			i.filtering = true
		}
		seq, kind := k.SeqNum(), k.Kind()
		visible := seq > i.newest && (kind == base.KindSet || kind == base.KindBlobIndex || kind == base.KindMerge)
		if i.skipping && newKey {
			if i.cmp(k.UserKey, i.skipUntil) < 0 {
				i.filtering = false
				if visible {
					i.key.Trailer = base.MakeTrailer(seq, base.KindDelete)
					i.value = nil
				}
				return true
			}
			i.skipping = false
		}
		if !i.filtering || !visible {
			i.filtering = false
			return true
		}
		vt := ValueTypeValue
		if kind == base.KindMerge {
			vt = ValueTypeMergeOperand
		}
		i.blobRead = false
		decision, newValue, skipUntil := i.f.Filter(i.level, k.UserKey, vt, i.valueFunc(kind))
		if i.blobRead && i.blobErr != nil {
			i.err = i.blobErr
			return false
		}
		if decision == DecisionRemoveAndSkipUntil && i.cmp(skipUntil, k.UserKey) <= 0 {
			decision = DecisionKeep
		}
		switch decision {
		case DecisionRemove:
			if kind == base.KindMerge {
				continue // the operand is dropped; the next entry is shown
			}
			i.filtering = false
			i.key.Trailer = base.MakeTrailer(seq, base.KindDelete)
			i.value = nil
		case DecisionRemoveAndSkipUntil:
			i.filtering = false
			i.skipping, i.skipUntil = true, append(i.skipUntil[:0], skipUntil...)
			// The whole key goes, an operand included.
			i.key.Trailer = base.MakeTrailer(seq, base.KindDelete)
			i.value = nil
		case DecisionChangeValue:
			i.value = newValue
			if kind == base.KindBlobIndex {
				i.key.Trailer = base.MakeTrailer(seq, base.KindSet)
			}
			i.filtering = kind == base.KindMerge
		default:
			i.filtering = kind == base.KindMerge
		}
		return true
	}
	return false
}

// valueFunc returns the value() of the current entry: a blob value is read
// at the first call.
func (i *filterIter) valueFunc(kind base.Kind) func() ([]byte, error) {
	raw := i.value
	if kind != base.KindBlobIndex {
		return func() ([]byte, error) { return raw, nil }
	}
	key := i.key.UserKey
	return func() ([]byte, error) {
		if !i.blobRead {
			i.blobRead = true
			i.blobValue, i.blobErr = i.d.readBlobValue(key, raw, false, nil)
		}
		return i.blobValue, i.blobErr
	}
}

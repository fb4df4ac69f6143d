package dbiter

import (
	"bytes"
	"fmt"

	"github.com/shaledb/shale/internal/base"
)

// RangeDelChecker answers whether a range tombstone visible at snapshot
// deletes the entry (key, seq). *rangedel.List implements it.
type RangeDelChecker interface {
	Covers(key []byte, seq, snapshot base.SeqNum) bool
}

// SecondaryChecker answers whether a secondary tombstone the reader sees
// deletes the Set (key, value) at seq, the newest version of key visible
// at the snapshot. The root package's secondary filter implements it.
type SecondaryChecker interface {
	Deletes(key, value []byte, seq base.SeqNum) bool
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
	// Secondary applies secondary tombstones to Sets; a nil interface
	// means none.
	Secondary SecondaryChecker
	// ValueResolver turns the value of a Merge or BlobIndex entry into the
	// user value when the iterator positions; nil returns it unchanged (Kind
	// tells the caller what it holds). The DB's iterators pass none and
	// resolve blob indexes only when Value is called.
	ValueResolver func(kind base.Kind, value []byte) ([]byte, error)
	// Merge, when not nil, resolves merge operands: a key whose newest
	// visible entry is a Merge takes the value Merge returns for its
	// operands, oldest first, applied to base (of baseKind Set or BlobIndex,
	// which Merge resolves) when hasBase: the newest older entry the reader
	// sees, if it is a value that no range tombstone and no secondary
	// tombstone deletes. A tombstone, a deleted value or the end of the
	// key's entries leaves no base; an operand a range tombstone deletes
	// ends the operands there, with no base. Such a key's Kind is Set.
	// Without Merge, a Merge entry's value passes through ValueResolver.
	Merge func(key, base []byte, baseKind base.Kind, hasBase bool, operands [][]byte) ([]byte, error)
	// Reseek turns on seeking past long runs of versions of one user key,
	// after MaxSkip of them, RocksDB's max_sequential_skip_in_iterations:
	// once a move has stepped over more than MaxSkip entries of one user
	// key in a row (older versions of a key already decided, or versions
	// newer than the snapshot), it seeks past them instead of stepping on;
	// see the package comment for where exactly. MaxSkip 0 seeks at the
	// first such entry. The forward seeks need a child that is a
	// base.InternalSeeker; without one the iterator steps. Without Reseek
	// (the zero value) it always steps. (An int32, so that it shares a word
	// with Reseek.)
	Reseek  bool
	MaxSkip int32
	// PrefixExtractor is the extractor of the prefixes SetPrefix confines
	// iteration to; nil when SetPrefix is never called.
	PrefixExtractor base.SliceTransform
}

// Stats counts the internal entries an Iter passed over, with the meanings
// of RocksDB's perf context counters of the same names. A move that lands
// on a key does not count that key's deciding entry, except as noted.
type Stats struct {
	// KeySkipped (internal_key_skipped_count) counts visible entries
	// stepped over: the current key's entry on Next (and on Prev after
	// Next), older versions of a key already decided (those a tombstone
	// hides included), and, going backward, every visible entry of each key
	// passed, the deciding one and tombstones included.
	KeySkipped uint64
	// DeleteSkipped (internal_delete_skipped_count) counts the keys found
	// deleted while moving: once per key whose newest visible entry is a
	// Delete or SingleDelete, or a value a RangeDels tombstone covers
	// (going backward, every tombstone entry of the key passed counts).
	DeleteSkipped uint64
	// RecentSkipped (internal_recent_skipped_count) counts entries stepped
	// over because they are newer than the snapshot.
	RecentSkipped uint64
	// Reseeks (RocksDB's NUMBER_OF_RESEEKS_IN_ITERATION ticker) counts the
	// seeks made instead of stepping (Options.MaxSkip).
	Reseeks uint64
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
	// kind is the kind of the entry that decided the current key.
	kind base.Kind
	// keyBuf owns the current user key: the child's key memory changes as
	// it moves, and moving it is how Next and Prev find the neighbours.
	keyBuf []byte
	// valBuf owns the current value when iterating backward, where the
	// child has already moved past the deciding entry.
	valBuf []byte
	err    error
	// ops, base*, gathered by gatherForward and valueBackward, are the
	// operands and base of the key being merged (mergeState).
	merge mergeState
	// ahead is set, while posForward, when the child is already past the
	// entry that decided the current key (a merge gathered its operands):
	// at an entry not yet stepped over, or exhausted when !childValid.
	ahead bool
	// seeker is it as a base.InternalSeeker, nil when it is none or
	// Options.Reseek is off.
	seeker base.InternalSeeker
	stats  Stats
	// bytewise says cmp is bytes.Compare (base.IsBytesCompare).
	bytewise bool
	// plain says a Set is decided by its key and seqnum alone: the
	// comparer is bytewise and there are no range tombstones, secondary
	// tombstones or value resolver to consult (nextSet's condition).
	plain bool
	// inPrefix confines iteration to the keys of prefix (SetPrefix);
	// prefixSeeker is it as a base.PrefixSeeker, which SeekGE then seeks
	// with.
	inPrefix     bool
	prefix       []byte
	prefixSeeker base.PrefixSeeker
}

// New returns an iterator over it with the options o. The iterator takes
// ownership of it: Close closes it.
func New(it base.InternalIterator, o Options) *Iter {
	if o.Cmp == nil {
		o.Cmp = base.DefaultComparer
	}
	i := &Iter{it: it, cmp: o.Cmp.Compare, opts: o, bytewise: base.IsBytesCompare(o.Cmp.Compare)}
	i.plain = i.bytewise && o.RangeDels == nil && o.Secondary == nil && o.ValueResolver == nil
	if o.Reseek {
		i.seeker, _ = it.(base.InternalSeeker)
	}
	i.prefixSeeker, _ = it.(base.PrefixSeeker)
	return i
}

// SetPrefix confines iteration to the keys with prefix, a prefix by
// Options.PrefixExtractor, until ClearPrefix (RocksDB's
// prefix_same_as_start): every move stops, as at a bound, at the first key
// without it. A SeekGE then seeks the child with SeekPrefixGE, when it is
// a base.PrefixSeeker, so that sources without the prefix are skipped; the
// seek key must have the prefix. It may be called while positioned (at a
// key with the prefix): the moves that follow are confined.
func (i *Iter) SetPrefix(prefix []byte) {
	if i.opts.PrefixExtractor == nil {
		base.AssertionFailedf("dbiter: SetPrefix without Options.PrefixExtractor")
	}
	i.inPrefix, i.prefix = true, append(i.prefix[:0], prefix...)
}

// ClearPrefix ends SetPrefix's confinement.
func (i *Iter) ClearPrefix() { i.inPrefix = false }

// InPrefix reports whether iteration is confined to a prefix (SetPrefix).
func (i *Iter) InPrefix() bool { return i.inPrefix }

// outOfPrefix reports whether user key k is past the prefix iteration is
// confined to; only called while inPrefix.
func (i *Iter) outOfPrefix(k []byte) bool {
	return !base.HasPrefix(i.opts.PrefixExtractor, k, i.prefix)
}

// Stats returns the counts of the entries the iterator passed over so far.
func (i *Iter) Stats() Stats { return i.stats }

// reseekBackward reports whether a backward move that has stepped over
// skipped entries of one user key seeks instead of stepping on.
func (i *Iter) reseekBackward(skipped int) bool {
	return i.opts.Reseek && skipped >= int(i.opts.MaxSkip)
}

func (i *Iter) fail(err error) bool {
	i.ahead = false
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
	i.ahead = false
	i.pos = p
	i.key, i.value = nil, nil
	return false
}

func badKind(k base.InternalKey) error {
	return fmt.Errorf("%w: dbiter: entry %s has unknown kind", base.ErrCorruption, k)
}

// compare is cmp, calling bytes.Compare directly when it is that.
func (i *Iter) compare(a, b []byte) int {
	if i.bytewise {
		return bytes.Compare(a, b)
	}
	return i.cmp(a, b)
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
// With skipping, keyBuf holds a key already decided (the current one, on
// Next) whose remaining entries are passed over.
//
// This is RocksDB's FindNextUserEntry, counters and reseeks included: a
// run of more than MaxSkip entries of one user key, passed over because
// the key is decided or because they are newer than the snapshot, ends in
// a seek past the key's last possible entry, or to its first version the
// snapshot sees; at most once until a new key is reached, so that a seek
// that lands short cannot repeat forever.
func (i *Iter) findNextEntry(ok, skipping bool) bool {
	i.ahead = false
	snap, upper := i.opts.Snapshot, i.opts.Upper
	// haveKey says keyBuf holds the key of the entries being counted in
	// skipped: a key decided (skipping), or one only newer versions of
	// which were seen so far.
	haveKey := skipping
	skipped := 0
	reseeked := false
	for ok {
		k := i.it.Key()
		if upper != nil && i.compare(k.UserKey, upper) >= 0 {
			break
		}
		if i.inPrefix && i.outOfPrefix(k.UserKey) {
			break
		}
		if seq := k.SeqNum(); seq > snap {
			i.stats.RecentSkipped++
			if haveKey && i.cmp(k.UserKey, i.keyBuf) == 0 {
				skipped++
			} else {
				i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
				haveKey, skipping, skipped, reseeked = true, false, 0, false
			}
		} else if skipping && (i.bytewise && bytes.Compare(k.UserKey, i.keyBuf) <= 0 ||
			!i.bytewise && i.cmp(k.UserKey, i.keyBuf) <= 0) {
			// (The bytewise test is written out here, the hottest
			// comparison of a scan, so that it inlines.)
			i.stats.KeySkipped++
			skipped++
		} else {
			skipped, reseeked = 0, false
			switch kind := k.Kind(); kind {
			case base.KindSet, base.KindMerge, base.KindBlobIndex:
				i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
				if (i.opts.RangeDels == nil || !i.opts.RangeDels.Covers(i.keyBuf, seq, snap)) &&
					(kind != base.KindSet || i.opts.Secondary == nil || !i.opts.Secondary.Deletes(i.keyBuf, i.it.Value(), seq)) {
					if kind == base.KindMerge && i.opts.Merge != nil {
						return i.mergeForward()
					}
					v, err := i.resolve(kind, i.it.Value())
					if err != nil {
						return i.fail(err)
					}
					i.key, i.value, i.kind, i.pos = i.keyBuf, v, kind, posForward
					return true
				}
				i.stats.DeleteSkipped++
				haveKey, skipping = true, true
			case base.KindDelete, base.KindSingleDelete:
				i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
				i.stats.DeleteSkipped++
				haveKey, skipping = true, true
			case base.KindRangeDelete, base.KindLogData:
				// Not a version of a user key: stepped over.
			default:
				return i.fail(badKind(k))
			}
		}
		if skipped > int(i.opts.MaxSkip) && !reseeked && i.seeker != nil {
			skipped, reseeked = 0, true
			i.stats.Reseeks++
			if skipping {
				// Past every version of the decided key: the smallest
				// trailer sorts after all of them.
				ok = i.seeker.SeekGEInternal(base.InternalKey{UserKey: i.keyBuf})
			} else {
				// To the newest version the snapshot sees.
				ok = i.seeker.SeekGEInternal(base.MakeInternalKey(i.keyBuf, snap, base.KindMax))
			}
			continue
		}
		ok = i.it.Next()
	}
	return i.exhausted(posExhaustedForward)
}

// nextSet is the common case of a forward step, taken before
// findNextEntry when the iterator is plain: the child's entry is a Set of
// a key after keyBuf (the key just left), within Upper and visible. That
// entry decides its key exactly as findNextEntry would decide it (a new
// key resets the skip run, and nothing is counted), so nextSet positions
// there and returns true; otherwise it changes nothing and returns false.
// A scan of keys with one version each takes only this path.
func (i *Iter) nextSet() bool {
	k := i.it.Key()
	if k.Kind() != base.KindSet || k.SeqNum() > i.opts.Snapshot ||
		bytes.Compare(k.UserKey, i.keyBuf) <= 0 ||
		i.opts.Upper != nil && bytes.Compare(k.UserKey, i.opts.Upper) >= 0 ||
		i.inPrefix && i.outOfPrefix(k.UserKey) {
		return false
	}
	i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
	i.key, i.value, i.kind = i.keyBuf, i.it.Value(), base.KindSet
	return true
}

// findPrevEntry moves the child backward from an entry (ok) or from
// exhaustion (!ok), key by key, until it finds a present key; it leaves
// the child one entry before that key. It is RocksDB's PrevInternal: for
// each key, the visible entries from the oldest up decide it
// (valueBackward), then the child steps back past the key's remaining
// entries (beforeKey).
func (i *Iter) findPrevEntry(ok bool) bool {
	i.ahead = false
	lower := i.opts.Lower
	for ok {
		k := i.it.Key()
		if lower != nil && i.cmp(k.UserKey, lower) < 0 {
			break
		}
		if i.inPrefix && i.outOfPrefix(k.UserKey) {
			break
		}
		i.keyBuf = append(i.keyBuf[:0], k.UserKey...)
		live, liveSeq, liveKind, pos, err := i.valueBackward()
		if err != nil {
			return i.fail(err)
		}
		if ok, err = i.beforeKey(pos); err != nil {
			return i.fail(err)
		}
		if live {
			if found, err := i.decide(liveSeq, liveKind); err != nil {
				return i.fail(err)
			} else if found {
				i.childValid = ok
				return true
			}
		}
	}
	if !ok {
		if err := i.it.Error(); err != nil {
			return i.fail(err)
		}
	}
	return i.exhausted(posExhaustedReverse)
}

// childAt says where valueBackward left the child.
type childAt int8

const (
	// atEntry: at an entry, of keyBuf or before it.
	atEntry childAt = iota
	// atStart: exhausted going backward, before every entry.
	atStart
	// beforeKeyBuf: already at an entry before keyBuf's entries.
	beforeKeyBuf
)

// valueBackward decides the key in keyBuf going backward, the child at the
// key's last (oldest) entry: live says its newest visible entry is a value
// (of kind at seq, copied into valBuf), which range tombstones may still
// delete (decide). It steps up through the visible entries, oldest first,
// so the last one seen is the newest; after MaxSkip of them it seeks to
// the newest visible entry instead (RocksDB's FindValueForCurrentKey and
// FindValueForCurrentKeyUsingSeek).
func (i *Iter) valueBackward() (live bool, seq base.SeqNum, kind base.Kind, pos childAt, err error) {
	snap := i.opts.Snapshot
	i.merge.reset(false)
	ok := true
	for skipped := 0; ok; skipped++ {
		k := i.it.Key()
		if k.SeqNum() > snap || i.cmp(k.UserKey, i.keyBuf) != 0 {
			return live, seq, kind, atEntry, nil
		}
		if i.seeker != nil && i.reseekBackward(skipped) {
			return i.newestVisible()
		}
		switch kd := k.Kind(); kd {
		case base.KindMerge:
			live, seq, kind = true, k.SeqNum(), kd
			if i.opts.Merge != nil {
				i.merge.add(i.it.Value(), seq)
			} else {
				i.valBuf = append(i.valBuf[:0], i.it.Value()...)
			}
		case base.KindSet, base.KindBlobIndex:
			live, seq, kind = true, k.SeqNum(), kd
			i.valBuf = append(i.valBuf[:0], i.it.Value()...)
			i.merge.setBase(true, seq, kd)
		case base.KindDelete, base.KindSingleDelete:
			live = false
			i.merge.setBase(false, 0, 0)
			i.stats.DeleteSkipped++
		case base.KindRangeDelete, base.KindLogData:
		default:
			return false, 0, 0, atEntry, badKind(k)
		}
		i.stats.KeySkipped++
		ok = i.it.Prev()
	}
	if err := i.it.Error(); err != nil {
		return false, 0, 0, atEntry, err
	}
	return live, seq, kind, atStart, nil
}

// newestVisible is valueBackward's seek: the child goes forward to the
// newest entry of keyBuf the snapshot sees, which decides the key. When
// that leaves it past keyBuf's entries (no version of the key is a point
// entry), it is put back before them at once.
func (i *Iter) newestVisible() (live bool, seq base.SeqNum, kind base.Kind, pos childAt, err error) {
	i.stats.Reseeks++
	ok := i.seeker.SeekGEInternal(base.MakeInternalKey(i.keyBuf, i.opts.Snapshot, base.KindMax))
	for ; ok && i.cmp(i.it.Key().UserKey, i.keyBuf) == 0; ok = i.it.Next() {
		k := i.it.Key()
		switch kd := k.Kind(); kd {
		case base.KindMerge:
			if i.opts.Merge == nil {
				i.valBuf = append(i.valBuf[:0], i.it.Value()...)
				return true, k.SeqNum(), kd, atEntry, nil
			}
			// Gathered forward; then the child is put before the key.
			ok, err := i.gatherForward()
			if err == nil && !ok {
				err = i.it.Error()
			}
			if err != nil {
				return false, 0, 0, atEntry, err
			}
			if !i.it.SeekLT(i.keyBuf) {
				if err := i.it.Error(); err != nil {
					return false, 0, 0, atEntry, err
				}
				return true, k.SeqNum(), kd, atStart, nil
			}
			return true, k.SeqNum(), kd, beforeKeyBuf, nil
		case base.KindSet, base.KindBlobIndex:
			i.valBuf = append(i.valBuf[:0], i.it.Value()...)
			return true, k.SeqNum(), kd, atEntry, nil
		case base.KindDelete, base.KindSingleDelete:
			return false, 0, 0, atEntry, nil
		case base.KindRangeDelete, base.KindLogData:
		default:
			return false, 0, 0, atEntry, badKind(k)
		}
	}
	if !ok {
		if err := i.it.Error(); err != nil {
			return false, 0, 0, atEntry, err
		}
	}
	if !i.it.SeekLT(i.keyBuf) {
		if err := i.it.Error(); err != nil {
			return false, 0, 0, atEntry, err
		}
		return false, 0, 0, atStart, nil
	}
	return false, 0, 0, beforeKeyBuf, nil
}

// beforeKey moves the child from pos back past the remaining entries of
// keyBuf and reports whether it is at an entry (the previous key's last).
// It counts each entry it passes, and after MaxSkip of them seeks before
// the key instead (RocksDB's FindUserKeyBeforeSavedKey).
func (i *Iter) beforeKey(pos childAt) (bool, error) {
	switch pos {
	case atStart:
		return false, nil
	case beforeKeyBuf:
		return true, nil
	}
	snap := i.opts.Snapshot
	ok := true
	for skipped := 0; ok; {
		k := i.it.Key()
		if i.cmp(k.UserKey, i.keyBuf) < 0 {
			return true, nil
		}
		if k.SeqNum() > snap {
			i.stats.RecentSkipped++
		} else {
			i.stats.KeySkipped++
		}
		if i.reseekBackward(skipped) {
			i.stats.Reseeks++
			ok = i.it.SeekLT(i.keyBuf)
			break
		}
		skipped++
		ok = i.it.Prev()
	}
	if !ok {
		return false, i.it.Error()
	}
	return true, nil
}

// decide settles the key in keyBuf, whose newest visible entry is a value
// at seq in valBuf, while iterating backward.
func (i *Iter) decide(seq base.SeqNum, kind base.Kind) (bool, error) {
	if i.opts.RangeDels != nil && i.opts.RangeDels.Covers(i.keyBuf, seq, i.opts.Snapshot) ||
		kind == base.KindSet && i.opts.Secondary != nil && i.opts.Secondary.Deletes(i.keyBuf, i.valBuf, seq) {
		i.stats.DeleteSkipped++
		return false, nil
	}
	if kind == base.KindMerge && i.opts.Merge != nil {
		v, err := i.mergeValue()
		if err != nil {
			return false, err
		}
		i.key, i.value, i.kind, i.pos = i.keyBuf, v, base.KindSet, posReverse
		return true, nil
	}
	v, err := i.resolve(kind, i.valBuf)
	if err != nil {
		return false, err
	}
	i.key, i.value, i.kind, i.pos = i.keyBuf, v, kind, posReverse
	return true, nil
}

// First positions at the first key, returning whether there is one.
func (i *Iter) First() bool {
	i.err = nil
	if i.opts.Lower != nil {
		return i.findNextEntry(i.it.SeekGE(i.opts.Lower), false)
	}
	return i.findNextEntry(i.it.First(), false)
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
	if i.inPrefix && i.prefixSeeker != nil {
		return i.findNextEntry(i.prefixSeeker.SeekPrefixGE(i.prefix, key), false)
	}
	return i.findNextEntry(i.it.SeekGE(key), false)
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
		// The current entry counts as skipped, and the older versions of
		// the current key (in keyBuf) are skipped.
		i.stats.KeySkipped++
		var ok bool
		if i.ahead {
			i.ahead = false
			ok = i.childValid
		} else {
			ok = i.it.Next()
		}
		if ok && i.plain && i.nextSet() {
			return true
		}
		return i.findNextEntry(ok, true)
	case posReverse:
		var ok bool
		if i.childValid {
			ok = i.it.Next()
		} else {
			ok = i.it.First()
		}
		for ok && i.cmp(i.it.Key().UserKey, i.key) < 0 {
			ok = i.it.Next()
		}
		// The current key's entries are skipped, and counted.
		return i.findNextEntry(ok, true)
	case posUnpositioned, posExhaustedReverse:
		return i.First()
	}
	return false
}

// Prev moves to the previous key.
func (i *Iter) Prev() bool {
	switch i.pos {
	case posForward:
		// Step back over the current entry and the newer, invisible
		// versions of the current key (in keyBuf).
		if i.ahead {
			i.ahead = false
			if !i.childValid && !i.it.Last() {
				// (Not reached: the key's own entries are there.)
				return i.exhausted(posExhaustedReverse)
			}
		}
		ok, err := i.beforeKey(atEntry)
		if err != nil {
			return i.fail(err)
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

// Kind returns the kind of the entry that decided the current key: Set,
// Merge or BlobIndex. Without a ValueResolver, a BlobIndex's Value is the
// blob index itself, which the caller may resolve when it needs the value
// (the DB's iterators do, lazily).
func (i *Iter) Kind() base.Kind { return i.kind }

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

package mergeiter

import (
	"sort"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// FileBounds is the key range of one file of a level: every entry and range
// tombstone of the file lies in [Smallest, Largest]. A Largest that is a
// range-delete sentinel excludes its user key.
type FileBounds struct {
	Smallest, Largest base.InternalKey
}

// Level is one level (below L0) of a version as its iterators read it: the
// bounds of the level's files, sorted and not overlapping, and the range
// tombstones of all of them as one list. It is built once per version
// (NewLevel), never modified, and shared by every LevelIter over the level,
// so that opening an iterator copies nothing per file.
type Level struct {
	files     []FileBounds
	rangeDels *rangedel.List
}

// NewLevel returns the view of a level whose files have the bounds files
// (sorted, not overlapping; the level keeps the slice) and the range
// tombstones rangeDels: the lists of the files that have any, in file order
// (nil entries are skipped). Since each file's tombstones lie within its
// bounds, the lists are joined without re-fragmenting (rangedel.Concat).
func NewLevel(cmp base.Compare, files []FileBounds, rangeDels []*rangedel.List) *Level {
	return &Level{files: files, rangeDels: rangedel.Concat(cmp, rangeDels...)}
}

// Len returns the number of files of the level.
func (lv *Level) Len() int { return len(lv.files) }

// RangeDels returns the range tombstones of the level's files, nil when
// they have none.
func (lv *Level) RangeDels() *rangedel.List { return lv.rangeDels }

// LevelIter iterates the sorted, non-overlapping files of one level as one
// internal iterator. It yields exactly the entries whose user keys lie in
// [lower, upper) and keeps at most one file iterator open.
type LevelIter struct {
	cmp   base.Compare
	files []FileBounds
	open  func(i int) (base.InternalIterator, error)
	lower []byte
	upper []byte
	// lo and hi delimit the files that may hold keys in [lower, upper).
	lo, hi int
	// index is the file iter belongs to; iter is nil when no file is open.
	index int
	iter  base.InternalIterator
	// checkLower and checkUpper say whether the open file straddles a bound,
	// so that its keys must be compared with it; files wholly inside the
	// bounds cost no comparison per entry.
	checkLower, checkUpper bool
	valid                  bool
	err                    error
	// prepErr is an error of the last prepare call (opening or closing a
	// file), which the positioning call that follows reports as its own.
	prepErr error

	// prefixTr is SetPrefixExtractor's; inPrefix is set by SeekPrefixGE
	// and cleared by every other positioning call and by Prev: while it
	// is set, forward moves look for the entries of prefix only.
	prefixTr base.SliceTransform
	inPrefix bool
	prefix   []byte
}

var (
	_ base.InternalIterator   = (*LevelIter)(nil)
	_ base.SeekPreparer       = (*LevelIter)(nil)
	_ base.InternalSeeker     = (*LevelIter)(nil)
	_ base.PrefixSeeker       = (*LevelIter)(nil)
	_ base.PrefixSeekPreparer = (*LevelIter)(nil)
)

// SetPrefixExtractor gives the iterator the extractor of the prefixes
// SeekPrefixGE is given, so that it also skips files by their bounds: by
// the contiguity of prefixes (base.SliceTransform), a file whose smallest
// key lies past the seek key without having its prefix holds no entry of
// the prefix, nor does any file after it. Without one, SeekPrefixGE
// consults only the files' own prefix filters.
func (l *LevelIter) SetPrefixExtractor(t base.SliceTransform) { l.prefixTr = t }

// pastPrefix reports whether no entry of files[i:] has the prefix
// SeekPrefixGE(prefix, key) looks for: i is past the level's files in
// bounds, or, with an extractor, files[i] starts after key without the
// prefix.
func (l *LevelIter) pastPrefix(i int, prefix, key []byte) bool {
	if i >= l.hi {
		return true
	}
	s := l.files[i].Smallest.UserKey
	return l.prefixTr != nil && l.cmp(s, key) > 0 && !base.HasPrefix(l.prefixTr, s, prefix)
}

// seekPrefixFile positions the open file at key for the entries of prefix.
func (l *LevelIter) seekPrefixFile(prefix, key []byte) bool {
	if ps, ok := l.iter.(base.PrefixSeeker); ok {
		return ps.SeekPrefixGE(prefix, key)
	}
	return l.iter.SeekGE(key)
}

// NewLevelIter returns an iterator over the files of level. open(i) opens
// the iterator of the level's file i; it is called only when the iterator is
// positioned into that file, and the previous file's iterator is closed
// first. lower (inclusive) and upper (exclusive) bound the user keys
// returned; nil means unbounded. The cost is two binary searches over the
// files, whatever their number. The level's range tombstones are not
// applied here: Iter.SetRangeDels does that.
func NewLevelIter(cmp base.Compare, level *Level, open func(i int) (base.InternalIterator, error), lower, upper []byte) *LevelIter {
	files := level.files
	l := &LevelIter{cmp: cmp, files: files, open: open, lower: lower, upper: upper, index: -1}
	l.hi = len(files)
	if lower != nil {
		l.lo = sort.Search(len(files), func(i int) bool { return !l.endsBefore(i, lower) })
	}
	if upper != nil {
		l.hi = l.lo + sort.Search(len(files)-l.lo, func(i int) bool {
			return cmp(files[l.lo+i].Smallest.UserKey, upper) >= 0
		})
	}
	return l
}

// endsBefore reports whether files[i] holds no entry with user key >= key.
func (l *LevelIter) endsBefore(i int, key []byte) bool {
	largest := l.files[i].Largest
	c := l.cmp(largest.UserKey, key)
	return c < 0 || (c == 0 && largest.IsExclusiveSentinel())
}

// load makes files[i] the open file, closing the previous one. It returns
// false, with the iterator unpositioned, when i is outside the bounds or on
// error.
func (l *LevelIter) load(i int) bool {
	if i == l.index && l.iter != nil {
		return true
	}
	l.closeFile()
	if i < l.lo || i >= l.hi || l.err != nil {
		return false
	}
	it, err := l.open(i)
	if err != nil {
		l.err = err
		return false
	}
	l.index, l.iter = i, it
	l.checkLower = l.lower != nil && l.cmp(l.files[i].Smallest.UserKey, l.lower) < 0
	l.checkUpper = l.upper != nil && !l.endsBefore(i, l.upper)
	return true
}

func (l *LevelIter) closeFile() {
	if l.iter == nil {
		return
	}
	// A file iterator's Close returns its iteration error, if it has one:
	// the positioning call it stopped reported that one already, so only
	// an error of the close itself is new (else a seek after a failed read
	// would fail again with the old error).
	iterErr := l.iter.Error()
	if err := l.iter.Close(); err != nil && iterErr == nil && l.err == nil {
		l.err = err
	}
	l.iter, l.index = nil, -1
}

// fileFailed keeps the open file's error, if it has one and none came
// before, and reports whether it has one.
func (l *LevelIter) fileFailed() bool {
	err := l.iter.Error()
	if err != nil && l.err == nil {
		l.err = err
	}
	return err != nil
}

// forward settles after the open file was positioned (ok) moving forward:
// it skips to the following files while the current one is exhausted.
func (l *LevelIter) forward(ok bool) bool {
	for {
		if ok {
			if l.checkUpper && l.cmp(l.iter.Key().UserKey, l.upper) >= 0 {
				break
			}
			l.valid = true
			return true
		}
		if l.fileFailed() {
			break
		}
		next := l.index + 1
		if l.inPrefix {
			// Every key of the next file is past the key sought.
			if l.pastPrefix(next, l.prefix, l.files[next-1].Largest.UserKey) || !l.load(next) {
				break
			}
			key := l.files[next].Smallest.UserKey
			if l.checkLower {
				key = l.lower
			}
			ok = l.seekPrefixFile(l.prefix, key)
			continue
		}
		if !l.load(next) {
			break
		}
		if l.checkLower {
			ok = l.iter.SeekGE(l.lower)
		} else {
			ok = l.iter.First()
		}
	}
	l.valid = false
	return false
}

// backward is the mirror image of forward.
func (l *LevelIter) backward(ok bool) bool {
	for {
		if ok {
			if l.checkLower && l.cmp(l.iter.Key().UserKey, l.lower) < 0 {
				break
			}
			l.valid = true
			return true
		}
		if l.fileFailed() {
			break
		}
		if !l.load(l.index - 1) {
			break
		}
		if l.checkUpper {
			ok = l.iter.SeekLT(l.upper)
		} else {
			ok = l.iter.Last()
		}
	}
	l.valid = false
	return false
}

// seekFile returns the file SeekGE(key) positions in first (key already
// clamped to the bounds).
func (l *LevelIter) seekFile(key []byte) int {
	return l.lo + sort.Search(l.hi-l.lo, func(j int) bool { return !l.endsBefore(l.lo+j, key) })
}

// PrepareSeekGE opens the file SeekGE(key) starts in and lets it prepare
// the seek, if it can (base.SeekPreparer).
func (l *LevelIter) PrepareSeekGE(key []byte) {
	if l.lower != nil && l.cmp(key, l.lower) < 0 {
		key = l.lower
	}
	if l.upper != nil && l.cmp(key, l.upper) >= 0 {
		return
	}
	l.prepare(l.seekFile(key), key, nil, false)
}

// PrepareSeekPrefixGE is PrepareSeekGE for SeekPrefixGE: a file its bounds
// rule out is not opened, and one whose prefix filter does starts no read.
func (l *LevelIter) PrepareSeekPrefixGE(prefix, key []byte) {
	if l.lower != nil && l.cmp(key, l.lower) < 0 {
		key = l.lower
	}
	if l.upper != nil && l.cmp(key, l.upper) >= 0 {
		return
	}
	if i := l.seekFile(key); !l.pastPrefix(i, prefix, key) {
		l.prepare(i, key, prefix, true)
	}
}

// PrepareFirst is PrepareSeekGE for First.
func (l *LevelIter) PrepareFirst() { l.prepare(l.lo, nil, nil, false) }

// PrepareSeekLT opens the file SeekLT(key) starts in and lets it prepare
// the seek, if it can.
func (l *LevelIter) PrepareSeekLT(key []byte) {
	if l.upper != nil && l.cmp(key, l.upper) > 0 {
		key = l.upper
	}
	if l.lower != nil && l.cmp(key, l.lower) <= 0 {
		return
	}
	l.prepareBackward(l.seekLTFile(key), key)
}

// PrepareLast is PrepareSeekLT for Last.
func (l *LevelIter) PrepareLast() { l.prepareBackward(l.hi-1, nil) }

// seekLTFile returns the file SeekLT(key) positions in first: the last
// whose smallest user key is < key.
func (l *LevelIter) seekLTFile(key []byte) int {
	return l.lo + sort.Search(l.hi-l.lo, func(j int) bool {
		return l.cmp(l.files[l.lo+j].Smallest.UserKey, key) >= 0
	}) - 1
}

// prepareBackward opens files[i] and prepares its SeekLT(key) (its last
// entry in bounds when key is nil).
func (l *LevelIter) prepareBackward(i int, key []byte) {
	if i < l.lo || i >= l.hi || !l.loadForPrepare(i) {
		return
	}
	p, isPrep := l.iter.(base.SeekPreparer)
	switch {
	case !isPrep:
	case key != nil:
		p.PrepareSeekLT(key)
	case l.checkUpper:
		p.PrepareSeekLT(l.upper)
	default:
		p.PrepareLast()
	}
}

// loadForPrepare opens files[i] for a prepare call: an error it meets is
// kept for the positioning call that follows (prepErr), the iterator's own
// error untouched.
func (l *LevelIter) loadForPrepare(i int) bool {
	err := l.err
	l.err = l.prepErr
	ok := l.load(i)
	l.err, l.prepErr = err, l.err
	return ok
}

// prepare opens files[i] and prepares its seek to key (its first entry in
// bounds when key is nil), for the entries of prefix when inPrefix.
func (l *LevelIter) prepare(i int, key, prefix []byte, inPrefix bool) {
	if !l.loadForPrepare(i) {
		return
	}
	if pp, ok := l.iter.(base.PrefixSeekPreparer); ok && inPrefix {
		pp.PrepareSeekPrefixGE(prefix, key)
		return
	}
	p, isPrep := l.iter.(base.SeekPreparer)
	switch {
	case !isPrep:
	case key != nil:
		p.PrepareSeekGE(key)
	case l.checkLower:
		p.PrepareSeekGE(l.lower)
	default:
		p.PrepareFirst()
	}
}

// startPositioning resets the iterator for an absolute positioning call,
// taking over the error of a prepare call before it.
func (l *LevelIter) startPositioning() {
	l.err, l.valid, l.prepErr = l.prepErr, false, nil
	l.inPrefix = false
}

// SeekPrefixGE is SeekGE(key) for the entries of prefix only
// (base.PrefixSeeker): a file whose bounds (with SetPrefixExtractor) or
// prefix filter rule the prefix out is not read, and until the next
// positioning call other than Next, a forward move stops before a file
// that starts past the prefix instead of reading its first block.
func (l *LevelIter) SeekPrefixGE(prefix, key []byte) bool {
	l.startPositioning()
	if l.lower != nil && l.cmp(key, l.lower) < 0 {
		key = l.lower
	}
	if l.upper != nil && l.cmp(key, l.upper) >= 0 {
		return false
	}
	i := l.seekFile(key)
	if l.pastPrefix(i, prefix, key) || !l.load(i) {
		return false
	}
	l.inPrefix, l.prefix = true, append(l.prefix[:0], prefix...)
	return l.forward(l.seekPrefixFile(prefix, key))
}

// SeekGE positions at the first entry whose user key is >= key.
func (l *LevelIter) SeekGE(key []byte) bool {
	l.startPositioning()
	if l.lower != nil && l.cmp(key, l.lower) < 0 {
		key = l.lower
	}
	if l.upper != nil && l.cmp(key, l.upper) >= 0 {
		return false
	}
	i := l.seekFile(key)
	if !l.load(i) {
		return false
	}
	return l.forward(l.iter.SeekGE(key))
}

// SeekGEInternal positions at the first entry at or after key in
// internal-key order. Files are found by user key, as SeekGE finds them;
// when the versions of key's user key go on in the next file (a file
// boundary may fall between two of them) and this one holds none at or
// after key, the next file is searched the same way.
func (l *LevelIter) SeekGEInternal(key base.InternalKey) bool {
	if l.lower != nil && l.cmp(key.UserKey, l.lower) < 0 {
		// Every entry in bounds sorts after key.
		return l.SeekGE(l.lower)
	}
	l.startPositioning()
	if l.upper != nil && l.cmp(key.UserKey, l.upper) >= 0 {
		return false
	}
	for i := l.seekFile(key.UserKey); ; i++ {
		if !l.load(i) {
			return false
		}
		ok := base.SeekGEInternal(l.iter, l.cmp, key)
		if ok || l.fileFailed() || i+1 >= l.hi || l.cmp(l.files[i+1].Smallest.UserKey, key.UserKey) != 0 {
			return l.forward(ok)
		}
	}
}

// SeekLT positions at the last entry whose user key is < key.
func (l *LevelIter) SeekLT(key []byte) bool {
	l.startPositioning()
	if l.upper != nil && l.cmp(key, l.upper) > 0 {
		key = l.upper
	}
	if l.lower != nil && l.cmp(key, l.lower) <= 0 {
		return false
	}
	// The last file whose smallest user key is < key.
	i := l.seekLTFile(key)
	if !l.load(i) {
		return false
	}
	return l.backward(l.iter.SeekLT(key))
}

// First positions at the first entry.
func (l *LevelIter) First() bool {
	l.startPositioning()
	if !l.load(l.lo) {
		return false
	}
	if l.checkLower {
		return l.forward(l.iter.SeekGE(l.lower))
	}
	return l.forward(l.iter.First())
}

// Last positions at the last entry.
func (l *LevelIter) Last() bool {
	l.startPositioning()
	if !l.load(l.hi - 1) {
		return false
	}
	if l.checkUpper {
		return l.backward(l.iter.SeekLT(l.upper))
	}
	return l.backward(l.iter.Last())
}

// Next moves to the next entry.
func (l *LevelIter) Next() bool {
	if !l.valid {
		return false
	}
	return l.forward(l.iter.Next())
}

// Prev moves to the previous entry.
func (l *LevelIter) Prev() bool {
	if !l.valid {
		return false
	}
	l.inPrefix = false
	return l.backward(l.iter.Prev())
}

// Key returns the current entry's internal key; the zero key when not
// positioned.
func (l *LevelIter) Key() base.InternalKey {
	if !l.valid {
		return base.InternalKey{}
	}
	return l.iter.Key()
}

// Value returns the current entry's value; nil when not positioned.
func (l *LevelIter) Value() []byte {
	if !l.valid {
		return nil
	}
	return l.iter.Value()
}

// Error returns the error that stopped iteration: from opening, reading or
// closing a file.
func (l *LevelIter) Error() error { return l.err }

// Close closes the open file, if any, and returns the iteration error or the
// error from closing.
func (l *LevelIter) Close() error {
	l.closeFile()
	l.valid = false
	return l.err
}

package base

// InternalIterator iterates over internal keys in InternalCompare order. It is
// implemented by memtables, SST readers, merging and level iterators.
//
// Positioning methods return whether the iterator is positioned at an entry.
// Key and Value are valid until the next positioning call and must not be
// modified; callers that keep them copy them. After a positioning call
// returns false, Error tells whether iteration ended or failed.
type InternalIterator interface {
	// SeekGE positions at the first entry whose user key is >= key.
	SeekGE(key []byte) bool
	// SeekLT positions at the last entry whose user key is < key.
	SeekLT(key []byte) bool
	// First positions at the first entry.
	First() bool
	// Last positions at the last entry.
	Last() bool
	// Next moves to the next entry.
	Next() bool
	// Prev moves to the previous entry.
	Prev() bool
	// Key returns the current entry's internal key.
	Key() InternalKey
	// Value returns the current entry's value.
	Value() []byte
	// Error returns the error that stopped iteration, if any.
	Error() error
	// Close releases the iterator's resources and returns its error.
	Close() error
}

// SeekPreparer is implemented by iterators that can split a seek into two
// phases (ReadOptions.AsyncIO). PrepareSeekGE(key) starts the reads that
// the following SeekGE(key) needs without waiting for them, and
// PrepareFirst those of First, so that a merging iterator can start the
// reads of all its children before any of them waits. The positioning
// call must follow the prepare, with the same key: until it does, the
// iterator's position is undefined (a LevelIter may have moved to another
// file). A prepare changes no result of that call; a read it started that
// the call does not use is dropped by it.
type SeekPreparer interface {
	PrepareSeekGE(key []byte)
	PrepareFirst()
	// PrepareSeekLT and PrepareLast are the same for SeekLT(key) and Last.
	PrepareSeekLT(key []byte)
	PrepareLast()
}

// InternalSeeker is implemented by iterators that can position at an
// internal key rather than at the first entry of a user key: the memtable's,
// a table's, a LevelIter and the merging iterator. The user iterator uses it
// to jump over a long run of versions of one user key (past the run, or to
// the first version its snapshot sees) instead of stepping through it.
type InternalSeeker interface {
	// SeekGEInternal positions at the first entry at or after key in
	// internal-key order: user key ascending, then trailer descending.
	SeekGEInternal(key InternalKey) bool
}

// SeekGEInternal positions it at the first entry at or after key in
// internal-key order: through it.SeekGEInternal when it is an
// InternalSeeker, else by seeking to key's user key and stepping over the
// entries before key.
func SeekGEInternal(it InternalIterator, cmp Compare, key InternalKey) bool {
	if s, ok := it.(InternalSeeker); ok {
		return s.SeekGEInternal(key)
	}
	ok := it.SeekGE(key.UserKey)
	for ok && InternalCompare(cmp, it.Key(), key) < 0 {
		ok = it.Next()
	}
	return ok
}

// PrefixSeeker is implemented by iterators that can seek for the entries of
// one key prefix (a SliceTransform's) and skip what holds none (Pebble's
// SeekPrefixGE): tables and memtables consult their prefix bloom filter, a
// LevelIter also the bounds of its files. SeekPrefixGE(prefix, key) is
// SeekGE(key) for a caller that wants only the entries at or after key
// whose user keys have prefix: it returns false, reading nothing, when the
// iterator knows it holds no such entry. key is at or after a key with the
// prefix: the seek key of a prefix seek has it, and the seeks that follow
// within one (past a range tombstone, into a level's next file) go
// forward from there. Entries of other prefixes may or
// may not be returned, and a false return does not mean that nothing lies
// past key: an iterator exhausted this way must be repositioned by an
// absolute positioning call before it is stepped or turned around, which
// the caller does (a merging iterator in prefix mode repositions its
// exhausted children before moving backward).
type PrefixSeeker interface {
	SeekPrefixGE(prefix, key []byte) bool
}

// PrefixSeekPreparer is SeekPreparer's first phase for SeekPrefixGE: an
// iterator that rules the prefix out starts no read.
type PrefixSeekPreparer interface {
	PrepareSeekPrefixGE(prefix, key []byte)
}

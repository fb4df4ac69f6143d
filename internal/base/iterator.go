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
}

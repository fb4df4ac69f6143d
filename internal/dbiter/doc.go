// Package dbiter owns the user-visible iteration logic over a merged
// internal iterator: it turns the stream of internal entries (every version
// of every key, tombstones included) into the user keys and values a reader
// at one snapshot sees, within optional bounds, in both directions.
//
// Per user key, the newest entry with a seqnum at or below the snapshot
// decides: Set, Merge and BlobIndex make the key present (Merge and
// BlobIndex values pass through Options.ValueResolver, identity when nil),
// Delete and SingleDelete make it absent, and so does a range tombstone that
// covers that entry (Options.RangeDels). With Options.Merge, a key whose
// newest visible entry is a Merge takes the merge of its operands (down to
// the value, tombstone or deleted entry under them) instead; the operands
// are gathered going forward in either direction's last step (backward, from
// the oldest visible entry up). RangeDelete and LogData entries in
// the point stream are ignored. An entry of an unknown kind stops iteration
// with an error matching base.ErrCorruption.
//
// The package never merges sources, opens files or fragments range
// tombstones: the caller supplies a merged internal iterator (package
// mergeiter) and a RangeDelChecker (package rangedel).
//
// Moves count what they pass over (Stats, RocksDB's perf context counters)
// and, like RocksDB's DBIter, seek instead of stepping through a long run
// of versions of one user key (Options.Reseek and MaxSkip, RocksDB's
// max_sequential_skip_in_iterations). Forward, after more than MaxSkip
// entries of a decided key, or of versions newer than the snapshot, the
// iterator seeks past the key's last possible entry, or to the newest
// version the snapshot sees. Backward, after MaxSkip visible entries of a
// key it seeks forward to the newest visible one, and after MaxSkip more
// entries of the key it seeks before the key. Forward seeks need a child
// that is a base.InternalSeeker. A run of tombstones on different keys is
// not a run of one key: each key is visited (and counted).
//
// Prefix confinement (SetPrefix, RocksDB's prefix_same_as_start): every
// move stops at the first key without the prefix, as at a bound, stepping
// over no entry past it, and SeekGE seeks the child with SeekPrefixGE
// (base.PrefixSeeker) so that sources without the prefix are skipped.
//
// Positions: after iteration ran off the end, Prev returns the last key;
// after it ran off the start, Next returns the first; on a new iterator Next
// is First and Prev is Last.
package dbiter

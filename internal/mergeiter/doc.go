// Package mergeiter owns the iterators that combine several sorted internal
// iterators into one: Iter, a heap-based merge of arbitrary (possibly
// overlapping) children such as memtables and L0 files, and LevelIter, which
// walks the sorted, non-overlapping files of one level, opening one file at a
// time. A LevelIter reads a Level, the view of one level of a version that is
// built once per version and shared by all its iterators, so that creating an
// iterator costs nothing per file.
//
// Both present every entry of their children in internal-key order (user key
// ascending, then seqnum/kind trailer descending). They never interpret
// entries: snapshots, point tombstones and bounds on visible user keys are
// the business of package dbiter and of compaction. The one exception is
// range tombstones, when the reader asks for them (Iter.SetRangeDels): Iter
// then skips the entries they delete, applying each child's tombstones to
// the entries of that child and of the older children after it, as Pebble's
// merging iterator applies each level's range deletions, instead of one list
// merged from every table. Neither does IO itself; LevelIter obtains file
// iterators through a caller-supplied open function.
//
// Prefix seeks (SeekPrefixGE, base.PrefixSeeker): both iterators pass the
// prefix down, so that children whose prefix filter rules it out, and a
// level's files whose bounds do (LevelIter.SetPrefixExtractor), are not
// read, and a LevelIter moving forward stops before a file that starts past
// the prefix. They return every entry of the prefix, in order; what follows
// the prefix's last entry is for the caller to cut off. A merge stays in
// that prefix mode until the next absolute positioning call, and turning
// backward out of it repositions every child at the current entry.
//
// Positioning contract (beyond base.InternalIterator): after a positioning
// call returned false, Next and Prev keep returning false until an absolute
// positioning call (First, Last, SeekGE, SeekLT). Both iterators rely on the
// same of their children: they never call Next or Prev on an exhausted
// child.
package mergeiter

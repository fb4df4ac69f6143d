// Package mergeiter owns the iterators that combine several sorted internal
// iterators into one: Iter, a heap-based merge of arbitrary (possibly
// overlapping) children such as memtables and L0 files, and LevelIter, which
// walks the sorted, non-overlapping files of one level, opening one file at a
// time.
//
// Both present every entry of their children in internal-key order (user key
// ascending, then seqnum/kind trailer descending). They never interpret
// entries: snapshots, tombstones, range deletions and bounds on visible user
// keys are the business of package dbiter and of compaction. Neither does IO
// itself; LevelIter obtains file iterators through a caller-supplied open
// function.
//
// Positioning contract (beyond base.InternalIterator): after a positioning
// call returned false, Next and Prev keep returning false until an absolute
// positioning call (First, Last, SeekGE, SeekLT). Both iterators rely on the
// same of their children: they never call Next or Prev on an exhausted
// child.
package mergeiter

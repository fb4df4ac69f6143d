// Package itertest holds test support shared by the iterator packages
// (dbiter, mergeiter): SliceIter, an InternalIterator over a sorted slice
// that can inject failures, and small helpers for randomized tests (seeds,
// user keys, seek keys, sorting entries).
//
// Only tests import it. It never touches files and keeps no global state
// beyond the -seed flag it registers.
package itertest

// Package itertest holds test support shared by the iterator packages
// (dbiter, mergeiter) and the packages whose data-driven scripts speak of
// internal keys and range tombstones (compact, rangedel): SliceIter, an
// InternalIterator over a sorted slice that can inject failures, small
// helpers for randomized tests (seeds, user keys, seek keys, sorting
// entries), the scripts' notation for keys, entries, tombstones and spans
// ("a.SET.5:v", "[a,c)#7"), parsed and printed in one place, and the moves
// of their iterator scripts (Move: first, next, seek-ge k ...).
//
// Only tests import it. It never touches files and keeps no global state
// beyond the -seed flag it registers.
package itertest

package rangedel

// The package comment lives in rangedel.go. This file explains the model the
// rest of the package implements.
//
// Fragmentation. Overlapping tombstones are cut at every start and end key
// into spans that either coincide or do not overlap at all; each span lists
// the seqnums of every tombstone covering it, newest first:
//
//	tombstones:   [a-------e)#7
//	                  [c---------g)#9
//	                          [e---g)#4
//	spans:        [a--c)#7
//	                  [c--e)#9,7
//	                      [e--g)#9,4
//
// Adjacent spans with the same seqnums are not merged: the boundaries of the
// output are exactly the distinct boundaries of the input.
//
// Reads. An entry (key, seq) is deleted for a reader at snapshot S when some
// span covering key holds a seqnum t with seq < t <= S (List.Covers). Spans
// are sorted and disjoint, so their End keys are sorted too and one binary
// search finds the only span that may cover a key.
//
// Compaction. Snapshots cut the seqnum axis into stripes; two seqnums
// A > B lie in the same stripe when no snapshot s has B <= s < A. Every
// reader sees either both or neither, so within a span only the newest
// seqnum of each stripe matters (Coalesce).
//
// Levels. The files of one level below L0 do not overlap, and a file's
// bounds include its tombstones, so their fragmented spans need no merge:
// Concat joins them in file order into one list per level (it falls back
// to Merge if they do overlap).
//
// Ownership. Fragment and Merge copy keys into memory they own; Concat
// aliases the spans of the lists it joins. List, Span and the slices they
// return are immutable and safe for concurrent readers.

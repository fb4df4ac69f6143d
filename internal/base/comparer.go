package base

import (
	"bytes"
	"reflect"
)

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b.
type Compare func(a, b []byte) int

// Comparer defines the order of user keys. Its Name is recorded in every SST
// and the MANIFEST; a DB refuses to open with a comparer of another name.
type Comparer struct {
	// Name identifies the ordering; RocksDB's bytewise comparer is
	// "leveldb.BytewiseComparator".
	Name string
	// Compare orders user keys.
	Compare Compare
	// Separator appends to dst a short key k with a <= k < b, used for index
	// entries. It may simply append a.
	Separator func(dst, a, b []byte) []byte
	// Successor appends to dst a short key k >= a. It may simply append a.
	Successor func(dst, a []byte) []byte
}

// DefaultComparer orders keys bytewise, as RocksDB's BytewiseComparator.
var DefaultComparer = &Comparer{
	Name:      "leveldb.BytewiseComparator",
	Compare:   bytes.Compare,
	Separator: bytewiseSeparator,
	Successor: bytewiseSuccessor,
}

// bytewiseSeparator shortens a toward b: it keeps the common prefix and
// increments the first differing byte when that still sorts before b.
func bytewiseSeparator(dst, a, b []byte) []byte {
	i, n := 0, min(len(a), len(b))
	for i < n && a[i] == b[i] {
		i++
	}
	if i >= n {
		// One is a prefix of the other: cannot shorten.
		return append(dst, a...)
	}
	if c := a[i]; c < 0xff && c+1 < b[i] {
		dst = append(dst, a[:i+1]...)
		dst[len(dst)-1]++
		return dst
	}
	return append(dst, a...)
}

// bytewiseSuccessor returns the shortest key >= a: the first byte that is not
// 0xff, incremented, with everything after it dropped.
func bytewiseSuccessor(dst, a []byte) []byte {
	for i, c := range a {
		if c != 0xff {
			dst = append(dst, a[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return append(dst, a...)
}

// bytesCompare is the code address of bytes.Compare.
var bytesCompare = reflect.ValueOf(bytes.Compare).Pointer()

// IsBytesCompare reports whether cmp is bytes.Compare itself (the same
// code, not merely a function of the same order), as DefaultComparer's is.
// The hottest loops (the merge's heap, the DB iterator's stepping over
// versions) then call bytes.Compare directly, which the compiler inlines,
// instead of through the function value; the answer is the same.
func IsBytesCompare(cmp Compare) bool {
	return cmp != nil && reflect.ValueOf(cmp).Pointer() == bytesCompare
}

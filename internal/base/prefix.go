package base

import (
	"fmt"
	"strconv"
	"strings"
)

// SliceTransform extracts the prefix of a user key (RocksDB's
// SliceTransform, the prefix extractor): tables and memtables keep a bloom
// filter of the prefixes of their keys, and a prefix seek skips those whose
// filter rules the seek key's prefix out.
//
// The contract, which shale relies on and cannot check:
//   - Name identifies the transform: two transforms of one name give the
//     same prefix for every key. It is recorded in every table, whose
//     prefix filter is used only by a reader whose transform has that name.
//   - Transform(key) is called only for a key InDomain reports true for, and
//     depends on the key alone.
//   - The keys of one prefix are contiguous in the comparer's order: a key
//     that sorts between two keys of prefix p is in the domain and has
//     prefix p. (For the bytewise comparer, a transform returning the first
//     bytes of the key, as the fixed and capped ones do, has this
//     property.)
type SliceTransform interface {
	// Name identifies the transform, e.g. "rocksdb.FixedPrefix.8".
	Name() string
	// Transform returns the prefix of key, which the caller does not
	// modify; it may alias key.
	Transform(key []byte) []byte
	// InDomain reports whether key has a prefix.
	InDomain(key []byte) bool
}

// fixedPrefix is NewFixedPrefixTransform's transform.
type fixedPrefix struct {
	n    int
	name string
}

// NewFixedPrefixTransform returns RocksDB's NewFixedPrefixTransform(n): the
// prefix of a key is its first n bytes, and keys shorter than n are not in
// the domain (they have no prefix). Its name is "rocksdb.FixedPrefix.<n>".
func NewFixedPrefixTransform(n int) SliceTransform {
	n = max(n, 0)
	return &fixedPrefix{n: n, name: "rocksdb.FixedPrefix." + strconv.Itoa(n)}
}

func (t *fixedPrefix) Name() string                { return t.name }
func (t *fixedPrefix) Transform(key []byte) []byte { return key[:t.n:t.n] }
func (t *fixedPrefix) InDomain(key []byte) bool    { return len(key) >= t.n }

// cappedPrefix is NewCappedPrefixTransform's transform.
type cappedPrefix struct {
	n    int
	name string
}

// NewCappedPrefixTransform returns RocksDB's NewCappedPrefixTransform(n):
// the prefix of a key is its first min(n, len(key)) bytes, and every key is
// in the domain. Its name is "rocksdb.CappedPrefix.<n>".
func NewCappedPrefixTransform(n int) SliceTransform {
	n = max(n, 0)
	return &cappedPrefix{n: n, name: "rocksdb.CappedPrefix." + strconv.Itoa(n)}
}

func (t *cappedPrefix) Name() string { return t.name }
func (t *cappedPrefix) Transform(key []byte) []byte {
	n := min(t.n, len(key))
	return key[:n:n]
}
func (t *cappedPrefix) InDomain([]byte) bool { return true }

// ParseSliceTransform parses the names of the built-in transforms, as
// RocksDB's options strings spell them: "rocksdb.FixedPrefix.<n>" and
// "rocksdb.CappedPrefix.<n>", or the short forms "fixed:<n>" and
// "capped:<n>"; "" and "nullptr" mean none (nil). known is false for any
// other name (a transform the program must supply); err is set for a
// built-in name with a bad length.
func ParseSliceTransform(s string) (t SliceTransform, known bool, err error) {
	var kind, num string
	switch {
	case s == "" || s == "nullptr":
		return nil, true, nil
	case strings.HasPrefix(s, "rocksdb.FixedPrefix."):
		kind, num = "fixed", strings.TrimPrefix(s, "rocksdb.FixedPrefix.")
	case strings.HasPrefix(s, "rocksdb.CappedPrefix."):
		kind, num = "capped", strings.TrimPrefix(s, "rocksdb.CappedPrefix.")
	case strings.HasPrefix(s, "fixed:"):
		kind, num = "fixed", strings.TrimPrefix(s, "fixed:")
	case strings.HasPrefix(s, "capped:"):
		kind, num = "capped", strings.TrimPrefix(s, "capped:")
	default:
		return nil, false, nil
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return nil, true, fmt.Errorf("prefix extractor %q: the length must be a positive integer", s)
	}
	if kind == "fixed" {
		return NewFixedPrefixTransform(n), true, nil
	}
	return NewCappedPrefixTransform(n), true, nil
}

// HasPrefix reports whether key is in t's domain with prefix p.
func HasPrefix(t SliceTransform, key, p []byte) bool {
	return t.InDomain(key) && string(t.Transform(key)) == string(p)
}

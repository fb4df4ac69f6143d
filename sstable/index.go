package sstable

import (
	"bytes"
	"encoding/binary"
	"sort"

	"github.com/shaledb/shale/internal/base"
)

// indexWords is a dense side array over the decoded index, used when user
// keys order bytewise. Every separator's user key starts with prefix (the
// prefix common to all of them); words[i] holds the 8 bytes of separator
// i's user key that follow it, big-endian and zero padded. A binary search
// over words touches one contiguous array instead of chasing each probe's
// separator bytes, and falls back to the full internal key comparison only
// when two words tie.
//
// words preserves the order: words[i] < w(k) implies sep_i < k by user key,
// and words[i] > w(k) implies sep_i > k, for any k with the same prefix
// (zero padding can make a shorter key tie with a longer one, never invert
// them).
type indexWords struct {
	prefix []byte
	words  []uint64
}

// isBytewise reports whether c orders user keys as bytes.Compare does.
func isBytewise(c *base.Comparer) bool {
	return c == base.DefaultComparer || c.Name == base.DefaultComparer.Name
}

// loadWord returns the first 8 bytes of b as a big-endian number, zero
// padded when b is shorter.
func loadWord(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var w uint64
	for i, c := range b {
		w |= uint64(c) << (56 - 8*uint(i))
	}
	return w
}

// buildIndexWords fills r.words from r.index; separators are sorted.
func (r *Reader) buildIndexWords() {
	n := len(r.index)
	if n == 0 {
		return
	}
	// The prefix common to all sorted keys is the one common to the first
	// and the last.
	first, last := r.index[0].sep.UserKey, r.index[n-1].sep.UserKey
	p := 0
	for p < len(first) && p < len(last) && first[p] == last[p] {
		p++
	}
	r.words.prefix = first[:p:p]
	r.words.words = make([]uint64, n)
	for i := range r.index {
		r.words.words[i] = loadWord(r.index[i].sep.UserKey[p:])
	}
}

// seekIndexWords is seekIndex for bytewise tables: the first index entry
// whose separator is >= k, or len(r.index).
func (r *Reader) seekIndexWords(k base.InternalKey) int {
	prefix := r.words.prefix
	if len(k.UserKey) < len(prefix) || !bytes.Equal(k.UserKey[:len(prefix)], prefix) {
		// Every separator starts with prefix: k sorts before all of them or
		// after all of them.
		if bytes.Compare(k.UserKey, prefix) < 0 {
			return 0
		}
		return len(r.index)
	}
	kw := loadWord(k.UserKey[len(prefix):])
	words := r.words.words
	// Lower bound, the first word >= kw, in the halving form: the step count
	// depends only on len(words), and no separator bytes are touched.
	lo, n := 0, len(words)
	for n > 1 {
		half := n >> 1
		if words[lo+half-1] < kw {
			lo += half
		}
		n -= half
	}
	if n == 1 && words[lo] < kw {
		lo++
	}
	if lo == len(words) || words[lo] != kw {
		return lo
	}
	// Separators lo.. tie with k in their word: order them with the full
	// comparison, over the run of equal words only.
	hi := lo + 1
	for hi < len(words) && words[hi] == kw && hi-lo < 8 {
		hi++
	}
	if hi < len(words) && words[hi] == kw {
		hi += sort.Search(len(words)-hi, func(j int) bool { return words[hi+j] != kw })
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if base.InternalCompare(bytes.Compare, r.index[m].sep, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

package sstable

import (
	"bytes"
	"encoding/binary"
	"sort"
	"unsafe"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
)

// indexItem is one decoded index entry: every key of the block is <= sep,
// and every key of the next block is > sep.
type indexItem struct {
	sep    base.InternalKey
	handle block.Handle
}

// blockProps returns the properties of data block i, nil when the table
// has none.
func (ix *tableIndex) blockProps(i int) *BlockProps {
	if ix.props == nil {
		return nil
	}
	return &ix.props[i]
}

// tableIndex is a table's decoded index block: one item per data block, in
// file order, and the words that speed up seeks when user keys order
// bytewise. It never changes once built. The Reader holds it, or with
// ReaderOptions.CacheIndexAndFilterBlocks the block cache does (as a value
// charged size bytes, read and decoded again after an eviction); an
// iterator or a MultiGet lookup keeps the one it started with.
type tableIndex struct {
	items []indexItem
	// words is set when the comparer is bytewise (words.words nil
	// otherwise).
	words indexWords
	// dataEnd is the end of the last data block, trailer included.
	dataEnd uint64
	// size is the memory the index holds: items, separator bytes, words.
	size int64
	// props are the data blocks' BlockProps, one per item; nil when the
	// table has none.
	props []BlockProps
}

// seek returns the first item whose separator is >= k, or len(items).
func (ix *tableIndex) seek(k base.InternalKey, cmp base.Compare) int {
	if ix.words.words != nil {
		return ix.seekWords(k)
	}
	return ix.seekCompare(k, cmp)
}

// seekCompare is seek by plain binary search with the comparer.
func (ix *tableIndex) seekCompare(k base.InternalKey, cmp base.Compare) int {
	lo, hi := 0, len(ix.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if base.InternalCompare(cmp, ix.items[m].sep, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// decodeIndex decodes the single index block b found at h: its entries
// must be in order and their data blocks must tile the file from offset 0
// up to at most r.metaStart.
func (r *Reader) decodeIndex(h block.Handle, b []byte) (*tableIndex, error) {
	return r.decodeIndexBlock(h, b, indexSingle)
}

// decodeIndexBlock decodes the index block b found at h, of kind kind: a
// single index as decodeIndex; an index partition, whose data blocks
// follow one another from wherever the first starts, below r.metaStart,
// and which has at least one entry; or a top-level index, whose entries
// (at least one) point at blocks before the footer and carry no block
// properties.
func (r *Reader) decodeIndexBlock(h block.Handle, b []byte, kind indexBlockKind) (*tableIndex, error) {
	var it blockIter
	if !it.init(b, true) {
		return nil, r.corruptf(h, "bad index block")
	}
	// Index blocks have a restart point per entry: size everything once
	// (a partition is decoded on every cache miss, so its allocations
	// count). The keys take at most the block's bytes.
	n := min(it.numRestarts, len(b))
	ix := &tableIndex{items: make([]indexItem, 0, n)}
	arena := make([]byte, 0, it.restarts)
	type pos struct{ start, end int }
	keys := make([]pos, 0, n)
	var prevEnd uint64
	for ok := it.first(); ok; ok = it.next() {
		bh, n := block.DecodeHandle(it.val)
		if n <= 0 {
			return nil, r.corruptf(h, "bad block handle in index entry %d", len(ix.items))
		}
		// Block properties follow the handle in all entries or in none.
		if hasProps := n != len(it.val); len(ix.items) == 0 && hasProps {
			ix.props = []BlockProps{}
		} else if hasProps != (ix.props != nil) {
			return nil, r.corruptf(h, "index entry %d: block properties in some entries only", len(ix.items))
		}
		if kind == indexTop {
			if n != len(it.val) || r.checkHandle(bh, false) != nil {
				return nil, r.corruptf(h, "top-level index entry %d: bad or misplaced block handle (offset %d, length %d)", len(ix.items), bh.Offset, bh.Length)
			}
		} else if ix.props != nil {
			p, ok := decodeBlockProps(it.val[n:])
			if !ok {
				return nil, r.corruptf(h, "bad block properties in index entry %d", len(ix.items))
			}
			ix.props = append(ix.props, p)
		}
		if kind == indexPartition && len(ix.items) == 0 {
			prevEnd = bh.Offset
		}
		if kind != indexTop && (bh.Offset != prevEnd || bh.Length > block.MaxLen || bh.Length+block.TrailerLen > r.metaStart-min(bh.Offset, r.metaStart)) {
			return nil, r.corruptf(h, "index entry %d: data block (offset %d, length %d) out of place", len(ix.items), bh.Offset, bh.Length)
		}
		prevEnd = bh.End()
		if len(ix.items) > 0 {
			prev, _ := base.DecodeInternalKey(arena[keys[len(keys)-1].start:keys[len(keys)-1].end])
			if base.InternalCompare(r.cmp, prev, it.ikey) >= 0 {
				return nil, r.corruptf(h, "index entries out of order")
			}
		}
		start := len(arena)
		arena = append(arena, it.key...)
		keys = append(keys, pos{start, len(arena)})
		ix.items = append(ix.items, indexItem{handle: bh})
	}
	if it.corrupt {
		return nil, r.corruptf(h, "bad index block")
	}
	if kind != indexSingle && len(ix.items) == 0 {
		return nil, r.corruptf(h, "empty index block")
	}
	for i, p := range keys {
		ix.items[i].sep, _ = base.DecodeInternalKey(arena[p.start:p.end:p.end])
	}
	ix.dataEnd = prevEnd
	if r.bytewise {
		ix.buildWords()
	}
	ix.size = int64(unsafe.Sizeof(tableIndex{})) + int64(cap(ix.items))*int64(unsafe.Sizeof(indexItem{})) +
		int64(cap(ix.props))*int64(unsafe.Sizeof(BlockProps{})) +
		int64(cap(arena)) + 8*int64(cap(ix.words.words))
	return ix, nil
}

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

// buildWords fills ix.words from ix.items; separators are sorted.
func (ix *tableIndex) buildWords() {
	n := len(ix.items)
	if n == 0 {
		return
	}
	// The prefix common to all sorted keys is the one common to the first
	// and the last.
	first, last := ix.items[0].sep.UserKey, ix.items[n-1].sep.UserKey
	p := 0
	for p < len(first) && p < len(last) && first[p] == last[p] {
		p++
	}
	ix.words.prefix = first[:p:p]
	ix.words.words = make([]uint64, n)
	for i := range ix.items {
		ix.words.words[i] = loadWord(ix.items[i].sep.UserKey[p:])
	}
}

// seekWords is seek for bytewise tables: the first item whose separator is
// >= k, or len(ix.items).
func (ix *tableIndex) seekWords(k base.InternalKey) int {
	prefix := ix.words.prefix
	if len(k.UserKey) < len(prefix) || !bytes.Equal(k.UserKey[:len(prefix)], prefix) {
		// Every separator starts with prefix: k sorts before all of them or
		// after all of them.
		if bytes.Compare(k.UserKey, prefix) < 0 {
			return 0
		}
		return len(ix.items)
	}
	kw := loadWord(k.UserKey[len(prefix):])
	words := ix.words.words
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
		if base.InternalCompare(bytes.Compare, ix.items[m].sep, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

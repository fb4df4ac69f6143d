package sstable

import (
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
)

// blockWriter builds one block of prefix-compressed entries (see doc.go).
// Keys are opaque bytes here; the table writer encodes internal keys.
type blockWriter struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	counter         int // entries since the last restart
	entries         int
	lastKey         []byte
}

func (b *blockWriter) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.counter = 0
	b.entries = 0
	b.lastKey = b.lastKey[:0]
}

func (b *blockWriter) add(key, value []byte) {
	shared := 0
	if b.counter == b.restartInterval || b.entries == 0 {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	} else {
		n := min(len(key), len(b.lastKey))
		for shared < n && key[shared] == b.lastKey[shared] {
			shared++
		}
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.counter++
	b.entries++
}

// estimatedSize is the size finish would return.
func (b *blockWriter) estimatedSize() int {
	n := len(b.restarts)
	if n == 0 {
		n = 1
	}
	return len(b.buf) + 4*n + 4
}

// finish appends the restart array and returns the block, which stays
// valid until the next reset.
func (b *blockWriter) finish() []byte {
	if len(b.restarts) == 0 {
		b.restarts = append(b.restarts, 0)
	}
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}

// blockIter walks the entries of one block in place. It never panics on a
// malformed block: it stops and sets corrupt instead. Keys of entries at a
// restart point alias the block; other keys are rebuilt in keyBuf.
type blockIter struct {
	data        []byte
	restarts    int // offset of the restart array
	numRestarts int
	offset      int // offset of the current entry
	nextOffset  int // offset of the entry after it
	key         []byte
	keyInBuf    bool
	keyBuf      []byte
	val         []byte
	ikey        base.InternalKey
	valid       bool
	corrupt     bool
	// internalKeys makes decode split keys into ikey (data and range-del
	// blocks); meta blocks have plain keys.
	internalKeys bool
	// srch is the auxiliary buffer of a cached data block (see
	// blocksearch.go), nil for an uncached block; srchN (its entry count)
	// and srchPrefix (the user key prefix length it strips) are read from
	// it by each search.
	srch       []byte
	srchN      int
	srchPrefix int
	// globalSeq, when not zero, replaces the seqnum of every key decoded
	// (ReaderOptions.GlobalSeqNum: an ingested table whose entries all
	// carry seqnum 0 on disk). Set after init for data blocks only.
	globalSeq base.SeqNum
}

// blockValid reports whether data has a well-formed restart array.
func blockValid(data []byte) bool {
	if len(data) < 4 {
		return false
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	return n >= 1 && uint64(n) <= uint64(len(data)-4)/4
}

// init points the iterator at data, unpositioned. It returns false if the
// restart array is malformed.
func (i *blockIter) init(data []byte, internalKeys bool) bool {
	i.reset(data, internalKeys)
	if !blockValid(data) {
		i.corrupt = true
		i.restarts, i.numRestarts = 0, 0
		return false
	}
	i.numRestarts = int(binary.LittleEndian.Uint32(data[len(data)-4:]))
	i.restarts = len(data) - 4 - 4*i.numRestarts
	i.offset, i.nextOffset = 0, 0
	return true
}

// reset points the iterator at data with no search structure, leaving the
// restart array unset.
func (i *blockIter) reset(data []byte, internalKeys bool) {
	i.data = data
	i.internalKeys = internalKeys
	i.valid = false
	i.corrupt = false
	i.key = nil
	i.keyInBuf = false
	i.val = nil
	i.ikey = base.InternalKey{}
	i.srch = nil
	i.srchN, i.srchPrefix = 0, 0
	i.globalSeq = 0
}

func (i *blockIter) restartOffset(r int) int {
	return int(binary.LittleEndian.Uint32(i.data[i.restarts+4*r:]))
}

func (i *blockIter) fail() bool {
	i.corrupt = true
	i.valid = false
	return false
}

// uvarintAt decodes a varint of at most 2^31 at p bounded by end; n <= 0
// on failure.
func uvarintAt(b []byte, p, end int) (uint64, int) {
	if p >= end {
		return 0, 0
	}
	if c := b[p]; c < 0x80 { // the common case: one byte
		return uint64(c), 1
	}
	v, n := binary.Uvarint(b[p:end])
	if n <= 0 || v > 1<<31 {
		return 0, 0
	}
	return v, n
}

// decodeAt decodes the entry at off, whose predecessor is the current key
// (or none, when off is a restart point and the key was reset).
// decodeEntryHeader reads the three varints that start the entry at p
// (shared key length, unshared key length, value length) and returns the
// offset just past them; ok is false if they run past end.
func decodeEntryHeader(data []byte, p, end int) (shared, unshared, vlen uint64, next int, ok bool) {
	if end-p >= 3 && (data[p]|data[p+1]|data[p+2]) < 0x80 {
		// The common case: three one-byte varints.
		return uint64(data[p]), uint64(data[p+1]), uint64(data[p+2]), p + 3, true
	}
	var n int
	if shared, n = uvarintAt(data, p, end); n <= 0 {
		return 0, 0, 0, 0, false
	}
	p += n
	if unshared, n = uvarintAt(data, p, end); n <= 0 {
		return 0, 0, 0, 0, false
	}
	p += n
	if vlen, n = uvarintAt(data, p, end); n <= 0 {
		return 0, 0, 0, 0, false
	}
	return shared, unshared, vlen, p + n, true
}

func (i *blockIter) decodeAt(off int) bool {
	end := i.restarts
	if off >= end {
		i.valid = false
		return false
	}
	shared, unshared, vlen, p, ok := decodeEntryHeader(i.data, off, end)
	if !ok {
		return i.fail()
	}
	if shared > uint64(len(i.key)) || unshared > uint64(end-p) || vlen > uint64(end-p)-unshared {
		return i.fail()
	}
	k := i.data[p : p+int(unshared)]
	p += int(unshared)
	if shared == 0 {
		i.key = k
		i.keyInBuf = false
	} else {
		if !i.keyInBuf {
			i.keyBuf = append(i.keyBuf[:0], i.key[:shared]...)
		} else {
			i.keyBuf = i.keyBuf[:shared]
		}
		i.keyBuf = append(i.keyBuf, k...)
		i.key = i.keyBuf
		i.keyInBuf = true
	}
	i.val = i.data[p : p+int(vlen) : p+int(vlen)]
	i.offset = off
	i.nextOffset = p + int(vlen)
	if i.internalKeys {
		ik, ok := base.DecodeInternalKey(i.key)
		if !ok {
			return i.fail()
		}
		if i.globalSeq != 0 {
			ik.Trailer = base.MakeTrailer(i.globalSeq, ik.Kind())
		}
		i.ikey = ik
	}
	i.valid = true
	return true
}

// seekRestart positions before restart point r: the next decodeAt of its
// offset starts a fresh key.
func (i *blockIter) seekRestart(r int) (int, bool) {
	off := i.restartOffset(r)
	if off >= i.restarts {
		return 0, i.fail()
	}
	i.key = nil
	i.keyInBuf = false
	return off, true
}

func (i *blockIter) first() bool {
	if i.corrupt {
		return false
	}
	if i.restarts == 0 { // an empty block
		i.valid = false
		return false
	}
	off, ok := i.seekRestart(0)
	if !ok {
		return false
	}
	return i.decodeAt(off)
}

func (i *blockIter) next() bool {
	if !i.valid {
		return false
	}
	return i.decodeAt(i.nextOffset)
}

func (i *blockIter) last() bool {
	if i.corrupt {
		return false
	}
	if i.restarts == 0 { // an empty block
		i.valid = false
		return false
	}
	off, ok := i.seekRestart(i.numRestarts - 1)
	if !ok {
		return false
	}
	if !i.decodeAt(off) {
		return false
	}
	for i.nextOffset < i.restarts {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	return true
}

// prev moves to the entry before the current one by rescanning from the
// closest restart point before it.
func (i *blockIter) prev() bool {
	if !i.valid {
		return false
	}
	target := i.offset
	// Largest restart r with restartOffset(r) < target.
	lo, hi := 0, i.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if i.restartOffset(m) < target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		i.valid = false
		return false
	}
	off, ok := i.seekRestart(lo - 1)
	if !ok {
		return false
	}
	if !i.decodeAt(off) {
		return false
	}
	for i.nextOffset < target {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	if i.nextOffset != target {
		return i.fail()
	}
	return true
}

// seekGE positions at the first entry whose internal key is >= k.
func (i *blockIter) seekGE(k base.InternalKey, cmp base.Compare) bool {
	if i.corrupt {
		return false
	}
	if i.srch != nil {
		if ok, handled := i.seekGESearch(k); handled {
			return ok
		}
	}
	if i.restarts == 0 { // an empty block
		i.valid = false
		return false
	}
	// Find the last restart point whose key is < k; the answer is at or
	// after it (or at restart 0).
	lo, hi := 0, i.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		off, ok := i.seekRestart(m)
		if !ok || !i.decodeAt(off) {
			if !i.corrupt {
				i.fail()
			}
			return false
		}
		if base.InternalCompare(cmp, i.ikey, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	r := 0
	if lo > 0 {
		r = lo - 1
	}
	off, ok := i.seekRestart(r)
	if !ok || !i.decodeAt(off) {
		if !i.corrupt {
			i.fail()
		}
		return false
	}
	for base.InternalCompare(cmp, i.ikey, k) < 0 {
		if !i.decodeAt(i.nextOffset) {
			return false
		}
	}
	return true
}

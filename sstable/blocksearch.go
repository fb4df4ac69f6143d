package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
)

// A data block is cached as its raw bytes together with an auxiliary
// buffer (cache.SetAux): a small header and, when the block allows it, a
// search structure built once from the verified block (layout in doc.go,
// "Cached data blocks"). The structure lets seekGE binary search over every
// entry while touching only dense arrays, and then decode the one entry it
// lands on, instead of decoding restart keys and scanning up to a restart
// interval of entries whose headers each sit on their own cache line. It
// lives in its own allocation so that the raw blocks, which Next streams
// through, are laid out in memory exactly as without it.

const (
	cachedHeaderLen = 16
	// maxSearchBlockLen bounds the blocks that get a search structure: its
	// offsets are uint16.
	maxSearchBlockLen = 1<<16 - 1
)

// buildBlockSearch returns the auxiliary buffer cached with the
// checksum-verified data block b, which must satisfy blockValid. When
// bytewise is false, or b is too large or malformed, the search structure
// is left out (n = 0) and seeks in the block take the plain path, which
// reports any corruption exactly as it would for an uncached block.
func buildBlockSearch(b []byte, bytewise bool) []byte {
	numRestarts := binary.LittleEndian.Uint32(b[len(b)-4:])
	n, plen, arenaLen := 0, 0, 0
	if bytewise && len(b) <= maxSearchBlockLen {
		n, plen, arenaLen = measureBlock(b)
	}
	size := cachedHeaderLen
	if n > 0 {
		size += 12*n + 2 + arenaLen
	}
	aux := make([]byte, size)
	binary.LittleEndian.PutUint32(aux[0:], numRestarts)
	binary.LittleEndian.PutUint32(aux[4:], uint32(n))
	binary.LittleEndian.PutUint16(aux[8:], uint16(plen))
	if n > 0 {
		fillSearch(aux, b, n, plen)
	}
	return aux
}

// measureBlock walks b and returns its entry count, the length of the
// prefix common to all its user keys, and the arena size (that prefix plus
// every key's remainder). n is 0 when the block is empty, malformed, or too
// large for uint16 offsets.
func measureBlock(b []byte) (n, plen, arenaLen int) {
	var it blockIter
	if !it.init(b, true) {
		return 0, 0, 0
	}
	var first []byte
	keyBytes := 0
	for ok := it.first(); ok; ok = it.next() {
		uk := it.ikey.UserKey
		if n == 0 {
			first = append(first, uk...)
			plen = len(uk)
		} else {
			p := 0
			for p < plen && p < len(uk) && uk[p] == first[p] {
				p++
			}
			plen = p
		}
		keyBytes += len(it.key)
		n++
	}
	if it.corrupt || n == 0 {
		return 0, 0, 0
	}
	arenaLen = plen + keyBytes - n*plen
	if plen+keyBytes-n*plen > maxSearchBlockLen {
		return 0, 0, 0
	}
	return n, plen, arenaLen
}

// fillSearch writes the search structure of block b (already measured: n
// entries, common user key prefix of plen bytes) into v, which ends where
// the arena does.
func fillSearch(v, b []byte, n, plen int) {
	words := v[cachedHeaderLen:]
	offs := words[8*n:]
	keyOffs := offs[2*n:]
	arena := keyOffs[2*(n+1):]
	var it blockIter
	it.init(b, true)
	ap := 0
	j := 0
	for ok := it.first(); ok; ok = it.next() {
		if j == 0 {
			ap = copy(arena, it.key[:plen])
		}
		binary.LittleEndian.PutUint64(words[8*j:], loadWord(it.ikey.UserKey[plen:]))
		binary.LittleEndian.PutUint16(offs[2*j:], uint16(it.offset))
		binary.LittleEndian.PutUint16(keyOffs[2*j:], uint16(ap))
		ap += copy(arena[ap:], it.key[plen:])
		j++
	}
	binary.LittleEndian.PutUint16(keyOffs[2*n:], uint16(ap))
	if j != n || ap != len(arena) {
		panic("sstable: block changed between measuring and filling its search structure")
	}
}

// initCached points the iterator at a cached data block and its auxiliary
// buffer (from buildBlockSearch). Both were checked before they were
// cached. The restart count is read from whichever line the caller touches
// next anyway: aux's header before a seek (whose search reads it), the
// block's end before a scan, so that iterating never touches aux.
func (i *blockIter) initCached(block, aux []byte, seek bool) {
	i.reset(block, true)
	i.srch = aux
	if seek {
		i.numRestarts = int(binary.LittleEndian.Uint32(aux[0:]))
	} else {
		i.numRestarts = int(binary.LittleEndian.Uint32(block[len(block)-4:]))
	}
	i.restarts = len(block) - 4 - 4*i.numRestarts
	i.offset, i.nextOffset = 0, 0
}

// seekGESearch is seekGE through the search structure; keys order
// bytewise. It returns handled = false when the block has no structure.
func (i *blockIter) seekGESearch(k base.InternalKey) (ok, handled bool) {
	v := i.srch
	n := int(binary.LittleEndian.Uint32(v[4:]))
	if n == 0 {
		return false, false
	}
	i.srchN = n
	i.srchPrefix = int(binary.LittleEndian.Uint16(v[8:]))
	words := v[cachedHeaderLen : cachedHeaderLen+8*n]
	keyOffs := v[cachedHeaderLen+10*n : cachedHeaderLen+12*n+2]
	arena := v[cachedHeaderLen+12*n+2:]
	prefix := arena[:i.srchPrefix]
	uk := k.UserKey
	lo := 0
	if len(uk) < len(prefix) || !bytes.Equal(uk[:len(prefix)], prefix) {
		// Every key of the block starts with prefix: k sorts before all of
		// them or after all of them.
		if bytes.Compare(uk, prefix) > 0 {
			lo = n
		}
		return i.materialize(lo), true
	}
	rest := uk[len(prefix):]
	kw := loadWord(rest)
	// Lower bound: the first word >= kw. A smaller word means a smaller
	// user key; a larger one a larger user key.
	cnt := n
	for cnt > 1 {
		half := cnt >> 1
		if binary.LittleEndian.Uint64(words[8*(lo+half-1):]) < kw {
			lo += half
		}
		cnt -= half
	}
	if binary.LittleEndian.Uint64(words[8*lo:]) < kw {
		lo++
	}
	if lo < n && binary.LittleEndian.Uint64(words[8*lo:]) == kw {
		// Entries lo.. tie with k in their word: find the end of the tie,
		// then order the tied entries by their full keys.
		hi, cnt := lo+1, n-lo-1
		for cnt > 0 {
			half := cnt >> 1
			if binary.LittleEndian.Uint64(words[8*(hi+half):]) == kw {
				hi += half + 1
				cnt -= half + 1
			} else {
				cnt = half
			}
		}
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			s := arena[binary.LittleEndian.Uint16(keyOffs[2*m:]):binary.LittleEndian.Uint16(keyOffs[2*m+2:])]
			c := bytes.Compare(s[:len(s)-8], rest)
			if c < 0 || (c == 0 && binary.LittleEndian.Uint64(s[len(s)-8:]) > k.Trailer) {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	return i.materialize(lo), true
}

// materialize positions at entry j of the search structure (past the end
// when j == srchN), rebuilding its key from the arena and decoding only its
// own header from the block.
func (i *blockIter) materialize(j int) bool {
	v, n := i.srch, i.srchN
	if j >= n {
		i.valid = false
		return false
	}
	offs := v[cachedHeaderLen+8*n:]
	keyOffs := v[cachedHeaderLen+10*n:]
	arena := v[cachedHeaderLen+12*n+2:]
	i.keyBuf = append(i.keyBuf[:0], arena[:i.srchPrefix]...)
	i.keyBuf = append(i.keyBuf, arena[binary.LittleEndian.Uint16(keyOffs[2*j:]):binary.LittleEndian.Uint16(keyOffs[2*j+2:])]...)
	i.key = i.keyBuf
	i.keyInBuf = true
	off := int(binary.LittleEndian.Uint16(offs[2*j:]))
	// The header was validated when the structure was built; decode it
	// with the same checks anyway, so that a broken invariant cannot read
	// out of bounds.
	end := i.restarts
	_, unshared, vlen, p, ok := decodeEntryHeader(i.data, off, end)
	if !ok {
		return i.fail()
	}
	if unshared > uint64(end-p) || vlen > uint64(end-p)-unshared {
		return i.fail()
	}
	p += int(unshared)
	i.val = i.data[p : p+int(vlen) : p+int(vlen)]
	i.offset = off
	i.nextOffset = p + int(vlen)
	ik, ok := base.DecodeInternalKey(i.key)
	if !ok {
		return i.fail()
	}
	i.ikey = ik
	i.valid = true
	return true
}

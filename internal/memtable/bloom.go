package memtable

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
)

// prefixBloom is a memtable's bloom filter of the prefixes of its point
// keys (RocksDB's memtable prefix bloom, a DynamicBloom with cache-line
// locality): each prefix sets bloomProbes bits within one 512-bit block,
// so a probe touches one cache line. The writer sets bits with atomic ORs
// while readers load words atomically, without locks; a reader racing an
// Add may miss the bits of the key being added, exactly as it may miss the
// key itself in the skiplist.
type prefixBloom struct {
	tr     base.SliceTransform
	words  []atomic.Uint64
	blocks uint64 // len(words) / wordsPerBlock
	// last is the prefix added last (writer only): a run of keys of one
	// prefix hashes it once.
	last    []byte
	hasLast bool
}

const (
	bloomProbes   = 6 // RocksDB's DynamicBloom default
	wordsPerBlock = 8 // 512 bits, a cache line
)

// bloomSeed keys the hash; memtable blooms live in memory only, so any seed
// works and one per process suffices.
var bloomSeed = maphash.MakeSeed()

// MinPrefixBloomBytes is the smallest prefix bloom SetPrefixBloom makes:
// one 512-bit block.
const MinPrefixBloomBytes = wordsPerBlock * 8

// SetPrefixBloom gives the memtable a bloom filter of about size bytes (at
// least MinPrefixBloomBytes, rounded to a cache line) of the prefixes, by
// t, of the point keys added from now on. Call it before the first Add:
// the filter must hold every key of the memtable.
func (m *Memtable) SetPrefixBloom(t base.SliceTransform, size int) {
	if m.count.Load() != 0 {
		base.AssertionFailedf("memtable: SetPrefixBloom after %d entries were added", m.count.Load())
	}
	blocks := max(uint64(size)/(wordsPerBlock*8), 1)
	m.bloom = &prefixBloom{tr: t, words: make([]atomic.Uint64, blocks*wordsPerBlock), blocks: blocks}
}

// PrefixBloomBytes returns the size of the memtable's prefix bloom, 0 when
// it has none.
func (m *Memtable) PrefixBloomBytes() int {
	if m.bloom == nil {
		return 0
	}
	return len(m.bloom.words) * 8
}

// PrefixExtractorName names the extractor of the memtable's prefix bloom,
// "" when it has none.
func (m *Memtable) PrefixExtractorName() string {
	if m.bloom == nil {
		return ""
	}
	return m.bloom.tr.Name()
}

// MayContainPrefix probes the prefix bloom for prefix, a prefix by the
// extractor named extractor: false means no point key of the memtable has
// it. Without a prefix bloom of that extractor it answers true.
func (m *Memtable) MayContainPrefix(extractor string, prefix []byte) bool {
	b := m.bloom
	if b == nil || b.tr.Name() != extractor {
		return true
	}
	return b.mayContain(prefix)
}

// add puts the prefix of userKey, if it has one, in the filter; writer only.
func (b *prefixBloom) add(userKey []byte) {
	if !b.tr.InDomain(userKey) {
		return
	}
	p := b.tr.Transform(userKey)
	if b.hasLast && bytes.Equal(p, b.last) {
		return
	}
	b.last = append(b.last[:0], p...)
	b.hasLast = true
	words, a, delta := b.locate(p)
	for i := 0; i < bloomProbes; i++ {
		bit := a % (wordsPerBlock * 64)
		words[bit/64].Or(1 << (bit % 64))
		a += delta
	}
}

func (b *prefixBloom) mayContain(prefix []byte) bool {
	words, a, delta := b.locate(prefix)
	for i := 0; i < bloomProbes; i++ {
		bit := a % (wordsPerBlock * 64)
		if words[bit/64].Load()&(1<<(bit%64)) == 0 {
			return false
		}
		a += delta
	}
	return true
}

// locate hashes p to its block and the start and step of its probes
// within the block.
func (b *prefixBloom) locate(p []byte) (words []atomic.Uint64, a, delta uint32) {
	h := maphash.Bytes(bloomSeed, p)
	blk := (h >> 32) * b.blocks >> 32 // the high half, scaled to [0, blocks)
	a = uint32(h)
	delta = a>>17 | a<<15 | 1
	return b.words[blk*wordsPerBlock : (blk+1)*wordsPerBlock], a, delta
}

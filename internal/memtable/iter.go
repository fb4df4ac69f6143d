package memtable

import "github.com/shaledb/shale/internal/base"

// searchTrailer sorts before every entry of a user key.
var searchTrailer = base.MakeSearchKey(nil).Trailer

// NewIter returns an iterator over the point entries in internal-key order.
// It may run concurrently with Add and sees entries added before or during
// iteration. Next and Prev on an unpositioned iterator return false.
func (m *Memtable) NewIter() base.InternalIterator {
	return &iterator{m: m}
}

// IterOptions configure an iterator of NewIterWith.
type IterOptions struct {
	// PrefixExtractor names the extractor of the prefixes SeekPrefixGE is
	// given: the memtable's prefix bloom is consulted only when it was
	// built by an extractor of that name. "" never consults it.
	PrefixExtractor string
	// Bloom, when set, counts the probes of the prefix bloom.
	Bloom *BloomCounts
}

// BloomCounts counts the probes of prefix blooms for one reader: Checks,
// and Useful those that ruled the memtable out (RocksDB's
// bloom_memtable_hit_count is Checks - Useful, bloom_memtable_miss_count
// Useful). Plain integers: one goroutine's.
type BloomCounts struct{ Checks, Useful uint64 }

// NewIterWith is NewIter with options: SeekPrefixGE skips the memtable when
// its prefix bloom rules the prefix out.
func (m *Memtable) NewIterWith(o IterOptions) base.InternalIterator {
	it := &iterator{m: m, counts: o.Bloom}
	it.prefixFilter = m.bloom != nil && o.PrefixExtractor != "" && m.bloom.tr.Name() == o.PrefixExtractor
	return it
}

// iterator walks the point skiplist; n is the current node, 0 when
// unpositioned.
type iterator struct {
	m   *Memtable
	n   uint32
	key base.InternalKey
	// steps counts the Next and Prev calls (Steps).
	steps uint64
	// prefixFilter says SeekPrefixGE consults the prefix bloom; counts,
	// when set, counts its probes.
	prefixFilter bool
	counts       *BloomCounts
}

// Steps returns how many times it stepped (Next, Prev) since it was made:
// the DB's iterator compares it across one of its moves to see how far a
// move walked the memtable.
func (it *iterator) Steps() uint64 { return it.steps }

// StepCounter returns the counter Steps reads, for a reader that checks it
// after every move of the iterator without a call (the DB's iterator on
// its hot path); it is valid while the iterator is.
func (it *iterator) StepCounter() *uint64 { return &it.steps }

var (
	_ base.InternalIterator = (*iterator)(nil)
	_ base.InternalSeeker   = (*iterator)(nil)
	_ base.PrefixSeeker     = (*iterator)(nil)
)

func (it *iterator) setNode(n uint32) bool {
	it.n = n
	if n == 0 {
		it.key = base.InternalKey{}
		return false
	}
	it.key = base.InternalKey{UserKey: it.m.key(n), Trailer: it.m.trailer(n)}
	return true
}

func (it *iterator) SeekGE(key []byte) bool {
	return it.setNode(it.m.seekGE(&it.m.points, key, searchTrailer))
}

// SeekPrefixGE is SeekGE for the entries of prefix only
// (base.PrefixSeeker): with a prefix bloom of the iterator's extractor
// that rules the prefix out, it returns false without searching the list,
// unpositioned.
func (it *iterator) SeekPrefixGE(prefix, key []byte) bool {
	if it.prefixFilter {
		ok := it.m.bloom.mayContain(prefix)
		if c := it.counts; c != nil {
			c.Checks++
			if !ok {
				c.Useful++
			}
		}
		if !ok {
			return it.setNode(0)
		}
	}
	return it.SeekGE(key)
}

// SeekGEInternal positions at the first entry at or after key in
// internal-key order.
func (it *iterator) SeekGEInternal(key base.InternalKey) bool {
	return it.setNode(it.m.seekGE(&it.m.points, key.UserKey, key.Trailer))
}

func (it *iterator) SeekLT(key []byte) bool {
	return it.setNode(it.m.seekLT(&it.m.points, key, searchTrailer))
}

func (it *iterator) First() bool {
	return it.setNode(it.m.nextOf(it.m.points.head, 0))
}

func (it *iterator) Last() bool {
	return it.setNode(it.m.last(&it.m.points))
}

func (it *iterator) Next() bool {
	if it.n == 0 {
		return false
	}
	it.steps++
	return it.setNode(it.m.nextOf(it.n, 0))
}

func (it *iterator) Prev() bool {
	if it.n == 0 {
		return false
	}
	it.steps++
	return it.setNode(it.m.seekLT(&it.m.points, it.key.UserKey, it.key.Trailer))
}

func (it *iterator) Key() base.InternalKey { return it.key }

func (it *iterator) Value() []byte {
	if it.n == 0 {
		return nil
	}
	return it.m.value(it.n)
}

func (it *iterator) Error() error { return nil }

func (it *iterator) Close() error {
	it.setNode(0)
	return nil
}

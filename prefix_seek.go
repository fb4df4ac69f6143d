package shale

import (
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/memtable"
)

// Prefix seeks (RocksDB's prefix seek; docs/decisions.md, Prefix seek).
//
// Options.PrefixExtractor gives keys a prefix. Flushes and compactions then
// write tables whose bloom filter also holds the prefixes of their keys
// (sstable.WriterOptions.PrefixExtractor), memtables may keep a prefix
// bloom (Options.MemtablePrefixBloomSizeRatio), and an iterator made with
// ReadOptions.PrefixSameAsStart (and not TotalOrderSeek) is in prefix mode:
//
//   - Seek(key), key in the extractor's domain: the DB iterator is confined
//     to key's prefix (dbiter.SetPrefix) and seeks the merge with
//     SeekPrefixGE, so every memtable and table whose prefix filter (of an
//     extractor of the same name) rules the prefix out is left out, and so
//     is every file of a level whose bounds do; none of them has a data
//     block read. The iterator becomes invalid at the first key without the
//     prefix, and Next and Prev stay within it.
//   - SeekForPrev(key) and SeekLT(key): confined the same way, but sought in
//     total order (no filter is consulted going backward).
//   - First and Last: total order, then confined to the prefix of the key
//     they land on (RocksDB's SeekToFirst and SeekToLast with
//     prefix_same_as_start).
//   - A seek key outside the domain: total order, unconfined.
//   - Next and Prev on an iterator that is confined and invalid return false
//     (RocksDB leaves them undefined; shale's total-order iterators restart
//     from First or Last).
//
// What a confined iterator returns is always what a total-order iterator
// returns, cut at the end of the prefix: the filters only skip sources that
// hold no key of the prefix, and the contiguity the extractor promises
// (SliceTransform) means a source without the prefix holds nothing between
// two keys of it.

// SliceTransform is a prefix extractor (RocksDB's SliceTransform): see
// Options.PrefixExtractor, and base.SliceTransform for the contract.
type SliceTransform = base.SliceTransform

// NewFixedPrefixTransform returns RocksDB's fixed prefix extractor: the
// first n bytes of a key; keys shorter than n have no prefix. Its name,
// which tables record, is "rocksdb.FixedPrefix.<n>".
func NewFixedPrefixTransform(n int) SliceTransform { return base.NewFixedPrefixTransform(n) }

// NewCappedPrefixTransform returns RocksDB's capped prefix extractor: the
// first min(n, len(key)) bytes of a key; every key has a prefix. Its name is
// "rocksdb.CappedPrefix.<n>".
func NewCappedPrefixTransform(n int) SliceTransform { return base.NewCappedPrefixTransform(n) }

// prefixExtractorName renders Options.PrefixExtractor for the OPTIONS file:
// its name, or RocksDB's "nullptr" for none.
func prefixExtractorName(t SliceTransform) string {
	if t == nil {
		return "nullptr"
	}
	return t.Name()
}

// setPrefixBloom gives m a prefix bloom when o asks for one: a
// PrefixExtractor and a positive MemtablePrefixBloomSizeRatio, of that
// fraction of the write buffer size m was made for (RocksDB's sizing).
func setPrefixBloom(m *memtable.Memtable, o *Options, writeBufferSize int) {
	if o.PrefixExtractor == nil || o.MemtablePrefixBloomSizeRatio <= 0 {
		return
	}
	size := int(o.MemtablePrefixBloomSizeRatio * float64(writeBufferSize))
	m.SetPrefixBloom(o.PrefixExtractor, max(size, memtable.MinPrefixBloomBytes))
}

// iteratorPrefixExtractor returns the extractor of an iterator made with
// ro under o: o's, when ro asks for prefix mode, else nil (total order).
func iteratorPrefixExtractor(o *Options, ro *ReadOptions) SliceTransform {
	if ro == nil || !ro.PrefixSameAsStart || ro.TotalOrderSeek {
		return nil
	}
	return o.PrefixExtractor
}

// confineTo confines i to the prefix of key in prefix mode, when key has
// one, and lifts any confinement otherwise.
func (i *Iterator) confineTo(key []byte) {
	if i.prefixTr == nil {
		return
	}
	if i.prefixTr.InDomain(key) {
		i.it.SetPrefix(i.prefixTr.Transform(key))
		return
	}
	i.it.ClearPrefix()
}

// confineToCurrent confines i, in prefix mode, to the prefix of the key it
// is at (after First or Last).
func (i *Iterator) confineToCurrent(ok bool) bool {
	if ok && i.prefixTr != nil && i.prefixTr.InDomain(i.it.Key()) {
		i.it.SetPrefix(i.prefixTr.Transform(i.it.Key()))
	}
	return ok
}

// stuck reports whether a Next or Prev must not move: the iterator is
// confined to a prefix and already invalid (it left the prefix, or its
// seek found nothing in it).
func (i *Iterator) stuck() bool {
	return i.prefixTr != nil && i.it.InPrefix() && !i.it.Valid()
}

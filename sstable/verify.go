package sstable

import (
	"fmt"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/readahead"
)

// verifyReadaheadSize is the readahead of VerifyChecksums over the data
// blocks: it reads the whole table front to back, as a compaction does.
const verifyReadaheadSize = 2 << 20

// VerifyChecksums reads every block of the table from the file, never from
// the cache, and checks it: footer, metaindex, properties, filter, range-del
// and index blocks must match what was read at open, and every data block
// must pass its checksum, decompress, decode, hold strictly ordered keys
// within its index separators, and the blocks together hold as many point
// entries as the properties say. The first failure is returned as an error
// matching base.ErrCorruption naming the file and the block's offset.
func (r *Reader) VerifyChecksums() error {
	size, err := r.bf.Source().File.Size()
	if err != nil {
		return fmt.Errorf("shale: verifying %s: %w", r.bf.Name(), err)
	}
	if uint64(size) != r.footOff+footerLen {
		return base.CorruptionErrorf(r.bf.Name(), size, "table is %d bytes, but was %d bytes when opened", size, r.footOff+footerLen)
	}
	var fb [footerLen]byte
	if err := r.bf.ReadAt(r.bf.Source(), fb[:], int64(r.footOff)); err != nil {
		return err
	}
	ft, err := decodeFooter(r.bf.Name(), int64(r.footOff), fb[:])
	if err != nil {
		return err
	}
	if ft.checksum != r.bf.ChecksumType() {
		return base.CorruptionErrorf(r.bf.Name(), int64(r.footOff), "footer checksum type %d, but %d when opened", ft.checksum, r.bf.ChecksumType())
	}
	if err := r.verifyMetaBlocks(ft); err != nil {
		return err
	}
	return r.verifyDataBlocks()
}

// verifyMetaBlocks re-reads the metaindex, every block it names, and the
// index block, and compares what they hold with the Reader's copies.
func (r *Reader) verifyMetaBlocks(ft footer) error {
	meta, err := r.bf.ReadBlock(ft.metaindex, r.footOff, nil, r.bf.Source())
	if err != nil {
		return err
	}
	var it blockIter
	if !it.init(meta, false) {
		return r.corruptf(ft.metaindex, "bad metaindex block")
	}
	for ok := it.first(); ok; ok = it.next() {
		h, n := block.DecodeHandle(it.val)
		if n <= 0 || n != len(it.val) {
			return r.corruptf(ft.metaindex, "bad handle for %q in metaindex", it.key)
		}
		b, err := r.bf.ReadBlock(h, r.footOff, nil, r.bf.Source())
		if err != nil {
			return err
		}
		switch string(it.key) {
		case metaPropertiesName:
			p, msg := decodeProperties(b)
			if msg != "" {
				return r.corruptf(h, "%s", msg)
			}
			if p.NumEntries != r.props.NumEntries || p.NumRangeDeletions != r.props.NumRangeDeletions ||
				p.NumDataBlocks != r.props.NumDataBlocks || p.ComparerName != r.props.ComparerName {
				return r.corruptf(h, "properties block differs from the one read at open")
			}
		case metaFilterName, metaPrefixFilterName:
			// With the filter in the cache, the copy compared is the
			// cache's, if it still holds one.
			held := r.filter
			if held == nil && r.filterInCache {
				if v, ok := r.bf.CachedValue(h); ok {
					held, _ = v.([]byte)
				}
			}
			if (held != nil || !r.filterInCache) && string(b) != string(held) {
				return r.corruptf(h, "filter block differs from the one read at open")
			}
		case metaRangeDelName:
			if err := r.verifyRangeDelBlock(h, b); err != nil {
				return err
			}
		case metaPartFilterName, metaPartPrefixFilterName:
			if err := r.verifyFilterPartitions(h, b); err != nil {
				return err
			}
		}
	}
	if it.corrupt {
		return r.corruptf(ft.metaindex, "bad metaindex block")
	}
	ib, err := r.bf.ReadBlock(ft.index, r.footOff, nil, r.bf.Source())
	if err != nil {
		return err
	}
	ix, err := r.index(r.bf.Source())
	if err != nil {
		return err
	}
	if !it.init(ib, true) {
		return r.corruptf(ft.index, "bad index block")
	}
	i := 0
	for ok := it.first(); ok; ok = it.next() {
		bh, n := block.DecodeHandle(it.val)
		propsOK := n == len(it.val) && ix.props == nil
		if n > 0 && n < len(it.val) && i < len(ix.props) {
			p, ok := decodeBlockProps(it.val[n:])
			propsOK = ok && p == ix.props[i]
		}
		if n <= 0 || !propsOK || i >= len(ix.items) || bh != ix.items[i].handle ||
			base.InternalCompare(r.cmp, it.ikey, ix.items[i].sep) != 0 {
			return r.corruptf(ft.index, "index entry %d differs from the one read at open", i)
		}
		i++
	}
	if it.corrupt || i != len(ix.items) {
		return r.corruptf(ft.index, "index block holds %d entries, %d when opened", i, len(ix.items))
	}
	if r.twoLevel {
		// Every index partition, read from the file (never the cache).
		for p := range ix.items {
			if _, err := r.readPartition(ix, p, r.bf.Source()); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyFilterPartitions checks a re-read top-level filter index (at h)
// against the one read at open and reads every filter partition it names
// from the file, checking its checksum.
func (r *Reader) verifyFilterPartitions(h block.Handle, b []byte) error {
	ft, err := r.decodeIndexBlock(h, b, indexTop)
	if err != nil {
		return err
	}
	if r.filterTop == nil || len(ft.items) != len(r.filterTop.items) {
		return r.corruptf(h, "top-level filter index differs from the one read at open")
	}
	for i, it := range ft.items {
		if it.handle != r.filterTop.items[i].handle || base.InternalCompare(r.cmp, it.sep, r.filterTop.items[i].sep) != 0 {
			return r.corruptf(h, "top-level filter index entry %d differs from the one read at open", i)
		}
		if _, err := r.bf.ReadBlock(it.handle, r.footOff, nil, r.bf.Source()); err != nil {
			return err
		}
	}
	return nil
}

// verifyRangeDelBlock checks that a re-read range-del block decodes to the
// tombstones read at open.
func (r *Reader) verifyRangeDelBlock(h block.Handle, b []byte) error {
	var it blockIter
	if !it.init(b, true) {
		return r.corruptf(h, "bad range-del block")
	}
	span, seq := 0, 0
	for ok := it.first(); ok; ok = it.next() {
		if span < len(r.rangeDels) && seq == len(r.rangeDels[span].Seqs) {
			span, seq = span+1, 0
		}
		if span >= len(r.rangeDels) {
			return r.corruptf(h, "range-del block holds more tombstones than when opened")
		}
		s := r.rangeDels[span]
		k := it.ikey
		if r.globalSeq != 0 && k.SeqNum() == 0 {
			k.Trailer = base.MakeTrailer(r.globalSeq, k.Kind())
		}
		if k.Kind() != base.KindRangeDelete || r.cmp(k.UserKey, s.Start) != 0 || r.cmp(it.val, s.End) != 0 || k.SeqNum() != s.Seqs[seq] {
			return r.corruptf(h, "range tombstone %s differs from the one read at open", k)
		}
		seq++
	}
	if it.corrupt {
		return r.corruptf(h, "bad range-del block")
	}
	if len(r.rangeDels) > 0 && (span != len(r.rangeDels)-1 || seq != len(r.rangeDels[span].Seqs)) {
		return r.corruptf(h, "range-del block holds fewer tombstones than when opened")
	}
	return nil
}

// verifyDataBlocks reads every data block from the file (with readahead)
// and checks its checksum, encoding and key order.
func (r *Reader) verifyDataBlocks() error {
	src := r.bf.Source()
	var ra readahead.State
	ra.Init(src.File, readahead.Config{Size: verifyReadaheadSize, Limit: int64(r.dataEnd), Alignment: src.Align, Reader: r.bf.AsyncReader()})
	defer func() { r.bf.AddReadahead(src, ra.Release()) }()
	var it blockIter
	var prev []byte // the previous entry's encoded internal key
	var points uint64
	var c indexCursor
	if err := c.init(r, src); err != nil {
		return err
	}
	if err := c.first(); err != nil {
		return err
	}
	var prevSep base.InternalKey
	for i := 0; c.valid(); i++ {
		item := *c.item()
		if err := c.next(); err != nil {
			return err
		}
		h := item.handle
		b, err := r.bf.ReadBlock(h, r.metaStart, &ra, src)
		if err != nil {
			return err
		}
		if !it.init(b, true) {
			return r.corruptf(h, "bad data block restart array")
		}
		first := true
		for ok := it.first(); ok; ok = it.next() {
			if prev != nil {
				pk, _ := base.DecodeInternalKey(prev)
				if base.InternalCompare(r.cmp, pk, it.ikey) >= 0 {
					return r.corruptf(h, "data block keys out of order: %s after %s", it.ikey, pk)
				}
			}
			if first && i > 0 && base.InternalCompare(r.cmp, it.ikey, prevSep) <= 0 {
				return r.corruptf(h, "first key %s of data block is not above the previous block's separator", it.ikey)
			}
			first = false
			prev = append(prev[:0], it.key...)
			points++
		}
		if it.corrupt {
			return r.corruptf(h, "bad data block entry")
		}
		if prev != nil {
			if pk, _ := base.DecodeInternalKey(prev); base.InternalCompare(r.cmp, pk, item.sep) > 0 {
				return r.corruptf(h, "data block key %s is above its index separator %s", pk, item.sep)
			}
		}
		prevSep = item.sep
	}
	if want := r.props.NumEntries - r.props.NumRangeDeletions; points != want {
		return base.CorruptionErrorf(r.bf.Name(), 0, "data blocks hold %d point entries, properties say %d", points, want)
	}
	return nil
}

package sstable

import (
	"slices"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
)

// BlockInfo describes one block of a table (shale sst_dump --command=raw):
// what it holds, where it lies (Length without the 5-byte trailer, which
// follows every block but the footer), and for a data block the index's
// separator, which every key of the block is at most.
type BlockInfo struct {
	// Kind is "data", "index", "metaindex", "footer", or the metaindex
	// name of a meta block ("rocksdb.properties", "fullfilter...",
	// "rocksdb.range_del", ...).
	Kind           string
	Offset, Length uint64
	Separator      base.InternalKey
}

// Layout reads the footer, the metaindex and the index again from the file
// and returns every block of the table in file order. Damage returns an
// error matching base.ErrCorruption naming the file and offset.
func (r *Reader) Layout() ([]BlockInfo, error) {
	src := r.bf.Source()
	var fb [footerLen]byte
	if err := r.bf.ReadAt(src, fb[:], int64(r.footOff)); err != nil {
		return nil, err
	}
	ft, err := decodeFooter(r.bf.Name(), int64(r.footOff), fb[:])
	if err != nil {
		return nil, err
	}
	meta, err := r.bf.ReadBlock(ft.metaindex, r.footOff, nil, src)
	if err != nil {
		return nil, err
	}
	blocks := []BlockInfo{
		{Kind: "metaindex", Offset: ft.metaindex.Offset, Length: ft.metaindex.Length},
		{Kind: "index", Offset: ft.index.Offset, Length: ft.index.Length},
		{Kind: "footer", Offset: r.footOff, Length: footerLen},
	}
	if err := r.decodeMetaindex(ft.metaindex, meta, func(name string, h block.Handle) {
		blocks = append(blocks, BlockInfo{Kind: name, Offset: h.Offset, Length: h.Length})
	}); err != nil {
		return nil, err
	}
	if r.twoLevel {
		blocks[1].Kind = "top-level index"
		top, err := r.index(src)
		if err != nil {
			return nil, err
		}
		for _, item := range top.items {
			blocks = append(blocks, BlockInfo{Kind: "index partition", Offset: item.handle.Offset, Length: item.handle.Length, Separator: item.sep})
		}
		if r.filterTop != nil {
			for _, item := range r.filterTop.items {
				blocks = append(blocks, BlockInfo{Kind: "filter partition", Offset: item.handle.Offset, Length: item.handle.Length, Separator: item.sep})
			}
		}
	}
	var c indexCursor
	if err := c.init(r, src); err != nil {
		return nil, err
	}
	err = c.first()
	for ; err == nil && c.valid(); err = c.next() {
		item := c.item()
		blocks = append(blocks, BlockInfo{Kind: "data", Offset: item.handle.Offset, Length: item.handle.Length, Separator: item.sep})
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(blocks, func(a, b BlockInfo) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	return blocks, nil
}

// DataBlockEntries reads the data block b (from Layout) from the file,
// checking its checksum, and calls fn with each entry in order. A damaged
// block returns an error matching base.ErrCorruption naming the file and
// the block's offset.
func (r *Reader) DataBlockEntries(b BlockInfo, fn func(k base.InternalKey, value []byte)) error {
	h := block.Handle{Offset: b.Offset, Length: b.Length}
	data, err := r.bf.ReadBlock(h, r.metaStart, nil, r.bf.Source())
	if err != nil {
		return err
	}
	var it blockIter
	if !it.init(data, true) {
		return r.corruptf(h, "bad data block restart array")
	}
	for ok := it.first(); ok; ok = it.next() {
		fn(it.ikey, it.val)
	}
	if it.corrupt {
		return r.corruptf(h, "bad data block entry")
	}
	return nil
}

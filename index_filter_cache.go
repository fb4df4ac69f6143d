package shale

import "github.com/shaledb/shale/internal/base"

// pinIndexAndFilter says whether table num, being opened now, pins its
// index and filter blocks in the block cache: under
// Options.CacheIndexAndFilterBlocks and PinL0FilterAndIndexBlocksInCache,
// when the table is in L0 of the current version. As in RocksDB the level
// is the one at open; a reader opened while its table is in L0 keeps the
// pin until it is closed (the file cache evicts it, or the table becomes
// obsolete), even if a trivial move takes the table down meanwhile.
func (d *DB) pinIndexAndFilter(num base.FileNum) bool {
	if !d.opts.CacheIndexAndFilterBlocks || !d.opts.PinL0FilterAndIndexBlocksInCache {
		return false
	}
	rs := d.loadReadState()
	if rs == nil {
		return false
	}
	defer rs.unref()
	for _, f := range rs.version.Levels[0] {
		if f.FileNum == num {
			return true
		}
	}
	return false
}

package shale

import (
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// KeyMayExist reports whether key may exist at the read's snapshot without
// reading from disk (RocksDB's KeyMayExist): it answers from the memtables
// and, for tables, from the bloom filters in memory. false means key is
// certainly absent; true means it may exist, and a Get would tell. When a
// memtable holds the key's newest value inline, valueFound is true and
// value a copy of it. Tables not open, filters out of the cache, blob
// values, merge operands and range tombstones in tables are answered "may exist". A
// closed DB answers true.
func (d *DB) KeyMayExist(key []byte, ro *ReadOptions) (mayExist bool, value []byte, valueFound bool) {
	if d.checkOpen() != nil {
		return true, nil, false
	}
	rs, snap := d.loadReadStateAt(ro, nil)
	if rs == nil {
		return true, nil, false
	}
	defer rs.unref()
	var maxTomb base.SeqNum
	if v, kind, seq, ok := rs.memtableGet(key, snap, &maxTomb); ok {
		if !entryVisible(kind, seq, maxTomb) || d.newSecondaryFilter(rs, snap).deletes(key, v, kind, seq) {
			return false, nil, false
		}
		if kind == base.KindBlobIndex || kind == base.KindMerge {
			// The value is in a blob file, or is still to be merged.
			return true, nil, false
		}
		return true, append([]byte{}, v...), true
	}
	if maxTomb > 0 {
		// A memtable's range tombstone covers key: whatever the tables hold
		// of it is older (every table entry is older than every memtable
		// entry), so it is deleted.
		return false, nil, false
	}
	// The tables in Get's order (getFrom): L0 newest first, then the one
	// file of each level whose range holds key.
	mayHold := func(f *manifest.FileMetadata) bool {
		t, ok := d.fileCache.findOpenTable(f.FileNum)
		if !ok {
			return true
		}
		defer t.release()
		return t.reader.MayContainCached(key)
	}
	v := rs.version
	for _, f := range v.Levels[0] {
		if fileContains(d.cmp.Compare, f, key) && mayHold(f) {
			return true, nil, false
		}
	}
	for level := 1; level < len(v.Levels); level++ {
		if f := v.FindFile(d.cmp.Compare, level, key); f != nil && mayHold(f) {
			return true, nil, false
		}
	}
	return false, nil, false
}

package shale

import (
	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// readSeq returns the seqnum a read with ro sees.
func (d *DB) readSeq(ro *ReadOptions) base.SeqNum {
	if ro != nil && ro.Snapshot != nil {
		return ro.Snapshot.seq
	}
	return base.SeqNum(d.visibleSeq.Load())
}

// Get returns a copy of the value of key, or ErrNotFound.
func (d *DB) Get(key []byte, ro *ReadOptions) ([]byte, error) {
	return d.AppendValue(nil, key, ro)
}

// AppendValue appends the value of key to dst and returns the extended
// slice, or dst and ErrNotFound (or another error). It is Get for a caller
// that reuses one buffer across reads, as RocksDB's Get into a
// std::string is: once dst has the capacity, a read allocates nothing,
// where Get allocates the copy it returns (for 8 KiB values, a third of a
// cached read's time here). AppendValue(buf[:0], ...) overwrites buf; a
// nil dst gets a slice of the value's size, not nil even for an empty
// value (what Get returns).
func (d *DB) AppendValue(dst, key []byte, ro *ReadOptions) ([]byte, error) {
	if st := d.opts.Statistics; st != nil {
		defer st.record(HistogramGetMicros, monotime.Now())
	}
	if err := d.checkOpen(); err != nil {
		return dst, err
	}
	dl := ro.readDeadline()
	if dl.Expired() {
		return dst, errDeadlinePassed()
	}
	rs, snap := d.loadReadStateAt(ro, nil)
	if rs == nil {
		return dst, ErrClosed
	}
	defer rs.unref()
	var value []byte
	var err error
	if pc := ro.perfContext(); pc != nil {
		var s sstable.ReadStats
		var bs blob.ReadStats
		var deleted bool
		value, deleted, err = d.getFrom(rs, key, snap, ro.fillCache(), &s, &bs, dl)
		pc.addReadStats(&s)
		pc.addBlobStats(&bs)
		if deleted {
			pc.InternalDeleteSkippedCount++
		}
	} else {
		value, _, err = d.getFrom(rs, key, snap, ro.fillCache(), nil, nil, dl)
	}
	if err == ErrNotFound {
		return dst, err // the usual miss: no deadline error to look for
	} else if err != nil {
		return dst, readError(err)
	}
	if dst == nil {
		// Not nil for an empty value: a found key has a value.
		dst = make([]byte, 0, len(value))
	}
	return append(dst, value...), nil
}

// getFrom looks key up in the sources of rs, newest first. A source's range
// tombstones count before its point entries: an entry is hidden by any
// tombstone seen so far with a higher seqnum. The newest source holding a
// point entry of the key decides, because for one user key newer versions
// always sit in newer sources. The value aliases memtable or block memory.
// stats and blobStats, when not nil, also receive the counts of the table
// work and of the blob value read. deleted
// says the answer ErrNotFound came from a tombstone (a point one, or a range
// tombstone over the newest entry) rather than from no entry at all. dl
// bounds the table reads, and its Deadline is checked before each table and
// blob value is read.
func (d *DB) getFrom(rs *readState, key []byte, snap base.SeqNum, fillCache bool, stats *sstable.ReadStats, blobStats *blob.ReadStats, dl vfs.ReadDeadline) (value []byte, deleted bool, err error) {
	var maxTomb base.SeqNum
	sf := d.newSecondaryFilter(rs, snap)
	result := func(value []byte, kind base.Kind, seq base.SeqNum) ([]byte, bool, error) {
		if !entryVisible(kind, seq, maxTomb) || sf.deletes(key, value, kind, seq) {
			return nil, true, ErrNotFound
		}
		switch kind {
		case base.KindBlobIndex:
			if dl.Expired() {
				return nil, false, errDeadlinePassed()
			}
			v, err := d.readBlobValue(key, value, fillCache, blobStats)
			return v, false, err
		case base.KindMerge:
			return d.getMerge(rs, key, snap, fillCache, stats, blobStats, dl)
		}
		return value, false, nil
	}
	if value, kind, seq, ok := rs.memtableGet(key, snap, &maxTomb); ok {
		return result(value, kind, seq)
	}
	v := rs.version
	var bloom sstable.BloomCounts
	defer d.addBloom(&bloom, stats)
	probe := func(f *manifest.FileMetadata) (bool, []byte, bool, error) {
		if dl.Expired() {
			return true, nil, false, errDeadlinePassed()
		}
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			return true, nil, false, err
		}
		if t.rangeDels != nil {
			maxTomb = max(maxTomb, t.rangeDels.MaxCoveringSeq(key, snap))
		}
		// The value is in block memory, which outlives the file's handle.
		value, kind, seq, ok, err := t.reader.GetDeadline(key, snap, fillCache, stats, &bloom, dl)
		t.release()
		if err != nil {
			return true, nil, false, err
		}
		if !ok {
			return false, nil, false, nil
		}
		value, deleted, err := result(value, kind, seq)
		return true, value, deleted, err
	}
	for _, f := range v.Levels[0] {
		if !fileContains(d.cmp.Compare, f, key) {
			continue
		}
		if done, value, deleted, err := probe(f); done {
			return value, deleted, err
		}
	}
	for level := 1; level < len(v.Levels); level++ {
		f := v.FindFile(d.cmp.Compare, level, key)
		if f == nil {
			continue
		}
		if done, value, deleted, err := probe(f); done {
			return value, deleted, err
		}
	}
	return nil, false, ErrNotFound
}

// getMerge answers key when its newest visible entry is a Merge: it walks
// the sources of rs again, newest first, as getFrom does, gathering the
// key's operands down to what the merge applies to — a value (a Set, or a
// blob value, read), or nothing: a tombstone, an entry a range tombstone
// deletes, a Set a secondary tombstone deletes, or no older entry — and
// merges them. deleted is always false: a merge makes a value.
func (d *DB) getMerge(rs *readState, key []byte, snap base.SeqNum, fillCache bool, stats *sstable.ReadStats, blobStats *blob.ReadStats, dl vfs.ReadDeadline) ([]byte, bool, error) {
	var ops mergeOperands
	var maxTomb base.SeqNum
	sf := d.newSecondaryFilter(rs, snap)
	var baseValue []byte
	var hasBase, done bool
	var err error
	visit := func(value []byte, kind base.Kind, seq base.SeqNum) bool {
		if seq < maxTomb {
			done = true
			return false
		}
		switch kind {
		case base.KindMerge:
			ops.add(value)
			return true
		case base.KindSet:
			if !sf.deletes(key, value, kind, seq) {
				baseValue, hasBase = append([]byte{}, value...), true
			}
		case base.KindBlobIndex:
			if dl.Expired() {
				err = errDeadlinePassed()
				break
			}
			baseValue, err = d.readBlobValue(key, value, fillCache, blobStats)
			hasBase = err == nil
		}
		done = true
		return false
	}
	for i := -1; i < len(rs.imms) && !done; i++ {
		m := rs.mem
		if i >= 0 {
			m = rs.imms[len(rs.imms)-1-i]
		}
		if rd := m.RangeTombstones(); !rd.Empty() {
			maxTomb = max(maxTomb, rd.MaxCoveringSeq(key, snap))
		}
		m.Versions(key, snap, visit)
	}
	var bloom sstable.BloomCounts
	defer d.addBloom(&bloom, stats)
	probe := func(f *manifest.FileMetadata) error {
		if dl.Expired() {
			return errDeadlinePassed()
		}
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			return err
		}
		defer t.release()
		if t.rangeDels != nil {
			maxTomb = max(maxTomb, t.rangeDels.MaxCoveringSeq(key, snap))
		}
		_, err = t.reader.VersionsDeadline(key, snap, fillCache, stats, &bloom, dl, visit)
		return err
	}
	v := rs.version
	for _, f := range v.Levels[0] {
		if done {
			break
		}
		if fileContains(d.cmp.Compare, f, key) {
			if perr := probe(f); perr != nil {
				return nil, false, perr
			}
		}
	}
	for level := 1; level < len(v.Levels) && !done; level++ {
		if f := v.FindFile(d.cmp.Compare, level, key); f != nil {
			if perr := probe(f); perr != nil {
				return nil, false, perr
			}
		}
	}
	if err != nil {
		return nil, false, err
	}
	if ops.len() == 0 {
		// Not reached from getFrom, which saw a Merge; kept exact anyway.
		if !hasBase {
			return nil, true, ErrNotFound
		}
		return baseValue, false, nil
	}
	value, err := d.fullMerge(key, baseValue, hasBase, ops.oldestFirst())
	return value, false, err
}

// addBloom adds the bloom probes of one read (c) to the DB's read counts
// and to extra when not nil.
func (d *DB) addBloom(c *sstable.BloomCounts, extra *sstable.ReadStats) {
	d.fileCache.stats.AddBloom(*c)
	if extra != nil {
		extra.AddBloom(*c)
	}
}

// memtableGet looks key up in rs's memtables, newest first, as of snap. It
// raises *maxTomb to the range tombstones covering the key in each memtable
// it consults, the one holding the entry included; ok says a memtable holds
// a point entry of the key (the newest one decides).
func (rs *readState) memtableGet(key []byte, snap base.SeqNum, maxTomb *base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, ok bool) {
	for i := -1; i < len(rs.imms); i++ {
		m := rs.mem
		if i >= 0 {
			m = rs.imms[len(rs.imms)-1-i]
		}
		if rd := m.RangeTombstones(); !rd.Empty() {
			*maxTomb = max(*maxTomb, rd.MaxCoveringSeq(key, snap))
		}
		if value, kind, seq, ok = m.Get(key, snap); ok {
			return value, kind, seq, true
		}
	}
	return nil, 0, 0, false
}

// entryVisible reports whether the point entry (kind, seq) is a value that
// no range tombstone seen (the highest at maxTomb) deletes.
func entryVisible(kind base.Kind, seq, maxTomb base.SeqNum) bool {
	return seq >= maxTomb && !kind.IsTombstone()
}

// fileContains reports whether key is within the file's key range.
func fileContains(cmp base.Compare, f *manifest.FileMetadata, key []byte) bool {
	if cmp(key, f.Smallest.UserKey) < 0 {
		return false
	}
	c := cmp(key, f.Largest.UserKey)
	return c < 0 || (c == 0 && !f.Largest.IsExclusiveSentinel())
}

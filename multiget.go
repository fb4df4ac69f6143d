package shale

import (
	"slices"
	"sync"
	"time"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// MultiGet looks up several keys at one snapshot. values[i] and errs[i]
// answer keys[i]; errs[i] is ErrNotFound for an absent key. The answers are
// those of calling Get for each key at the same snapshot; see MultiGetFunc
// for how the reads are batched.
func (d *DB) MultiGet(keys [][]byte, ro *ReadOptions) ([][]byte, []error) {
	values := make([][]byte, len(keys))
	errs := make([]error, len(keys))
	d.MultiGetFunc(keys, ro, func(i int, value []byte, err error) {
		values[i], errs[i] = value, err
	})
	return values, errs
}

// MultiGetFunc looks up several keys at one snapshot and calls fn once for
// each index of keys, from the calling goroutine, as soon as that key is
// resolved: with a copy of the value that fn may keep, or with ErrNotFound
// for an absent key, or with the error that stopped the lookup. Keys the
// memtables answer are answered before any file is read; the others as
// soon as their block is at hand (from the block cache, or as its read
// completes, while other reads are in flight).
//
// Keys are sorted and deduplicated and answered from the memtables first;
// the others are looked up in tables, each table's bloom filter probed
// before any block is read. How the block reads are batched follows
// ReadOptions: without AsyncIO one table at a time, all its missing blocks in
// one batch (RocksDB's default); with AsyncIO one batch for every key's next
// candidate table across all levels (RocksDB's optimize_multiget_for_io), or
// with MultiGetOneLevelAtATime one batch per level (each L0 file being its
// own level). Keys whose
// value is in a blob file are answered once every table lookup is done:
// with AsyncIO their values are read as one batch of reads across blob
// files, else one after another. Keys whose newest entry is a merge
// operand are answered last, each by a walk gathering its operands (Get's).
func (d *DB) MultiGetFunc(keys [][]byte, ro *ReadOptions, fn func(i int, value []byte, err error)) {
	d.multiGetFunc(keys, ro, fn, true)
}

// MultiGetNoCopy is MultiGetFunc handing fn the value itself rather than a
// copy: it may alias block or memtable memory and is valid only until fn
// returns (fn must not modify or keep it; copy what it needs). It saves the
// allocation and copy of each value, as AppendValue into a reused buffer
// does for Get; the keys, snapshot and answers are MultiGetFunc's.
func (d *DB) MultiGetNoCopy(keys [][]byte, ro *ReadOptions, fn func(i int, value []byte, err error)) {
	d.multiGetFunc(keys, ro, fn, false)
}

// multiGetFunc is MultiGetFunc, copying each value for fn when copyValues.
func (d *DB) multiGetFunc(keys [][]byte, ro *ReadOptions, fn func(i int, value []byte, err error), copyValues bool) {
	st := d.opts.Statistics
	var start time.Time
	if st != nil {
		start = monotime.Now()
	}
	m := multiGetPool.Get().(*multiGet)
	m.copyValues = copyValues
	m.run(d, keys, ro, fn)
	if st != nil {
		st.add(TickerMultiGetKeysRead, uint64(len(keys)))
		st.add(TickerMultiGetKeysFound, m.found)
		st.record(HistogramMultiGetMicros, start)
	}
	if pc := ro.perfContext(); pc != nil {
		pc.addReadStats(&m.stats)
		pc.addBlobStats(&m.blobStats)
		pc.MultiGetKeysFound += m.found
		pc.InternalDeleteSkippedCount += m.deleted
	}
	m.reset()
	multiGetPool.Put(m)
}

// multiGetMode is how a MultiGet batches the block reads of its keys.
type multiGetMode int

const (
	// multiGetSingleFile reads the blocks of one table per batch (AsyncIO
	// off).
	multiGetSingleFile multiGetMode = iota
	// multiGetSingleLevel reads the blocks of every table of one level (or
	// one L0 file) per batch.
	multiGetSingleLevel
	// multiGetMultiLevel reads every unresolved key's candidate block,
	// whatever its level, in one batch.
	multiGetMultiLevel
)

func (ro *ReadOptions) multiGetMode() multiGetMode {
	switch {
	case !ro.asyncIO():
		return multiGetSingleFile
	case ro.MultiGetOneLevelAtATime && !ro.OptimizeMultiGetForIO:
		return multiGetSingleLevel
	}
	return multiGetMultiLevel
}

// multiGetPool recycles the working memory of MultiGet calls.
var multiGetPool = sync.Pool{New: func() any {
	m := new(multiGet)
	m.onDoneFunc = m.onDone
	return m
}}

// multiGet is the state of one MultiGet call.
type multiGet struct {
	d    *DB
	rs   *readState
	snap base.SeqNum
	fill bool
	// secondary applies the live secondary tombstones (nil: none).
	secondary *secondaryFilter
	fn        func(i int, value []byte, err error)
	// copyValues gives fn a copy of each value (MultiGetFunc), else the
	// value itself, valid during the call (MultiGetNoCopy).
	copyValues bool
	// keys are the distinct keys, sorted; order maps them to the caller's
	// indices: key j answers order[keys[j].first : keys[j].first+keys[j].n].
	keys  []mgKey
	order []int
	batch sstable.MultiGetBatch
	// owner maps the batch's lookup ids to indices of keys.
	owner []int
	// fresh holds the indices of keys that may have moved to a candidate
	// without a lookup (settled onward, or given their table by
	// openBlocked): the keys cachedPass visits, so that a round per table
	// does not make it walk every key. Indices may repeat or be stale;
	// cachedPass checks each.
	fresh []int
	// onDoneFunc is m.onDone, bound once so Read calls do not allocate.
	onDoneFunc func(id int)
	// stats counts this call's table work when the caller asked for a
	// PerfContext; extra is then &stats, else nil, so that a call without
	// one does not pay for counting twice. found counts the caller's
	// indices answered with a value, deleted the distinct keys a tombstone
	// answered.
	stats sstable.ReadStats
	extra *sstable.ReadStats
	// blobStats counts the blob value reads when extra is set.
	blobStats blob.ReadStats
	found     uint64
	deleted   uint64
	// openErrs holds the tables that failed to open for this call, so that
	// every key reaching one gets the same error without another attempt;
	// opened holds, with a reference, those openBlocked opened, so that a
	// bounded file cache cannot close them before the keys reach them.
	openErrs map[base.FileNum]error
	opened   map[base.FileNum]*cachedFile
	// dl bounds the call's reads (ReadOptions.Deadline, IOTimeout): once
	// its Deadline passes, every key not answered yet is answered with
	// ErrTimedOut before another read.
	dl vfs.ReadDeadline
	// blocked counts the keys waiting for a table to be opened.
	blocked int
	// blobKeys are the keys whose entry is a blob index (the encoded index
	// copied into blobIdx), resolved once every table lookup is done
	// (blobValues).
	blobKeys []mgBlob
	blobIdx  []byte
	// mergeKeys are the keys whose newest visible entry is a merge operand,
	// resolved once every table lookup is done, one by one by getMerge.
	mergeKeys []*mgKey
	// held are the tables the call took a reference to (besides opened),
	// released when it returns: a key's candidate table is borrowed from
	// held or opened, so a table shared by several keys costs the call
	// one reference, not one per key (each a write to a word every core
	// shares). last holds, per source position, the table the latest key
	// found open there, one of held: the sorted keys of one file find it
	// there rather than in the file cache.
	held []*cachedFile
	last []mgLast
	// bloom counts the call's bloom filter probes, added to the DB's read
	// counts (and to extra) once the call is done.
	bloom sstable.BloomCounts
}

// mgBlob is a key of a MultiGet answered by a blob index, whose index is
// blobIdx[start:end]. (keys does not grow once sorted, so k stays valid.)
type mgBlob struct {
	k          *mgKey
	start, end int
}

// mgLast is one entry of multiGet.last.
type mgLast struct {
	f *manifest.FileMetadata
	t *cachedFile
}

// mgKey is one distinct key of a MultiGet and where its lookup stands.
type mgKey struct {
	key      []byte
	first, n int
	done     bool
	// maxTomb is the highest seqnum of the range tombstones covering the
	// key at the snapshot in the sources walked so far, the candidate's
	// included: a point entry below it is deleted.
	maxTomb base.SeqNum
	// pos is the source the key is at: L0 file pos while pos < len(L0),
	// else level pos-len(L0)+1. Sources are walked in this order, newest
	// first; a key never moves back, so an upper level's answer is never
	// replaced by a lower one's.
	pos int
	// file and table are the candidate at pos: the file whose bloom filter
	// may hold the key, and its table, whose reference the call holds
	// (multiGet.held or opened) until it returns.
	file  *manifest.FileMetadata
	table *cachedFile
	// lookup is the key's lookup in batch, or -1.
	lookup int
	// blocked is set while the key waits for the table at pos to be
	// opened (see openBlocked).
	blocked bool
	// parked is set while lookup waits, parked in the batch, for the round
	// of its group (see cachedPass).
	parked bool
}

// releaseHeld releases the tables the call holds (held and opened).
func (m *multiGet) releaseHeld() {
	for _, t := range m.opened {
		t.release()
	}
	clear(m.opened)
	for _, t := range m.held {
		t.release()
	}
	clear(m.held)
	m.held = m.held[:0]
	clear(m.last)
	m.last = m.last[:0]
}

func (m *multiGet) reset() {
	m.releaseHeld()
	clear(m.keys)
	m.keys = m.keys[:0]
	m.order = m.order[:0]
	m.owner = m.owner[:0]
	m.batch.Reset()
	m.stats = sstable.ReadStats{}
	m.blobStats = blob.ReadStats{}
	m.bloom = sstable.BloomCounts{}
	m.secondary = nil
	clear(m.blobKeys)
	m.blobKeys, m.blobIdx = m.blobKeys[:0], m.blobIdx[:0]
	clear(m.mergeKeys)
	m.mergeKeys = m.mergeKeys[:0]
	m.d, m.rs, m.fn, m.found, m.deleted, m.openErrs, m.opened, m.blocked, m.extra = nil, nil, nil, 0, 0, nil, nil, 0, nil
	m.dl, m.batch.Deadline = vfs.ReadDeadline{}, vfs.ReadDeadline{}
}

func (m *multiGet) run(d *DB, keys [][]byte, ro *ReadOptions, fn func(i int, value []byte, err error)) {
	fail := func(err error) {
		for i := range keys {
			fn(i, nil, err)
		}
	}
	if err := d.checkOpen(); err != nil {
		fail(err)
		return
	}
	dl := ro.readDeadline()
	if dl.Expired() {
		fail(errDeadlinePassed())
		return
	}
	rs, snap := d.loadReadStateAt(ro, nil)
	if rs == nil {
		fail(ErrClosed)
		return
	}
	// The tables the call holds go before the read state, whose version
	// keeps them live: released after it, one could be obsolete already.
	defer func() {
		m.releaseHeld()
		rs.unref()
		d.addBloom(&m.bloom, m.extra)
	}()
	m.d, m.rs, m.fn = d, rs, fn
	m.snap, m.fill = snap, ro.fillCache()
	m.secondary = d.newSecondaryFilter(rs, snap)
	if ro.perfContext() != nil {
		m.extra = &m.stats
	}
	m.batch.Stats = m.extra
	m.dl, m.batch.Deadline = dl, dl
	m.sortKeys(keys)
	m.memtables()
	for j := range m.keys {
		if k := &m.keys[j]; !k.done {
			m.nextCandidate(k, false)
		}
	}
	m.tables(ro.multiGetMode())
	if len(m.blobKeys) > 0 {
		m.blobValues(ro.asyncIO())
	}
	for _, k := range m.mergeKeys {
		var bs *blob.ReadStats
		if m.extra != nil {
			bs = &m.blobStats
		}
		v, _, err := d.getMerge(rs, k.key, snap, m.fill, m.extra, bs, dl)
		m.resolve(k, v, err)
	}
}

// blobValues resolves the keys answered by blob indexes: with async, all
// their values as one batch of reads through the DB's async reader (a
// blob.GetBatch over one ReadGroup, across blob files); else one by one.
func (m *multiGet) blobValues(async bool) {
	d := m.d
	var bs *blob.ReadStats
	if m.extra != nil {
		bs = &m.blobStats
	}
	if m.dl.Expired() {
		// Blob reads are not bounded: only checked before.
		for _, b := range m.blobKeys {
			m.resolve(b.k, nil, errDeadlinePassed())
		}
		return
	}
	if !async || d.ioReader == nil || len(m.blobKeys) == 1 {
		for _, b := range m.blobKeys {
			k := b.k
			if m.dl.Expired() {
				m.resolve(k, nil, errDeadlinePassed())
				continue
			}
			v, err := d.readBlobValue(k.key, m.blobIdx[b.start:b.end], m.fill, bs)
			m.resolve(k, v, err)
		}
		return
	}
	batch := blob.NewGetBatch(blob.NewReadGroup(d.ioReader))
	batch.Stats = bs
	ids := make([]int, len(m.blobKeys))
	errs := make([]error, len(m.blobKeys))
	files := map[base.FileNum]*cachedFile{}
	defer func() {
		batch.Reset() // waits for reads in flight before their files go
		for _, f := range files {
			f.release()
		}
	}()
	for j, b := range m.blobKeys {
		k := b.k
		x, err := blob.DecodeIndex("blob index of key", m.blobIdx[b.start:b.end])
		if err != nil {
			ids[j], errs[j] = -1, err
			continue
		}
		f := files[x.FileNum]
		if f == nil {
			if f, err = d.fileCache.findBlob(x.FileNum); err != nil {
				ids[j], errs[j] = -1, err
				continue
			}
			files[x.FileNum] = f
		}
		ids[j] = batch.Add(f.blobReader, x, k.key, m.fill)
	}
	batch.Submit()
	for j, b := range m.blobKeys {
		k := b.k
		if ids[j] < 0 {
			m.resolve(k, nil, errs[j])
			continue
		}
		v, err := batch.Result(ids[j])
		m.resolve(k, v, err)
	}
}

// sortKeys fills keys and order with the distinct keys of ks in order.
func (m *multiGet) sortKeys(ks [][]byte) {
	cmp := m.d.cmp.Compare
	for i := range ks {
		m.order = append(m.order, i)
	}
	slices.SortStableFunc(m.order, func(a, b int) int { return cmp(ks[a], ks[b]) })
	for i := 0; i < len(m.order); {
		j := i + 1
		for j < len(m.order) && cmp(ks[m.order[i]], ks[m.order[j]]) == 0 {
			j++
		}
		m.keys = append(m.keys, mgKey{key: ks[m.order[i]], first: i, n: j - i, lookup: -1})
		i = j
	}
}

// resolve answers every index of k with value (copied for each) or err.
func (m *multiGet) resolve(k *mgKey, value []byte, err error) {
	k.done = true
	for _, i := range m.order[k.first : k.first+k.n] {
		if err == ErrNotFound {
			m.fn(i, nil, err) // the usual miss: no deadline error to look for
			continue
		} else if err != nil {
			m.fn(i, nil, readError(err))
			continue
		}
		m.found++
		if !m.copyValues {
			if value == nil {
				value = []byte{} // a found key has a value, as Get's
			}
			m.fn(i, value[:len(value):len(value)], nil)
			continue
		}
		m.fn(i, append(make([]byte, 0, len(value)), value...), nil)
	}
}

// resolveEntry answers k with the point entry found for it, which range
// tombstones of the sources walked (k.maxTomb) may hide.
func (m *multiGet) resolveEntry(k *mgKey, value []byte, kind base.Kind, seq base.SeqNum) {
	if !entryVisible(kind, seq, k.maxTomb) || m.secondary.deletes(k.key, value, kind, seq) {
		m.deleted++
		m.resolve(k, nil, ErrNotFound)
		return
	}
	if kind == base.KindMerge {
		// Done with this walk; the operands are gathered after it.
		k.done = true
		m.mergeKeys = append(m.mergeKeys, k)
		return
	}
	if kind == base.KindBlobIndex {
		// Done with the tables; the value is read after them.
		k.done = true
		start := len(m.blobIdx)
		m.blobIdx = append(m.blobIdx, value...)
		m.blobKeys = append(m.blobKeys, mgBlob{k: k, start: start, end: len(m.blobIdx)})
		return
	}
	m.resolve(k, value, nil)
}

// memtables answers the keys the memtables hold, as getFrom does, and notes
// their range tombstones for the rest.
func (m *multiGet) memtables() {
	for j := range m.keys {
		k := &m.keys[j]
		if value, kind, seq, ok := m.rs.memtableGet(k.key, m.snap, &k.maxTomb); ok {
			m.resolveEntry(k, value, kind, seq)
		}
	}
}

// source returns the file at position pos of k's walk that may contain
// k's key, or nil.
func (m *multiGet) source(pos int, key []byte) *manifest.FileMetadata {
	v := m.rs.version
	cmp := m.d.cmp.Compare
	if l0 := v.Levels[0]; pos < len(l0) {
		if fileContains(cmp, l0[pos], key) {
			return l0[pos]
		}
		return nil
	}
	return v.FindFile(cmp, pos-len(v.Levels[0])+1, key)
}

// numSources is the length of every key's walk.
func (m *multiGet) numSources() int {
	v := m.rs.version
	return len(v.Levels[0]) + len(v.Levels) - 1
}

// openBlocked opens the tables that blocked keys wait for, together with
// every other unopened table on the rest of those keys' walks, concurrently
// rather than one by one as the walks reach them; then it moves the keys on.
// When every table is open (the usual case) nothing blocks and this is never
// called.
func (m *multiGet) openBlocked() {
	var need []base.FileNum
	n := m.numSources()
	for j := range m.keys {
		k := &m.keys[j]
		if !k.blocked {
			continue
		}
		for pos := k.pos; pos < n; pos++ {
			f := m.source(pos, k.key)
			if f == nil || slices.Contains(need, f.FileNum) || m.openErrs[f.FileNum] != nil || m.opened[f.FileNum] != nil {
				continue
			}
			if t, ok := m.d.fileCache.findOpenTable(f.FileNum); ok {
				t.release()
			} else {
				need = append(need, f.FileNum)
			}
		}
	}
	files, errs := m.d.fileCache.openTables(need)
	for i, err := range errs {
		if err != nil {
			if m.openErrs == nil {
				m.openErrs = make(map[base.FileNum]error)
			}
			m.openErrs[need[i]] = err
			continue
		}
		if m.opened == nil {
			m.opened = make(map[base.FileNum]*cachedFile)
		}
		m.opened[need[i]] = files[i]
	}
	m.blocked = 0
	for j := range m.keys {
		if k := &m.keys[j]; k.blocked {
			k.blocked = false
			m.nextCandidate(k, true)
			m.fresh = append(m.fresh, j)
		}
	}
}

// nextCandidate moves k from k.pos to the first source that contains its
// key and whose bloom filter does not rule it out, noting the range
// tombstones of the sources it passes and of the candidate. A key with no
// candidate left is resolved (not found, or the error of a table that
// cannot be opened). Without open, a key reaching a table not open yet
// stops there, blocked, for openBlocked to open it with others.
func (m *multiGet) nextCandidate(k *mgKey, open bool) {
	n := m.numSources()
	for ; k.pos < n; k.pos++ {
		f := m.source(k.pos, k.key)
		if f == nil {
			continue
		}
		var t *cachedFile
		// (openErrs and opened are nil but when a table was not open: no
		// map lookups on the usual path.)
		if err := m.openErr(f.FileNum); err != nil {
			m.resolve(k, nil, err)
			return
		} else if k.pos < len(m.last) && m.last[k.pos].f == f {
			t = m.last[k.pos].t
		} else if t0 := m.openedTable(f.FileNum); t0 != nil {
			t = t0
		} else if t0, ok := m.d.fileCache.findOpenTable(f.FileNum); ok {
			t = t0
			m.remember(k.pos, f, t)
		} else if !open {
			k.blocked = true
			m.blocked++
			return
		} else if t, err = m.d.fileCache.findTable(f.FileNum); err != nil {
			m.resolve(k, nil, err)
			return
		} else {
			m.remember(k.pos, f, t)
		}
		if t.rangeDels != nil {
			k.maxTomb = max(k.maxTomb, t.rangeDels.MaxCoveringSeq(k.key, m.snap))
		}
		if t.reader.ProbeBloom(k.key, &m.bloom, m.extra) {
			k.file, k.table = f, t
			return
		}
	}
	m.resolve(k, nil, ErrNotFound)
}

// openErr returns the error of opening table fn during this call, or nil.
func (m *multiGet) openErr(fn base.FileNum) error {
	if m.openErrs == nil {
		return nil
	}
	return m.openErrs[fn]
}

// openedTable returns table fn when openBlocked opened it, or nil.
func (m *multiGet) openedTable(fn base.FileNum) *cachedFile {
	if m.opened == nil {
		return nil
	}
	return m.opened[fn]
}

// remember adds t, open for f at source pos with a reference the call now
// holds, to m.held, and makes it the table of m.last there.
func (m *multiGet) remember(pos int, f *manifest.FileMetadata, t *cachedFile) {
	m.held = append(m.held, t)
	if n := m.numSources(); len(m.last) < n {
		m.last = slices.Grow(m.last, n)[:n]
	}
	m.last[pos] = mgLast{f: f, t: t}
}

// mgGroup is the keys that take part in one round of mode: every key at
// pos (single-level) and with file there (single-file), or every key
// (multi-level).
type mgGroup struct {
	mode multiGetMode
	pos  int
	file *manifest.FileMetadata
}

// has reports whether k is in g.
func (g *mgGroup) has(k *mgKey) bool {
	switch g.mode {
	case multiGetSingleFile:
		return k.pos == g.pos && k.file == g.file
	case multiGetSingleLevel:
		return k.pos == g.pos
	}
	return true
}

// tables looks the unresolved keys up in their candidate tables, round
// after round: each round adds the lookups of the keys of one group (one
// file, one level, or every key, by mode) to the batch, reads the blocks
// they miss in one batch, and moves the keys not found to their next
// candidate. Keys are settled as their lookups finish: at once for a cached
// block, else as the read of their block completes.
func (m *multiGet) tables(mode multiGetMode) {
	cmp := m.d.cmp.Compare
	// floor is the lowest position of an active key and from the index of
	// the first active key there. Keys only move forward, so floor never
	// goes back and no active key before from is at floor: the search for
	// the next lead starts at from, not at the first key. With a round per
	// table (single-file) a pass over every key per round would make a
	// large batch over many tables cost keys times tables.
	floor, from := 0, 0
	m.fresh = m.fresh[:0]
	for j := len(m.keys) - 1; j >= 0; j-- {
		m.fresh = append(m.fresh, j) // the first cached pass visits every key, in order
	}
	for {
		if m.dl.Expired() {
			m.timeOutRest()
			return
		}
		if m.blocked > 0 {
			m.openBlocked()
		}
		if m.dl.Deadline.IsZero() {
			// With a Deadline the rounds decide which keys are left when it
			// passes, cached or not (TestReadDeadlineMultiGetMarksKeysLeft).
			m.cachedPass(mode)
			if m.blocked > 0 {
				// Keys the pass moved to a table not open yet: open it
				// with the others first (a blocked key has no table).
				continue
			}
		}
		// lead is the active key with the lowest position; within it, the
		// lowest key, whose file comes first in its level.
		lead := -1
		for j := from; j < len(m.keys); j++ {
			if k := &m.keys[j]; !k.done && k.pos == floor {
				lead = j
				break
			}
		}
		if lead < 0 {
			// No active key is left at floor: find the lowest position.
			for j := range m.keys {
				if k := &m.keys[j]; !k.done && (lead < 0 || k.pos < m.keys[lead].pos) {
					lead = j
				}
			}
			if lead < 0 {
				return
			}
		}
		floor, from = m.keys[lead].pos, lead
		group := mgGroup{mode: mode, pos: floor, file: m.keys[lead].file}
		// Keys before lead are past floor (or done): outside a single-file
		// or single-level group.
		first := lead
		if mode == multiGetMultiLevel {
			first = 0
		}
		for j := first; j < len(m.keys); j++ {
			k := &m.keys[j]
			if mode == multiGetSingleFile && cmp(k.key, group.file.Largest.UserKey) > 0 {
				break // keys are sorted: none further is in the file
			}
			if k.done || !group.has(k) {
				continue
			}
			if k.lookup >= 0 {
				if k.parked { // its block is not cached: read in this round
					m.batch.Unpark(k.lookup)
					k.parked = false
				}
				continue
			}
			k.lookup = m.batch.Add(k.table.reader, k.key, m.snap, m.fill)
			m.owner = append(m.owner, j)
			if _, _, _, _, done, _ := m.batch.Result(k.lookup); done {
				m.settle(j)
			}
		}
		if m.batch.Pending() > 0 {
			m.batch.Read(m.d.ioReader, m.onDoneFunc)
		}
		if m.batch.Pending() == 0 {
			// Every lookup is settled: no key refers to the batch.
			m.batch.Reset()
			m.owner = m.owner[:0]
		}
	}
}

// cachedPass takes every active key without a lookup as far along its walk
// as cached blocks answer it: a key whose candidate's block is cached is
// settled at once and moves on to its next candidate, all in one pass over
// the keys rather than in a round per table or level (for a batch of cached
// keys, the rounds' work over the keys cost more than the lookups). A key
// whose block is not cached keeps its lookup, parked outside multi-level
// mode until the round of its group, so that the reads are batched by mode
// as before and the cache is probed once per block.
func (m *multiGet) cachedPass(mode multiGetMode) {
	for len(m.fresh) > 0 {
		// A stack: settle pushes the key it moves on, which the loop
		// below handles itself; the order of keys does not matter here.
		j := m.fresh[len(m.fresh)-1]
		m.fresh = m.fresh[:len(m.fresh)-1]
		k := &m.keys[j]
		for !k.done && !k.blocked && k.lookup < 0 {
			k.lookup = m.batch.Add(k.table.reader, k.key, m.snap, m.fill)
			m.owner = append(m.owner, j)
			if _, _, _, _, done, _ := m.batch.Result(k.lookup); !done {
				if mode != multiGetMultiLevel {
					m.batch.Park(k.lookup)
					k.parked = true
				}
				break
			}
			m.settle(j)
		}
	}
	if m.batch.Pending() == 0 {
		m.batch.Reset()
		m.owner = m.owner[:0]
	}
}

// timeOutRest answers every key of the table rounds not answered yet with
// ErrTimedOut, as RocksDB marks the keys left when its deadline passes;
// called between rounds, when no read of the batch is in flight.
func (m *multiGet) timeOutRest() {
	err := errDeadlinePassed()
	for j := range m.keys {
		if k := &m.keys[j]; !k.done {
			if k.blocked {
				k.blocked = false
				m.blocked--
			}
			k.lookup, k.table, k.parked = -1, nil, false
			m.resolve(k, nil, err)
		}
	}
	m.batch.Reset()
	m.owner = m.owner[:0]
}

// onDone settles the key whose lookup id just finished.
func (m *multiGet) onDone(id int) { m.settle(m.owner[id]) }

// settle handles key j's finished lookup: the key is resolved when its
// candidate holds an entry of it (or failed), else it moves on to its next
// candidate (and into m.fresh).
func (m *multiGet) settle(j int) {
	k := &m.keys[j]
	value, kind, seq, found, _, err := m.batch.Result(k.lookup)
	k.lookup = -1
	k.table = nil
	switch {
	case err != nil:
		m.resolve(k, nil, err)
	case found:
		m.resolveEntry(k, value, kind, seq)
	default:
		k.pos++
		m.nextCandidate(k, false)
		m.fresh = append(m.fresh, j)
	}
}

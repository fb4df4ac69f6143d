package shale

import (
	"errors"
	"math"
	"runtime"
	"runtime/debug"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/dbiter"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/memtable"
	"github.com/shaledb/shale/internal/mergeiter"
	"github.com/shaledb/shale/internal/monotime"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/sstable"
)

// Iterator walks the keys of a DB in order, at the snapshot it was created
// with. It is not safe for concurrent use; Close it to release what it pins.
type Iterator struct {
	db     *DB
	it     *dbiter.Iter
	merged *mergeiter.Iter // it's input, for its range tombstone counts
	rs     *readState
	err    error
	closed bool
	// deadlineErr is set when a step found ReadOptions.Deadline passed:
	// the iterator is invalid and Err returns it (until Refresh or
	// SetBounds rebuild it).
	deadlineErr error
	// stats counts the table reads of this iterator (Stats); perf is
	// ReadOptions.PerfContext, which receives them at Close.
	stats sstable.ReadStats
	perf  *PerfContext
	// blobStats counts the reads of blob values (Stats).
	blobStats blob.ReadStats
	// statistics is Options.Statistics: when nil, no clock is read.
	statistics *Statistics
	// group batches the first-phase reads of two-phase seeks (AsyncIO).
	group *sstable.ReadGroup
	// tables holds a file cache reference to each table the iterator
	// reads: one per L0 table, then one slot per level for the file its
	// level iterator has open (nil when none). Released at Close. It
	// starts in tablesBuf, so that a usual shape allocates nothing more.
	tables    []*cachedFile
	tablesBuf [12]*cachedFile
	// memSteps, while set, counts the steps of the mutable memtable's
	// iterator; a move that takes it past memStepsDue (its count after the
	// last move plus memStepsLimit, Options.MemtableOpScanFlushTrigger when
	// the iterator was made) asks for the memtable's flush (noteScan).
	memSteps      *uint64
	memStepsDue   uint64
	memStepsLimit uint64
	// The value of a key whose entry is a blob index is read when Value
	// is first called at that key (so key-only scans and seeks never read
	// blob files), and kept until the next move: blobValue, once
	// blobResolved. blobErr is the error of such a read, which stops the
	// iterator. blobFile is the blob file read last, with a reference
	// released at Close, and blobValues reads its values (with readahead:
	// a scan reads a flushed file's values in file order); fillCache is
	// ReadOptions.FillCache.
	blobValue    []byte
	blobResolved bool
	blobErr      error
	blobFile     *cachedFile
	blobValues   *blob.ValueReader
	fillCache    bool
	// ro and seq are what the iterator was made with (ro copied), which
	// SetBounds and Refresh rebuild it from; prior holds the counts of the
	// iterator stacks they replaced (Stats), nil before the first.
	ro    ReadOptions
	seq   base.SeqNum
	prior *PerfContext
	// prefixTr is the extractor of prefix mode (ReadOptions.
	// PrefixSameAsStart; prefix_seek.go), nil in total order; memBloom
	// counts the probes of the memtables' prefix blooms.
	prefixTr SliceTransform
	memBloom memtable.BloomCounts
	// delta, when set, makes this an iterator of NewIteratorWithBase: a
	// batch's writes over a DB iterator it owns (base_delta_iter.go);
	// every method goes to it, and the fields above stay unused.
	delta *baseDeltaIter
}

// NewIterator returns an iterator over the DB (or over ro.Snapshot), within
// ro.LowerBound and ro.UpperBound. It is unpositioned: call First, Seek....
func (d *DB) NewIterator(ro *ReadOptions) *Iterator {
	if err := d.checkOpen(); err != nil {
		return &Iterator{err: err}
	}
	// The read state is taken before the seqnum, and the seqnum before the
	// memtables' range tombstones (as Get does). Read before the read state,
	// the seqnum could predate a flush or compaction installed in between
	// that dropped the versions it sees (only registered snapshots keep old
	// versions), and a key would vanish. Read after the range tombstone
	// lists, it could cover a batch committed while the iterator was built,
	// whose points the live memtable iterator shows but whose range
	// tombstones the lists lack. A batch committed between the read state
	// and the seqnum is either in the read state's memtables, whole, or in
	// a newer memtable the iterator does not see at all.
	rs, seq := d.loadReadStateAt(ro, testHookNewIterator)
	if rs == nil {
		return &Iterator{err: ErrClosed}
	}
	i := &Iterator{}
	d.initIterator(i, rs, seq, ro, nil)
	if invariants.Enabled && i.it != nil {
		reportLeakedIterator(i)
	}
	return i
}

// initIterator makes i an iterator over rs at seq under ro, taking over
// the reference to rs; prior are the counts of the stacks i had before
// (Stats). On failure i holds only the error.
func (d *DB) initIterator(i *Iterator, rs *readState, seq base.SeqNum, ro *ReadOptions, prior *PerfContext) {
	var lower, upper []byte
	var readahead int64
	if ro != nil {
		lower, upper, readahead = ro.LowerBound, ro.UpperBound, ro.ReadaheadSize
	}
	async := ro.asyncIO()
	var group *sstable.ReadGroup
	if async && d.ioReader != nil {
		group = sstable.NewReadGroup(d.ioReader)
	}
	*i = Iterator{db: d, rs: rs, perf: ro.perfContext(), statistics: d.opts.Statistics, group: group, fillCache: ro.fillCache(),
		seq: seq, prior: prior}
	if ro != nil {
		i.ro = *ro
	}
	i.tables = i.tablesBuf[:0]
	d.openIters.Add(1)
	fill := ro.fillCache()
	mo := d.mutableOptions()
	i.prefixTr = iteratorPrefixExtractor(mo, ro)
	// Not modified after this: the level iterators' open closures capture
	// it by value, which keeps it off the heap.
	tableIterOpts := sstable.IterOptions{Lower: lower, Upper: upper, FillCache: fill, ReadaheadSize: readahead,
		Async: async, Group: group, Stats: &i.stats, PrefixExtractor: i.prefixTr, Deadline: ro.readDeadline()}
	newMemIter := func(m *memTable) base.InternalIterator {
		if i.prefixTr == nil {
			return m.NewIter()
		}
		return m.NewIterWith(memtable.IterOptions{PrefixExtractor: i.prefixTr.Name(), Bloom: &i.memBloom})
	}

	// children are the sources newest first (memtables, L0 tables, then one
	// LevelIter per level). rangeDels, once one of them has range
	// tombstones, holds children[j]'s at j; the merge applies them to that
	// child's entries and to those of every older one
	// (mergeiter.Iter.SetRangeDels).
	var children []base.InternalIterator
	var rangeDels []*rangedel.List
	fail := func(err error) {
		for _, c := range children {
			c.Close()
		}
		i.group.Close()
		i.releaseTables()
		d.openIters.Add(-1)
		rs.unref()
		*i = Iterator{err: err}
	}
	v := rs.version
	// The levels below L0 come from the version's view, built once per
	// version: a LevelIter costs two binary searches, whatever the number
	// of files.
	levels, err := rs.view.levelViews(d.cmp.Compare, v, func(f *manifest.FileMetadata) (*rangedel.List, error) {
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			return nil, err
		}
		// The list is in memory and outlives the table's handle.
		rd := t.rangeDels
		t.release()
		return rd, nil
	})
	if err != nil {
		fail(err)
		return
	}
	n := 1 + len(rs.imms) + len(v.Levels[0])
	for _, lv := range levels {
		if lv != nil {
			n++
		}
	}
	children = make([]base.InternalIterator, 0, n)
	addChild := func(c base.InternalIterator, rd *rangedel.List) {
		if rd.Empty() {
			if rangeDels != nil {
				rangeDels = append(rangeDels, nil)
			}
		} else {
			if rangeDels == nil {
				rangeDels = make([]*rangedel.List, len(children), cap(children))
			}
			rangeDels = append(rangeDels, rd)
		}
		children = append(children, c)
	}
	memIter := newMemIter(rs.mem)
	if ms, ok := memIter.(memSteps); ok && mo.MemtableOpScanFlushTrigger > 0 && !d.readOnly &&
		!rs.mem.scanFlushRequested.Load() {
		i.memSteps, i.memStepsLimit = ms.StepCounter(), uint64(mo.MemtableOpScanFlushTrigger)
		i.memStepsDue = *i.memSteps + i.memStepsLimit
	}
	addChild(memIter, rs.mem.RangeTombstones())
	for j := len(rs.imms) - 1; j >= 0; j-- {
		addChild(newMemIter(rs.imms[j]), rs.imms[j].RangeTombstones())
	}
	for _, f := range v.Levels[0] {
		if !overlapsBounds(d.cmp.Compare, f.Smallest.UserKey, f.Largest.UserKey, lower, upper) {
			continue
		}
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			fail(err)
			return
		}
		i.tables = append(i.tables, t)
		addChild(t.reader.NewIter(tableIterOpts), t.rangeDels)
	}
	for level := 1; level < len(v.Levels); level++ {
		lv := levels[level]
		if lv == nil {
			continue
		}
		files := v.Levels[level]
		slot := len(i.tables)
		i.tables = append(i.tables, nil)
		li := mergeiter.NewLevelIter(d.cmp.Compare, lv, func(j int) (base.InternalIterator, error) {
			// The level iterator has closed the iterator of the file it
			// read before: that file's reference goes.
			if t := i.tables[slot]; t != nil {
				i.tables[slot] = nil
				t.release()
			}
			t, err := d.fileCache.findTable(files[j].FileNum)
			if err != nil {
				return nil, err
			}
			i.tables[slot] = t
			return t.reader.NewIter(tableIterOpts), nil
		}, lower, upper)
		if i.prefixTr != nil {
			li.SetPrefixExtractor(i.prefixTr)
		}
		addChild(li, lv.RangeDels())
	}
	// Range tombstones are applied by the merge, level by level, so dbiter
	// needs no checker.
	opts := dbiter.Options{Cmp: d.cmp, Snapshot: seq, Lower: lower, Upper: upper,
		Reseek: true, MaxSkip: int32(min(mo.maxSequentialSkip(), math.MaxInt32)), PrefixExtractor: i.prefixTr}
	if sf := d.newSecondaryFilter(rs, seq); sf != nil {
		opts.Secondary = sf
	}
	if d.opts.MergeOperator != nil || rs.version.MergeOperatorName != "" {
		// (Without an operator, a version naming one may hold operands:
		// reading them fails with ErrNoMergeOperator.)
		opts.Merge = i.merge
	}
	merged := mergeiter.New(d.cmp.Compare, children...)
	if rangeDels != nil {
		merged.SetRangeDels(seq, rangeDels)
		// Newer sources hold newer seqnums for every user key (what Get
		// relies on too), so the merge may jump past what a newer source's
		// tombstone deletes.
		merged.SetChildrenOrdered(true)
	}
	// With AsyncIO a Seek first lets every L0 table and level queue the
	// read of the block it needs, submits them as one batch, then
	// positions each (two-phase seek).
	if i.group != nil {
		merged.SetTwoPhase(true, i.group.Submit)
	}
	i.it, i.merged = dbiter.New(merged, opts), merged
}

// testHookNewIterator, when set by a test, runs while NewIterator collects
// its view, between taking the read state and reading the seqnum.
var testHookNewIterator func()

// overlapsBounds reports whether [smallest, largest] meets [lower, upper).
func overlapsBounds(cmp base.Compare, smallest, largest, lower, upper []byte) bool {
	if lower != nil && cmp(largest, lower) < 0 {
		return false
	}
	if upper != nil && cmp(smallest, upper) >= 0 {
		return false
	}
	return true
}

// usable reports whether the iterator may move: not closed, and its DB not
// closed either. After DB.Close the table files are closed, and a read
// through one could reach a descriptor since reused by another file.
func (i *Iterator) usable() bool {
	return i.it != nil && !i.closed && !i.db.closed.Load() && i.blobErr == nil && i.deadlineErr == nil
}

// pastDeadline reports whether ReadOptions.Deadline has passed, and then
// stops the iterator with ErrTimedOut before the step does any IO.
func (i *Iterator) pastDeadline() bool {
	if !i.ro.readDeadline().Expired() {
		return false
	}
	i.deadlineErr = errDeadlinePassed()
	i.moved(false)
	return true
}

// moved is what every positioning method returns through: the blob value
// of the key left is forgotten.
func (i *Iterator) moved(ok bool) bool {
	if i.blobResolved {
		i.blobResolved, i.blobValue = false, nil
	}
	return i.noteScan(ok)
}

// The positioning methods record their latency in Options.Statistics
// (db.seek.micros for Seek, SeekForPrev, First and Last; db.next.micros
// for Next and Prev), reading the clock only when it is set.

// First moves to the first key; it reports whether the iterator is valid.
// In prefix mode (ReadOptions.PrefixSameAsStart) it positions in total
// order and confines the moves that follow to the prefix of the key it
// lands on.
func (i *Iterator) First() bool {
	if i.delta != nil {
		return !i.closed && i.delta.first()
	}
	if !i.usable() || i.pastDeadline() {
		return false
	}
	if i.prefixTr != nil {
		i.it.ClearPrefix()
	}
	if i.statistics == nil {
		return i.moved(i.confineToCurrent(i.it.First()))
	}
	defer i.statistics.record(HistogramSeekMicros, monotime.Now())
	return i.moved(i.confineToCurrent(i.it.First()))
}

// Last moves to the last key; in prefix mode as First does.
func (i *Iterator) Last() bool {
	if i.delta != nil {
		return !i.closed && i.delta.last()
	}
	if !i.usable() || i.pastDeadline() {
		return false
	}
	if i.prefixTr != nil {
		i.it.ClearPrefix()
	}
	if i.statistics == nil {
		return i.moved(i.confineToCurrent(i.it.Last()))
	}
	defer i.statistics.record(HistogramSeekMicros, monotime.Now())
	return i.moved(i.confineToCurrent(i.it.Last()))
}

// Seek moves to the first key >= key. In prefix mode
// (ReadOptions.PrefixSameAsStart), with key in the extractor's domain, it
// reads only the keys of key's prefix: it is invalid when the first key >=
// key lacks the prefix, skips the tables and memtables whose prefix filter
// rules the prefix out, and the moves that follow stay within the prefix.
func (i *Iterator) Seek(key []byte) bool {
	if i.delta != nil {
		return !i.closed && i.delta.seek(key)
	}
	if !i.usable() || i.pastDeadline() {
		return false
	}
	i.confineTo(key)
	if i.statistics == nil {
		return i.moved(i.it.SeekGE(key))
	}
	defer i.statistics.record(HistogramSeekMicros, monotime.Now())
	return i.moved(i.it.SeekGE(key))
}

// SeekLT moves to the last key strictly less than key (Pebble's SeekLT:
// SeekForPrev, and Prev when it lands on key itself); it reports whether
// the iterator is valid.
func (i *Iterator) SeekLT(key []byte) bool {
	if !i.SeekForPrev(key) {
		return false
	}
	if i.db.cmp.Compare(i.Key(), key) == 0 {
		return i.Prev()
	}
	return true
}

// SeekForPrev moves to the last key <= key. In prefix mode, with key in
// the extractor's domain, it is invalid when that key lacks key's prefix,
// and the moves that follow stay within the prefix (no prefix filter is
// consulted: the seek is in total order).
func (i *Iterator) SeekForPrev(key []byte) bool {
	if i.delta != nil {
		return !i.closed && i.delta.seekForPrev(key)
	}
	if !i.usable() || i.pastDeadline() {
		return false
	}
	i.confineTo(key)
	if i.statistics == nil {
		return i.moved(i.it.SeekForPrev(key))
	}
	defer i.statistics.record(HistogramSeekMicros, monotime.Now())
	return i.moved(i.it.SeekForPrev(key))
}

// Next moves to the next key. Confined to a prefix (prefix mode), it stays
// within it, and an iterator that is invalid does not move.
func (i *Iterator) Next() bool {
	if i.delta != nil {
		return !i.closed && i.delta.next()
	}
	if !i.usable() || i.stuck() || i.pastDeadline() {
		return false
	}
	if i.statistics == nil {
		return i.moved(i.it.Next())
	}
	defer i.statistics.record(HistogramNextMicros, monotime.Now())
	return i.moved(i.it.Next())
}

// Prev moves to the previous key; confined to a prefix, as Next.
func (i *Iterator) Prev() bool {
	if i.delta != nil {
		return !i.closed && i.delta.prev()
	}
	if !i.usable() || i.stuck() || i.pastDeadline() {
		return false
	}
	if i.statistics == nil {
		return i.moved(i.it.Prev())
	}
	defer i.statistics.record(HistogramNextMicros, monotime.Now())
	return i.moved(i.it.Prev())
}

// Stats returns the counts of the work this iterator did so far: the
// table reads (blocks read and their bytes, block cache hits, blocks
// served from readahead windows, async reads submitted, and read-ahead
// bytes wasted), the reads of blob values (Blob...) and the internal
// entries it passed over (the Internal...
// counters of PerfContext). Reads of the windows in flight are counted
// once they complete (at the latest when the iterator is closed).
func (i *Iterator) Stats() PerfContext {
	if i.delta != nil {
		return i.delta.base.Stats()
	}
	var p PerfContext
	if i.prior != nil {
		p = *i.prior
	}
	p.addReadStats(&i.stats)
	p.addBlobStats(&i.blobStats)
	p.addMemtableBloom(i.memBloom)
	if i.it != nil {
		p.addIterCounts(i.it.Stats(), i.merged.RangeDelReseeks())
	}
	return p
}

// Valid reports whether the iterator is at a key.
func (i *Iterator) Valid() bool {
	if i.delta != nil {
		return !i.closed && !i.db.closed.Load() && i.delta.valid
	}
	return i.usable() && i.it.Valid()
}

// Key returns the current key; valid until the iterator moves.
func (i *Iterator) Key() []byte {
	if i.delta != nil {
		if !i.Valid() {
			return nil
		}
		return i.delta.key
	}
	if !i.Valid() {
		return nil
	}
	return i.it.Key()
}

// Value returns the current value; valid until the iterator moves. A
// value kept in a blob file is read by the first call at each key; if that
// read fails, Value returns nil, the iterator is no longer valid, and Err
// returns the error.
func (i *Iterator) Value() []byte {
	if i.delta != nil {
		if !i.Valid() {
			return nil
		}
		return i.delta.currentValue()
	}
	if !i.Valid() {
		return nil
	}
	if i.it.Kind() != base.KindBlobIndex {
		return i.it.Value()
	}
	if !i.blobResolved {
		v, err := i.readBlob()
		if err != nil {
			i.blobErr = err
			return nil
		}
		i.blobValue, i.blobResolved = v, true
	}
	return i.blobValue
}

// readBlob reads the value the current key's blob index locates.
func (i *Iterator) readBlob() ([]byte, error) {
	x, err := blob.DecodeIndex("blob index of key", i.it.Value())
	if err != nil {
		return nil, err
	}
	if f := i.blobFile; f == nil || f.num != x.FileNum {
		i.releaseBlobFile()
		if f, err = i.db.fileCache.findBlob(x.FileNum); err != nil {
			return nil, err
		}
		i.blobFile, i.blobValues = f, f.blobReader.NewValueReader(&i.blobStats)
	}
	return i.blobValues.Get(x, i.it.Key(), i.fillCache)
}

// merge resolves a key whose newest entry is a merge operand (dbiter's
// Options.Merge): a base value in a blob file is read first.
func (i *Iterator) merge(key, baseValue []byte, baseKind base.Kind, hasBase bool, operands [][]byte) ([]byte, error) {
	if hasBase && baseKind == base.KindBlobIndex {
		v, err := i.db.readBlobValue(key, baseValue, i.fillCache, &i.blobStats)
		if err != nil {
			return nil, err
		}
		baseValue = v
	}
	return i.db.fullMerge(key, baseValue, hasBase, operands)
}

// releaseBlobFile closes the value reader of the blob file read last and
// drops the reference to it.
func (i *Iterator) releaseBlobFile() {
	if i.blobValues != nil {
		i.blobValues.Close()
		i.blobValues = nil
	}
	if f := i.blobFile; f != nil {
		i.blobFile = nil
		f.release()
	}
}

// Err returns the error that stopped iteration, if any.
func (i *Iterator) Err() error {
	if i.delta != nil {
		if i.closed || i.db.closed.Load() {
			return ErrClosed
		}
		return i.delta.error()
	}
	if i.err != nil {
		return i.err
	}
	if i.deadlineErr != nil {
		return i.deadlineErr
	}
	if i.blobErr != nil {
		return i.blobErr
	}
	if i.closed || i.db.closed.Load() {
		return ErrClosed
	}
	return readError(i.it.Error())
}

// Close releases the iterator; it returns the iteration error, if any.
func (i *Iterator) Close() error {
	if i.closed {
		return nil
	}
	i.closed = true
	if i.delta != nil {
		err := i.delta.err
		if berr := i.delta.base.Close(); err == nil {
			err = berr
		}
		return err
	}
	if i.it == nil {
		if errors.Is(i.err, ErrClosed) {
			return nil
		}
		return i.err
	}
	err := readError(i.closeStack())
	if err == nil {
		err = i.deadlineErr
	}
	if invariants.Enabled {
		// A closed iterator has nothing to report: drop the finalizer, so
		// the iterator and what it references are freed at the next GC
		// instead of surviving one more cycle (in long -race runs that
		// grew the heap without bound).
		runtime.SetFinalizer(i, nil)
	}
	return err
}

// closeStack closes the iterator's stack of internal iterators and
// releases what it holds (tables, blob file, read state), handing its
// counts to the PerfContext and Statistics; it returns the stack's error.
func (i *Iterator) closeStack() error {
	err := i.it.Close() // closes the table iterators, which count their last reads
	if err == nil {
		err = i.blobErr
	}
	i.group.Close()   // after the table iterators, which wait for their reads
	i.releaseTables() // once nothing reads them; before the version goes
	i.perf.addReadStats(&i.stats)
	i.perf.addBlobStats(&i.blobStats)
	i.perf.addMemtableBloom(i.memBloom)
	i.perf.addIterCounts(i.it.Stats(), i.merged.RangeDelReseeks())
	if c := i.stats.PrefixChecks.Load(); c != 0 {
		// The tickers of prefix probes, which table iterators count only
		// in their own stats.
		i.db.fileCache.stats.PrefixChecks.Add(c)
		i.db.fileCache.stats.PrefixUseful.Add(i.stats.PrefixUseful.Load())
	}
	if i.statistics != nil {
		i.statistics.add(TickerNumberOfReseeksInIteration, i.it.Stats().Reseeks)
	}
	i.rs.unref()
	i.db.openIters.Add(-1)
	return err
}

// SetBounds changes the iterator's bounds to [lower, upper) (nil: none),
// as RocksDB's and Pebble's SetBounds: it reads the same state (its
// snapshot, or the implicit one it was made at) and is left unpositioned.
// The slices must not change while the iterator uses them. It returns
// the error of building the new stack (kept by Err), or else the error the
// replaced one had met.
func (i *Iterator) SetBounds(lower, upper []byte) error {
	if i.delta != nil {
		if i.closed {
			return ErrClosed
		}
		return i.delta.setBounds(lower, upper)
	}
	if !i.usable() {
		return i.Err()
	}
	ro := i.ro
	ro.LowerBound, ro.UpperBound = lower, upper
	i.rs.refs.Add(1) // for the new stack: closeStack drops the old one's
	return i.rebuild(i.rs, i.seq, &ro)
}

// Refresh moves the iterator to the DB's latest state (RocksDB's
// Iterator::Refresh), keeping its bounds and options, unpositioned; an
// iterator made at ReadOptions.Snapshot reads the latest state from then
// on too. Errors as SetBounds.
func (i *Iterator) Refresh() error {
	if i.delta != nil {
		if i.closed {
			return ErrClosed
		}
		return i.delta.refresh()
	}
	if !i.usable() {
		return i.Err()
	}
	ro := i.ro
	ro.Snapshot = nil
	rs, seq := i.db.loadReadStateAt(&ro, nil)
	if rs == nil {
		return ErrClosed
	}
	return i.rebuild(rs, seq, &ro)
}

// rebuild replaces the iterator's stack by one over rs (whose reference
// it takes) at seq under ro. It returns the error building the new stack,
// which then stops the iterator, or else the error the old one had met
// (the new one starts afresh).
func (i *Iterator) rebuild(rs *readState, seq base.SeqNum, ro *ReadOptions) error {
	prior := i.Stats()
	err := i.closeStack()
	i.db.initIterator(i, rs, seq, ro, &prior)
	if i.err != nil {
		return i.err
	}
	return err
}

// releaseTables drops the iterator's references to its tables and blob
// file.
func (i *Iterator) releaseTables() {
	i.releaseBlobFile()
	for j, t := range i.tables {
		if t != nil {
			t.release()
			i.tables[j] = nil
		}
	}
}

// reportLeakedIterator, in invariants builds, logs an iterator that becomes
// unreachable without being closed, with where it was created: a leaked
// iterator pins a version (and its files) until the DB closes. (Snapshots
// stay reachable from the DB until released: Metrics counts them and Close
// logs them.)
func reportLeakedIterator(i *Iterator) {
	stack := string(debug.Stack())
	d := i.db
	runtime.SetFinalizer(i, func(i *Iterator) {
		if !i.closed {
			d.logger.Error("shale: iterator leaked: not closed before it became unreachable", "created", stack)
		}
	})
}

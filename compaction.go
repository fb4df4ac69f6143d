package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/mergeiter"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// maybeScheduleLocked starts a flush when memtables wait and compactions
// while the picker finds work and the job budget allows. d.mu is held.
func (d *DB) maybeScheduleLocked() {
	if d.mu.closing || d.mu.bgErr != nil {
		return
	}
	o := d.mutableOptions()
	if o.DeletePersistenceThreshold > 0 {
		// After the picks: the next deadline is one no pick took.
		defer d.armDeadlineTimerLocked()
	}
	if !d.mu.compact.flushing && len(d.mu.mem.queue) > 0 {
		d.mu.compact.flushing = true
		go d.backgroundFlush()
	}
	if o.DisableAutoCompactions || d.mu.compact.manual > 0 || d.mu.ingesting {
		return
	}
	for d.mu.compact.running < d.maxCompactions() {
		v := d.versions.Current()
		c := d.picker.PickAuto(v, d.pickEnvLocked())
		if c == nil {
			v.Unref()
			return
		}
		d.startCompactionLocked(c)
		go d.backgroundCompaction(c, v)
	}
}

// pickEnvLocked is what the picker needs to know of the DB's state: the
// oldest live snapshot. d.mu is held.
func (d *DB) pickEnvLocked() compact.PickEnv {
	var env compact.PickEnv
	for _, s := range d.mu.snapshots.list {
		if !env.HasSnapshots || s.seq < env.EarliestSnapshot {
			env.HasSnapshots, env.EarliestSnapshot = true, s.seq
		}
	}
	env.BlobGCOwed = d.blobGCOwedLocked()
	return env
}

func (d *DB) startCompactionLocked(c *compact.Compaction) {
	for _, files := range c.Inputs {
		for _, f := range files {
			f.Compacting = true
		}
	}
	d.mu.compact.running++
	d.mu.compact.inProgress[c] = struct{}{}
}

func (d *DB) finishCompactionLocked(c *compact.Compaction) {
	for _, files := range c.Inputs {
		for _, f := range files {
			f.Compacting = false
		}
	}
	d.mu.compact.running--
	delete(d.mu.compact.inProgress, c)
	d.mu.compact.cond.Broadcast()
}

// backgroundFlush flushes immutable memtables, oldest first, until none wait.
func (d *DB) backgroundFlush() {
	for {
		d.mu.Lock()
		if len(d.mu.mem.queue) == 0 || d.mu.closing || d.mu.bgErr != nil {
			d.mu.compact.flushing = false
			d.mu.compact.cond.Broadcast()
			d.mu.Unlock()
			return
		}
		m := d.mu.mem.queue[0]
		nextLog := d.mu.mem.mutable.logNum
		if len(d.mu.mem.queue) > 1 {
			nextLog = d.mu.mem.queue[1].logNum
		}
		snaps := d.mu.snapshots.seqs()
		lastSeq := d.mu.lastSeq
		// Every snapshot taken from now on sees at least snapSeq.
		snapSeq := base.SeqNum(d.visibleSeq.Load())
		// Only this goroutine adds tables to L0, and compactions only move
		// data already in some table of v: a key no table of v holds has
		// no older version anywhere but in m. The flush reads v's tables
		// only: a version without blob files keeps the blob files that
		// compactions delete meanwhile from staying on disk until it ends.
		cur := d.versions.Current()
		v := cur.TablesOnly()
		cur.Unref()
		d.mu.Unlock()
		if testHookFlushListedSnapshots != nil {
			testHookFlushListedSnapshots()
		}

		start := time.Now()
		jobID := d.newJobID()
		d.eventFlushBegin(FlushInfo{JobID: jobID, Reason: m.flushReason, WALNum: uint64(m.logNum)})
		metas, blobs, garbage, err := d.writeLevel0Tables(m, snaps, snapSeq, v, jobID)
		v.Unref()
		edit := &manifest.VersionEdit{HasLogNumber: true, LogNumber: nextLog, NewBlobFiles: blobs, BlobGarbage: garbage}
		var bytes uint64
		for _, meta := range metas {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: meta})
			bytes += meta.Size
		}
		for _, b := range blobs {
			bytes += b.Size
		}
		info := FlushInfo{JobID: jobID, Reason: m.flushReason, WALNum: uint64(m.logNum), Outputs: fileNums(metas), BytesWritten: bytes}
		// The completion is queued as the version is installed, so that it
		// comes before the begin of any job that picks the outputs.
		completed := func() {
			info.Duration = time.Since(start)
			d.eventFlushCompleted(info)
		}
		if err == nil {
			d.versions.SetLastSeq(lastSeq)
			err = d.logAndApplyDeletingBlobs(edit, func() {
				// From here until m leaves the queue below, read states
				// published leave m out (publishReadStateLocked).
				m.flushInstalled.Store(true)
				completed()
			})
		}
		if err != nil && d.events != nil {
			info.Err = err
			completed()
		}
		if err == nil && testHookFlushInstalled != nil {
			testHookFlushInstalled()
		}
		d.mu.Lock()
		if err != nil {
			// Outputs stay: a failed MANIFEST write may still have made the
			// edit durable, and then they are live on disk. The next Open
			// removes whatever the recovered version does not reference.
			// A flush Close stopped (waiting for the rate limiter) leaves
			// its memtable to the WAL, and the DB without an error.
			if !d.mu.closing || !errors.Is(err, errRateLimitCancelled) {
				d.setBackgroundErrorLocked(BackgroundErrorFlush, fmt.Errorf("shale: flush failed: %w", err))
			}
			d.mu.compact.flushing = false
			d.mu.compact.cond.Broadcast() // Close waits for the flush to stop
			d.mu.Unlock()
			return
		}
		d.mu.mem.queue = d.mu.mem.queue[1:]
		d.mu.log.obsolete = append(d.mu.log.obsolete, m.logNum)
		for _, num := range m.blobs.unadded {
			// In no version, and no WAL needs it any more.
			d.memBlobPins.drop(num)
		}
		close(m.flushed)
		d.publishReadStateLocked()
		d.releaseMemTable(m) // the list's hold: m is in tables now
		d.stats.flushes.Add(1)
		d.stats.flushBytes.Add(bytes)
		d.logger.Info("flushed memtable", "wal", m.logNum, "tables", len(metas), "bytes", bytes, "duration", time.Since(start))
		d.mu.compact.cond.Broadcast()
		d.maybeScheduleLocked()
		d.mu.Unlock()
		d.retireSecondaryTombstones()
		d.signalObsolete()
	}
}

// logAndApply records edit in the MANIFEST with the last seqnum
// (SetLastSeq never moves it backwards; recovery numbers new writes after it).
func (d *DB) logAndApply(edit *manifest.VersionEdit, lastSeq base.SeqNum) error {
	d.versions.SetLastSeq(lastSeq)
	return d.versions.LogAndApply(edit)
}

// removeOutputs removes the tables of a job that failed after writing them.
func (d *DB) removeOutputs(jobID int, metas []*manifest.FileMetadata) {
	for _, m := range metas {
		name := d.tablePath(m.FileNum)
		err := d.fs.Remove(name)
		d.eventTableDeleted(TableFileInfo{JobID: jobID, FileNum: uint64(m.FileNum), Path: name, Size: m.Size, Reason: FileReasonFailedJob, Err: err})
	}
}

// fileNums lists the numbers of tables.
func fileNums(metas []*manifest.FileMetadata) []uint64 {
	nums := make([]uint64, len(metas))
	for i, m := range metas {
		nums[i] = uint64(m.FileNum)
	}
	return nums
}

func (d *DB) tablePath(num base.FileNum) string {
	return d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeTable, num))
}

func (d *DB) blobPath(num base.FileNum) string {
	return d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeBlob, num))
}

// testHookFlushListedSnapshots, when set by a test, runs in a flush after
// it listed the snapshots and before it writes the memtable.
var testHookFlushListedSnapshots func()

// testHookFlushInstalled, when set by a test, runs in a flush after the
// version holding its tables is installed and before the flushed memtable
// leaves the queue of immutable memtables.
var testHookFlushInstalled func()

// writeLevel0Tables writes a memtable to L0 tables (one, normally). v,
// when set, holds every table with data older than m (the current version
// of a flush): tombstones of keys none of its tables holds are dropped,
// since nothing older than them exists. Recovery passes nil, as the tables
// it has just written from older WALs are in no version yet. snapshots are
// the live snapshots, and snapSeq the visible seqnum when they were listed;
// jobID numbers the flush for the listener.
//
// The blob files write-time separation wrote m's values to are finished
// and returned with the blob files the flush wrote, and garbage is what of
// them the tables do not reference (values m held overwritten or deleted).
func (d *DB) writeLevel0Tables(m *memTable, snapshots []base.SeqNum, snapSeq base.SeqNum, v *manifest.Version, jobID int) ([]*manifest.FileMetadata, []*manifest.BlobFileMetadata, []manifest.BlobGarbage, error) {
	memBlobs, relocate, err := d.finishMemBlobs(m, jobID)
	if err != nil {
		return nil, nil, nil, err
	}
	var it base.InternalIterator = m.NewIter()
	if len(relocate) > 0 {
		it = &relocatingIter{InternalIterator: it, d: d, relocate: relocate}
	}
	defer it.Close()
	ro := compact.RunOptions{
		Cmp:            d.cmp,
		Input:          it,
		RangeDels:      m.RangeTombstones().Spans(),
		Snapshots:      snapshots,
		TargetFileSize: math.MaxUint64,
		// A delete's data may lie below however the key was written again
		// since: its tombstone carries the deadline (delete_persistence.go).
		KeepShadowedTombstones: d.mutableOptions().DeletePersistenceThreshold > 0,
	}
	if v != nil {
		older := newOlderKeys(d.cmp.Compare, v, 0)
		ro.ElideTombstone = func(k []byte) bool { return !older.mayHold(k) }
		ro.ElideRangeTombstone = func(s, e []byte) bool { return !older.mayOverlap(v, s, e) }
	}
	// Recovery passes no version, but its memtables need the tombstones
	// of the recovered one all the same.
	// Only the secondary tombstones a snapshot taken after the list
	// (which sees snapSeq at least) sees: one taken since, below a newer
	// tombstone, is not in the list, and applying that tombstone would
	// delete what it sees. Compactions need no such cut: their version is
	// older than their snapshot list.
	// Only the list is kept (versions are immutable): held for the whole
	// flush, cur would keep on disk the blob files compactions delete
	// meanwhile.
	cur := d.versions.Current()
	tombs := cur.SecondaryTombstones
	cur.Unref()
	for len(tombs) > 0 && tombs[len(tombs)-1].Seq > snapSeq {
		tombs = tombs[:len(tombs)-1]
	}
	applied := d.setSecondary(&ro, tombs)
	reason := FileReasonFlush
	if v == nil {
		reason = FileReasonRecovery
	}
	blobOut := d.newBlobOutput(d.mutableOptions(), 0, true)
	metas, blobs, stats, err := d.runToTables(ro, tableJob{level: 0, flush: true, tombstoneTime: uint64(max(m.oldestTombstone, 0)),
		ancesterTime: m.created, older: v, secondaryApplied: applied,
		jobID: jobID, reason: reason, blobs: blobOut})
	if err != nil {
		return metas, blobs, nil, err
	}
	d.recordDrops(stats, 0)
	// The memtable's blob files that no table references (every value
	// overwritten or deleted in it, or relocated) are not added: the
	// version would hold a blob file no table references until the next
	// edit. They go once the memtable is released (memBlobPins.drop).
	m.blobs.unadded = m.blobs.unadded[:0]
	for num := range relocate {
		m.blobs.unadded = append(m.blobs.unadded, num)
	}
	memBlobs = slices.DeleteFunc(memBlobs, func(b *manifest.BlobFileMetadata) bool {
		if blobOut.written[b.FileNum].count > 0 {
			return false
		}
		m.blobs.unadded = append(m.blobs.unadded, b.FileNum)
		return true
	})
	var garbage []manifest.BlobGarbage
	if len(memBlobs) > 0 {
		// Dropped values are no older than the memtable, or its oldest
		// tombstone when that is older (replayed ones are dated back).
		date := m.created * uint64(time.Second)
		if t := m.oldestTombstone; t > 0 && uint64(t) < date {
			date = uint64(t)
		}
		garbage = memBlobGarbage(memBlobs, blobOut.written, max(date, 1))
		blobs = append(memBlobs, blobs...)
	}
	return metas, blobs, garbage, nil
}

// tableJob describes the tables one flush or compaction writes.
type tableJob struct {
	// level is the level the tables go to; flush is set for a flush.
	level int
	flush bool
	// tombstoneTime is the write time (unix nanoseconds by the DB's clock)
	// recorded for tables holding tombstones: a flushed memtable's oldest,
	// the oldest of a compaction's inputs, 0 when unknown.
	tombstoneTime uint64
	// ancesterTime is the outputs' OldestAncesterTime (unix seconds): the
	// flushed memtable's creation, the oldest of a compaction's inputs.
	ancesterTime uint64
	// older, when set, holds the tables older than the outputs, against
	// which their range tombstones' deleted bytes are estimated.
	older *manifest.Version
	// secondaryApplied is the outputs' FileMetadata.SecondaryApplied.
	secondaryApplied base.SeqNum
	// jobID and reason are what the listener is told of the tables.
	jobID  int
	reason FileReason
	// blobs, when set, is the job's blob side; runToTables makes one
	// otherwise.
	blobs *blobOutput
}

// tableOutput adapts an sstable.Writer to compact.OutputWriter.
type tableOutput struct {
	fileNum    base.FileNum
	w          *sstable.Writer
	meta       *sstable.WriterMetadata
	closed     bool
	collectors []*collectorAdapter
	// rangeDels are the [start, end) of the range tombstones written, kept
	// when the job estimates what they delete.
	rangeDels     [][2][]byte
	keepRangeDels bool
	// secondary collects the attribute range (nil without
	// Options.SecondaryDeleteKey).
	secondary *secondaryCollector
	// blobs is the job's blob side (blob_files.go); blobRefs the blob
	// files the table's entries point into, ascending.
	blobs    *blobOutput
	blobRefs []base.FileNum
	// sumGen hashes the table's bytes as they are written (nil: no
	// checksum is recorded); sum and sumName are its result once closed.
	sumGen  FileChecksumGenerator
	sum     []byte
	sumName string
}

func (o *tableOutput) Add(k base.InternalKey, v []byte) error { return o.blobs.add(o, k, v) }
func (o *tableOutput) AddRangeTombstone(start, end []byte, seq base.SeqNum) error {
	if o.keepRangeDels {
		if n := len(o.rangeDels); n == 0 || !bytes.Equal(o.rangeDels[n-1][0], start) {
			o.rangeDels = append(o.rangeDels, [2][]byte{bytes.Clone(start), bytes.Clone(end)})
		}
	}
	return o.w.AddRangeTombstone(start, end, seq)
}

// needCompact reports whether a collector asked for the table to be
// compacted.
func (o *tableOutput) needCompact() bool {
	for _, c := range o.collectors {
		if c.c.NeedCompact() {
			return true
		}
	}
	return false
}
func (o *tableOutput) EstimatedSize() uint64 { return o.w.EstimatedSize() }
func (o *tableOutput) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	m, err := o.w.Close()
	o.meta = m
	if err == nil {
		o.sum, o.sumName = finishFileChecksum(o.sumGen)
	}
	return err
}

// writerOptions configures the writer of a table expected to reach about
// targetSize bytes (preallocated in steps of that size).
func (d *DB) writerOptions(targetSize int64) sstable.WriterOptions {
	wo := tableWriterOptions(d.mutableOptions(), d.cmp, targetSize)
	// Per-block attribute ranges let compactions skip deleted blocks.
	wo.BlockAttr = d.opts.SecondaryDeleteKey
	return wo
}

// tableWriterOptions is the table format o asks for (the DB's tables and
// SSTFileWriter's alike), for a table of about targetSize bytes.
func tableWriterOptions(o *Options, cmp *base.Comparer, targetSize int64) sstable.WriterOptions {
	bits := o.BloomBitsPerKey
	if bits < 0 {
		bits = sstable.NoFilter
	}
	return sstable.WriterOptions{
		BlockSize:            o.BlockSize,
		BlockRestartInterval: o.BlockRestartInterval,
		BloomBitsPerKey:      bits,
		Compression:          o.Compression,
		Comparer:             cmp,
		TargetFileSize:       targetSize,
		BytesPerSync:         o.BytesPerSync,
		// EnsureDefaults gave them values; negative ones turn tests off.
		NumDeletionsThreshold:      o.NumDeletionsThreshold,
		DeletionSizeRatioThreshold: o.DeletionSizeRatioThreshold,
		// Prefix blooms (prefix_seek.go).
		PrefixExtractor:          o.PrefixExtractor,
		DisableWholeKeyFiltering: !o.WholeKeyFiltering,
		// Partitioned index and filters.
		IndexType:         o.IndexType,
		PartitionFilters:  o.PartitionFilters,
		MetadataBlockSize: o.MetadataBlockSize,
	}
}

// outputTargetSize is the size a flush or compaction output is expected to
// reach: its target size, or for a flush (no target) the memtable size.
func (d *DB) outputTargetSize(target uint64) int64 {
	if target == 0 || target == math.MaxUint64 {
		return int64(d.mutableOptions().WriteBufferSize)
	}
	return int64(min(target, 1<<40))
}

// runToTables runs a flush or compaction into new tables and returns their
// metadata and that of the blob files it wrote; on error it removes every
// table and blob file it created. job.blobs, when set, is the job's blob
// side (a compaction's counts the references it writes).
func (d *DB) runToTables(ro compact.RunOptions, job tableJob) ([]*manifest.FileMetadata, []*manifest.BlobFileMetadata, compact.Stats, error) {
	var outs []*tableOutput
	blobs := job.blobs
	if blobs == nil {
		blobs = d.newBlobOutput(d.mutableOptions(), job.level, job.flush)
	}
	blobs.jobID, blobs.reason = job.jobID, job.reason
	var createOpts []vfs.OpenOption
	if d.opts.UseDirectIOForFlushAndCompaction {
		createOpts = append(createOpts, vfs.DirectIO)
	}
	wo := d.writerOptions(d.outputTargetSize(ro.TargetFileSize))
	ro.NewOutput = func() (compact.OutputWriter, error) {
		num := d.versions.NewFileNum()
		name := d.tablePath(num)
		f, err := d.fs.Create(name, createOpts...)
		if err != nil {
			return nil, err
		}
		// Hashed as written, under any rate limiting (file_checksum.go).
		f, sumGen := d.newChecksummedFile(f, name)
		if rl := d.opts.RateLimiter; rl != nil {
			// Flushes first: they are what stalled writers wait for.
			pri := IOPriorityLow
			if job.flush {
				pri = IOPriorityHigh
			}
			f = &rateLimitedFile{File: f, limiter: rl, pri: pri, cancel: d.bgCancel}
		}
		o := &tableOutput{fileNum: num, keepRangeDels: job.older != nil, blobs: blobs, sumGen: sumGen}
		owo := wo
		if fs := d.opts.TablePropertiesCollectorFactories; len(fs) > 0 {
			ctx := TablePropertiesCollectorContext{Level: job.level, Flush: job.flush}
			owo.Collectors = make([]sstable.PropertyCollector, 0, len(fs))
			for _, fac := range fs {
				a := &collectorAdapter{c: fac.CreateTablePropertiesCollector(ctx), logger: d.logger, file: name}
				o.collectors = append(o.collectors, a)
				owo.Collectors = append(owo.Collectors, a)
			}
		}
		if key := d.opts.SecondaryDeleteKey; key != nil {
			o.secondary = &secondaryCollector{attr: key, r: manifest.SecondaryRange{Known: true}}
			owo.Collectors = append(owo.Collectors[:len(owo.Collectors):len(owo.Collectors)], o.secondary)
		}
		o.w = sstable.NewWriter(f, name, owo)
		for _, a := range o.collectors {
			a.w = o.w
		}
		outs = append(outs, o)
		return o, nil
	}
	if d.opts.MergeOperator != nil {
		ro.Merger = compactionMerger{d}
		// A failing merge fails the job, which is a background error
		// (RocksDB's OpFailureScope kTryMerge), unless the operator scoped
		// its failure to the reads (ErrMustMerge): then the key is kept as
		// it is, for reads to report, and the job goes on.
		ro.OnMergeError = func(key []byte, err error) error {
			if !errors.Is(err, ErrMustMerge) {
				return err
			}
			d.logger.Warn("merge failed in a flush or compaction; the key's entries are kept unmerged", "job", job.jobID, "err", err)
			return nil
		}
	}
	stats, err := compact.Run(ro)
	if err == nil {
		// Synced by Close, like the tables: the directory sync then makes
		// both durable before the edit that adds them.
		err = blobs.finish()
	}
	if err == nil && len(outs) > 0 {
		err = d.syncDir()
	}
	if err != nil {
		for _, o := range outs {
			if !o.closed {
				o.w.Abort()
			}
			_ = d.fs.Remove(d.tablePath(o.fileNum))
			d.eventTableCreated(TableFileInfo{JobID: job.jobID, FileNum: uint64(o.fileNum), Path: d.tablePath(o.fileNum),
				Level: job.level, Reason: job.reason, Err: err})
		}
		blobs.abort(err)
		return nil, nil, stats, err
	}
	metas := make([]*manifest.FileMetadata, 0, len(outs))
	for _, o := range outs {
		m := o.meta
		fm := &manifest.FileMetadata{
			FileNum:           o.fileNum,
			Size:              m.Size,
			Smallest:          m.Smallest.Clone(),
			Largest:           m.Largest.Clone(),
			SmallestSeq:       m.SmallestSeq,
			LargestSeq:        m.LargestSeq,
			NumEntries:        m.Props.NumEntries,
			NumDeletions:      m.Props.NumDeletions,
			NumRangeDeletions: m.Props.NumRangeDeletions,

			MarkedForCompaction:     o.needCompact(),
			RawKeySize:              m.Props.RawKeySize,
			RawValueSize:            m.Props.RawValueSize,
			NumDataBlocks:           m.Props.NumDataBlocks,
			NumTombstoneDenseBlocks: m.Props.NumTombstoneDenseBlocks,
			BlobFiles:               o.blobRefs,
			FileChecksum:            o.sum,
			FileChecksumFuncName:    o.sumName,
		}
		if fm.NumDeletions > 0 {
			fm.OldestTombstoneTime = job.tombstoneTime
		}
		fm.FileCreationTime = unixSeconds(d.clock.Now())
		fm.OldestAncesterTime = job.ancesterTime
		if fm.OldestAncesterTime == 0 {
			fm.OldestAncesterTime = fm.FileCreationTime
		}
		if o.secondary != nil {
			fm.Secondary = o.secondary.r
		}
		fm.SecondaryApplied = job.secondaryApplied
		if len(o.rangeDels) > 0 {
			fm.RangeDeletionsBytesEstimate = d.rangeDeletionsBytes(job.older, job.level, o.rangeDels)
		}
		metas = append(metas, fm)
	}
	if d.opts.ParanoidChecks {
		if err := errors.Join(d.verifyNewBlobFiles(blobs.files), d.verifyNewTables(metas)); err != nil {
			d.abandonTables(job, metas, err)
			blobs.abort(err)
			return nil, nil, stats, err
		}
	}
	if err := d.openNewTables(metas, job.level); err != nil {
		d.abandonTables(job, metas, err)
		blobs.abort(err)
		return nil, nil, stats, err
	}
	for _, m := range metas {
		d.eventTableCreated(TableFileInfo{JobID: job.jobID, FileNum: uint64(m.FileNum), Path: d.tablePath(m.FileNum),
			Level: job.level, Size: m.Size, Reason: job.reason})
	}
	for _, b := range blobs.files {
		d.eventBlobCreated(BlobFileInfo{JobID: job.jobID, FileNum: uint64(b.FileNum), Path: d.blobPath(b.FileNum),
			Size: b.Size, Reason: job.reason})
	}
	return metas, blobs.files, stats, nil
}

// abandonTables removes the tables of a job that found them unusable: the
// listener is told they were created with err (and so removed).
func (d *DB) abandonTables(job tableJob, metas []*manifest.FileMetadata, err error) {
	for _, m := range metas {
		_ = d.fs.Remove(d.tablePath(m.FileNum))
		d.eventTableCreated(TableFileInfo{JobID: job.jobID, FileNum: uint64(m.FileNum), Path: d.tablePath(m.FileNum),
			Level: job.level, Reason: job.reason, Err: err})
	}
}

// openNewTables opens the tables a flush or compaction wrote, one at a
// time, in the file cache before they are installed, as RocksDB opens its
// outputs: the first read of one then pays no open (footer, index and
// filter reads), and an output that cannot be opened fails its job rather
// than its first reader. L0 tables whose index and filter blocks are to be
// pinned (PinL0FilterAndIndexBlocksInCache) are left to their first read:
// pinning is decided when a table opens, from its level in the current
// version, which does not hold them yet.
func (d *DB) openNewTables(metas []*manifest.FileMetadata, level int) error {
	if level == 0 && d.opts.CacheIndexAndFilterBlocks && d.opts.PinL0FilterAndIndexBlocksInCache {
		return nil
	}
	for _, m := range metas {
		f, err := d.fileCache.findTable(m.FileNum)
		if err != nil {
			return fmt.Errorf("shale: opening new table %s: %w", d.tablePath(m.FileNum), err)
		}
		f.release()
	}
	return nil
}

// backgroundCompaction runs one picked compaction and schedules more.
func (d *DB) backgroundCompaction(c *compact.Compaction, v *manifest.Version) {
	err := d.runCompaction(c, v)
	d.mu.Lock()
	d.finishCompactionLocked(c)
	if err != nil && !d.mu.closing {
		d.setBackgroundErrorLocked(BackgroundErrorCompaction, fmt.Errorf("shale: compaction L%d->L%d failed: %w", c.Level, c.OutputLevel, err))
	}
	d.maybeScheduleLocked()
	d.mu.Unlock()
	d.signalObsolete()
}

// runCompaction merges the inputs of c into new tables of c.OutputLevel (or
// moves the single input file there) and installs the result, telling the
// listener of its begin and end. It takes over the caller's reference to
// v, the version c was picked from, and releases it.
func (d *DB) runCompaction(c *compact.Compaction, v *manifest.Version) error {
	start := time.Now()
	info := CompactionInfo{JobID: d.newJobID(), Reason: c.Reason, InputLevel: c.Level, OutputLevel: c.OutputLevel}
	if d.events == nil {
		return d.runCompactionJob(c, v, &info, nil)
	}
	levels := [2]int{c.Level, c.OutputLevel}
	for i, files := range c.Inputs {
		if len(files) > 0 {
			info.Inputs = append(info.Inputs, LevelFiles{Level: levels[i], Files: fileNums(files)})
		}
	}
	d.eventCompactionBegin(info)
	// The completion is queued as the job's version is installed (when it
	// is), so that it comes before the begin of any job that picks the
	// outputs; a job that fails reports when it returns.
	installed := false
	err := d.runCompactionJob(c, v, &info, func() {
		installed = true
		info.Duration = time.Since(start)
		d.eventCompactionCompleted(info)
	})
	if !installed {
		// A job that did not install has no outputs.
		info.Outputs, info.BytesRead, info.BytesWritten = nil, 0, 0
		info.Duration, info.Err = time.Since(start), err
		if err == nil {
			info.Err = errors.New("shale: internal error: a compaction succeeded without installing a version")
		}
		d.eventCompactionCompleted(info)
	}
	return err
}

// runCompactionJob is runCompaction's work; it fills in what info reports
// of the result before it installs the result, calling installed (when not
// nil) as it does. It releases v.
func (d *DB) runCompactionJob(c *compact.Compaction, v *manifest.Version, info *CompactionInfo, installed func()) error {
	defer func() { v.Unref() }() // v as it is then: see jv below
	start := time.Now()
	edit := &manifest.VersionEdit{DeletedFiles: make(map[manifest.DeletedFileEntry]bool)}
	levels := [2]int{c.Level, c.OutputLevel}
	var inputBytes uint64
	// The outputs' tombstones are dated by the oldest of the inputs that
	// hold tombstones (whichever of them survive: a conservative date); an
	// input whose date is unknown (0) makes theirs unknown, which delete
	// persistence takes as due.
	var oldestTombstone uint64
	tombstoneDateUnknown := false
	var inputs []*manifest.FileMetadata
	for i, files := range c.Inputs {
		for _, f := range files {
			edit.DeletedFiles[manifest.DeletedFileEntry{Level: levels[i], FileNum: f.FileNum}] = true
			inputBytes += f.Size
			inputs = append(inputs, f)
			if !compact.HasTombstones(f) {
				continue
			}
			if t := f.OldestTombstoneTime; t == 0 {
				tombstoneDateUnknown = true
			} else if oldestTombstone == 0 || t < oldestTombstone {
				oldestTombstone = t
			}
		}
	}
	if tombstoneDateUnknown {
		oldestTombstone = 0
	}
	mo := d.mutableOptions()
	gc := d.blobGCFor(c, v, mo) // from all of v's blob files: it picks the oldest
	// The job reads blob values only through its inputs' references (GC,
	// the compaction filter, merges): from here it holds a version with
	// only their blob files, so that the blob files other jobs' edits
	// delete meanwhile leave the disk at once rather than when this job
	// ends. Nothing below looks up any other blob file in v.
	jv := v.WithBlobFilesOf(inputs)
	v.Unref()
	v = jv
	// A compaction filter sees the data it moves down: no trivial moves.
	if c.IsTrivialMove() && !gc.collectsFrom(v, c.Inputs[0][0]) && !d.hasCompactionFilter() {
		edit.NewFiles = []manifest.NewFileEntry{{Level: c.OutputLevel, Meta: c.Inputs[0][0]}}
		info.TrivialMove = true
		info.Outputs = []uint64{uint64(c.Inputs[0][0].FileNum)}
		if err := d.applyVersionEdit(edit, installed); err != nil {
			return err
		}
		d.stats.trivialMoves.Add(1)
		d.logger.Info("trivial move", "file", c.Inputs[0][0].FileNum, "from", c.Level, "to", c.OutputLevel)
		return nil
	}

	iters := make([]base.InternalIterator, 0, len(inputs))
	var tombstones []rangedel.Tombstone
	// With UseDirectIOForFlushAndCompaction (and buffered user reads), the
	// inputs are read through direct-IO handles of their own, so a
	// compaction does not push the user's working set out of the page cache.
	var directFiles []vfs.File
	// tables hold the inputs' file cache references until the merged
	// input is closed.
	var tables []*cachedFile
	releaseTables := func() {
		for _, t := range tables {
			t.release()
		}
		tables = nil
	}
	defer releaseTables() // after closeIters: deferred calls run last first
	closeIters := func() {
		for _, it := range iters {
			it.Close()
		}
		for _, f := range directFiles {
			f.Close()
		}
		iters, directFiles = nil, nil
	}
	defer closeIters()
	directInputs := d.opts.UseDirectIOForFlushAndCompaction && !d.opts.UseDirectReads
	d.mu.Lock()
	snaps := d.mu.snapshots.seqs()
	d.mu.Unlock()
	// Only levels below the output can hold older versions of the inputs'
	// keys: an L0 compaction takes every L0 file overlapping its inputs.
	older := newOlderKeys(d.cmp.Compare, v, c.OutputLevel+1)
	dropped := d.secondaryDroppedInputs(inputs, v, snaps, older)
	d.stats.secondaryDroppedFiles.Add(uint64(len(dropped)))
	// skippedBlocks counts the data blocks of the inputs that secondary
	// tombstones delete whole, skipped unread.
	var skippedBlocks int64
	defer func() { d.stats.secondarySkippedBlocks.Add(uint64(skippedBlocks)) }()
	for _, f := range inputs {
		if dropped[f] {
			continue
		}
		t, err := d.fileCache.findTable(f.FileNum)
		if err != nil {
			return err
		}
		tables = append(tables, t)
		io := sstable.IterOptions{ReadaheadSize: compactionReadaheadSize,
			SkipBlock: d.secondarySkipBlock(f, inputs, dropped, v, snaps, older), Skipped: &skippedBlocks}
		if directInputs {
			df, err := d.fs.Open(d.tablePath(f.FileNum), vfs.DirectIO, vfs.SequentialAccess)
			if err != nil {
				return fmt.Errorf("shale: opening %s for compaction with direct IO: %w", d.tablePath(f.FileNum), err)
			}
			directFiles = append(directFiles, df)
			io.File = df
		}
		iters = append(iters, t.reader.NewIter(io))
		for _, s := range t.reader.RangeTombstones() {
			for _, seq := range s.Seqs {
				tombstones = append(tombstones, rangedel.Tombstone{Start: s.Start, End: s.End, Seq: seq})
			}
		}
	}
	merged := mergeiter.New(d.cmp.Compare, iters...)
	iters = nil // merged owns and closes them; directFiles outlive it
	// The blob references read and written give the garbage (blob_files.go).
	blobRefs := &blobRefCounter{InternalIterator: merged, read: map[base.FileNum]blobRefCount{}}
	blobs := d.newBlobOutput(mo, c.OutputLevel, false)
	blobs.gc = gc
	defer gc.close() // on early returns; closed before the install otherwise
	var input base.InternalIterator = blobRefs
	if d.hasCompactionFilter() {
		ctx := CompactionFilterContext{IsFullCompaction: isFullCompaction(v, len(inputs)),
			IsManualCompaction: c.Reason == compact.ReasonManual, InputLevel: c.Level, OutputLevel: c.OutputLevel}
		if f := d.compactionFilterFor(ctx); f != nil {
			input = d.newFilterIter(blobRefs, f, c.Level, snaps)
		}
	}
	ro := compact.RunOptions{
		Cmp:                 d.cmp,
		Input:               input,
		RangeDels:           rangedel.Fragment(d.cmp.Compare, tombstones),
		Snapshots:           snaps,
		ElideTombstone:      func(k []byte) bool { return !older.mayHold(k) },
		ElideRangeTombstone: func(s, e []byte) bool { return !older.mayOverlap(v, s, e) },
		TargetFileSize:      c.MaxOutputFileSize,
		Grandparents:        c.Grandparents,
		// As for a flush (writeLevel0Tables).
		KeepShadowedTombstones: mo.DeletePersistenceThreshold > 0,
	}
	applied := d.setSecondary(&ro, v.SecondaryTombstones)
	metas, newBlobs, stats, err := d.runToTables(ro, tableJob{level: c.OutputLevel, tombstoneTime: oldestTombstone,
		ancesterTime: oldestAncester(inputs), older: v,
		secondaryApplied: applied, jobID: info.JobID, reason: FileReasonCompaction, blobs: blobs})
	err = errors.Join(err, merged.Close(), gc.close())
	releaseTables()
	info.InputEntries, info.OutputEntries = uint64(stats.InputEntries), uint64(stats.OutputEntries)
	if err != nil {
		d.removeOutputs(info.JobID, metas)
		d.removeBlobMetas(info.JobID, newBlobs)
		return err
	}
	d.recordDrops(stats, c.OutputLevel)
	edit.NewBlobFiles = newBlobs
	if len(blobRefs.read) > 0 {
		edit.BlobGarbage = blobGarbage(blobRefs.read, blobs.written, gc.relocatedCounts(), d.blobGarbageDate(c))
	}
	var outBytes uint64
	for _, b := range newBlobs {
		outBytes += b.Size
	}
	for _, m := range metas {
		edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: c.OutputLevel, Meta: m})
		outBytes += m.Size
	}
	info.Outputs, info.BytesRead, info.BytesWritten = fileNums(metas), inputBytes, outBytes
	if gc != nil {
		info.BlobBytesRelocated = gc.relocated.bytes
	}
	if err := d.applyVersionEdit(edit, installed); err != nil {
		// Outputs stay (see backgroundFlush): the edit may be durable.
		return err
	}
	d.stats.compactions.Add(1)
	d.stats.compactBytesRead.Add(inputBytes)
	d.stats.compactBytesWritten.Add(outBytes)
	d.noteBlobGCOwed(gc)
	if gc != nil {
		d.stats.blobRelocated.Add(gc.relocated.count)
		d.stats.blobBytesRelocated.Add(gc.relocated.bytes)
		d.opts.Statistics.add(TickerBlobGCNumKeysRelocated, gc.relocated.count)
		d.opts.Statistics.add(TickerBlobGCBytesRelocated, gc.relocated.bytes)
	}
	d.logger.Info("compacted", "reason", c.Reason, "from", c.Level, "to", c.OutputLevel,
		"inputs", len(inputs), "outputs", len(metas), "bytes_in", inputBytes, "bytes_out", outBytes,
		"entries_in", stats.InputEntries, "entries_out", stats.OutputEntries,
		"dropped_tombstones", stats.DroppedTombstones, "marked_outputs", countMarked(metas),
		"blob_relocated", gc.relocatedCount(), "secondary_dropped_files", len(dropped), "secondary_skipped_blocks", skippedBlocks, "secondary_dropped", stats.DroppedBySecondary, "secondary_to_delete", stats.SecondaryToDelete,
		"duration", time.Since(start))
	return nil
}

// lastLevelNeedsRewrite reports whether CompactRange rewrites the files
// of the last level of v overlapping its range in place: one holds
// tombstones, entries a secondary tombstone deletes, or references to an
// old blob file holding garbage that garbage collection would collect.
func (d *DB) lastLevelNeedsRewrite(v *manifest.Version, files []*manifest.FileMetadata) bool {
	if holdsTombstones(files) || holdsSecondaryDeleted(v, files) {
		return true
	}
	gc := d.blobGCFor(&compact.Compaction{Reason: compact.ReasonManual}, v, d.mutableOptions())
	for _, f := range files {
		if gc.collectsFrom(v, f) {
			return true
		}
	}
	return false
}

// holdsTombstones reports whether any of the files has point or range
// tombstones.
func holdsTombstones(files []*manifest.FileMetadata) bool {
	for _, f := range files {
		if f.NumDeletions > 0 || f.NumRangeDeletions > 0 {
			return true
		}
	}
	return false
}

// holdsSecondaryDeleted reports whether any of the files of v may hold
// entries a live secondary tombstone deletes.
func holdsSecondaryDeleted(v *manifest.Version, files []*manifest.FileMetadata) bool {
	for _, t := range v.SecondaryTombstones {
		for _, f := range files {
			if f.MayHoldDeletedBy(t) {
				return true
			}
		}
	}
	return false
}

// applyVersionEdit logs the edit, with the deletion of the blob files it
// leaves unreferenced, and publishes the new version to readers; installed
// is called as the version is installed (see logAndApplyDeletingBlobs).
func (d *DB) applyVersionEdit(edit *manifest.VersionEdit, installed func()) error {
	if err := d.logAndApplyDeletingBlobs(edit, installed); err != nil {
		return err
	}
	d.mu.Lock()
	d.publishReadStateLocked()
	d.mu.Unlock()
	d.retireSecondaryTombstones()
	return nil
}

// CompactRange compacts every key in [start, end] (nil = unbounded) down the
// levels: memtables are flushed first, then each level with overlapping
// files is compacted into the next, and the last level is rewritten in place
// where it holds tombstones, so that deleted data (and the tombstones, unless
// a snapshot needs them) is gone from disk when it returns.
func (d *DB) CompactRange(start, end []byte) error {
	return d.CompactRangeWithOptions(start, end, nil)
}

// CompactRangeOptions changes what CompactRangeWithOptions does (RocksDB's
// CompactRangeOptions).
type CompactRangeOptions struct {
	// ChangeLevel (change_level) compacts the range down to TargetLevel and
	// no further: every file overlapping it in levels 0 to TargetLevel-1 is
	// merged, level by level, into TargetLevel; levels below are untouched.
	// Default false: CompactRange.
	ChangeLevel bool
	// TargetLevel (target_level) is the level ChangeLevel compacts into,
	// from 1 to Options.NumLevels-1.
	TargetLevel int
	// BottommostLevelCompaction (bottommost_level_compaction) says whether
	// the last level's files in the range are rewritten in place once the
	// data above has reached them. Default
	// BottommostLevelCompactionIfHaveCompactionFilter. ChangeLevel never
	// rewrites its target level.
	BottommostLevelCompaction BottommostLevelCompaction
}

// BottommostLevelCompaction is CompactRangeOptions.BottommostLevelCompaction
// (RocksDB's enum of the same name; the zero value is RocksDB's default).
type BottommostLevelCompaction int

const (
	// BottommostLevelCompactionIfHaveCompactionFilter rewrites the last
	// level when a compaction filter is set (RocksDB's
	// kIfHaveCompactionFilter), and otherwise only when that changes
	// something: when its files hold tombstones that can go, or blob values
	// garbage collection would relocate (RocksDB then rewrites nothing).
	BottommostLevelCompactionIfHaveCompactionFilter BottommostLevelCompaction = iota
	// BottommostLevelCompactionSkip never rewrites the last level
	// (kSkip).
	BottommostLevelCompactionSkip
	// BottommostLevelCompactionForce always rewrites the last level's files
	// in the range (kForce).
	BottommostLevelCompactionForce
	// BottommostLevelCompactionForceOptimized rewrites the last level's
	// files in the range except those this call has just written by
	// compacting the level above into it (kForceOptimized): each file is
	// rewritten once, not twice.
	BottommostLevelCompactionForceOptimized
)

// String returns RocksDB's name of b.
func (b BottommostLevelCompaction) String() string {
	switch b {
	case BottommostLevelCompactionIfHaveCompactionFilter:
		return "kIfHaveCompactionFilter"
	case BottommostLevelCompactionSkip:
		return "kSkip"
	case BottommostLevelCompactionForce:
		return "kForce"
	case BottommostLevelCompactionForceOptimized:
		return "kForceOptimized"
	}
	return fmt.Sprintf("BottommostLevelCompaction(%d)", int(b))
}

// skipLastLevel reports whether a manual compaction of [start, end] leaves
// the last level of v as it is: always with changeLevel (its target is not
// rewritten) or BottommostLevelCompactionSkip, never with
// BottommostLevelCompactionForce or ForceOptimized or a compaction
// filter, and otherwise unless its files there hold what a rewrite would
// drop or relocate
// (lastLevelNeedsRewrite).
func (d *DB) skipLastLevel(v *manifest.Version, changeLevel bool, b BottommostLevelCompaction, start, end []byte) bool {
	switch {
	case changeLevel || b == BottommostLevelCompactionSkip:
		return true
	case b == BottommostLevelCompactionForce || b == BottommostLevelCompactionForceOptimized:
		return false
	}
	return !d.hasCompactionFilter() && !d.lastLevelNeedsRewrite(v, v.Overlaps(d.cmp.Compare, len(v.Levels)-1, start, end))
}

// CompactRangeWithOptions is CompactRange with options; a nil o, or one
// without ChangeLevel, is CompactRange. With ChangeLevel it places the data
// of [start, end] in o.TargetLevel, e.g. to build an LSM of a chosen shape.
func (d *DB) CompactRangeWithOptions(start, end []byte, o *CompactRangeOptions) error {
	if d.readOnly {
		return d.readOnlyErr()
	}
	last := d.opts.NumLevels - 1
	co := d.compactOptions()
	// target is the deepest level the loop compacts into; only without
	// ChangeLevel is the last level (target) also rewritten in place.
	target, changeLevel := last, o != nil && o.ChangeLevel
	bottommost := BottommostLevelCompactionIfHaveCompactionFilter
	if o != nil {
		bottommost = o.BottommostLevelCompaction
	}
	switch bottommost {
	case BottommostLevelCompactionIfHaveCompactionFilter, BottommostLevelCompactionSkip, BottommostLevelCompactionForce,
		BottommostLevelCompactionForceOptimized:
	default:
		return base.InvalidArgumentf("shale: CompactRangeOptions.BottommostLevelCompaction %d is not one of the constants", int(bottommost))
	}
	if changeLevel {
		if o.TargetLevel < 1 || o.TargetLevel > last {
			return base.InvalidArgumentf("shale: CompactRangeOptions.TargetLevel must be between 1 and %d (Options.NumLevels-1), got %d",
				last, o.TargetLevel)
		}
		target = o.TargetLevel
		// Each level must compact into the next and never past target:
		// dynamic level sizing sends L0 to its base level, which may lie
		// below target. Static sizing makes L1 the base level.
		co.DynamicLevelBytes = false
	}
	if err := d.Flush(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.compact.manual++
	defer func() {
		d.mu.compact.manual--
		d.mu.compact.cond.Broadcast() // DeleteFilesInRanges waits for it
		d.maybeScheduleLocked()
	}()
	for d.mu.compact.running > 0 && !d.mu.closing {
		d.mu.compact.cond.Wait()
	}
	// Every table this call writes has a number from fresh on (a number
	// no file takes), and only this call writes below L0 now.
	optimized := bottommost == BottommostLevelCompactionForceOptimized && !changeLevel
	var fresh base.FileNum
	if optimized {
		fresh = d.versions.NewFileNum()
	}
	for level := 0; level <= target; level++ {
		if d.mu.closing {
			return ErrClosed
		}
		if d.mu.bgErr != nil {
			return fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
		}
		if d.mu.ingesting {
			// IngestExternalFile is writing an edit placed around the
			// compactions running when it chose levels.
			d.mu.compact.cond.Wait()
			level--
			continue
		}
		v := d.versions.Current()
		if level == target && d.skipLastLevel(v, changeLevel, bottommost, start, end) {
			// The last level is rewritten in place only to drop what its
			// tombstones delete (and the tombstones, as no snapshot needs)
			// and to collect blob garbage; a ChangeLevel target is never
			// rewritten.
			v.Unref()
			break
		}
		var c *compact.Compaction
		if optimized && level == target {
			c = pickOlderLastLevelRun(d.cmp.Compare, v, &co, start, end, fresh)
		} else {
			c = compact.PickManual(v, &co, level, start, end)
		}
		if c == nil {
			v.Unref()
			continue
		}
		if c.OutputLevel > target {
			// PickManual compacts level into level+1 (L0 into L1 under
			// static sizing); anything else is a bug, refused before it
			// misplaces data.
			v.Unref()
			return fmt.Errorf("shale: internal error: manual compaction L%d->L%d passes target level %d", level, c.OutputLevel, target)
		}
		d.startCompactionLocked(c)
		d.mu.Unlock()
		err := d.runCompaction(c, v)
		d.mu.Lock()
		d.finishCompactionLocked(c)
		if err != nil {
			if d.mu.closing && errors.Is(err, errRateLimitCancelled) {
				return ErrClosed
			}
			d.setBackgroundErrorLocked(BackgroundErrorCompaction, fmt.Errorf("shale: manual compaction failed: %w", err))
			return err
		}
		if c.OutputLevel > level {
			level = c.OutputLevel - 1
		}
		if optimized && level == target {
			level-- // the next run of older files, if any
		}
	}
	d.signalObsolete()
	return nil
}

// pickOlderLastLevelRun returns the in-place compaction, for
// BottommostLevelCompactionForceOptimized, of the first run of consecutive
// last-level files of v overlapping [start, end] that are older than fresh
// (not written by the call), or nil when none is left. A run at a time: a
// rewrite of older files on both sides of fresh ones would write outputs
// spanning those. PickManual widens the run to a clean cut, which takes a
// fresh file only if it shares a user key with the run.
func pickOlderLastLevelRun(cmp base.Compare, v *manifest.Version, co *compact.Options, start, end []byte, fresh base.FileNum) *compact.Compaction {
	last := len(v.Levels) - 1
	files := v.Overlaps(cmp, last, start, end)
	i := 0
	for i < len(files) && files[i].FileNum >= fresh {
		i++
	}
	if i == len(files) {
		return nil
	}
	j := i
	for j < len(files) && files[j].FileNum < fresh {
		j++
	}
	return compact.PickManual(v, co, last, files[i].Smallest.UserKey, files[j-1].Largest.UserKey)
}

// oldestAncester returns the oldest OldestAncesterTime of files, ignoring
// those that do not know theirs (0 when none does: the outputs then take
// their creation time).
func oldestAncester(files []*manifest.FileMetadata) uint64 {
	var t uint64
	for _, f := range files {
		if a := f.OldestAncesterTime; a != 0 && (t == 0 || a < t) {
			t = a
		}
	}
	return t
}

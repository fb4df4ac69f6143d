package shale

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// Open opens the database in dir, creating it when Options.CreateIfMissing
// is set (nil opts: defaults, with CreateIfMissing). It replays the WAL
// files a crash or Close left behind: every acknowledged synced write is
// there after Open returns. A last WAL that replays to a clean end is kept
// as the WAL of the new memtable, so reopening writes no table.
func Open(dir string, opts *Options) (*DB, error) {
	return open(dir, opts, false, "")
}

// open opens dir for writing, or for reading only (OpenForReadOnly), or,
// with a secondaryDir, as a secondary instance (OpenAsSecondary, which
// reads only too).
func open(dir string, opts *Options, readOnly bool, secondaryDir string) (_ *DB, err error) {
	var o Options
	if opts != nil {
		o = *opts
	} else {
		o.CreateIfMissing = !readOnly
	}
	if readOnly {
		o.CreateIfMissing = false
		o.ErrorIfExists = false
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	d := &DB{
		dirname:    dir,
		opts:       &o,
		fs:         o.FS,
		cmp:        o.Comparer,
		readOnly:   readOnly,
		obsoleteCh: make(chan struct{}, 1),
		closeCh:    make(chan struct{}),
		bgCancel:   make(chan struct{}),
	}
	if secondaryDir != "" {
		d.follower = &follower{dir: secondaryDir}
	}
	d.clock = o.Clock
	d.mu.compact.cond.L = &d.mu
	d.mu.compact.inProgress = make(map[*compact.Compaction]struct{})
	d.liveOpts.Store(&o)

	if o.CreateIfMissing {
		if err := d.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("shale: creating %s: %w", dir, err)
		}
	} else if _, err := d.fs.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if readOnly {
			return nil, base.InvalidArgumentf("shale: database %s does not exist", dir)
		}
		return nil, base.InvalidArgumentf("shale: database %s does not exist (set Options.CreateIfMissing to create it)", dir)
	}
	defer func() {
		if err != nil {
			d.closeResources()
		}
	}()
	if !readOnly {
		lock, err := acquireDirLock(d.fs, dir, &o)
		if err != nil {
			return nil, err
		}
		d.fileLock = lock
		if err := checkDirectIO(d.fs, dir, &o); err != nil {
			return nil, err
		}
	}
	if d.follower != nil {
		// The secondary's own directory: its LOG, nothing in dir.
		if err := d.fs.MkdirAll(secondaryDir, 0o755); err != nil {
			return nil, fmt.Errorf("shale: creating the secondary directory %s: %w", secondaryDir, err)
		}
	}
	if err := d.openInfoLog(); err != nil {
		return nil, err
	}
	if o.EventListener != nil && !readOnly {
		// Before recovery: its flushes and the sweep at Open are events too.
		d.events = newEventQueue(o.EventListener, d.logger)
	}
	if o.BlockCacheSize > 0 {
		d.blockCache = cache.New(o.BlockCacheSize)
	} else {
		d.blockCache = cache.New(0)
	}
	d.blobCache = d.blockCache
	if o.BlobCacheSize > 0 {
		d.blobCache = cache.New(o.BlobCacheSize)
	}
	d.ioReader = vfs.NewAsyncReader(vfs.AsyncOptions{
		DisableIOUring: o.DisableIOUring,
		SQPoll:         o.IOUringSQPoll,
		Logf:           func(format string, args ...any) { d.logger.Warn(fmt.Sprintf(format, args...)) },
	})
	if w, ok := d.fs.(vfs.AsyncReaderWrapper); ok {
		// A wrapping FS (a simulated slow device) reads its files through
		// the reader natively and adds what its ReadAt would.
		d.ioReader = w.WrapAsyncReader(d.ioReader)
	}
	d.fileCache = newFileCache(d)
	d.picker = compact.NewPicker(d.compactOptions())

	if d.follower != nil {
		if err := d.loadSecondary(); err != nil {
			return nil, err
		}
	} else if readOnly {
		if err := d.loadReadOnly(); err != nil {
			return nil, err
		}
	} else if err := d.loadForWriting(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.publishReadStateLocked()
	d.mu.Unlock()
	if d.follower != nil {
		d.logger.Info("opened as a secondary instance", "dir", dir, "secondary_dir", secondaryDir, "last_seq", d.visibleSeq.Load())
		return d, nil
	}
	if readOnly {
		d.logger.Info("opened read-only", "dir", dir, "last_seq", d.visibleSeq.Load())
		return d, nil
	}
	d.deleteObsoleteFiles(true)
	d.bgDone.Add(1)
	go d.obsoleteFileLoop()
	d.mu.Lock()
	d.maybeScheduleLocked()
	d.mu.Unlock()
	d.logger.Info("opened", "dir", dir, "last_seq", d.visibleSeq.Load())
	return d, nil
}

// manifestOptions are the options of the DB's version set.
func (d *DB) manifestOptions() manifest.Options {
	o := d.opts
	return manifest.Options{
		FS: d.fs, Dir: d.dirname, Comparer: d.cmp, NumLevels: o.NumLevels,
		MaxManifestFileSize: o.MaxManifestFileSize, Logger: d.logger,
		ReadOnly: d.readOnly,
	}
}

// loadForWriting loads (or creates) the version set, replays the WALs and
// records the options.
func (d *DB) loadForWriting() error {
	o := d.opts
	dir := d.dirname
	vo := d.manifestOptions()
	_, statErr := d.fs.Stat(d.fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)))
	var err error
	switch {
	case statErr == nil:
		if o.ErrorIfExists {
			return base.InvalidArgumentf("shale: database %s already exists (Options.ErrorIfExists is set)", dir)
		}
		d.versions, err = manifest.Load(vo)
	case errors.Is(statErr, os.ErrNotExist):
		if !o.CreateIfMissing {
			return base.InvalidArgumentf("shale: database %s does not exist (set Options.CreateIfMissing to create it)", dir)
		}
		if err := checkNoDatabaseFiles(d.fs, dir); err != nil {
			return err
		}
		d.versions, err = manifest.Create(vo)
	default:
		err = statErr
	}
	if err != nil {
		return err
	}
	d.noteGlobalSeqNums()
	if err := d.checkSecondaryDeleteKey(); err != nil {
		return err
	}
	if err := d.checkMergeOperator(); err != nil {
		return err
	}
	if o.ParanoidChecks {
		if err := d.checkLiveTables(); err != nil {
			return err
		}
	}
	if err := d.recover(); err != nil {
		return err
	}
	num, err := d.writeOptionsFile(d.opts)
	d.optionsFileNum = num
	return err
}

// checkNoDatabaseFiles refuses to create a database in a directory without
// CURRENT that holds tables, WALs, OPTIONS or a MANIFEST newer than the one
// creation writes first: CURRENT was lost, and a new database there would
// hide the data and its cleanup delete it. A crash while creating leaves at
// most MANIFEST-000001 (CURRENT comes before anything else), so creation
// can still be retried after one.
func checkNoDatabaseFiles(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var found []string
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		switch typ {
		case base.FileTypeTable, base.FileTypeBlob, base.FileTypeLog, base.FileTypeOptions:
		case base.FileTypeManifest:
			if num <= 1 {
				continue
			}
		default:
			continue
		}
		found = append(found, name)
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	if len(found) > 5 {
		found = append(found[:5], "...")
	}
	return base.CorruptionErrorf(fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)), 0,
		"CURRENT is missing but the directory holds database files (%s): restore CURRENT (one line naming the newest MANIFEST, e.g. with the help of shale check) instead of creating a new database over them",
		strings.Join(found, ", "))
}

// compactOptions are the picker's options, from the current options.
func (d *DB) compactOptions() compact.Options { return d.compactOptionsOf(d.mutableOptions()) }

// compactOptionsOf is compactOptions for the options o, for a caller that
// reads other fields of the same options too.
func (d *DB) compactOptionsOf(o *Options) compact.Options {
	return compact.Options{
		Comparer:                   d.cmp,
		NumLevels:                  o.NumLevels,
		L0CompactionTrigger:        o.Level0FileNumCompactionTrigger,
		MaxBytesForLevelBase:       uint64(o.MaxBytesForLevelBase),
		MaxBytesForLevelMultiplier: o.MaxBytesForLevelMultiplier,
		DynamicLevelBytes:          o.LevelCompactionDynamicLevelBytes,
		TargetFileSizeBase:         uint64(o.TargetFileSizeBase),
		TargetFileSizeMultiplier:   o.TargetFileSizeMultiplier,
		L0SlowdownWritesTrigger:    o.Level0SlowdownWritesTrigger,
		// EnsureDefaults gave it a value: 0 never reaches the picker, whose
		// own default is the same.
		TombstoneDenseCompactionThreshold: o.TombstoneDenseCompactionThreshold,
		DisableDeleteAware:                o.DisableDeleteAwareCompaction,
		DeletePersistenceThreshold:        o.DeletePersistenceThreshold,
		TTL:                               secondsDuration(o.TTL),
		Periodic:                          secondsDuration(o.PeriodicCompactionSeconds),
		Now:                               d.clock.Now,
		BlobFiles:                         o.EnableBlobFiles,
		BlobGC:                            o.EnableBlobGarbageCollection,
		BlobGCAgeCutoff:                   o.BlobGarbageCollectionAgeCutoff,
		BlobGCForceThreshold:              o.BlobGarbageCollectionForceThreshold,
	}
}

// openInfoLog sets up the logger: the caller's; none for a read-only DB;
// otherwise a text log in LOG (see infoLogFile).
func (d *DB) openInfoLog() error {
	switch {
	case d.opts.Logger != nil:
		d.logger = d.opts.Logger
		return nil
	case d.follower != nil:
		// A secondary logs into its own directory, never the primary's.
		f, err := openInfoLogFile(d.fs, d.follower.dir, d.opts.KeepLogFileNum, d.opts.MaxLogFileSize)
		if err != nil {
			return err
		}
		d.infoLog = f
		d.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
		return nil
	case d.readOnly:
		d.logger = slog.New(slog.DiscardHandler)
		return nil
	}
	f, err := openInfoLogFile(d.fs, d.dirname, d.opts.KeepLogFileNum, d.opts.MaxLogFileSize)
	if err != nil {
		return err
	}
	d.infoLog = f
	d.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return nil
}

// recover replays the WAL files not yet in tables. The last WAL, when it
// replays to a clean end and all of it fits in one memtable, stays the WAL
// of the mutable memtable (RocksDB's avoid_flush_during_recovery): a Close
// and Open write no table. Otherwise the replayed memtables are flushed to
// L0 and a fresh WAL starts. A read-only DB keeps every replayed memtable
// in memory and writes nothing.
func (d *DB) recover() (retErr error) {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return err
	}
	minLog := d.versions.LogNumber()
	var logs []base.FileNum
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		d.versions.MarkFileNumUsed(num)
		if t == base.FileTypeLog && num >= minLog {
			if p, ok := d.fs.(*pinnedFS); ok && !p.pinnedWAL(num) {
				continue // newer than every pinned WAL (see loadReadOnlyOnce)
			}
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)

	lastSeq := d.versions.LastSeq()
	edit := &manifest.VersionEdit{}
	// A WAL does not record when its tombstones were written. With a delete
	// persistence bound they are taken to be as old as the bound allows,
	// due now, so the bound holds whatever their age; without one, they
	// are dated now.
	replayedTombstoneTime := d.clock.Now().Add(-d.mutableOptions().DeletePersistenceThreshold).UnixNano()
	// The replayed memtables' arenas are freed by releaseMemTable (they
	// live outside the Go heap): each one replaced, and, when recovery
	// fails, the ones it made.
	mem := d.newMemTable(0, 0)
	var full []*memTable // read-only: replayed memtables kept in memory
	defer func() {
		if retErr == nil {
			return
		}
		if d.mu.mem.mutable != mem {
			d.releaseMemTable(mem)
		}
		for _, m := range full {
			if !slices.Contains(d.mu.mem.queue, m) {
				d.releaseMemTable(m)
			}
		}
	}()
	// flushedThisLog is set when a memtable holding entries of the WAL
	// being replayed went to a table: that WAL cannot be reused.
	flushedThisLog := false
	flushMem := func() error {
		if mem.Empty() {
			return nil
		}
		if d.readOnly {
			full = append(full, mem)
			mem = d.newMemTable(0, 0)
			return nil
		}
		jobID := d.newJobID()
		start := time.Now()
		d.eventFlushBegin(FlushInfo{JobID: jobID, Reason: FlushReasonRecovery})
		// Recovered memtables hold their values inline (walBlobResolver):
		// no memtable blob files, so no garbage.
		metas, blobs, _, err := d.writeLevel0Tables(mem, nil, base.SeqNumMax, nil, jobID) // no snapshot exists yet
		if d.events != nil {
			var bytes uint64
			for _, m := range metas {
				bytes += m.Size
			}
			for _, b := range blobs {
				bytes += b.Size
			}
			d.eventFlushCompleted(FlushInfo{JobID: jobID, Reason: FlushReasonRecovery, Outputs: fileNums(metas),
				BytesWritten: bytes, Duration: time.Since(start), Err: err})
		}
		if err != nil {
			return err
		}
		edit.NewBlobFiles = append(edit.NewBlobFiles, blobs...)
		for _, m := range metas {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: m})
		}
		d.releaseMemTable(mem)
		mem = d.newMemTable(0, 0)
		flushedThisLog = true
		return nil
	}
	// A WAL that ends early (torn tail) is normal only for the newest one
	// with writes: rotation syncs a WAL before any write goes to the next.
	// If a newer WAL holds writes, the early end lost acknowledged data.
	var torn string
	var tornAt int64
	mode := d.opts.WALRecoveryMode
	// The values write-time separation wrote to blob files are replayed
	// inline (blob_write.go); blobsReplayed says the WAL being replayed
	// held some.
	blobs := newWALBlobResolver(d.fs, d.dirname)
	defer blobs.close()
	blobsReplayed := false
	var reuse struct {
		ok  bool
		num base.FileNum
		end int64 // where the last intact record ends
	}
	for i, num := range logs {
		name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeLog, num))
		last := i == len(logs)-1
		if torn != "" && mode == PointInTimeRecovery {
			d.logger.Warn("point-in-time recovery stops at a damaged WAL; newer WALs are not replayed", "damaged", torn, "skipped", name)
			d.recordSkippedWAL(name)
			continue
		}
		if last && !d.readOnly {
			// The memtable kept for the last WAL must hold nothing else.
			if err := flushMem(); err != nil {
				return err
			}
		}
		flushedThisLog = false
		blobsReplayed = false
		// lostAt is where a blob value of the WAL did not read back
		// (walBlobResolver): the WAL ends there, as at a torn record.
		lostAt, lostSkipped, lostDamage := int64(-1), 0, false
		var lostErr error
		res, err := wal.Replay(d.fs, name, mode, func(rec []byte, off int64) error {
			r, err := walBatch(name, off, rec)
			if err != nil || r.count == 0 {
				return err
			}
			resolved, hadBlobs, err := blobs.resolve(name, off, rec)
			lost := errors.Is(err, errBlobValueLost)
			if err != nil && errors.Is(err, ErrCorruption) {
				switch {
				case mode == SkipAnyCorruptedRecords:
					lostSkipped++
					d.addRecoveryLoss(WALLoss{File: name, Offset: off, Records: 1, Bytes: int64(len(rec)),
						Reason: "damaged record skipped: its blob value does not read back"})
					return nil
				case lost || mode == PointInTimeRecovery:
					// A value that is not in its file ends the WAL, as a
					// torn record does; a damaged one ends it only for
					// point-in-time recovery.
					lostAt, lostErr, lostDamage = off, err, !lost
					return errStopReplay
				}
			}
			if err != nil {
				return err
			}
			rec = resolved
			blobsReplayed = blobsReplayed || hadBlobs
			if torn != "" && mode == TolerateCorruptedTailRecords {
				return base.CorruptionErrorf(torn, tornAt, "WAL ends early but the newer WAL %s holds writes: data between them is lost", name)
			}
			batchLast := r.seq + base.SeqNum(r.count) - 1
			// need bounds the arena the batch takes: every entry's key and
			// value (in len(rec)) plus a skiplist node's fixed cost.
			need := len(rec) + int(r.count)*memtableEntryOverhead
			if mem.ApproximateMemoryUsage()+need > mem.capacity {
				if err := flushMem(); err != nil {
					return err
				}
				if need > mem.capacity {
					d.releaseMemTable(mem) // empty: flushed, or never written
					mem = d.newMemTable(0, need)
				}
			}
			if mem.Empty() {
				mem.firstSeq = r.seq // WAL records come in seqnum order
			}
			tombstones, err := applyBatch(mem.Memtable, rec)
			if err != nil {
				if errors.Is(err, ErrCorruption) {
					return base.CorruptionErrorf(name, off, "malformed batch at seqnum %d", r.seq)
				}
				return err
			}
			if tombstones && mem.oldestTombstone == 0 {
				mem.oldestTombstone = replayedTombstoneTime
			}
			lastSeq = max(lastSeq, batchLast)
			return nil
		})
		if err == errStopReplay {
			// A value written with its WAL record but not synced, which a
			// power loss took while the record survived: the WAL's end.
			if mode == AbsoluteConsistency {
				return lostErr
			}
			err = nil
			size := res.LastOffset
			if fi, serr := d.fs.Stat(name); serr == nil {
				size = fi.Size()
			}
			res.Damaged, res.TailCorrupt = true, lostDamage
			res.DroppedRecords = max(res.DroppedRecords, 1)
			res.DroppedOffset = lostAt
			res.TornTailBytes = max(size-lostAt, 0)
			res.LastOffset = lostAt
			d.logger.Warn("a WAL record's blob value does not read back: the WAL ends there", "wal", name, "offset", lostAt, "err", lostErr)
		}
		if err != nil {
			if strings.Contains(err.Error(), name) {
				return err // names the WAL already (damage, a failed open)
			}
			return fmt.Errorf("shale: replaying WAL %s: %w", name, err)
		}
		d.recordReplayLoss(name, res)
		if res.Damaged && torn == "" {
			torn, tornAt = name, res.LastOffset
		}
		clean := !res.Damaged && res.TornTailBytes == 0 && res.SkippedBytes == 0 && lostSkipped == 0
		// A WAL holding blob indexes is not reused: the recovered memtable
		// holds their values inline, and the files they point into go at
		// the sweep after Open.
		if last && clean && !flushedThisLog && !blobsReplayed {
			reuse.ok, reuse.num, reuse.end = true, num, res.LastOffset
		}
	}
	d.mu.lastSeq = lastSeq
	d.visibleSeq.Store(uint64(lastSeq))
	d.versions.SetLastSeq(lastSeq)
	if d.readOnly {
		d.mu.mem.queue = full
		d.mu.mem.mutable = mem
		d.readOnlyWALs = logs
		return nil
	}
	if reuse.ok {
		w, err := d.reuseWAL(reuse.num, reuse.end)
		if err != nil {
			d.logger.Warn("cannot append to the last WAL; flushing its memtable and starting a new one", "wal", reuse.num, "err", err)
			reuse.ok = false
		} else {
			mem.logNum = reuse.num
			d.mu.log.w = w
			d.mu.log.num = reuse.num
			d.mu.log.obsolete = slices.DeleteFunc(logs, func(n base.FileNum) bool { return n == reuse.num })
			d.mu.mem.mutable = mem
		}
	}
	if !reuse.ok {
		if err := flushMem(); err != nil {
			return err
		}
		newLogNum := d.versions.NewFileNum()
		w, err := d.createWAL(newLogNum)
		if err != nil {
			return err
		}
		d.mu.log.w = w
		d.mu.log.num = newLogNum
		d.mu.log.obsolete = logs
		d.releaseMemTable(mem) // empty: flushed, or never written
		mem = d.newMemTable(newLogNum, 0)
		d.mu.mem.mutable = mem
		d.mu.mem.mutable.firstSeq = lastSeq + 1
	}
	edit.HasLogNumber = true
	edit.LogNumber = d.mu.log.num
	return d.versions.LogAndApply(edit)
}

// recordReplayLoss records in the recovery metrics and the event log what
// the replay of one WAL dropped.
func (d *DB) recordReplayLoss(name string, res wal.ReplayResult) {
	bytes := res.TornTailBytes + res.SkippedBytes
	if res.DroppedRecords == 0 && bytes == 0 {
		return
	}
	var reason string
	switch {
	case res.SkippedBytes > 0 && res.TornTailBytes > 0:
		reason = "damaged records skipped, and the tail dropped"
	case res.SkippedBytes > 0:
		reason = "damaged records skipped"
	case d.opts.WALRecoveryMode == PointInTimeRecovery && res.TailCorrupt:
		reason = "point-in-time recovery stopped at damage"
	case res.TailCorrupt:
		reason = "damaged tail dropped"
	default:
		reason = "torn tail"
		if d.readOnly {
			reason += " (or a write in progress)"
		}
	}
	d.addRecoveryLoss(WALLoss{File: name, Offset: res.DroppedOffset, Records: int64(max(res.DroppedRecords, 1)), Bytes: bytes, Reason: reason})
}

// recordSkippedWAL records a whole WAL that point-in-time recovery did not
// replay, counting its intact records.
func (d *DB) recordSkippedWAL(name string) {
	res, _ := wal.Replay(d.fs, name, SkipAnyCorruptedRecords, func([]byte, int64) error { return nil })
	// The bytes its records take, damaged ones included: not the zeros it
	// may have been extended with ahead of them.
	size := res.LastOffset + res.TornTailBytes
	if size == 0 && res.Records == 0 {
		return
	}
	d.addRecoveryLoss(WALLoss{File: name, Offset: 0, Records: int64(max(res.Records, 1)), Bytes: size,
		Reason: "not replayed: point-in-time recovery stopped at damage in an older WAL"})
}

func (d *DB) addRecoveryLoss(l WALLoss) {
	d.recovery.DroppedRecords += l.Records
	d.recovery.DroppedBytes += l.Bytes
	d.recovery.Losses = append(d.recovery.Losses, l)
	d.logger.Warn("WAL records dropped at recovery", "wal", l.File, "offset", l.Offset, "records", l.Records, "bytes", l.Bytes, "reason", l.Reason)
}

// reuseWAL opens WAL num, which replayed cleanly up to end, for appending:
// whatever follows end (zeros of a preallocation) is cut off first.
func (d *DB) reuseWAL(num base.FileNum, end int64) (*wal.Writer, error) {
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeLog, num))
	f, err := d.fs.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err == nil && size != end {
		// Truncate leaves a handle's append position where it was, so the
		// file is opened again once it ends at end.
		if err = f.Truncate(end); err == nil {
			err = f.Sync()
		}
		err = errors.Join(err, f.Close())
		if err == nil {
			f, err = d.fs.OpenReadWrite(name)
		}
		if err != nil {
			return nil, err
		}
		if size, err = f.Size(); err == nil && size != end {
			err = fmt.Errorf("shale: WAL %s is %d bytes after truncation to %d", name, size, end)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	w := wal.NewWriterAt(f, name, end, d.walWriterOptions())
	d.watchWAL(w)
	return w, nil
}

// writeOptionsFile records o in a new OPTIONS-NNNNNN and returns its number
// (Open's sweep and SetOptions remove older ones). On failure it removes
// what it wrote, so the newest OPTIONS file is still the previous one; only
// when that removal fails too (after a failed directory sync) may the new
// file remain.
func (d *DB) writeOptionsFile(o *Options) (base.FileNum, error) {
	num := d.versions.NewFileNum()
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeOptions, num))
	tmp := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeTemp, num))
	f, err := d.fs.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("shale: writing %s: %w", name, err)
	}
	_, err = f.Write(o.encodeOptionsFile())
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	renamed := false
	if err == nil {
		err = d.fs.Rename(tmp, name)
		renamed = err == nil
	}
	if err == nil {
		// The new name must survive a crash before older OPTIONS files
		// are removed.
		err = d.syncDir()
	}
	if err != nil {
		left := tmp
		if renamed {
			left = name
		}
		if rmErr := d.fs.Remove(left); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			d.logger.Warn("removing a partly written OPTIONS file failed", "file", left, "err", rmErr)
		}
		return 0, fmt.Errorf("shale: writing %s: %w", name, err)
	}
	return num, nil
}

// directIOOptionError is the error of Open when a direct-IO option is set
// but the directory's file system refuses direct IO: it matches both
// ErrInvalidArgument and the underlying error (vfs.ErrDirectIOUnsupported)
// under errors.Is.
type directIOOptionError struct {
	msg string
	err error
}

func (e *directIOOptionError) Error() string   { return e.msg + ": " + e.err.Error() }
func (e *directIOOptionError) Unwrap() []error { return []error{ErrInvalidArgument, e.err} }

// checkDirectIO makes sure direct IO works in dir when an option asks for
// it: it creates a small file with vfs.DirectIO, writes and syncs one
// aligned block, reads it back with DirectIO and removes it. Finding out at
// Open is better than failing the first flush or table read.
func checkDirectIO(fs vfs.FS, dir string, o *Options) error {
	var names []string
	if o.UseDirectReads {
		names = append(names, "Options.UseDirectReads")
	}
	if o.UseDirectIOForFlushAndCompaction {
		names = append(names, "Options.UseDirectIOForFlushAndCompaction")
	}
	if len(names) == 0 {
		return nil
	}
	opt := names[0] + " is set"
	if len(names) == 2 {
		opt = names[0] + " and " + names[1] + " are set"
	}
	err := probeDirectIO(fs, fs.PathJoin(dir, base.MakeFilename(base.FileTypeTemp, 0)))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, vfs.ErrDirectIOUnsupported):
		return &directIOOptionError{
			msg: fmt.Sprintf("shale: %s but the file system of %s does not support direct IO", opt, dir),
			err: err,
		}
	default:
		return fmt.Errorf("shale: %s but probing direct IO in %s failed: %w", opt, dir, err)
	}
}

func probeDirectIO(fs vfs.FS, name string) (err error) {
	f, err := fs.Create(name, vfs.DirectIO)
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := fs.Remove(name); err == nil && rmErr != nil {
			err = rmErr
		}
	}()
	align := vfs.Alignment(f)
	block := vfs.AlignedBuffer(max(align, 512), align)
	for i := range block {
		block[i] = byte(i*31 + 7)
	}
	_, err = f.Write(block)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	r, err := fs.Open(name, vfs.DirectIO)
	if err != nil {
		return err
	}
	defer r.Close()
	got := vfs.AlignedBuffer(len(block), vfs.Alignment(r))
	if n, err := r.ReadAt(got, 0); n != len(got) {
		return fmt.Errorf("reading back the %d-byte probe block returned %d bytes: %w", len(got), n, err)
	}
	if !bytes.Equal(got, block) {
		return fmt.Errorf("%w: the probe block read back differs from what was written", vfs.ErrDirectIOUnsupported)
	}
	return nil
}

// deleteObsoleteFiles removes tables no version references and WALs whose
// memtables are flushed. At open (full) it also removes any table, WAL,
// MANIFEST, OPTIONS or temp file the current state does not use.
//
// While a hold is on (holdFileDeletions, a checkpoint copying files) it
// deletes nothing: the obsolete files stay with the version set, and the
// release of the last hold wakes the deletion goroutine for them.
func (d *DB) deleteObsoleteFiles(full bool) {
	d.obsoleteMu.Lock()
	defer d.obsoleteMu.Unlock()
	if d.deletionHolds > 0 {
		d.deletionDeferred = true
		return
	}
	type victim struct {
		t   base.FileType
		num base.FileNum
	}
	var victims []victim
	// sizes are the sizes of the obsolete tables and blob files, for the
	// listener (file numbers are unique across kinds).
	var sizes map[base.FileNum]uint64
	for _, f := range d.versions.TakeObsoleteTables() {
		victims = append(victims, victim{base.FileTypeTable, f.FileNum})
		if d.events != nil {
			if sizes == nil {
				sizes = make(map[base.FileNum]uint64)
			}
			sizes[f.FileNum] = f.Size
		}
	}
	// A blob file no version holds may still be read through the indexes
	// of a memtable an old read state holds (blob_write.go): it waits.
	obsoleteBlobs := append(d.pinnedObsoleteBlobs, d.versions.TakeObsoleteBlobFiles()...)
	d.pinnedObsoleteBlobs = nil
	for _, b := range obsoleteBlobs {
		if d.memBlobPins.pinned(b.FileNum) {
			d.pinnedObsoleteBlobs = append(d.pinnedObsoleteBlobs, b)
			continue
		}
		victims = append(victims, victim{base.FileTypeBlob, b.FileNum})
		if d.events != nil {
			if sizes == nil {
				sizes = make(map[base.FileNum]uint64)
			}
			sizes[b.FileNum] = b.Size
		}
	}
	// Memtable blob files their flush left out of the version, now that no
	// memtable holds them (blob_write.go).
	for _, num := range d.memBlobPins.takeObsolete() {
		victims = append(victims, victim{base.FileTypeBlob, num})
		if d.events != nil {
			if sizes == nil {
				sizes = make(map[base.FileNum]uint64)
			}
			if fi, err := d.fs.Stat(d.blobPath(num)); err == nil {
				sizes[num] = uint64(fi.Size())
			}
		}
	}
	d.mu.Lock()
	for _, n := range d.mu.log.obsolete {
		victims = append(victims, victim{base.FileTypeLog, n})
	}
	d.mu.log.obsolete = nil
	curLog := d.mu.log.num
	var liveLogs []base.FileNum
	for _, m := range d.mu.mem.queue {
		liveLogs = append(liveLogs, m.logNum)
	}
	d.mu.Unlock()
	if full {
		live := d.versions.LiveFileNums()
		liveBlobs := d.versions.LiveBlobFileNums()
		names, _ := d.fs.List(d.dirname)
		var optionsFiles []base.FileNum
		for _, name := range names {
			t, num, ok := base.ParseFilename(name)
			if !ok {
				continue
			}
			switch t {
			case base.FileTypeTable:
				if _, ok := live[num]; !ok {
					victims = append(victims, victim{t, num})
				}
			case base.FileTypeBlob:
				// Blob files the MANIFEST does not know: left by a flush or
				// compaction that failed or crashed before its edit.
				if _, ok := liveBlobs[num]; !ok && !d.memBlobPins.pinned(num) {
					victims = append(victims, victim{t, num})
				}
			case base.FileTypeLog:
				if num != curLog && !slices.Contains(liveLogs, num) && num < d.versions.LogNumber() {
					victims = append(victims, victim{t, num})
				}
			case base.FileTypeManifest:
				if num != d.versions.ManifestFileNum() {
					victims = append(victims, victim{t, num})
				}
			case base.FileTypeTemp:
				victims = append(victims, victim{t, num})
			case base.FileTypeOptions:
				optionsFiles = append(optionsFiles, num)
			}
		}
		slices.Sort(optionsFiles)
		for len(optionsFiles) > 1 {
			victims = append(victims, victim{base.FileTypeOptions, optionsFiles[0]})
			optionsFiles = optionsFiles[1:]
		}
	}
	slices.SortFunc(victims, func(a, b victim) int { return cmp.Compare(a.num, b.num) })
	victims = slices.Compact(victims)
	for _, v := range victims {
		switch v.t {
		case base.FileTypeTable:
			d.fileCache.evictObsolete(fileKindTable, v.num)
		case base.FileTypeBlob:
			d.fileCache.evictObsolete(fileKindBlob, v.num)
		}
		name := d.fs.PathJoin(d.dirname, base.MakeFilename(v.t, v.num))
		var info TableFileInfo
		if (v.t == base.FileTypeTable || v.t == base.FileTypeBlob) && d.events != nil {
			info = TableFileInfo{FileNum: uint64(v.num), Path: name, Reason: FileReasonObsolete}
			size, known := sizes[v.num]
			if !known {
				// Found by the sweep at Open: the MANIFEST does not know it.
				info.Reason = FileReasonOrphan
				if fi, err := d.fs.Stat(name); err == nil {
					size = uint64(fi.Size())
				}
			}
			info.Size = size
		}
		err := d.fs.Remove(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			d.logger.Warn("removing obsolete file failed", "file", name, "err", err)
		} else if err == nil {
			d.logger.Info("removed obsolete file", "file", base.MakeFilename(v.t, v.num))
		}
		if info.Path != "" && !errors.Is(err, os.ErrNotExist) {
			info.Err = err
			if v.t == base.FileTypeBlob {
				d.eventBlobDeleted(BlobFileInfo{FileNum: info.FileNum, Path: info.Path, Size: info.Size, Reason: info.Reason, Err: err})
			} else {
				d.eventTableDeleted(info)
			}
		}
	}
}

func (d *DB) obsoleteFileLoop() {
	defer d.bgDone.Done()
	for {
		select {
		case <-d.obsoleteCh:
			d.deleteObsoleteFiles(false)
		case <-d.closeCh:
			return
		}
	}
}

// Close waits for background work, syncs the WAL and releases the directory.
// Iterators and snapshots must be closed and released first.
func (d *DB) Close() error {
	if d.closed.Swap(true) {
		return ErrClosed
	}
	if s := d.follower; s != nil {
		// A catch-up under way finishes first (later ones see closed).
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	// A SetOptions under way finishes first (later ones see closed).
	d.setOptionsMu.Lock()
	d.setOptionsMu.Unlock()
	d.mu.Lock()
	d.mu.compact.cond.Broadcast() // writers stalled in makeRoomLocked see closed
	if n, s := d.openIters.Load(), len(d.mu.snapshots.list); n > 0 || s > 0 {
		// They pin versions and files; after Close they fail with ErrClosed.
		d.logger.Warn("closing with open iterators or unreleased snapshots", "iterators", n, "snapshots", s)
	}
	// Commits already queued finish; new ones fail (closed is checked under
	// d.mu). Only then is it known whether writes skipped the WAL and live
	// only in memtables: if so, flush them so Close does not lose them.
	for len(d.mu.writers) > 0 {
		d.mu.compact.cond.Wait()
	}
	noWAL := d.mu.mem.mutable.noWAL
	for _, m := range d.mu.mem.queue {
		noWAL = noWAL || m.noWAL
	}
	avoidFlush := d.mutableOptions().AvoidFlushDuringShutdown
	needFlush := noWAL && d.mu.bgErr == nil && !avoidFlush
	var err error
	if noWAL && avoidFlush {
		d.logger.Warn("closing without flushing the writes made with WriteOptions.DisableWAL (Options.AvoidFlushDuringShutdown): they are lost")
	} else if noWAL && d.mu.bgErr != nil {
		// The memtable cannot be flushed in the read-only state, so the
		// writes that skipped the WAL are lost: say so.
		err = fmt.Errorf("shale: Close loses the writes made with WriteOptions.DisableWAL since the last flush (Resume before Close keeps them): %w: %w",
			ErrReadOnly, d.mu.bgErr)
	}
	d.mu.Unlock()
	if needFlush {
		err = d.flushAndWait(&writer{closing: true, flushReason: FlushReasonShutdown})
	}
	d.mu.Lock()
	d.mu.closing = true
	close(d.bgCancel) // table writes stop waiting for the rate limiter
	d.stopDeadlineTimerLocked()
	d.mu.compact.cond.Broadcast()
	// Background jobs stop before the WAL and tables are closed.
	for len(d.mu.writers) > 0 || d.mu.compact.flushing || d.mu.compact.running > 0 {
		d.mu.compact.cond.Wait()
	}
	logw := d.mu.log.w
	d.mu.log.w = nil
	unflushed := append([]*memTable{d.mu.mem.mutable}, d.mu.mem.queue...)
	d.mu.Unlock()
	d.deadlineCalls.Wait()
	d.scanFlushCalls.Wait()
	// The values the WAL indexes are synced before it is (closing syncs
	// it), and their files closed: the next Open replays them.
	for _, m := range unflushed {
		if m != nil {
			err = errors.Join(err, abortMemBlobs(m))
		}
	}
	if logw != nil {
		err = errors.Join(err, logw.Close())
	}
	d.mu.Lock()
	d.readState.Lock()
	rs := d.readState.val
	d.readState.val = nil
	d.readState.Unlock()
	d.mu.Unlock()
	if rs != nil {
		rs.unref()
	}
	close(d.closeCh)
	d.bgDone.Wait()
	if !d.readOnly {
		d.deleteObsoleteFiles(false)
	}
	d.logger.Info("closed")
	return errors.Join(err, d.closeResources())
}

// closeResources releases what Open acquired; safe on a half-opened DB.
func (d *DB) closeResources() error {
	if d.events != nil {
		d.events.close() // every event is delivered before Close returns
	}
	var err error
	if w := d.mu.log.w; w != nil { // Open failed after starting the WAL
		d.mu.log.w = nil
		err = errors.Join(err, w.Close())
	}
	d.releaseMemTablesAtClose()
	if d.follower != nil {
		err = errors.Join(err, d.follower.close())
	}
	if d.fileCache != nil {
		err = errors.Join(err, d.fileCache.close())
	}
	if d.versions != nil {
		err = errors.Join(err, d.versions.Close())
	}
	if d.ioReader != nil {
		err = errors.Join(err, d.ioReader.Close())
	}
	if d.infoLog != nil {
		err = errors.Join(err, d.infoLog.Close())
	}
	if d.fileLock != nil {
		err = errors.Join(err, d.fileLock.Close())
	}
	return err
}

// secondsDuration converts seconds to a Duration, saturating.
func secondsDuration(s uint64) time.Duration {
	if s > uint64(math.MaxInt64/int64(time.Second)) {
		return math.MaxInt64
	}
	return time.Duration(s) * time.Second
}

package shale

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// Open opens the database in dir, creating it when Options.CreateIfMissing
// is set (nil opts: defaults, with CreateIfMissing). It replays the WAL
// files a crash left behind: every acknowledged synced write is there after
// Open returns.
func Open(dir string, opts *Options) (_ *DB, err error) {
	var o Options
	if opts != nil {
		o = *opts
	} else {
		o.CreateIfMissing = true
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
		obsoleteCh: make(chan struct{}, 1),
		closeCh:    make(chan struct{}),
	}
	d.mu.compact.cond.L = &d.mu
	d.mu.compact.inProgress = make(map[*compact.Compaction]struct{})
	d.maxCompactions = max(1, o.MaxBackgroundJobs-max(1, o.MaxBackgroundJobs/4))

	if o.CreateIfMissing {
		if err := d.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("shale: creating %s: %w", dir, err)
		}
	} else if _, err := d.fs.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, base.InvalidArgumentf("shale: database %s does not exist (set Options.CreateIfMissing to create it)", dir)
	}
	lock, err := acquireDirLock(d.fs, dir, &o)
	if err != nil {
		return nil, err
	}
	d.fileLock = lock
	defer func() {
		if err != nil {
			d.closeResources()
		}
	}()
	if err := checkDirectIO(d.fs, dir, &o); err != nil {
		return nil, err
	}
	if err := d.openInfoLog(); err != nil {
		return nil, err
	}
	if o.BlockCacheSize > 0 {
		d.blockCache = cache.New(o.BlockCacheSize)
	} else {
		d.blockCache = cache.New(0)
	}
	d.ioReader = vfs.NewAsyncReader(vfs.AsyncOptions{
		DisableIOUring: o.DisableIOUring,
		SQPoll:         o.IOUringSQPoll,
		Logf:           func(format string, args ...any) { d.logger.Warn(fmt.Sprintf(format, args...)) },
	})
	d.tableCache = newTableCache(d)
	d.picker = compact.NewPicker(d.compactOptions())

	vo := manifest.Options{
		FS: d.fs, Dir: dir, Comparer: d.cmp, NumLevels: o.NumLevels,
		MaxManifestFileSize: o.MaxManifestFileSize, Logger: d.logger,
	}
	_, statErr := d.fs.Stat(d.fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)))
	switch {
	case statErr == nil:
		if o.ErrorIfExists {
			return nil, base.InvalidArgumentf("shale: database %s already exists (Options.ErrorIfExists is set)", dir)
		}
		d.versions, err = manifest.Load(vo)
	case errors.Is(statErr, os.ErrNotExist):
		if !o.CreateIfMissing {
			return nil, base.InvalidArgumentf("shale: database %s does not exist (set Options.CreateIfMissing to create it)", dir)
		}
		if err := checkNoDatabaseFiles(d.fs, dir); err != nil {
			return nil, err
		}
		d.versions, err = manifest.Create(vo)
	default:
		err = statErr
	}
	if err != nil {
		return nil, err
	}
	if o.ParanoidChecks {
		if err := d.checkLiveTables(); err != nil {
			return nil, err
		}
	}
	if err := d.recover(); err != nil {
		return nil, err
	}
	if err := d.writeOptionsFile(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.publishReadStateLocked()
	d.mu.Unlock()
	d.deleteObsoleteFiles(true)
	d.bgDone.Add(1)
	go d.obsoleteFileLoop()
	d.mu.Lock()
	d.maybeScheduleLocked()
	d.mu.Unlock()
	d.logger.Info("opened", "dir", dir, "last_seq", d.visibleSeq.Load())
	return d, nil
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

func (d *DB) compactOptions() compact.Options {
	o := d.opts
	return compact.Options{
		Comparer:                   d.cmp,
		NumLevels:                  o.NumLevels,
		L0CompactionTrigger:        o.Level0FileNumCompactionTrigger,
		MaxBytesForLevelBase:       uint64(o.MaxBytesForLevelBase),
		MaxBytesForLevelMultiplier: o.MaxBytesForLevelMultiplier,
		DynamicLevelBytes:          o.LevelCompactionDynamicLevelBytes,
		TargetFileSizeBase:         uint64(o.TargetFileSizeBase),
		TargetFileSizeMultiplier:   1,
	}
}

// openInfoLog sets up the logger: the caller's, or a text log in LOG (the
// previous LOG is kept as LOG.old).
func (d *DB) openInfoLog() error {
	if d.opts.Logger != nil {
		d.logger = d.opts.Logger
		return nil
	}
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeInfoLog, 0))
	if _, err := d.fs.Stat(name); err == nil {
		_ = d.fs.Rename(name, name+".old")
	}
	f, err := d.fs.Create(name)
	if err != nil {
		return fmt.Errorf("shale: creating LOG: %w", err)
	}
	d.infoLog = f
	d.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return nil
}

// recover replays the WAL files not yet in tables into L0 tables, then
// starts a fresh WAL and memtable.
func (d *DB) recover() error {
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
			logs = append(logs, num)
		}
	}
	slices.Sort(logs)

	lastSeq := d.versions.LastSeq()
	edit := &manifest.VersionEdit{}
	mem := d.newMemTable(0, 0)
	flushMem := func() error {
		if mem.Empty() {
			return nil
		}
		metas, err := d.writeLevel0Tables(mem, nil)
		if err != nil {
			return err
		}
		for _, m := range metas {
			edit.NewFiles = append(edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: m})
		}
		mem = d.newMemTable(0, 0)
		return nil
	}
	// A WAL that ends early (torn tail) is normal only for the newest one
	// with writes: rotation syncs a WAL before any write goes to the next.
	// If a newer WAL holds writes, the early end lost acknowledged data.
	var torn string
	var tornAt int64
	mode := d.opts.WALRecoveryMode
	for _, num := range logs {
		name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeLog, num))
		if torn != "" && mode == PointInTimeRecovery {
			d.logger.Warn("point-in-time recovery stops at a damaged WAL; newer WALs are not replayed", "damaged", torn, "skipped", name)
			continue
		}
		res, err := wal.Replay(d.fs, name, mode, func(rec []byte) error {
			r, ok := newBatchReader(rec)
			if !ok {
				return base.CorruptionErrorf(name, 0, "WAL record of %d bytes is shorter than a batch header", len(rec))
			}
			if r.count == 0 {
				return nil
			}
			if uint64(r.count) > uint64(len(rec)-batchHeaderLen)/minBatchEntryLen {
				// Checked before the count sizes a memtable: a record that
				// claims 2^32 entries would otherwise reserve 4 GiB.
				return base.CorruptionErrorf(name, 0, "WAL batch at seqnum %d claims %d entries in %d bytes", r.seq, r.count, len(rec))
			}
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
					mem = d.newMemTable(0, need)
				}
			}
			if err := applyBatch(mem.Memtable, rec); err != nil {
				if errors.Is(err, ErrCorruption) {
					return base.CorruptionErrorf(name, 0, "malformed batch at seqnum %d", r.seq)
				}
				return err
			}
			lastSeq = max(lastSeq, batchLast)
			return nil
		})
		if err != nil {
			return fmt.Errorf("shale: replaying WAL %s: %w", name, err)
		}
		if res.TornTailBytes > 0 || res.SkippedBytes > 0 {
			d.logger.Warn("WAL damaged at its end or skipped records; dropped them", "wal", name, "offset", res.LastOffset, "torn_bytes", res.TornTailBytes, "skipped_bytes", res.SkippedBytes)
		}
		if res.Damaged && torn == "" {
			torn, tornAt = name, res.LastOffset
		}
	}
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
	d.mu.mem.mutable = d.newMemTable(newLogNum, 0)
	d.mu.lastSeq = lastSeq
	d.visibleSeq.Store(uint64(lastSeq))
	d.versions.SetLastSeq(lastSeq)
	edit.HasLogNumber = true
	edit.LogNumber = newLogNum
	return d.versions.LogAndApply(edit)
}

// writeOptionsFile records the options in OPTIONS-NNNNNN and removes older
// OPTIONS files.
func (d *DB) writeOptionsFile() error {
	num := d.versions.NewFileNum()
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeOptions, num))
	tmp := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeTemp, num))
	f, err := d.fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(d.opts.encodeOptionsFile())
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = d.fs.Rename(tmp, name)
	}
	if err == nil {
		// The new name must survive a crash before older OPTIONS files
		// are removed.
		err = d.syncDir()
	}
	if err != nil {
		return fmt.Errorf("shale: writing %s: %w", name, err)
	}
	return nil
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
func (d *DB) deleteObsoleteFiles(full bool) {
	type victim struct {
		t   base.FileType
		num base.FileNum
	}
	var victims []victim
	for _, f := range d.versions.TakeObsoleteTables() {
		victims = append(victims, victim{base.FileTypeTable, f.FileNum})
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
		if v.t == base.FileTypeTable {
			d.tableCache.evict(v.num)
		}
		name := d.fs.PathJoin(d.dirname, base.MakeFilename(v.t, v.num))
		if err := d.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			d.logger.Warn("removing obsolete file failed", "file", name, "err", err)
		} else if err == nil {
			d.logger.Info("removed obsolete file", "file", base.MakeFilename(v.t, v.num))
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
	d.mu.Lock()
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
	needFlush := noWAL && d.mu.bgErr == nil
	var err error
	if noWAL && d.mu.bgErr != nil {
		// The memtable cannot be flushed in the read-only state, so the
		// writes that skipped the WAL are lost: say so.
		err = fmt.Errorf("shale: Close loses the writes made with WriteOptions.DisableWAL since the last flush (Resume before Close keeps them): %w: %w",
			ErrReadOnly, d.mu.bgErr)
	}
	d.mu.Unlock()
	if needFlush {
		err = d.flushAndWait(&writer{closing: true})
	}
	d.mu.Lock()
	d.mu.closing = true
	d.mu.compact.cond.Broadcast()
	// Background jobs stop before the WAL and tables are closed.
	for len(d.mu.writers) > 0 || d.mu.compact.flushing || d.mu.compact.running > 0 {
		d.mu.compact.cond.Wait()
	}
	logw := d.mu.log.w
	d.mu.log.w = nil
	d.mu.Unlock()
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
	d.deleteObsoleteFiles(false)
	d.logger.Info("closed")
	return errors.Join(err, d.closeResources())
}

// closeResources releases what Open acquired; safe on a half-opened DB.
func (d *DB) closeResources() error {
	var err error
	if w := d.mu.log.w; w != nil { // Open failed after starting the WAL
		d.mu.log.w = nil
		err = errors.Join(err, w.Close())
	}
	if d.tableCache != nil {
		err = errors.Join(err, d.tableCache.close())
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

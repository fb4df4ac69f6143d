package shale

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// OpenForReadOnly opens the database in dir for reading only (RocksDB's
// DB::OpenForReadOnly). It writes nothing to the directory: no LOCK, no LOG
// (unless Options.Logger is set, nothing is logged), no MANIFEST, no
// OPTIONS, no flush; the WAL is replayed into memory. It works on a
// read-only directory and file system, and while a writer has the database
// open, seeing the database as of its own open: every live table is opened
// at once and kept open, whatever Options.MaxOpenFiles says, so a
// compaction of the writer that removes it later changes nothing. Every
// write method returns an error matching ErrReadOnly.
// Options.CreateIfMissing and ErrorIfExists are ignored.
func OpenForReadOnly(dir string, opts *Options) (*DB, error) {
	return open(dir, opts, true, "")
}

// errOpenedReadOnly is the error of every write to a read-only DB;
// errOpenedAsSecondary that of a secondary instance.
var (
	errOpenedReadOnly    = fmt.Errorf("shale: the database was opened with OpenForReadOnly: %w", ErrReadOnly)
	errOpenedAsSecondary = fmt.Errorf("shale: the database was opened with OpenAsSecondary, a read-only follower of its primary: %w", ErrReadOnly)
)

// readOnlyErr is the error of a write to a DB opened read-only or as a
// secondary instance.
func (d *DB) readOnlyErr() error {
	if d.follower != nil {
		return errOpenedAsSecondary
	}
	return errOpenedReadOnly
}

// readOnlyLoadAttempts bounds how often a read-only open starts over when
// a writer changed the directory under it (a MANIFEST rotated away, a WAL
// or table removed).
const readOnlyLoadAttempts = 20

// loadReadOnly loads the version set and the WALs without writing, then
// opens every live table.
func (d *DB) loadReadOnly() error {
	current := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeCurrent, 0))
	if _, err := d.fs.Stat(current); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shale: %s holds no database (no CURRENT file): %w", d.dirname, err)
	}
	var err error
	// The first retries are immediate (a writer rarely changes the files
	// twice in a row), later ones wait 1, 2, 4 ... ms.
	delay := time.Millisecond
	for attempt := range readOnlyLoadAttempts {
		if attempt > 0 {
			d.logger.Info("read-only open starts over: the directory changed while it was read", "err", err)
			if attempt > 5 {
				time.Sleep(delay)
				delay *= 2
			}
			d.resetReadOnlyLoad()
		}
		if err = d.loadReadOnlyOnce(); err == nil {
			return nil
		}
		// Only a file that vanished (a writer removed it) or a removed WAL
		// is worth another look; anything else, damage included, would
		// only be found again.
		if !errors.Is(err, errDirectoryChanged) && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return err
}

func (d *DB) loadReadOnlyOnce() error {
	// The files the loaded version needs are its tables and the WALs from
	// its log number L on. A writer removes a table only after a MANIFEST
	// edit that drops it, and a WAL only after an edit that moves the log
	// number past it. So: open every table and WAL there is (t0), load the
	// MANIFEST (t1), open what appeared since (t2), open the version's
	// tables (a missing one starts the load over), and read the log number
	// again (t3: L2). Replay then uses the pinned WALs only: WALs are
	// numbered in the order they are made, so those made after t2 are all
	// newer than every pinned one, and leaving them out keeps a prefix. A
	// WAL at or above L missing from the pins was removed before t2, so L2
	// passed it: walsComplete starts the load over when some number in
	// [L, L2) below the newest pinned WAL is neither a pinned WAL nor a
	// file seen to be of another kind. Open files stay readable whatever
	// the writer removes later.
	pins := &pinnedFS{FS: d.fs, dir: d.dirname, files: map[string]vfs.File{}}
	pins.pin()
	orig := d.fs
	d.fs = pins
	defer func() {
		d.fs = orig
		pins.closeUnused()
	}()
	vs, err := manifest.Load(d.manifestOptions())
	if err != nil {
		return err
	}
	d.versions = vs
	d.noteGlobalSeqNums()
	if err := d.checkSecondaryDeleteKey(); err != nil {
		return err
	}
	if err := d.checkMergeOperator(); err != nil {
		return err
	}
	logNum := vs.LogNumber()
	if readOnlyLoadedHook != nil {
		readOnlyLoadedHook()
	}
	pins.pin()
	if d.opts.ParanoidChecks {
		if err := d.checkLiveTables(); err != nil {
			return err
		}
	}
	if err := d.openLiveTables(); err != nil {
		return err
	}
	again, err := manifest.Load(d.manifestOptions())
	if err != nil {
		return err
	}
	logNum2 := again.LogNumber()
	_ = again.Close()
	if !pins.walsComplete(logNum, logNum2) {
		return errDirectoryChanged
	}
	return d.recover()
}

// readOnlyLoadedHook, when set (by tests), runs between a read-only load's
// MANIFEST read and its second pinning: where a writer's flush does harm.
var readOnlyLoadedHook func()

// errDirectoryChanged makes a read-only load start over.
var errDirectoryChanged = errors.New("shale: a writer removed a WAL while the database was being opened read-only")

// resetReadOnlyLoad undoes a failed loadReadOnlyOnce.
func (d *DB) resetReadOnlyLoad() {
	if d.versions != nil {
		_ = d.versions.Close()
		d.versions = nil
	}
	_ = d.fileCache.close()
	d.fileCache = newFileCache(d)
	d.recovery = RecoveryMetrics{}
	d.mu.mem.mutable, d.mu.mem.queue = nil, nil
	d.mu.lastSeq = 0
	d.visibleSeq.Store(0)
}

// openLiveTables opens every table and blob file of the current version
// not open yet, a few at a time.
func (d *DB) openLiveTables() error {
	v := d.versions.Current()
	defer v.Unref()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	type file struct {
		kind fileKind
		num  base.FileNum
	}
	var files []file
	// A secondary's catch-up opens only what it has not opened before.
	for _, level := range v.Levels {
		for _, f := range level {
			if d.fileCache.lookup(fileKindTable, f.FileNum) == nil {
				files = append(files, file{fileKindTable, f.FileNum})
			}
		}
	}
	for _, b := range v.BlobFiles {
		if d.fileCache.lookup(fileKindBlob, b.FileNum) == nil {
			files = append(files, file{fileKindBlob, b.FileNum})
		}
	}
	sem := make(chan struct{}, 4)
	for _, f := range files {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cf, err := d.fileCache.find(f.kind, f.num)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			cf.release() // the cache keeps it: a read-only DB has no bound
		})
	}
	wg.Wait()
	return first
}

// pinnedFS hands out files opened in advance: Open of a pinned file
// returns its handle, whose ownership passes to the caller (once; a second
// Open opens the file anew). Handles are the real files, so readers that
// need the OS file (io_uring) get it.
type pinnedFS struct {
	vfs.FS
	dir   string // the directory whose files are pinned
	mu    sync.Mutex
	files map[string]vfs.File
	// wals are the numbers of the WALs pinned (taken or not); others the
	// numbers seen on files of other kinds.
	wals, others map[base.FileNum]bool
}

// walsComplete reports whether the pinned WALs from logNum on hold every
// WAL that existed when the MANIFEST was read, given that the log number
// was logNum2 after the pins (see loadReadOnlyOnce).
func (p *pinnedFS) walsComplete(logNum, logNum2 base.FileNum) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var newest base.FileNum
	for n := range p.wals {
		newest = max(newest, n)
	}
	for n := logNum; n < logNum2 && n <= newest; n++ {
		if !p.wals[n] && !p.others[n] {
			return false
		}
	}
	return true
}

// pinnedWAL reports whether WAL num was pinned: recovery of a read-only DB
// replays those only.
func (p *pinnedFS) pinnedWAL(num base.FileNum) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wals[num]
}

// pin opens every table and WAL in the directory not yet pinned and notes
// the numbers of the other files. Files that vanish or fail to open are
// simply not pinned.
func (p *pinnedFS) pin() {
	names, err := p.FS.List(p.dir)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wals == nil {
		p.wals, p.others = map[base.FileNum]bool{}, map[base.FileNum]bool{}
	}
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		if t != base.FileTypeTable && t != base.FileTypeLog && t != base.FileTypeBlob {
			p.others[num] = true
			continue
		}
		path := p.FS.PathJoin(p.dir, name)
		if _, ok := p.files[path]; ok || p.wals[num] {
			continue
		}
		var opts []vfs.OpenOption
		if t == base.FileTypeTable || t == base.FileTypeBlob {
			opts = tableOpenOptions
		}
		f, err := p.FS.Open(path, opts...)
		if err != nil {
			continue
		}
		p.files[path] = f
		if t == base.FileTypeLog {
			p.wals[num] = true
		} else {
			p.others[num] = true
		}
	}
}

// List implements vfs.FS: the pinned files are listed even once removed.
func (p *pinnedFS) List(dir string) ([]string, error) {
	names, err := p.FS.List(dir)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir != p.dir {
		return names, nil
	}
	for path := range p.files {
		if name := p.FS.PathBase(path); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// Open implements vfs.FS.
func (p *pinnedFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	direct := false
	for _, o := range opts {
		direct = direct || o&vfs.DirectIO != 0
	}
	p.mu.Lock()
	f, ok := p.files[name]
	if ok && !direct {
		delete(p.files, name)
	}
	p.mu.Unlock()
	if ok && !direct {
		return f, nil
	}
	return p.FS.Open(name, opts...)
}

// closeUnused closes the handles nobody took.
func (p *pinnedFS) closeUnused() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, f := range p.files {
		_ = f.Close()
		delete(p.files, name)
	}
}

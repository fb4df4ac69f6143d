package shale

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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
// at once and kept open, so a compaction of the writer that removes it
// later changes nothing. Every write method returns an error matching
// ErrReadOnly. Options.CreateIfMissing and ErrorIfExists are ignored.
func OpenForReadOnly(dir string, opts *Options) (*DB, error) {
	return open(dir, opts, true)
}

// errOpenedReadOnly is the error of every write to a read-only DB.
var errOpenedReadOnly = fmt.Errorf("shale: the database was opened with OpenForReadOnly: %w", ErrReadOnly)

// readOnlyLoadAttempts bounds how often a read-only open starts over when
// a writer changed the directory under it (a MANIFEST rotated away, a WAL
// or table removed, a record being appended); real damage fails them all.
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
		if errors.Is(err, ErrInvalidArgument) {
			return err // a mismatch of options; reading again cannot help
		}
	}
	return err
}

func (d *DB) loadReadOnlyOnce() error {
	// A writer changes the MANIFEST before it removes any file (a table a
	// compaction replaced, a WAL a flush emptied): if CURRENT and the
	// MANIFEST are the same before the MANIFEST is read and after every
	// table and WAL has been opened, every file the loaded version needs
	// existed then and is now open, and stays readable whatever the writer
	// removes later. Otherwise the load starts over.
	before, err := d.manifestStamp()
	if err != nil {
		return err
	}
	vs, err := manifest.Load(d.manifestOptions())
	if err != nil {
		return err
	}
	d.versions = vs
	pins := pinFiles(d.fs, d.dirname)
	orig := d.fs
	d.fs = pins
	defer func() {
		d.fs = orig
		pins.closeUnused()
	}()
	after, err := d.manifestStamp()
	if err != nil {
		return err
	}
	if after != before {
		return errDirectoryChanged
	}
	if d.opts.ParanoidChecks {
		if err := d.checkLiveTables(); err != nil {
			return err
		}
	}
	if err := d.openLiveTables(); err != nil {
		return err
	}
	return d.recover()
}

// errDirectoryChanged makes a read-only load start over.
var errDirectoryChanged = errors.New("shale: the MANIFEST changed while the database was being opened read-only")

// manifestStamp identifies the MANIFEST's state: CURRENT's content and the
// size of the MANIFEST it names (MANIFESTs are only appended to).
func (d *DB) manifestStamp() (string, error) {
	cur := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeCurrent, 0))
	f, err := d.fs.Open(cur)
	if err != nil {
		return "", err
	}
	var buf [256]byte
	n, err := f.ReadAt(buf[:], 0)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	name := strings.TrimSuffix(string(buf[:n]), "\n")
	var size int64 = -1
	if t, _, ok := base.ParseFilename(name); ok && t == base.FileTypeManifest {
		if fi, err := d.fs.Stat(d.fs.PathJoin(d.dirname, name)); err == nil {
			size = fi.Size()
		}
	}
	return fmt.Sprintf("%s:%d", name, size), nil
}

// resetReadOnlyLoad undoes a failed loadReadOnlyOnce.
func (d *DB) resetReadOnlyLoad() {
	if d.versions != nil {
		_ = d.versions.Close()
		d.versions = nil
	}
	_ = d.tableCache.close()
	d.tableCache = newTableCache(d)
	d.recovery = RecoveryMetrics{}
	d.mu.mem.mutable, d.mu.mem.queue = nil, nil
	d.mu.lastSeq = 0
	d.visibleSeq.Store(0)
}

// openLiveTables opens every table of the current version, a few at a time.
func (d *DB) openLiveTables() error {
	v := d.versions.Current()
	defer v.Unref()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 4)
	for _, files := range v.Levels {
		for _, f := range files {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, err := d.tableCache.get(f.FileNum); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			})
		}
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
}

// pinFiles opens every table and WAL in dir; files that vanish or fail to
// open are simply not pinned.
func pinFiles(fs vfs.FS, dir string) *pinnedFS {
	p := &pinnedFS{FS: fs, dir: dir, files: map[string]vfs.File{}}
	names, err := fs.List(dir)
	if err != nil {
		return p
	}
	for _, name := range names {
		t, _, ok := base.ParseFilename(name)
		if !ok || (t != base.FileTypeTable && t != base.FileTypeLog) {
			continue
		}
		path := fs.PathJoin(dir, name)
		var opts []vfs.OpenOption
		if t == base.FileTypeTable {
			opts = tableOpenOptions
		}
		if f, err := fs.Open(path, opts...); err == nil {
			p.files[path] = f
		}
	}
	return p
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

package shale

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
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
const readOnlyLoadAttempts = 5

// loadReadOnly loads the version set and the WALs without writing, then
// opens every live table.
func (d *DB) loadReadOnly() error {
	current := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeCurrent, 0))
	if _, err := d.fs.Stat(current); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shale: %s holds no database (no CURRENT file): %w", d.dirname, err)
	}
	var err error
	delay := 10 * time.Millisecond
	for attempt := range readOnlyLoadAttempts {
		if attempt > 0 {
			d.logger.Info("read-only open starts over: the directory changed while it was read", "err", err)
			time.Sleep(delay)
			delay *= 2
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
	vs, err := manifest.Load(d.manifestOptions())
	if err != nil {
		return err
	}
	d.versions = vs
	if d.opts.ParanoidChecks {
		if err := d.checkLiveTables(); err != nil {
			return err
		}
	}
	if err := d.recover(); err != nil {
		return err
	}
	return d.openLiveTables()
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

package shale

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// DestroyDB removes the database in dir (RocksDB's DestroyDB): it takes the
// database's lock (failing with an error matching vfs.ErrLocked while
// another process or DB holds it, unless opts.Lock is that lock), removes
// only the database's own files (tables, blob files, WALs, MANIFESTs,
// CURRENT, OPTIONS, LOG files, temporary files and, unless opts.Lock keeps
// it, LOCK) and then the directory if it is empty. Anything else in dir is
// left alone and named in opts.Logger's log, if set. A missing dir is not
// an error.
func DestroyDB(dir string, opts *Options) (err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if _, err := fs.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lock, err := acquireDirLock(fs, dir, &o)
	if err != nil {
		return err
	}
	lockHeld := true
	defer func() {
		if lockHeld {
			err = errors.Join(err, lock.Close())
		}
	}()
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("shale: DestroyDB %s: %w", dir, err)
	}
	// CURRENT goes first: a DestroyDB cut short then leaves a directory
	// that Open refuses (files without CURRENT) instead of a database that
	// opens with files missing; DestroyDB can be run again.
	slices.SortStableFunc(names, func(a, b string) int {
		return boolRank(a != "CURRENT") - boolRank(b != "CURRENT")
	})
	var foreign []string
	removeLock := false
	for _, name := range names {
		t, _, ok := base.ParseFilename(name)
		switch {
		case !ok:
			foreign = append(foreign, name)
			continue
		case t == base.FileTypeLock:
			removeLock = o.Lock == nil
			continue
		}
		p := fs.PathJoin(dir, name)
		if rerr := fs.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return fmt.Errorf("shale: DestroyDB %s: removing %s: %w", dir, name, rerr)
		}
		if t == base.FileTypeCurrent {
			// Durable before any table goes, so a power loss cannot leave
			// CURRENT naming files that are gone.
			if serr := syncDirOf(fs, dir); serr != nil {
				return fmt.Errorf("shale: DestroyDB %s: syncing the directory: %w", dir, serr)
			}
		}
	}
	if removeLock {
		// The lock is released before its file goes: Windows cannot remove
		// an open file.
		lockHeld = false
		if err := lock.Close(); err != nil {
			return err
		}
		if rerr := fs.Remove(fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0))); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return fmt.Errorf("shale: DestroyDB %s: removing LOCK: %w", dir, rerr)
		}
	}
	if len(foreign) > 0 {
		if o.Logger != nil {
			o.Logger.Info("DestroyDB kept files that are not the database's", "dir", dir, "files", strings.Join(foreign, ", "))
		}
		return nil
	}
	if o.Lock != nil {
		return nil // LOCK is still there, held by the caller
	}
	if rerr := fs.Remove(dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		// Something appeared meanwhile, or the directory cannot be removed:
		// the database itself is gone, which is what was asked.
		if o.Logger != nil {
			o.Logger.Info("DestroyDB could not remove the directory", "dir", dir, "err", rerr)
		}
	}
	return nil
}

// syncDirOf makes dir's entries durable.
func syncDirOf(fs vfs.FS, dir string) error {
	f, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

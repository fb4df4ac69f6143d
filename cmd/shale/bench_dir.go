package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// bench's directory. A run holds the lock of its directory from before its
// first open to after its last close (shale.LockDirectory, passed as
// Options.Lock to every Open and DestroyDB of the run), so that while it
// runs a second bench, or any program opening the database, is refused —
// also between the benchmarks that recreate the database. A fresh run
// (--use_existing_db=false) and every fresh_db benchmark remove the
// database with shale.DestroyDB, which removes only the database's own
// files: anything else in the directory, the bench-io fixtures and a
// user's files alike, stays.

// benchIODir is the subdirectory of --db where randread_batch and
// scan_direct keep their fixtures (a large file, a large database), which
// are costly to build and so survive a fresh database: DestroyDB leaves
// what is not the database's.
const benchIODir = "bench-io"

// useDir makes r.dir the run's directory, locked: --db, or a new
// temporary directory (removed by releaseDir). Without --use_existing_db
// the database already in --db is destroyed. Nothing is touched when the
// flags make invalid Options or another process holds the lock.
func (r *benchRunner) useDir() error {
	if err := r.validateOptions(); err != nil {
		return err
	}
	r.dir = r.cfg.db
	if r.dir != "" && r.cfg.useExistingDB {
		// LockDirectory would create the directory, and a LOCK file in a
		// directory that holds no database.
		if _, err := r.fs.Stat(r.dir); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--use_existing_db: there is no database in %s (the directory does not exist)", r.dir)
		}
		if _, err := r.fs.Stat(filepath.Join(r.dir, "CURRENT")); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--use_existing_db: there is no database in %s (no CURRENT file; --use_existing_db=false creates one)", r.dir)
		}
	}
	if r.dir == "" {
		if r.cfg.useExistingDB {
			return errors.New("--use_existing_db needs --db")
		}
		dir, err := os.MkdirTemp("", "shale-bench-")
		if err != nil {
			return err
		}
		r.dir, r.tempDir = dir, true
	}
	if err := r.lockOn(r.fs); err != nil {
		if r.tempDir {
			err = errors.Join(err, vfs.Default.RemoveAll(r.dir))
		} else if errors.Is(err, vfs.ErrLocked) {
			err = &cliError{err: err, msg: fmt.Sprintf(
				"--db %s is in use by another process (a bench, or a program that has the database open); nothing was changed", r.dir)}
		}
		return err
	}
	if !r.cfg.useExistingDB && !r.tempDir {
		if err := r.destroyDB(); err != nil {
			return errors.Join(err, r.releaseDir())
		}
	}
	return nil
}

// releaseDir releases the lock of r.dir and removes it if it is temporary.
// The database must be closed.
func (r *benchRunner) releaseDir() error {
	var err error
	if r.lock != nil {
		err = r.lock.Close()
		r.lock = nil
	}
	if r.tempDir {
		err = errors.Join(err, vfs.Default.RemoveAll(r.dir))
	}
	return err
}

// validateOptions checks the Options the flags make before anything is
// touched, so that a bad flag is reported (through benchOptionFlags) as
// the flag, with no directory in the message.
func (r *benchRunner) validateOptions() error {
	o, err := r.options()
	if err != nil {
		return err
	}
	return o.EnsureDefaults().Validate()
}

// lockOn makes r.lock the lock of r.dir, taken on fs the first time; the
// lock is the directory's, so later opens on another file system over the
// same directory (asyncio's cached phase opens on vfs.Default where a run
// with --env_read_* uses a latencyfs.FS over it) keep using it.
func (r *benchRunner) lockOn(fs vfs.FS) error {
	if r.lock != nil {
		return nil
	}
	lock, err := shale.LockDirectory(r.dir, fs)
	if err != nil {
		return err
	}
	r.lock, r.lockFS = lock, fs
	return nil
}

// destroyDB removes the database in r.dir, keeping the lock.
func (r *benchRunner) destroyDB() error {
	if r.lock == nil {
		return fmt.Errorf("removing the database in %s: the run lost its lock", r.dir)
	}
	if err := shale.DestroyDB(r.dir, &shale.Options{FS: r.lockFS, Lock: r.lock}); err != nil {
		return fmt.Errorf("removing the database in %s: %w", r.dir, err)
	}
	r.reportKept()
	return nil
}

// reportKept says once per run which entries of --db a fresh database
// left alone because they are not the database's (the lock and the
// bench-io fixtures aside), so a user sees that their files were kept.
func (r *benchRunner) reportKept() {
	if r.keptReported || r.tempDir {
		return
	}
	r.keptReported = true
	names, err := r.lockFS.List(r.dir)
	if err != nil {
		return
	}
	var kept []string
	for _, name := range names {
		if name == "LOCK" || name == benchIODir {
			continue
		}
		if fi, err := r.lockFS.Stat(filepath.Join(r.dir, name)); err == nil && fi.IsDir() {
			name += "/"
		}
		kept = append(kept, name)
	}
	if len(kept) > 0 {
		slices.Sort(kept)
		fmt.Fprintf(r.progress, "bench: --db %s: kept what is not the database's: %s\n", r.dir, strings.Join(kept, ", "))
	}
}

// open opens the database in r.dir with the run's options.
func (r *benchRunner) open() error {
	o, err := r.options()
	if err != nil {
		return err
	}
	r.db, err = r.openWith(o)
	return err
}

// openWith opens the database in r.dir with o under the run's lock and
// warns on the progress writer (stderr) of WAL records the open dropped.
func (r *benchRunner) openWith(o *shale.Options) (*shale.DB, error) {
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := r.lockOn(fs); err != nil {
		return nil, err
	}
	o.Lock = r.lock
	db, err := shale.Open(r.dir, o)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", r.dir, err)
	}
	warnRecoveryLosses(r.progress, db)
	return db, nil
}

// recreate closes, destroys and reopens the database, for fresh_db
// benchmarks; the lock stays held throughout.
func (r *benchRunner) recreate() error {
	o, err := r.options()
	if err != nil {
		return err
	}
	return r.recreateWith(o)
}

// recreateWith is recreate opening the new database with o.
func (r *benchRunner) recreateWith(o *shale.Options) error {
	db := r.db
	r.db = nil
	if err := db.Close(); err != nil {
		return err
	}
	if err := r.destroyDB(); err != nil {
		return err
	}
	var err error
	r.db, err = r.openWith(o)
	return err
}

// freshDBBenchmarks lists, for bench's help, the benchmarks that recreate
// the database (db_bench's fresh_db).
func freshDBBenchmarks() string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(benchSpecs)) {
		if benchSpecs[name].freshDB {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

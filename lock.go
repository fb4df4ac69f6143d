package shale

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// Lock is a database directory's lock held outside any DB (Pebble's
// LockDirectory): pass it as Options.Lock to Open and DestroyDB so that a
// program (shale bench, say) keeps the directory for itself across several
// opens. The DBs that use it never release it; Close does.
type Lock struct {
	dir string

	mu     sync.Mutex
	closer io.Closer // nil once closed
	// inUse is set while an open DB uses the lock: one DB at a time.
	inUse bool
}

// LockDirectory takes the lock of the database directory dir on fs (nil:
// vfs.Default), creating dir if needed. It fails with an error matching
// vfs.ErrLocked when another process or DB holds it. The DBs it is passed
// to may use another FS for the same directory (a wrapper over fs, such as
// a latency-injecting one): the lock is the directory's.
func LockDirectory(dir string, fs vfs.FS) (*Lock, error) {
	if fs == nil {
		fs = vfs.Default
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shale: creating %s: %w", dir, err)
	}
	c, err := fs.Lock(fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)))
	if err != nil {
		return nil, err // names the LOCK file
	}
	return &Lock{dir: dir, closer: c}, nil
}

// Close releases the lock. A DB opened with it must be closed first.
func (l *Lock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closer == nil {
		return fmt.Errorf("shale: lock of %s: %w", l.dir, ErrClosed)
	}
	if l.inUse {
		return fmt.Errorf("shale: lock of %s is still used by an open DB: close it first", l.dir)
	}
	err := l.closer.Close()
	l.closer = nil
	return err
}

// acquireDirLock returns the closer that releases dir's lock for a DB:
// with o.Lock, a closer that only marks the Lock unused; otherwise the
// lock itself, taken now.
func acquireDirLock(fs vfs.FS, dir string, o *Options) (io.Closer, error) {
	if o.Lock == nil {
		lock, err := fs.Lock(fs.PathJoin(dir, base.MakeFilename(base.FileTypeLock, 0)))
		if err != nil {
			return nil, fmt.Errorf("shale: cannot open %s: %w", dir, err)
		}
		return lock, nil
	}
	l := o.Lock
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closer == nil:
		return nil, base.InvalidArgumentf("shale: Options.Lock of %s is closed", l.dir)
	case !sameDir(l.dir, dir):
		return nil, base.InvalidArgumentf("shale: Options.Lock is the lock of %s, not of %s", l.dir, dir)
	case l.inUse:
		return nil, fmt.Errorf("shale: cannot open %s: Options.Lock is used by another open DB: %w", dir, vfs.ErrLocked)
	}
	l.inUse = true
	return lockUse{l}, nil
}

// lockUse is a DB's use of a caller's Lock; closing it ends the use and
// keeps the lock held.
type lockUse struct{ l *Lock }

func (u lockUse) Close() error {
	u.l.mu.Lock()
	defer u.l.mu.Unlock()
	if !u.l.inUse {
		return errors.New("shale: internal error: Options.Lock released twice")
	}
	u.l.inUse = false
	return nil
}

// sameDir reports whether a and b name one directory (after cleaning, and
// made absolute when both can be).
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return aa == bb
}

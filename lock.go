package shale

import (
	"errors"

	"github.com/shaledb/shale/vfs"
)

// Lock is a database directory's lock held outside any DB (Pebble's
// LockDirectory): pass it as Options.Lock to Open and DestroyDB so that a
// program (shale bench, say) keeps the directory for itself across several
// opens. The DBs that use it never release it; Close does.
type Lock struct {
	dir string
	fs  vfs.FS
}

// LockDirectory takes the lock of the database directory dir on fs (nil:
// vfs.Default), creating dir if needed. It fails with an error matching
// vfs.ErrLocked when another process or DB holds it.
func LockDirectory(dir string, fs vfs.FS) (*Lock, error) {
	return nil, errors.New("shale: LockDirectory: not implemented yet")
}

// Close releases the lock. A DB opened with it must be closed first.
func (l *Lock) Close() error {
	return errors.New("shale: Lock.Close: not implemented yet")
}

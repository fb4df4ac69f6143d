package shale

import "errors"

// DestroyDB removes the database in dir (RocksDB's DestroyDB): it takes the
// database's lock (failing with an error matching vfs.ErrLocked while
// another process or DB holds it, unless opts.Lock is that lock), removes
// only the database's own files (tables, blob files, WALs, MANIFESTs,
// CURRENT, OPTIONS, LOG files, LOCK) and then the directory if it is empty.
// Anything else in dir is left alone and named in the event log. A missing
// dir is not an error.
func DestroyDB(dir string, opts *Options) error {
	return errors.New("shale: DestroyDB: not implemented yet")
}

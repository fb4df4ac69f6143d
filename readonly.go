package shale

import "errors"

// OpenForReadOnly opens the database in dir for reading only (RocksDB's
// DB::OpenForReadOnly). It writes nothing to the directory: no LOCK, no LOG
// (unless Options.Logger is set, nothing is logged), no MANIFEST, no
// OPTIONS, no flush; the WAL is replayed into memory. It works on a
// read-only directory and file system, and while a writer has the database
// open, seeing the database as of its own open. Every write method returns
// an error matching ErrReadOnly.
func OpenForReadOnly(dir string, opts *Options) (*DB, error) {
	return nil, errors.New("shale: OpenForReadOnly: not implemented yet")
}

package main

import (
	"errors"
	"fmt"

	"github.com/shaledb/shale"
)

// External SST ingestion (issue 16, item 3): fillseqingest is fillseq
// through SSTFileWriter and IngestExternalFile. It writes the --num keys
// in order to external tables of about --target_file_size_base bytes
// (64 MiB unless given) in a directory beside the database, then ingests
// them all in one call with MoveFiles (linked where the file system can,
// else copied); the time covers both. Compare with fillseq, which Puts the
// same keys (WAL on, no sync unless --sync).

// ingestFileSize is the size at which fillseqingest starts a new external
// table when --target_file_size_base is not given.
const ingestFileSize = 64 << 20

func benchFillSeqIngest(r *benchRunner, t *benchThread) error {
	if r.cfg.numPrefixes() > 0 || r.keys != nil {
		return errors.New("fillseqingest writes keys in order: --keys_per_prefix and --use_existing_keys do not apply")
	}
	opts, err := r.options()
	if err != nil {
		return err
	}
	fs := r.fs
	dir := r.dir + "-ingest"
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer func() { _ = fs.RemoveAll(dir) }()
	limit := uint64(ingestFileSize)
	if r.cfg.targetFileSizeBase > 0 {
		limit = uint64(r.cfg.targetFileSizeBase)
	}
	var paths []string
	var w *shale.SSTFileWriter
	var n, bytes int64
	finish := func() error {
		if w == nil {
			return nil
		}
		err := w.Finish()
		w = nil
		t.finished(n, bytes)
		n, bytes = 0, 0
		return err
	}
	for k := int64(0); k < r.cfg.num; k++ {
		if w == nil {
			w = shale.NewSSTFileWriter(opts)
			p := fs.PathJoin(dir, fmt.Sprintf("%06d.sst", len(paths)+1))
			if err := w.Open(p); err != nil {
				return err
			}
			paths = append(paths, p)
		}
		key, val := t.makeKey(k), t.value()
		if err := w.Put(key, val); err != nil {
			w.Abandon()
			return err
		}
		n++
		bytes += int64(len(key) + len(val))
		if n%1024 == 0 && w.FileSize() >= limit {
			if err := finish(); err != nil {
				return err
			}
		}
	}
	if err := finish(); err != nil {
		return err
	}
	if len(paths) == 0 {
		return nil
	}
	return r.db.IngestExternalFile(paths, &shale.IngestExternalFileOptions{MoveFiles: true})
}

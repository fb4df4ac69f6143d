package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/shaledb/shale"
)

// External SST ingestion (issue 16, item 3): fillseqingest is fillseq
// through SSTFileWriter and IngestExternalFile. It writes the --num keys
// in order to external tables of about --target_file_size_base bytes
// (64 MiB unless given) in a directory beside the database (each table
// finished, its last blocks written and synced, on a goroutine while the
// next is written), then ingests them all in one call with MoveFiles (linked where the file system can,
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
	// A finished table is closed (its last blocks written and synced) on
	// a goroutine of its own while the next one is written, as a loader
	// with several writers would.
	var finishing sync.WaitGroup
	var finishErr error
	var errMu sync.Mutex
	finish := func() {
		if w == nil {
			return
		}
		fw := w
		w = nil
		t.finished(n, bytes)
		n, bytes = 0, 0
		finishing.Add(1)
		go func() {
			defer finishing.Done()
			if err := fw.Finish(); err != nil {
				errMu.Lock()
				finishErr = errors.Join(finishErr, err)
				errMu.Unlock()
			}
		}()
	}
	for k := int64(0); k < r.cfg.num; k++ {
		if w == nil {
			w = shale.NewSSTFileWriter(opts)
			p := fs.PathJoin(dir, fmt.Sprintf("%06d.sst", len(paths)+1))
			if err := w.Open(p); err != nil {
				finishing.Wait()
				return err
			}
			paths = append(paths, p)
		}
		key, val := t.makeKey(k), t.value()
		if err := w.Put(key, val); err != nil {
			w.Abandon()
			finishing.Wait()
			return err
		}
		n++
		bytes += int64(len(key) + len(val))
		if n%1024 == 0 && w.FileSize() >= limit {
			finish()
		}
	}
	finish()
	finishing.Wait()
	if finishErr != nil {
		return finishErr
	}
	if len(paths) == 0 {
		return nil
	}
	return r.db.IngestExternalFile(paths, &shale.IngestExternalFileOptions{MoveFiles: true})
}

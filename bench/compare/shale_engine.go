package main

import (
	"errors"

	"github.com/shaledb/shale"
)

type shaleEngine struct {
	db *shale.DB
	wo *shale.WriteOptions
}

func openShale(dir string, cfg engineConfig) (engine, error) {
	o := &shale.Options{
		CreateIfMissing: true,
		WriteBufferSize: cfg.writeBufferSize,
		BloomBitsPerKey: cfg.bloomBits,
		BlockCacheSize:  cfg.cacheSize,
		Compression:     shale.SnappyCompression,
		// Pebble's LogWriter also writes non-sync records in the background.
		WALBackgroundWrites: cfg.shaleWALBackgroundWrites,
		// Key-value separation, to compare with Badger's value log.
		EnableBlobFiles:             cfg.shaleBlobFiles,
		MinBlobSize:                 cfg.shaleMinBlobSize,
		EnableBlobGarbageCollection: cfg.shaleBlobGC,
		EnableBlobWriteSeparation:   cfg.shaleBlobWriteSeparation,
		AllowMmapReads:              cfg.shaleMmapReads,
		AllowMmapWrites:             cfg.shaleMmapWrites,
		PartitionFilters:            cfg.partitionIndexAndFilters,
	}
	if cfg.partitionIndexAndFilters {
		o.IndexType = shale.TwoLevelIndexSearch
	}
	db, err := shale.Open(dir, o)
	if err != nil {
		return nil, err
	}
	return &shaleEngine{db: db, wo: &shale.WriteOptions{}}, nil
}

func (e *shaleEngine) name() string { return "shale" }

func (e *shaleEngine) put(key, value []byte) error { return e.db.Put(key, value, e.wo) }

func (e *shaleEngine) putSync(key, value []byte) error {
	return e.db.Put(key, value, &shale.WriteOptions{Sync: true})
}

func (e *shaleEngine) delete(key []byte) error { return e.db.Delete(key, e.wo) }

func (e *shaleEngine) compactAll() error { return e.db.CompactRange(nil, nil) }

func (e *shaleEngine) newReader() engineReader { return &shaleReader{db: e.db} }

// shaleReader is one goroutine's reader.
type shaleReader struct {
	db *shale.DB
	// value is get's buffer, reused as the other engines reuse theirs.
	val []byte
}

// get copies the value into the reader's buffer (AppendValue), as the
// other engines copy theirs.
func (r *shaleReader) get(key []byte) (bool, error) {
	var err error
	r.val, err = r.db.AppendValue(r.val[:0], key, nil)
	if errors.Is(err, shale.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (r *shaleReader) value() []byte { return r.val }

// multiGet uses shale's native MultiGetNoCopy, which hands each found key
// its value without a copy, as get's AppendValue into a reused buffer
// allocates none.
func (r *shaleReader) multiGet(keys [][]byte) (int, error) {
	found := 0
	var firstErr error
	r.db.MultiGetNoCopy(keys, nil, func(_ int, _ []byte, err error) {
		switch {
		case err == nil:
			found++
		case !errors.Is(err, shale.ErrNotFound) && firstErr == nil:
			firstErr = err
		}
	})
	return found, firstErr
}

func (e *shaleEngine) newIter() (engineIter, error) {
	return &shaleIter{it: e.db.NewIterator(nil)}, nil
}

func (e *shaleEngine) flush() error { return e.db.Flush() }
func (e *shaleEngine) close() error { return e.db.Close() }

func (e *shaleEngine) shape() string { return e.db.Metrics().String() }

type shaleIter struct{ it *shale.Iterator }

func (i *shaleIter) seekGE(key []byte) bool { return i.it.Seek(key) }
func (i *shaleIter) next() bool             { return i.it.Next() }
func (i *shaleIter) key() []byte            { return i.it.Key() }
func (i *shaleIter) close() error           { return i.it.Close() }

// value reads a value kept in a blob file on the first call at each key;
// nil with no error is an empty value.
func (i *shaleIter) value() ([]byte, error) {
	v := i.it.Value()
	if v == nil {
		return nil, i.it.Err()
	}
	return v, nil
}

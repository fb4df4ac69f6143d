package main

import (
	"errors"

	"github.com/shaledb/shale"
)

type shaleEngine struct {
	db *shale.DB
	wo *shale.WriteOptions
	// value is get's buffer, reused as the other engines reuse theirs.
	value []byte
}

func openShale(dir string, cfg engineConfig) (engine, error) {
	db, err := shale.Open(dir, &shale.Options{
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
		AllowMmapReads:              cfg.shaleMmapReads,
	})
	if err != nil {
		return nil, err
	}
	return &shaleEngine{db: db, wo: &shale.WriteOptions{}}, nil
}

func (e *shaleEngine) name() string { return "shale" }

func (e *shaleEngine) put(key, value []byte) error { return e.db.Put(key, value, e.wo) }

func (e *shaleEngine) delete(key []byte) error { return e.db.Delete(key, e.wo) }

func (e *shaleEngine) compactAll() error { return e.db.CompactRange(nil, nil) }

// get copies the value into the engine's buffer (AppendValue), as the
// Badger and Pebble engines copy theirs.
func (e *shaleEngine) get(key []byte) (bool, error) {
	var err error
	e.value, err = e.db.AppendValue(e.value[:0], key, nil)
	if errors.Is(err, shale.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
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

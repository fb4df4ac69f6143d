package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

type pebbleEngine struct{ db *pebble.DB }

func openPebble(dir string, cfg engineConfig) (engine, error) {
	cache := pebble.NewCache(cfg.cacheSize)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		Cache:              cache,
		MemTableSize:       uint64(cfg.writeBufferSize),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
	}
	for i := range opts.Levels {
		l := &opts.Levels[i]
		l.BlockSize = 4 << 10
		l.BlockRestartInterval = 16
		l.FilterPolicy = bloom.FilterPolicy(cfg.bloomBits)
		l.FilterType = pebble.TableFilter
		l.Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &pebbleEngine{db: db}, nil
}

func (e *pebbleEngine) name() string { return "pebble" }

func (e *pebbleEngine) put(key, value []byte) error { return e.db.Set(key, value, pebble.NoSync) }

func (e *pebbleEngine) putSync(key, value []byte) error { return e.db.Set(key, value, pebble.Sync) }

func (e *pebbleEngine) delete(key []byte) error { return e.db.Delete(key, pebble.NoSync) }

// compactAll compacts ["", "\xff"], which holds every decimal key.
func (e *pebbleEngine) compactAll() error {
	return e.db.Compact(context.Background(), []byte{}, []byte{0xff}, true)
}

func (e *pebbleEngine) newReader() engineReader { return &pebbleReader{db: e.db} }

// pebbleReader is one goroutine's reader.
type pebbleReader struct {
	db *pebble.DB
	// value receives the value get reads (reused: no allocation).
	val []byte
}

func (r *pebbleReader) get(key []byte) (bool, error) {
	v, closer, err := r.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Copied out, as every engine's get hands the caller a value it owns
	// (shale's AppendValue copies into a reused buffer too).
	r.val = append(r.val[:0], v...)
	return true, closer.Close()
}

func (r *pebbleReader) value() []byte { return r.val }

// multiGet is a loop of get: Pebble has no MultiGet.
func (r *pebbleReader) multiGet(keys [][]byte) (int, error) { return getsInLoop(r, keys) }

func (e *pebbleEngine) newIter() (engineIter, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it}, nil
}

func (e *pebbleEngine) flush() error { return e.db.Flush() }
func (e *pebbleEngine) close() error { return e.db.Close() }

func (e *pebbleEngine) shape() string { return e.db.Metrics().String() }

type pebbleIter struct{ it *pebble.Iterator }

func (i *pebbleIter) seekGE(key []byte) bool { return i.it.SeekGE(key) }
func (i *pebbleIter) next() bool             { return i.it.Next() }
func (i *pebbleIter) key() []byte            { return i.it.Key() }
func (i *pebbleIter) close() error           { return i.it.Close() }

func (i *pebbleIter) value() ([]byte, error) { return i.it.ValueAndErr() }

// quietLogger drops Pebble's informational messages (shale logs to its LOG
// file, not the terminal) and keeps errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}

func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: fatal: "+format+"\n", args...)
	os.Exit(1)
}

package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale"
)

const (
	prefixLog    = 'l' // 'l' | big-endian index -> encoded raft.Log
	prefixStable = 's' // 's' | key -> value
)

// ErrKeyNotFound is what Store.Get and Store.GetUint64 return for a key
// never set. Its text is "not found": hashicorp/raft compares the text
// (as raft-boltdb's error of the same name reads) to tell a fresh node
// from a failed read.
var ErrKeyNotFound = errors.New("not found")

// Options configure a Store. A nil *Options is the zero value.
type Options struct {
	// DB is the shale.Options the store's DB is opened with (its FS, cache,
	// and so on). Default nil: shale's defaults (the OS file system).
	DB *shale.Options
	// NoSync writes log entries and stable keys without syncing the WAL.
	// Default false: every StoreLogs, DeleteRange and Set is durable when
	// it returns, which raft requires (an acknowledged entry is on disk).
	// Only for benchmarks and throwaway clusters.
	NoSync bool
}

// Store is a raft.LogStore and raft.StableStore on one shale DB. It is safe
// for concurrent use, as raft uses it (replication goroutines read logs
// while the main loop appends).
type Store struct {
	db *shale.DB
	wo *shale.WriteOptions

	// mu orders writes and guards the cached indexes. Readers of the
	// indexes take it shared; GetLog does not take it at all.
	mu struct {
		sync.RWMutex
		first, last uint64 // 0, 0 when the log is empty
	}
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens (creating it if needed) a Store in directory dir, and recovers
// the first and last log index from the DB. Close it when done.
func Open(dir string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	dbOpts := shale.Options{}
	if opts.DB != nil {
		dbOpts = *opts.DB
	}
	dbOpts.CreateIfMissing = true
	db, err := shale.Open(dir, &dbOpts)
	if err != nil {
		return nil, fmt.Errorf("shale: raftstore: open %s: %w", dir, err)
	}
	s := &Store{db: db, wo: &shale.WriteOptions{Sync: !opts.NoSync}}
	if err := s.recoverIndexes(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// DB returns the store's shale DB, for metrics and properties; writing to
// it under the store's prefixes breaks the store.
func (s *Store) DB() *shale.DB { return s.db }

// Close closes the DB.
func (s *Store) Close() error { return s.db.Close() }

// logKey returns the key of index.
func logKey(index uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

// logKeyEnd is the exclusive upper bound of all log keys.
var logKeyEnd = []byte{prefixLog + 1}

// logIndex returns the index of a log key, or false when k is not one.
func logIndex(k []byte) (uint64, bool) {
	if len(k) != 9 || k[0] != prefixLog {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[1:]), true
}

// recoverIndexes sets the cached first and last index from the DB.
func (s *Store) recoverIndexes() error {
	first, err := s.seekFirst(0)
	if err != nil {
		return err
	}
	last, err := s.seekLast(^uint64(0))
	if err != nil {
		return err
	}
	s.mu.first, s.mu.last = first, last
	return nil
}

// seekFirst returns the smallest index >= from in the DB, or 0.
func (s *Store) seekFirst(from uint64) (uint64, error) {
	it := s.db.NewIterator(&shale.ReadOptions{LowerBound: logKey(from), UpperBound: logKeyEnd})
	var idx uint64
	if it.First() {
		var ok bool
		if idx, ok = logIndex(it.Key()); !ok {
			it.Close()
			return 0, fmt.Errorf("shale: raftstore: key %x in the log range is not a log key: %w", it.Key(), shale.ErrCorruption)
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("shale: raftstore: seek first index: %w", err)
	}
	return idx, nil
}

// seekLast returns the largest index <= upTo in the DB, or 0.
func (s *Store) seekLast(upTo uint64) (uint64, error) {
	ro := &shale.ReadOptions{LowerBound: logKey(0), UpperBound: logKeyEnd}
	if upTo != ^uint64(0) {
		ro.UpperBound = logKey(upTo + 1)
	}
	it := s.db.NewIterator(ro)
	var idx uint64
	if it.Last() {
		var ok bool
		if idx, ok = logIndex(it.Key()); !ok {
			it.Close()
			return 0, fmt.Errorf("shale: raftstore: key %x in the log range is not a log key: %w", it.Key(), shale.ErrCorruption)
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("shale: raftstore: seek last index: %w", err)
	}
	return idx, nil
}

// FirstIndex returns the first index written, 0 for an empty log.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.first, nil
}

// LastIndex returns the last index written, 0 for an empty log.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.last, nil
}

// GetLog reads the entry at index into log; raft.ErrLogNotFound when there
// is none.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	v, err := s.db.Get(logKey(index), nil)
	if errors.Is(err, shale.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("shale: raftstore: get log %d: %w", index, err)
	}
	return decodeLog(index, v, log)
}

// StoreLog stores one entry (see StoreLogs).
func (s *Store) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores the entries as one atomic batch, synced before it
// returns (unless Options.NoSync): after a crash all of them or none are
// there.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	var key [9]byte
	key[0] = prefixLog
	var val []byte
	lo, hi := logs[0].Index, logs[0].Index
	for _, l := range logs {
		binary.BigEndian.PutUint64(key[1:], l.Index)
		val = appendLog(val[:0], l)
		b.Put(key[:], val)
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.Write(b, s.wo); err != nil {
		return fmt.Errorf("shale: raftstore: store logs [%d, %d]: %w", lo, hi, err)
	}
	if s.mu.first == 0 || lo < s.mu.first {
		s.mu.first = lo
	}
	if hi > s.mu.last {
		s.mu.last = hi
	}
	return nil
}

// DeleteRange deletes the entries with min <= index <= max with one range
// tombstone, and moves the cached first and last index past the gap.
func (s *Store) DeleteRange(lo, hi uint64) error {
	if lo > hi {
		return nil
	}
	end := logKeyEnd
	if hi != ^uint64(0) {
		end = logKey(hi + 1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.DeleteRange(logKey(lo), end, s.wo); err != nil {
		return fmt.Errorf("shale: raftstore: delete logs [%d, %d]: %w", lo, hi, err)
	}
	first, last := s.mu.first, s.mu.last
	if first == 0 || hi < first || lo > last {
		return nil // nothing stored was in the range
	}
	var err error
	if lo <= first {
		if hi >= last {
			s.mu.first, s.mu.last = 0, 0
			return nil
		}
		// Entries may have gaps (raft allows them after a snapshot), so
		// the new first index is found, not computed.
		if s.mu.first, err = s.seekFirst(hi + 1); err != nil {
			return err
		}
	}
	if hi >= last {
		if s.mu.last, err = s.seekLast(lo - 1); err != nil {
			return err
		}
	}
	if s.mu.first == 0 || s.mu.last == 0 {
		s.mu.first, s.mu.last = 0, 0
	}
	return nil
}

// stableKey returns the DB key of a StableStore key.
func stableKey(k []byte) []byte {
	return append([]byte{prefixStable}, k...)
}

// Set stores a StableStore key, synced (unless Options.NoSync).
func (s *Store) Set(key, val []byte) error {
	if err := s.db.Put(stableKey(key), val, s.wo); err != nil {
		return fmt.Errorf("shale: raftstore: set %q: %w", key, err)
	}
	return nil
}

// Get returns the value of a StableStore key, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key), nil)
	if errors.Is(err, shale.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("shale: raftstore: get %q: %w", key, err)
	}
	return v, nil
}

// SetUint64 stores val under key as 8 big-endian bytes.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value SetUint64 stored under key, or 0 and
// ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("shale: raftstore: value of %q is %d bytes, not a uint64's 8: %w", key, len(v), shale.ErrCorruption)
	}
	return binary.BigEndian.Uint64(v), nil
}

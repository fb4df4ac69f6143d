package raftstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// openMemStore opens a Store in "/raft" on fs.
func openMemStore(t testing.TB, fs *vfs.MemFS) *Store {
	t.Helper()
	s, err := Open("/raft", &Options{DB: &shale.Options{FS: fs}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testLog returns an entry with every field set.
func testLog(idx uint64, data string) *raft.Log {
	return &raft.Log{
		Index:      idx,
		Term:       idx/3 + 1,
		Type:       raft.LogCommand,
		Data:       []byte(data),
		Extensions: []byte("ext-" + data),
		AppendedAt: time.Unix(1700000000, int64(idx)),
	}
}

// logsEqual reports whether two entries have equal fields.
func logsEqual(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

// checkIndexes fails unless the store's first and last index are as given.
func checkIndexes(t *testing.T, s *Store, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("first, last = %d, %d, want %d, %d", f, l, first, last)
	}
}

// bufferSink is a raft.SnapshotSink into memory.
type bufferSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Close() error  { s.closed = true; return nil }
func (s *bufferSink) Cancel() error { s.cancelled = true; return nil }

// openMemFSM opens an FSM in dir on fs.
func openMemFSM(t testing.TB, fs *vfs.MemFS, dir string) *FSM {
	t.Helper()
	f, err := OpenFSM(dir, &FSMOptions{DB: &shale.Options{FS: fs}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fsmContents returns every pair of f as a map.
func fsmContents(t testing.TB, f *FSM) map[string]string {
	t.Helper()
	kvs, err := f.Scan(nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = string(kv.Value)
	}
	return m
}

// applyCmd applies cmd at index to f and fails on an error response.
func applyCmd(t testing.TB, f *FSM, index uint64, cmd []byte) {
	t.Helper()
	if r := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: cmd}); r != nil {
		t.Fatalf("apply %d: %v", index, r)
	}
}

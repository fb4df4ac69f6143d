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

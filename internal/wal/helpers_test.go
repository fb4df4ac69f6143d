package wal

import (
	"bytes"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// createWAL creates name in a new MemFS, its name synced (as the DB's
// directory sync makes it) so that it survives a crash clone.
func createWAL(t *testing.T, name string) (*vfs.MemFS, vfs.File) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := fs.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Sync(); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	return fs, f
}

// fileSize returns the size of name in fs.
func fileSize(t *testing.T, fs vfs.FS, name string) int64 {
	t.Helper()
	fi, err := fs.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// checkReplay replays name from fs and compares with want.
func checkReplay(t *testing.T, fs vfs.FS, name string, want [][]byte) {
	t.Helper()
	var got [][]byte
	res, err := Replay(fs, name, TolerateCorruptedTailRecords, func(r []byte, _ int64) error {
		got = append(got, bytes.Clone(r))
		return nil
	})
	if err != nil || res.DroppedRecords != 0 || res.TailCorrupt {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	checkRecords(t, got, want)
}

// checkRecords fails unless the replayed records got are want.
func checkRecords(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

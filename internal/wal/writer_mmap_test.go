package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestMmapWriterCommitIsInTheFile checks WriterOptions.Mmap on the OS file
// system: every Commit(false) leaves its records readable through another
// handle of the file at once (what a crash of the process keeps), across
// mapping windows; syncs work; and after Close the file is exactly its
// records long and replays whole.
func TestMmapWriterCommitIsInTheFile(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "000001.log")
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriterWithOptions(f, path, WriterOptions{Mmap: true})
	var want [][]byte
	value := bytes.Repeat([]byte("v"), 3000)
	n := 2*mapWindow/len(value) + 100 // crosses two window boundaries
	for i := 0; i < n; i++ {
		r := fmt.Appendf(nil, "%06d-%s", i, value[:i%len(value)])
		want = append(want, r)
		if err := w.AddRecord(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(i%500 == 499); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 || i == n-1 {
			// What another process would read now.
			got := replayOS(t, path)
			if len(got) != i+1 || !bytes.Equal(got[i], r) {
				t.Fatalf("after commit %d the file replays %d records", i, len(got))
			}
		}
	}
	if !w.mapped {
		t.Fatal("the writer wrote without a mapping")
	}
	size := w.Size()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != size {
		t.Fatalf("closed WAL is %d bytes, its records %d", st.Size(), size)
	}
	checkRecords(t, replayOS(t, path), want)
}

// TestMmapWriterFallsBack: a file that cannot be mapped (MemFS's) is
// written as without Mmap.
func TestMmapWriterFallsBack(t *testing.T) {
	fs := newMemFS()
	f, _ := fs.Create(logName)
	w := NewWriterWithOptions(f, logName, WriterOptions{Mmap: true})
	for i := 0; i < 10; i++ {
		if err := w.AddRecord(rec(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _, err := replay(fs, TolerateCorruptedTailRecords)
	if err != nil || len(recs) != 10 {
		t.Fatalf("replay: %d records, %v", len(recs), err)
	}
}

func replayOS(t *testing.T, path string) [][]byte {
	t.Helper()
	var got [][]byte
	res, err := Replay(vfs.Default, path, AbsoluteConsistency, func(r []byte, _ int64) error {
		got = append(got, append([]byte(nil), r...))
		return nil
	})
	if err != nil {
		t.Fatalf("replay: %v (%+v)", err, res)
	}
	return got
}

package wal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// hintFile wraps a vfs file and checks the IO hints the WAL writer gives:
// every write must land inside space preallocated before it.
type hintFile struct {
	vfs.File
	preallocs               [][2]int64
	reserved, written       int64
	syncs, dataSyncs        int
	truncates               []int64
	writeOutsideReservation bool
}

func (f *hintFile) Write(p []byte) (int, error) {
	if len(f.preallocs) > 0 && f.written+int64(len(p)) > f.reserved {
		f.writeOutsideReservation = true
	}
	n, err := f.File.Write(p)
	f.written += int64(n)
	return n, err
}
func (f *hintFile) Preallocate(off, n int64) error {
	f.preallocs = append(f.preallocs, [2]int64{off, n})
	f.reserved = max(f.reserved, off+n)
	return f.File.Preallocate(off, n)
}
func (f *hintFile) Truncate(size int64) error {
	f.truncates = append(f.truncates, size)
	return f.File.Truncate(size)
}
func (f *hintFile) Sync() error     { f.syncs++; return f.File.Sync() }
func (f *hintFile) SyncData() error { f.dataSyncs++; return f.File.SyncData() }

// TestWriterPreallocatesAndSyncsData: with PreallocateSize the WAL is
// reserved ahead of every write in steps, synced with SyncData only, and
// trimmed to its size at Close; its records replay intact.
func TestWriterPreallocatesAndSyncsData(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	fs := vfs.NewMem()
	mf, err := fs.Create("/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	f := &hintFile{File: mf}
	const step = 64 << 10
	w := NewWriterWithOptions(f, "000001.log", WriterOptions{PreallocateSize: step})
	var recs [][]byte
	syncedCommits := 0
	for i := 0; i < 400; i++ {
		r := bytes.Repeat([]byte(fmt.Sprint(i%10)), rng.IntN(3000))
		recs = append(recs, r)
		if err := w.AddRecord(r); err != nil {
			t.Fatal(err)
		}
		sync := rng.IntN(8) == 0
		if sync {
			syncedCommits++
		}
		if err := w.Commit(sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f.writeOutsideReservation {
		t.Fatal("a write reached past the preallocated space")
	}
	var next int64
	for i, p := range f.preallocs {
		if p[0] != next || p[1] <= 0 || (p[0]+p[1])%step != 0 {
			t.Fatalf("preallocation %d is [%d, +%d); want it to start at %d and end on a multiple of %d", i, p[0], p[1], next, step)
		}
		next = p[0] + p[1]
	}
	if len(f.preallocs) == 0 || next < f.written || next-f.written >= step {
		t.Fatalf("preallocated %d bytes in %d steps for %d written", next, len(f.preallocs), f.written)
	}
	if f.syncs != 0 || f.dataSyncs == 0 || f.dataSyncs > syncedCommits+1 {
		t.Fatalf("Sync %d times, SyncData %d times for %d synced commits and a Close; want only SyncData", f.syncs, f.dataSyncs, syncedCommits)
	}
	if len(f.truncates) != 1 || f.truncates[0] != f.written {
		t.Fatalf("truncations %v; want one, to the %d bytes written", f.truncates, f.written)
	}
	checkReplay(t, fs, "/000001.log", recs)
}

// TestWriterNoPreallocationByDefault: NewWriter reserves nothing and trims
// nothing.
func TestWriterNoPreallocationByDefault(t *testing.T) {
	fs := vfs.NewMem()
	mf, err := fs.Create("/000002.log")
	if err != nil {
		t.Fatal(err)
	}
	f := &hintFile{File: mf}
	w := NewWriter(f, "000002.log")
	if err := w.AddRecord([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.preallocs) != 0 || len(f.truncates) != 0 || f.syncs != 0 || f.dataSyncs == 0 {
		t.Fatalf("preallocs %v, truncates %v, Sync %d, SyncData %d", f.preallocs, f.truncates, f.syncs, f.dataSyncs)
	}
}

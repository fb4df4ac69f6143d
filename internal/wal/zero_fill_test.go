package wal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// zeroFile wraps a vfs file, records the zeros the WAL writer writes ahead
// and where its appends land, and can fail the zeros.
type zeroFile struct {
	vfs.File
	zeros       [][2]int64
	zeroErr     error
	written     int64
	zeroed      int64
	pastZeros   int // appends that ended past the zeros written so far
	sizeAtSyncs []int64
}

func (f *zeroFile) WriteZeros(off, n int64) error {
	if f.zeroErr != nil {
		return f.zeroErr
	}
	f.zeros = append(f.zeros, [2]int64{off, n})
	f.zeroed = max(f.zeroed, off+n)
	return vfs.WriteZeros(f.File, off, n)
}

func (f *zeroFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written += int64(n)
	if len(f.zeros) > 0 && f.written > f.zeroed {
		f.pastZeros++
	}
	return n, err
}

func (f *zeroFile) SyncData() error {
	size, _ := f.File.Size()
	f.sizeAtSyncs = append(f.sizeAtSyncs, size)
	return f.File.SyncData()
}

// waitIdle waits until w's flusher has finished writing, zeros included
// (they are written after the sync that releases the committers), so that
// a test may look at the file.
func waitIdle(w *Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing {
		w.doneCond.Wait()
	}
}

// writeSynced writes n records of size bytes, each committed with sync
// when sync is set, and returns them.
func writeSynced(t *testing.T, w *Writer, n, size int, sync bool) [][]byte {
	t.Helper()
	var recs [][]byte
	for i := range n {
		r := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		recs = append(recs, r)
		if err := w.AddRecord(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(sync); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// TestZeroFillAheadOfSmallSyncs: under small synced commits the WAL is
// extended with zeros a step ahead of its records, half a step before they
// reach the end of the zeros, so no append grows the file; the file is
// trimmed back to its records at Close, and they replay intact, before
// Close and after it.
func TestZeroFillAheadOfSmallSyncs(t *testing.T) {
	fs, mf := createWAL(t, "/000001.log")
	f := &zeroFile{File: mf}
	w := NewWriterWithOptions(f, "000001.log", WriterOptions{PreallocateSize: 64 << 10, ZeroFill: true})
	recs := writeSynced(t, w, 2500, 1000, true)
	waitIdle(w)
	if len(f.zeros) == 0 {
		t.Fatal("no zeros written ahead of small synced commits")
	}
	if max := f.written/(DefaultZeroFillStep/2) + 2; int64(len(f.zeros)) > max {
		t.Fatalf("%d zero writes for %d bytes of records; want at most %d", len(f.zeros), f.written, max)
	}
	if f.pastZeros > 1 {
		t.Fatalf("%d appends grew the file past its zeros; want only the first", f.pastZeros)
	}
	for i, z := range f.zeros[1:] {
		if prev := f.zeros[i]; z[0] != prev[0]+prev[1] {
			t.Fatalf("zeros %d start at %d, the ones before end at %d", i+1, z[0], prev[0]+prev[1])
		}
	}
	if size := fileSize(t, fs, "/000001.log"); size != f.zeroed || size <= f.written {
		t.Fatalf("file is %d bytes with %d of records and zeros to %d", size, f.written, f.zeroed)
	}
	// Once zeros are ahead, syncs find the size they leave unchanged.
	grew := 0
	for i := 1; i < len(f.sizeAtSyncs); i++ {
		if f.sizeAtSyncs[i] != f.sizeAtSyncs[i-1] {
			grew++
		}
	}
	if grew > len(f.zeros) {
		t.Fatalf("the size changed between %d pairs of syncs, with %d zero writes", grew, len(f.zeros))
	}
	checkReplay(t, fs, "/000001.log", recs)
	crash := fs.CrashClone()
	checkReplay(t, crash, "/000001.log", recs)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if size := fileSize(t, fs, "/000001.log"); size != f.written {
		t.Fatalf("file is %d bytes after Close, its records %d", size, f.written)
	}
	checkReplay(t, fs, "/000001.log", recs)
}

// TestZeroFillOnlyForSmallSyncs: commits without sync, and syncs of more
// than a quarter of the step, write no zeros; nor does a writer without
// ZeroFill.
func TestZeroFillOnlyForSmallSyncs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		sync     bool
		zeroFill bool
	}{
		{"no sync", 300, false, true},
		{"large syncs", (DefaultZeroFillStep / 4) + 1000, true, true},
		{"option off", 300, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, mf := createWAL(t, "/000001.log")
			f := &zeroFile{File: mf}
			w := NewWriterWithOptions(f, "000001.log", WriterOptions{ZeroFill: tc.zeroFill})
			recs := writeSynced(t, w, 40, tc.size, tc.sync)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(f.zeros) != 0 {
				t.Fatalf("zeros written: %v", f.zeros)
			}
			checkReplay(t, fs, "/000001.log", recs)
		})
	}
}

// TestZeroFillFailureIsAHint: a file that cannot write zeros (no
// vfs.ZeroWriter, or one that fails) is written as without ZeroFill, and
// loses no record; the writer stops trying after the first failure.
func TestZeroFillFailureIsAHint(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(vfs.File) (vfs.File, *zeroFile)
	}{
		{"unsupported", func(f vfs.File) (vfs.File, *zeroFile) { return struct{ vfs.File }{f}, nil }},
		{"failing", func(f vfs.File) (vfs.File, *zeroFile) {
			z := &zeroFile{File: f, zeroErr: errors.New("injected: no space left on device")}
			return z, z
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, mf := createWAL(t, "/000001.log")
			f, z := tc.wrap(mf)
			w := NewWriterWithOptions(f, "000001.log", WriterOptions{PreallocateSize: 64 << 10, ZeroFill: true})
			recs := writeSynced(t, w, 3000, 300, true)
			waitIdle(w)
			if z != nil && len(z.zeros) != 0 {
				t.Fatalf("zeros written: %v", z.zeros)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if size := fileSize(t, fs, "/000001.log"); size != w.Size() {
				t.Fatalf("file is %d bytes, its records %d", size, w.Size())
			}
			checkReplay(t, fs, "/000001.log", recs)
		})
	}
}

// TestZeroFillReopenContinues: a WAL zero-filled ahead, crashed after
// unsynced records (which the crash drops), replays its synced records with
// a clean end (the zeros), and a writer continuing it where the records end
// keeps them all.
func TestZeroFillReopenContinues(t *testing.T) {
	fs, mf := createWAL(t, "/000001.log")
	w := NewWriterWithOptions(mf, "000001.log", WriterOptions{ZeroFill: true})
	recs := writeSynced(t, w, 500, 1000, true)
	writeSynced(t, w, 7, 1000, false) // lost in the crash
	waitIdle(w)
	crash := fs.CrashClone()
	w.Close()
	var end int64
	var got int
	res, err := Replay(crash, "/000001.log", TolerateCorruptedTailRecords, func(r []byte, off int64) error {
		got++
		return nil
	})
	if err != nil || got != len(recs) || res.DroppedRecords != 0 {
		t.Fatalf("crash clone replays %d records (%+v, %v), want %d", got, res, err, len(recs))
	}
	end = res.LastOffset
	f, err := crash.OpenReadWrite("/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size <= end {
		t.Fatalf("crash clone is %d bytes, records end at %d: no zeros past them", size, end)
	}
	if err := f.Truncate(end); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err = crash.OpenReadWrite("/000001.log"); err != nil {
		t.Fatal(err)
	}
	w2 := NewWriterAt(f, "000001.log", end, WriterOptions{ZeroFill: true})
	more := writeSynced(t, w2, 300, 1000, true)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	checkReplay(t, crash, "/000001.log", append(recs, more...))
}

// TestZeroFillCutCopyIsTorn: a zero-filled WAL whose last record was cut at
// any byte inside the zeros (a crash in the middle of its copy, or a page
// written back in the middle of it before a power loss: a prefix of the
// record, zeros to the end of the file) replays every earlier record with
// a torn tail under the default mode; the same record present whole and
// damaged is damage.
func TestZeroFillCutCopyIsTorn(t *testing.T) {
	fs, mf := createWAL(t, "/000001.log")
	w := NewWriterWithOptions(mf, "000001.log", WriterOptions{ZeroFill: true})
	recs := writeSynced(t, w, 20, 700, true)
	last := bytes.Repeat([]byte{0x5a}, 5000) // one fragment, no zero byte
	if err := w.AddRecord(last); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(true); err != nil {
		t.Fatal(err)
	}
	waitIdle(w)
	start, end := w.Size()-int64(len(last))-7, w.Size()
	live := make([]byte, fileSize(t, fs, "/000001.log"))
	if _, err := mf.ReadAt(live, 0); err != nil {
		t.Fatal(err)
	}
	if int64(len(live))%zeroFillUnit != 0 || int64(len(live)) <= end {
		t.Fatalf("WAL of %d bytes with records to %d: not zero-filled to a multiple of %d", len(live), end, zeroFillUnit)
	}
	w.Close()
	replayOf := func(data []byte) (int, ReplayResult, error) {
		n := 0
		res, err := ReplayFrom(bytes.NewReader(data), "000001.log", 0, TolerateCorruptedTailRecords, func([]byte, int64) error {
			n++
			return nil
		})
		return n, res, err
	}
	for cut := start + 1; cut < end; cut += 37 {
		data := bytes.Clone(live)
		clear(data[cut:])
		n, res, err := replayOf(data)
		if err != nil || n != len(recs) || res.TailCorrupt {
			t.Fatalf("cut at %d: %d records, %+v, %v; want the %d before it and a torn tail", cut, n, res, err, len(recs))
		}
	}
	data := bytes.Clone(live)
	data[start+2000] ^= 0x01
	if _, _, err := replayOf(data); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("a flipped byte in the last record, present whole: %v, want corruption", err)
	}
}

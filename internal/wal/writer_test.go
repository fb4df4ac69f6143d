package wal

import (
	"errors"
	"sync/atomic"
	"testing"
)

// TestCommitReachesTheFile checks the two commits: Commit(false) returns
// only once its records are written to the file (so a process crash cannot
// lose them), Commit(true) only once they are synced, and everything
// committed is in the file after Close.
func TestCommitReachesTheFile(t *testing.T) {
	fs := newMemFS()
	f, _ := fs.Create(logName)
	mf := f.(*memFile)
	w := NewWriter(f, logName)
	for i := 0; i < 100; i++ {
		if err := w.AddRecord(rec(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(i%25 == 24); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		inFile, appended := int64(len(mf.data)), w.appended
		w.mu.Unlock()
		if inFile != appended {
			t.Fatalf("commit %d returned with %d of %d bytes in the file", i, inFile, appended)
		}
		if i%25 == 24 {
			// Synced: the write and sync are done before Commit returns
			// (observed under w.mu, which orders the flusher's updates).
			w.mu.Lock()
			synced, appended := w.synced, w.appended
			w.mu.Unlock()
			if synced != appended {
				t.Fatalf("Commit(true) returned with %d of %d bytes synced", synced, appended)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if mf.syncs == 0 || mf.syncs > 5 {
		t.Fatalf("%d syncs for 4 synced commits and a close", mf.syncs)
	}
	recs, _, err := replay(fs, TolerateCorruptedTailRecords)
	if err != nil || len(recs) != 100 {
		t.Fatalf("replay: %d records, %v", len(recs), err)
	}
	for i, r := range recs {
		if string(r) != string(rec(i)) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestWriteErrors checks that a failed write fails the commit that made it
// and every later call, and that a failure of the background flusher (which
// writes for synced commits) also reaches the error handler.
func TestWriteErrors(t *testing.T) {
	for _, sync := range []bool{false, true} {
		fs := newMemFS()
		f, _ := fs.Create(logName)
		mf := f.(*memFile)
		boom := errors.New("disk full")
		mf.failWrite = boom
		w := NewWriter(f, logName)
		got := make(chan error, 1)
		w.SetErrorHandler(func(err error) { got <- err })
		if err := w.AddRecord(rec(1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(sync); !errors.Is(err, boom) {
			t.Fatalf("Commit(%v) with a failing write: %v", sync, err)
		}
		if sync {
			if err := <-got; !errors.Is(err, boom) {
				t.Fatalf("handler got %v", err)
			}
		}
		if err := w.AddRecord(rec(2)); !errors.Is(err, boom) {
			t.Fatalf("AddRecord after failure: %v", err)
		}
		if err := w.Commit(!sync); !errors.Is(err, boom) {
			t.Fatalf("Commit after failure: %v", err)
		}
		if err := w.Close(); !errors.Is(err, boom) {
			t.Fatalf("Close: %v", err)
		}
	}
}

// TestBackgroundWrites checks WriterOptions.BackgroundWrites: Commit(false)
// returns before the write, a failed background write reaches the error
// handler and fails every later call, and what was committed reaches the
// file by Close.
func TestBackgroundWrites(t *testing.T) {
	fs := newMemFS()
	f, _ := fs.Create(logName)
	mf := f.(*memFile)
	boom := errors.New("disk full")
	mf.failWrite = boom
	w := NewWriterWithOptions(f, logName, WriterOptions{BackgroundWrites: true})
	got := make(chan error, 1)
	w.SetErrorHandler(func(err error) { got <- err })
	if err := w.AddRecord(rec(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(false); err != nil {
		t.Fatalf("Commit(false) must not wait for the write: %v", err)
	}
	if err := <-got; !errors.Is(err, boom) {
		t.Fatalf("handler got %v", err)
	}
	if err := w.Commit(true); !errors.Is(err, boom) {
		t.Fatalf("Commit after failure: %v", err)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v", err)
	}

	fs = newMemFS()
	f, _ = fs.Create(logName)
	w = NewWriterWithOptions(f, logName, WriterOptions{BackgroundWrites: true})
	for i := 0; i < 50; i++ {
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
	if err != nil || len(recs) != 50 {
		t.Fatalf("replay: %d records, %v", len(recs), err)
	}
}

// TestSyncsCountsFileSyncs: WriterOptions.Syncs counts each file sync once,
// for Commit(true), Flush(true) and a Close with unsynced records, and none
// for Commit(false).
func TestSyncsCountsFileSyncs(t *testing.T) {
	fs := newMemFS()
	f, _ := fs.Create(logName)
	var syncs atomic.Uint64
	w := NewWriterWithOptions(f, logName, WriterOptions{Syncs: &syncs})
	for i := range 10 {
		if err := w.AddRecord(rec(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(i%5 == 4); err != nil {
			t.Fatal(err)
		}
	}
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d syncs counted after 2 synced commits of 10", n)
	}
	if err := w.AddRecord(rec(10)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(true); err != nil {
		t.Fatal(err)
	}
	if err := w.AddRecord(rec(11)); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(false); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 3 {
		t.Fatalf("%d syncs counted, want 3 (2 commits, Flush)", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 4 {
		t.Fatalf("%d syncs counted, want 4 (2 commits, Flush, Close)", n)
	}
}

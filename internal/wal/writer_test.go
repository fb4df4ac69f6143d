package wal

import (
	"errors"
	"testing"
)

// TestCommitHandsOffToFlusher checks the asynchronous commit: Commit(false)
// does not wait for the write, Commit(true) returns only once the records are
// synced, and everything committed is in the file after Close.
func TestCommitHandsOffToFlusher(t *testing.T) {
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

// TestBackgroundErrorReported checks that a failed background write reaches
// the error handler and fails every later call.
func TestBackgroundErrorReported(t *testing.T) {
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
}

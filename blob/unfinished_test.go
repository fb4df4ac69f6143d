package blob

import (
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestUnfinishedReaderFollowsFlushes reads a file while it is written: each
// record Add returned an Index for reads back once Flush has run, a record
// not yet flushed is a corruption error (short read), and the reader keeps
// working once the file is finished.
func TestUnfinishedReaderFollowsFlushes(t *testing.T) {
	rng := newRand(t)
	recs := randomRecords(rng, 60)
	fs := vfs.NewMem()
	wf, err := fs.Create("/u.blob")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(wf, WriterOptions{FileNum: 7, FileName: "u.blob"})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rf, err := fs.Open("/u.blob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReader(rf, ReaderOptions{FileNum: 7, FileName: "u.blob"}); err == nil {
		t.Fatal("a finished-file reader opened a file without a footer")
	}
	rf, err = fs.Open("/u.blob")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(rf, ReaderOptions{FileNum: 7, FileName: "u.blob", Unfinished: true, MmapReads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	xs := make([]Index, len(recs))
	for i, rc := range recs {
		if xs[i], err = w.Add(rc.key, rc.value); err != nil {
			t.Fatal(err)
		}
		if i%7 == 3 {
			if len(rc.value) > 0 {
				// Buffered, unless the buffer filled: either it reads back
				// whole or it is a short read, never another value.
				if v, err := r.GetCounted(xs[i], rc.key, false, nil); err == nil && string(v) != string(rc.value) {
					t.Fatalf("record %d read before Flush: wrong value", i)
				} else if err != nil {
					isCorruption(t, "record read before Flush", err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			for j := 0; j <= i; j++ {
				v, err := r.GetCounted(xs[j], recs[j].key, false, nil)
				if err != nil {
					t.Fatalf("record %d after a Flush: %v", j, err)
				}
				if string(v) != string(recs[j].value) {
					t.Fatalf("record %d after a Flush: wrong value", j)
				}
			}
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(xs[0], []byte("another key")); err == nil {
		t.Fatal("a record read back under another key")
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for j, rc := range recs {
		v, err := r.GetCounted(xs[j], rc.key, true, nil)
		if err != nil || string(v) != string(rc.value) {
			t.Fatalf("record %d after Close: %v", j, err)
		}
	}
	// An index past the end is a short read.
	past := xs[len(xs)-1]
	past.Offset += 1 << 20
	_, err = r.GetCounted(past, recs[len(recs)-1].key, false, nil)
	isCorruption(t, "index past the end", err)
}

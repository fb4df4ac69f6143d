package shale

import (
	"testing"
)

// TestIteratorViewSurvivesFlushWhileBuilt overwrites a key and flushes while
// NewIterator builds its view. The flush (no snapshot registered) drops the
// old version; an iterator whose seqnum predates the overwrite but whose
// version includes the flush would see neither version. It must see the
// key, with the old value or the new.
func TestIteratorViewSurvivesFlushWhileBuilt(t *testing.T) {
	db, _ := openMem(t)
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v1"), nil); err != nil {
		t.Fatal(err)
	}
	// The point of the hook differs with the order NewIterator reads in;
	// run the overwrite at both places it may take.
	for _, compact := range []bool{false, true} {
		ran := false
		testHookNewIterator = func() {
			testHookNewIterator = nil
			ran = true
			if err := db.Put([]byte("k"), []byte("v2"), nil); err != nil {
				t.Error(err)
			}
			if err := db.Flush(); err != nil {
				t.Error(err)
			}
			if compact {
				if err := db.CompactRange(nil, nil); err != nil {
					t.Error(err)
				}
			}
		}
		it := db.NewIterator(nil)
		testHookNewIterator = nil
		if !ran {
			t.Fatal("the hook did not run")
		}
		if !it.First() || string(it.Key()) != "k" {
			t.Errorf("compact %v: iterator built while k was overwritten and flushed does not see k (valid %v, err %v)", compact, it.Valid(), it.Err())
		} else if v := string(it.Value()); v != "v1" && v != "v2" {
			t.Errorf("compact %v: k = %q", compact, v)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

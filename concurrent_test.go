package shale

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestCloseDuringWrites closes the DB while writers are committing: every
// write either succeeds or fails with ErrClosed, nothing panics, and every
// acknowledged write is there after reopening.
func TestCloseDuringWrites(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var progress atomic.Int64
	acked := make([][]string, 4)
	for w := range acked {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				k := fmt.Sprintf("w%d-%05d", w, i)
				err := db.Put([]byte(k), []byte(k), nil)
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("write during Close: %v", err)
					}
					return
				}
				acked[w] = append(acked[w], k)
				progress.Add(1)
			}
		}(w)
	}
	for progress.Load() < 800 {
		runtime.Gosched()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	db, err = Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, keys := range acked {
		for _, k := range keys {
			if v, err := db.Get([]byte(k), nil); err != nil || string(v) != k {
				t.Fatalf("acknowledged write %s lost: %q, %v", k, v, err)
			}
		}
	}
}

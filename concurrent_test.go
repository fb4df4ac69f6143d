package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestConcurrentSnapshotsStayStable runs writers, flushes and compactions
// while readers take snapshots and check that each snapshot keeps reading
// the same thing: every batch writes the same counter value to all keys of
// a group, so a snapshot must see one value per group (atomic batches), and
// the same values on every read (stable snapshots).
func TestConcurrentSnapshotsStayStable(t *testing.T) {
	db, err := Open("/db", testOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const groups, perGroup = 8, 16
	key := func(g, i int) []byte { return []byte(fmt.Sprintf("g%02d-k%03d", g, i)) }
	writes := 3000
	if testing.Short() {
		writes = 600
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
		stop.Store(true)
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; !stop.Load() && n < writes; n++ {
				g := rng.IntN(groups)
				b := db.NewBatch()
				v := []byte(fmt.Sprintf("w%d-%06d-%s", w, n, make([]byte, rng.IntN(64))))
				for i := 0; i < perGroup; i++ {
					b.Put(key(g, i), v)
				}
				if err := db.Write(b, nil); err != nil {
					fail("write: %v", err)
					return
				}
			}
			stop.Store(true)
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			var err error
			if i%5 == 4 {
				err = db.CompactRange(nil, nil)
			} else {
				err = db.Flush()
			}
			if err != nil {
				fail("flush/compact: %v", err)
				return
			}
		}
	}()
	readGroups := func(ro *ReadOptions) (map[int]string, error) {
		seen := map[int]string{}
		it := db.NewIterator(ro)
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			var g, i int
			if _, err := fmt.Sscanf(string(it.Key()), "g%02d-k%03d", &g, &i); err != nil {
				return nil, err
			}
			if v, ok := seen[g]; ok && v != string(it.Value()) {
				return nil, fmt.Errorf("group %d mixes values %q and %q: a batch was not atomic", g, v, it.Value())
			}
			seen[g] = string(it.Value())
		}
		return seen, it.Err()
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				snap := db.NewSnapshot()
				ro := &ReadOptions{Snapshot: snap}
				first, err := readGroups(ro)
				if err != nil {
					fail("%v", err)
				}
				for j := 0; j < 3 && err == nil; j++ {
					var again map[int]string
					if again, err = readGroups(ro); err != nil {
						fail("%v", err)
					} else if fmt.Sprint(again) != fmt.Sprint(first) {
						fail("snapshot %d changed between reads", snap.SeqNum())
					}
					g := rand.IntN(groups)
					if v, err := db.Get(key(g, perGroup-1), ro); err == nil && string(v) != first[g] {
						fail("Get at snapshot %d: %q, scan saw %q", snap.SeqNum(), v, first[g])
					}
				}
				snap.Release()
			}
		}()
	}
	wg.Wait()
}

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

package shale

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// TestCloseAfterBackgroundErrorKeepsNoWALWrites: writes made with
// DisableWAL live only in the memtable. When a background error has made the
// DB read-only, Close cannot flush them; it must not then return nil as if
// they were kept.
func TestCloseAfterBackgroundErrorKeepsNoWALWrites(t *testing.T) {
	mem := vfs.NewMem()
	ffs, opts, db := openFaultDB(t, mem, nil)
	var err error
	putRange(t, db, 0, 50, &WriteOptions{DisableWAL: true})
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, PathPattern: "*.sst", NoSpace: true})
	if err := db.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush with a full disk: %v", err)
	}
	ffs.ClearRules()
	closeErr := db.Close()
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, getErr := db.Get([]byte("key00000"), nil)
	if errors.Is(getErr, ErrNotFound) && closeErr == nil {
		t.Fatal("Close returned nil but the DisableWAL writes it could not flush are lost")
	}
	if closeErr != nil && (!errors.Is(closeErr, ErrReadOnly) || !errors.Is(closeErr, syscall.ENOSPC)) {
		t.Fatalf("Close error %v does not wrap ErrReadOnly and the cause", closeErr)
	}
}

// TestCloseAfterWALFailureReportsLoss: writes acknowledged without
// Sync whose WAL write failed in the background live only in the memtable.
// Closing without Resume must not return nil when a reopen lacks them.
func TestCloseAfterWALFailureReportsLoss(t *testing.T) {
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("background=%v", background), func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, opts, db := openFaultDB(t, mem, func(opts *Options) {
				opts.WriteBufferSize = 1 << 20
				opts.WALBackgroundWrites = background
			})
			var err error
			putRange(t, db, 0, 20, &WriteOptions{Sync: true})
			ffs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, PathPattern: "*.log", NoSpace: true})
			acked := 20
			for i := 20; i < 2000; i++ {
				k := fmt.Sprintf("key%05d", i)
				if err := db.Put([]byte(k), []byte(k), nil); err != nil {
					break
				}
				acked = i + 1
			}
			waitFor(func() bool { return db.Metrics().BackgroundError != nil })
			ffs.ClearRules()
			closeErr := db.Close()
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			expectRange(t, db, 0, 20)
			lost := 0
			for i := 20; i < acked; i++ {
				if _, err := db.Get([]byte(fmt.Sprintf("key%05d", i)), nil); errors.Is(err, ErrNotFound) {
					lost++
				}
			}
			t.Logf("%d acknowledged, %d lost, Close: %v", acked-20, lost, closeErr)
			if lost > 0 && closeErr == nil {
				t.Fatalf("Close returned nil, but %d of %d writes acknowledged after the synced ones are lost", lost, acked-20)
			}
			if closeErr != nil && !errors.Is(closeErr, syscall.ENOSPC) {
				t.Fatalf("Close error does not wrap the cause: %v", closeErr)
			}
		})
	}
}

// TestCloseAfterFlushedNoWALWrites: DisableWAL writes that a flush
// already put in a table are safe; a later background error must not make
// Close report them lost (the writes since are in the WAL).
func TestCloseAfterFlushedNoWALWrites(t *testing.T) {
	mem := vfs.NewMem()
	ffs, opts, db := openFaultDB(t, mem, nil)
	var err error
	putRange(t, db, 0, 50, &WriteOptions{DisableWAL: true})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	putRange(t, db, 50, 100, &WriteOptions{Sync: true})
	ffs.AddRule(errorfs.Rule{Op: errorfs.OpCreate, PathPattern: "*.sst", NoSpace: true})
	if err := db.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush with a full disk: %v", err)
	}
	ffs.ClearRules()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v (no write is lost)", err)
	}
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	expectRange(t, db, 0, 100)
}

// TestCloseKeepsUnloggedWrites races DisableWAL writers with Close: every
// acknowledged write survives the clean Close.
func TestCloseKeepsUnloggedWrites(t *testing.T) {
	for round := 0; round < 5; round++ {
		fs := vfs.NewMem()
		db, err := Open("/db", testOptions(fs))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var acked []string
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					k := fmt.Sprintf("w%d-%d", w, i)
					if err := db.Put([]byte(k), []byte(k), &WriteOptions{DisableWAL: true}); err != nil {
						return
					}
					mu.Lock()
					acked = append(acked, k)
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		db, err = Open("/db", testOptions(fs))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range acked {
			if _, err := db.Get([]byte(k), nil); err != nil {
				t.Fatalf("round %d: acknowledged unlogged write %s lost: %v", round, k, err)
			}
		}
		db.Close()
	}
}

func TestDisableWALSurvivesClose(t *testing.T) {
	db, fs := openMem(t)
	for i := 0; i < 100; i++ {
		db.Put([]byte(fmt.Sprint(i)), []byte("v"), &WriteOptions{DisableWAL: true})
	}
	db = reopenMem(t, db, fs)
	defer db.Close()
	if v, err := db.Get([]byte("42"), nil); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

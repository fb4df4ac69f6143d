package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

func faultDB(t *testing.T) (*DB, *vfs.FaultFS, *vfs.MemFS) {
	t.Helper()
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem, 1)
	db, err := Open("/db", testOptions(ffs))
	if err != nil {
		t.Fatal(err)
	}
	return db, ffs, mem
}

func putRange(t *testing.T, db *DB, from, to int, wo *WriteOptions) {
	t.Helper()
	for i := from; i < to; i++ {
		k := fmt.Sprintf("key%05d", i)
		if err := db.Put([]byte(k), []byte(k), wo); err != nil {
			t.Fatalf("Put(%s): %v", k, err)
		}
	}
}

func expectRange(t *testing.T, db *DB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		k := fmt.Sprintf("key%05d", i)
		if v, err := db.Get([]byte(k), nil); err != nil || string(v) != k {
			t.Fatalf("Get(%s) = %q, %v", k, v, err)
		}
	}
}

// TestFlushFailureAndResume fails table creation: the flush error makes the
// DB read-only (reads still work), and Resume after the fault is gone
// flushes and accepts writes again, losing nothing.
func TestFlushFailureAndResume(t *testing.T) {
	db, ffs, mem := faultDB(t)
	defer db.Close()
	putRange(t, db, 0, 100, nil)
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpCreate, PathContains: ".sst", NoSpace: true})
	err := db.Flush()
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush with a full disk: %v", err)
	}
	if err := db.Put([]byte("x"), []byte("y"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Put in the error state: %v", err)
	}
	expectRange(t, db, 0, 100)
	if m := db.Metrics(); m.BackgroundError == nil {
		t.Fatal("Metrics does not show the background error")
	}
	ffs.ClearRules()
	if err := db.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	putRange(t, db, 100, 200, nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	expectRange(t, db, 0, 200)
	// What is on "disk" reopens with everything.
	db2, err := Open("/db", testOptions(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	expectRange(t, db2, 0, 200)
}

// TestWALFailureAndResume fails the WAL's sync: the synced write reports the
// error, later writes are refused, and Resume moves to a new WAL.
func TestWALFailureAndResume(t *testing.T) {
	db, ffs, mem := faultDB(t)
	defer db.Close()
	putRange(t, db, 0, 50, &WriteOptions{Sync: true})
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpSync, PathContains: ".log"})
	if err := db.Put([]byte("key00050"), []byte("key00050"), &WriteOptions{Sync: true}); err == nil {
		t.Fatal("a synced write whose sync failed must report it")
	}
	if err := db.Put([]byte("z"), []byte("z"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write after a WAL failure: %v", err)
	}
	ffs.ClearRules()
	if err := db.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	putRange(t, db, 51, 100, &WriteOptions{Sync: true})
	crashed, err := Open("/db", testOptions(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	expectRange(t, crashed, 0, 50)
	expectRange(t, crashed, 51, 100)
}

// TestManifestFailure fails the MANIFEST sync during a flush; Resume retries
// the flush on a fresh MANIFEST.
func TestManifestFailure(t *testing.T) {
	db, ffs, mem := faultDB(t)
	defer db.Close()
	putRange(t, db, 0, 100, nil)
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpSync, PathContains: "MANIFEST"})
	if err := db.Flush(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Flush with a failing MANIFEST: %v", err)
	}
	ffs.ClearRules()
	if err := db.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	expectRange(t, db, 0, 100)
	crashed, err := Open("/db", testOptions(mem.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	expectRange(t, crashed, 0, 100)
}

// TestRandomFaultsThenCrash injects random write and sync failures while
// writing (with flushes and compactions running), crashes once the DB stops
// accepting writes, and checks the recovered state: a prefix of the writes
// holding every acknowledged synced one.
func TestRandomFaultsThenCrash(t *testing.T) {
	forEachSeed(t, bySize(8, 3, 80), func(t *testing.T, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 3))
		mem := vfs.NewMem()
		ffs := vfs.NewFaultFS(mem, seed)
		opts := testOptions(ffs)
		db, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpCreate, vfs.OpRename} {
			ffs.AddRule(vfs.FaultRule{Op: op, Probability: 0.0005 + rng.Float64()*0.003, ShortWrite: rng.IntN(2) == 0})
		}
		var writes []crashWrite
		var failed *crashWrite // a write that returned an error may or may not persist
		lastSynced := 0
		write := func(i int) error {
			k := fmt.Sprintf("k%04d", rng.IntN(300))
			w := crashWrite{key: k, value: fmt.Sprintf("%s-%d-%s", k, i, make([]byte, rng.IntN(100)))}
			sync := rng.IntN(4) == 0
			if err := db.Put([]byte(k), []byte(w.value), &WriteOptions{Sync: sync}); err != nil {
				failed = &w
				return err
			}
			writes = append(writes, w)
			if sync {
				lastSynced = len(writes)
			}
			return nil
		}
		for i := 0; i < 3000 && write(i) == nil; i++ {
		}
		ffs.ClearRules()
		t.Logf("%d writes (%d synced) before the DB stopped; %d faults injected", len(writes), lastSynced, ffs.Injected())
		if failed != nil && rng.IntN(2) == 0 {
			// Resume flushes the memtables before new writes are taken,
			// so the failed write cannot resurface after later ones.
			if err := db.Resume(); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			for i := 0; i < 300; i++ {
				if err := write(10000 + i); err != nil {
					t.Fatalf("write after Resume: %v", err)
				}
			}
		} else if failed != nil {
			writes = append(writes, *failed) // last: may be there or not
		}
		checkCrashState(t, 0, mem.CrashClone(), opts, writes, lastSynced)
	})
}

// TestManifestSyncFailureKeepsOutputs fails the MANIFEST sync after the edit
// was written: the edit may be durable, so the flushed table must not be
// deleted; a reopen (without Resume) finds every synced write.
func TestManifestSyncFailureKeepsOutputs(t *testing.T) {
	db, ffs, mem := faultDB(t)
	putRange(t, db, 0, 100, &WriteOptions{Sync: true})
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpSync, PathContains: "MANIFEST", Nth: 1})
	if err := db.Flush(); err == nil {
		t.Fatal("Flush with a failing MANIFEST sync must fail")
	}
	ffs.ClearRules()
	db.Close()
	reopened, err := Open("/db", testOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	expectRange(t, reopened, 0, 100)
}

// TestResumeWithConcurrentWriters resumes while writers keep trying: writes
// fail fast with ErrReadOnly until Resume leads the commit queue, nothing
// deadlocks, and writes succeed afterwards.
func TestResumeWithConcurrentWriters(t *testing.T) {
	db, ffs, _ := faultDB(t)
	defer db.Close()
	putRange(t, db, 0, 50, nil)
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpCreate, PathContains: ".sst", Nth: 1})
	if err := db.Flush(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Flush: %v", err)
	}
	ffs.ClearRules()
	stop := make(chan struct{})
	done := make(chan error, 8)
	var attempts atomic.Int64
	for w := 0; w < 8; w++ {
		go func(w int) {
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				k := []byte(fmt.Sprintf("w%d-%d", w, i))
				attempts.Add(1)
				if err := db.Put(k, k, nil); err != nil && !errors.Is(err, ErrReadOnly) {
					done <- err
					return
				}
			}
		}(w)
	}
	for attempts.Load() < 2000 { // writers are hammering the stopped DB
		time.Sleep(time.Millisecond)
	}
	resumed := make(chan error, 1)
	go func() { resumed <- db.Resume() }()
	select {
	case err := <-resumed:
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Resume deadlocked with concurrent writers")
	}
	close(stop)
	for w := 0; w < 8; w++ {
		if err := <-done; err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	if err := db.Put([]byte("after"), []byte("x"), nil); err != nil {
		t.Fatalf("write after Resume: %v", err)
	}
	expectRange(t, db, 0, 50)
}

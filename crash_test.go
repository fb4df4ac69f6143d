package shale

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// TestCrashRecovery writes with a mix of synced and unsynced writes while
// flushes and compactions run, takes crash clones of the in-memory FS (only
// synced data survives) at random points, and checks each recovered DB: it
// holds exactly the state after some prefix of the writes, and that prefix
// includes every write acknowledged with Sync before the crash.
func TestCrashRecovery(t *testing.T) {
	forEachSeed(t, bySize(6, 3, 60), runCrash)
}

// TestCrashRecoveryDeletePersistence is TestCrashRecovery with a 5 ms delete
// persistence threshold (on the real clock): crashes hit deadline flushes
// and compactions of expired tables, and each reopen finds replayed
// tombstones due at once; with blob files, also the rewrites of blob files
// past their deadline and the edits dating blob garbage.
func TestCrashRecoveryDeletePersistence(t *testing.T) {
	for _, blobs := range []bool{false, true} {
		t.Run(fmt.Sprintf("blob-files=%v", blobs), func(t *testing.T) {
			forEachSeed(t, bySize(3, 2, 30), func(t *testing.T, seed uint64) {
				runCrashWith(t, seed, func(o *Options) {
					o.DeletePersistenceThreshold = 5 * time.Millisecond
					if blobs {
						o.Logger = discardLogger()
						setBlobTestOptions(o)
					}
				}, nil)
			})
		})
	}
}

// TestCrashRecoverySecondaryDelete is TestCrashRecovery with
// DeleteBySecondaryRange among the writes (attributes: crashAttr, the
// number of the write that made a value): each recovered DB holds the
// state after a prefix of the writes, secondary deletes included, and
// every secondary delete that returned (a synced write) is in it.
func TestCrashRecoverySecondaryDelete(t *testing.T) {
	forEachSeed(t, bySize(3, 2, 30), func(t *testing.T, seed uint64) {
		runCrashWith(t, seed, func(o *Options) { o.SecondaryDeleteKey = crashAttr }, nil)
	})
}

type crashWrite struct {
	key, value string // value "" = delete
	// secondary makes the write DeleteBySecondaryRange(lo, hi).
	secondary bool
	lo, hi    uint64
	// merge makes the write Merge(key, value) under crashMergeOperator.
	merge bool
}

// crashMergeOperator is the merge operator of TestCrashRecoveryMerge.
var crashMergeOperator = StringAppendOperator("|")

// TestCrashRecoveryMerge is TestCrashRecovery with merges among the
// writes: each recovered DB holds the state after a prefix of the writes,
// merged values included, however flushes and compactions had merged
// operands when the crash came.
func TestCrashRecoveryMerge(t *testing.T) {
	forEachSeed(t, bySize(3, 2, 30), func(t *testing.T, seed uint64) {
		runCrashWith(t, seed, func(o *Options) { o.MergeOperator = crashMergeOperator }, nil)
	})
}

// crashAttr is the SecondaryDeleteKey of the crash tests: the number
// between the first two dashes of a "<key>-<n>-..." value.
func crashAttr(_, value []byte) (uint64, bool) {
	_, rest, ok := strings.Cut(string(value), "-")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	return n, err == nil
}

// applyCrashWrite applies w to the model state.
func applyCrashWrite(state model, w crashWrite) {
	switch {
	case w.merge:
		var existing []byte
		if v, ok := state[w.key]; ok {
			existing = []byte(v)
		}
		v, _ := crashMergeOperator.FullMerge([]byte(w.key), existing, [][]byte{[]byte(w.value)})
		state[w.key] = string(v)
	case w.secondary:
		for k, v := range state {
			if a, ok := crashAttr([]byte(k), []byte(v)); ok && a >= w.lo && a < w.hi {
				delete(state, k)
			}
		}
	case w.value == "":
		delete(state, w.key)
	default:
		state[w.key] = w.value
	}
}

func runCrash(t *testing.T, seed uint64) { runCrashWith(t, seed, nil, nil) }

// runCrashWith is runCrash with variant applied to the options, and check,
// when set, called on each crash clone before it is reopened to compare
// its state with the writes.
func runCrashWith(t *testing.T, seed uint64, variant func(*Options), check func(t *testing.T, ci int, fs *vfs.MemFS, opts *Options)) {
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := vfs.NewMem()
	opts := testOptions(fs)
	if variant != nil {
		variant(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var writes []crashWrite
	lastSynced := 0 // writes[:lastSynced] were acknowledged as durable
	type crashPoint struct {
		fs         *vfs.MemFS
		lastSynced int
		written    int
	}
	var crashes []crashPoint
	n := 3000
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%04d", rng.IntN(400))
		w := crashWrite{key: k}
		if rng.IntN(5) > 0 {
			w.value = fmt.Sprintf("%s-%d-%s", k, i, string(make([]byte, rng.IntN(120))))
		}
		sync := rng.IntN(3) == 0
		wo := &WriteOptions{Sync: sync}
		if opts.SecondaryDeleteKey != nil && rng.IntN(100) == 0 {
			// Of the values written so far, some range by write number.
			w = crashWrite{secondary: true, lo: uint64(rng.IntN(i + 1))}
			w.hi = w.lo + uint64(rng.IntN(i/2+10))
			sync = true // DeleteBySecondaryRange is always synced
		}
		if opts.MergeOperator != nil && rng.IntN(4) == 0 {
			w = crashWrite{key: k, merge: true, value: fmt.Sprintf("m%d", i)}
		}
		switch {
		case w.merge:
			err = db.Merge([]byte(k), []byte(w.value), wo)
		case w.secondary:
			err = db.DeleteBySecondaryRange(w.lo, w.hi, wo)
		case w.value == "":
			err = db.Delete([]byte(k), wo)
		default:
			err = db.Put([]byte(k), []byte(w.value), wo)
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		writes = append(writes, w)
		if sync {
			lastSynced = len(writes)
		}
		if rng.IntN(60) == 0 {
			crashes = append(crashes, crashPoint{fs.CrashClone(), lastSynced, len(writes)})
		}
	}
	crashes = append(crashes, crashPoint{fs.CrashClone(), lastSynced, len(writes)})
	for ci, c := range crashes {
		if check != nil {
			check(t, ci, c.fs, opts)
		}
		checkCrashState(t, ci, c.fs, opts, writes[:c.written], c.lastSynced)
	}
}

// checkCrashState reopens a crash clone and finds the prefix of writes it
// equals.
func checkCrashState(t *testing.T, ci int, fs *vfs.MemFS, base *Options, writes []crashWrite, lastSynced int) {
	t.Helper()
	o := *base
	o.FS = fs
	db, err := Open("/db", &o)
	if err != nil {
		t.Fatalf("crash %d: reopen: %v\n%s", ci, err, fs)
	}
	defer db.Close()
	if _, err := verifyBlobReferences(db); err != nil {
		t.Fatalf("crash %d: after recovery: %v", ci, err)
	}
	got := model{}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatalf("crash %d: scan: %v", ci, err)
	}
	// Replay prefixes; the recovered state must match one of at least
	// lastSynced writes.
	state := model{}
	apply := func(w crashWrite) { applyCrashWrite(state, w) }
	for _, w := range writes[:lastSynced] {
		apply(w)
	}
	for p := lastSynced; ; p++ {
		if equalModels(state, got) {
			// Point reads must agree with the scan.
			for k, v := range got {
				if val, err := db.Get([]byte(k), nil); err != nil || string(val) != v {
					t.Fatalf("crash %d: Get(%s) = %q, %v; scan saw %q", ci, k, val, err, v)
				}
			}
			return
		}
		if p == len(writes) {
			break
		}
		apply(writes[p])
	}
	t.Fatalf("crash %d: recovered state (%d keys) is not the state after any prefix of >= %d of %d writes", ci, len(got), lastSynced, len(writes))
}

func equalModels(a, b model) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

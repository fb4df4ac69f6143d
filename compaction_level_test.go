package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// levelFileNums returns the file numbers of every level, sorted.
func levelFileNums(d *DB) [][]base.FileNum {
	v := d.versions.Current()
	defer v.Unref()
	out := make([][]base.FileNum, len(v.Levels))
	for l, files := range v.Levels {
		for _, f := range files {
			out[l] = append(out[l], f.FileNum)
		}
		slices.Sort(out[l])
	}
	return out
}

// shapeString draws the number of files per level, e.g. "L0:2 L2:1 L4:3".
func shapeString(d *DB) string {
	var parts []string
	for l, lm := range d.Metrics().Levels {
		if lm.NumFiles > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, lm.NumFiles))
		}
	}
	return strings.Join(parts, " ")
}

func levelOptions(fs vfs.FS) *Options {
	o := testOptions(fs)
	o.DisableAutoCompactions = true
	return o
}

// TestCompactRangeChangeLevel builds an LSM bottom-up the way
// fillseqdeterministic does and checks shape and data after each step.
func TestCompactRangeChangeLevel(t *testing.T) {
	db, err := Open("/db", levelOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := model{}
	put := func(lo, hi, step int, tag string) {
		t.Helper()
		for k := lo; k < hi; k += step {
			key, val := fmt.Sprintf("k%05d", k), fmt.Sprintf("%s-%d", tag, k)
			if err := db.Put([]byte(key), []byte(val), nil); err != nil {
				t.Fatal(err)
			}
			m[key] = val
		}
	}
	toLevel := func(target int) {
		t.Helper()
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: target}); err != nil {
			t.Fatal(err)
		}
	}

	put(0, 2000, 1, "a") // larger than one 8 KiB target file
	toLevel(4)
	if got := shapeString(db); !strings.HasPrefix(got, "L4:") || strings.Count(got, "L") != 1 {
		t.Fatalf("after target 4: shape %q, want only L4", got)
	}
	checkAll(t, db, nil, m)
	l4 := levelFileNums(db)[4]

	put(0, 2000, 3, "b") // overwrites a third of the keys
	for k := 1; k < 2000; k += 7 {
		key := fmt.Sprintf("k%05d", k)
		if err := db.Delete([]byte(key), nil); err != nil {
			t.Fatal(err)
		}
		delete(m, key)
	}
	toLevel(2)
	nums := levelFileNums(db)
	if len(nums[0]) != 0 || len(nums[1]) != 0 || len(nums[2]) == 0 || len(nums[3]) != 0 || !slices.Equal(nums[4], l4) {
		t.Fatalf("after target 2: files per level %v (L4 was %v); want L2 new, L4 unchanged, others empty", nums, l4)
	}
	checkAll(t, db, nil, m)

	// A second run into L2 merges with L2's files; L4 still untouched.
	put(500, 1500, 2, "c")
	toLevel(2)
	nums = levelFileNums(db)
	if len(nums[0])+len(nums[1])+len(nums[3]) != 0 || !slices.Equal(nums[4], l4) {
		t.Fatalf("after second target 2: %v", nums)
	}
	checkAll(t, db, nil, m)

	put(0, 2000, 5, "d")
	toLevel(1)
	put(0, 2000, 11, "e")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	nums = levelFileNums(db)
	if len(nums[0]) == 0 || len(nums[1]) == 0 || len(nums[2]) == 0 || len(nums[3]) != 0 || !slices.Equal(nums[4], l4) {
		t.Fatalf("final shape %v, want L0, L1, L2, L4", nums)
	}
	checkAll(t, db, nil, m)

	// Reopened, the shape and data survive (auto compactions stay off).
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open("/db", levelOptions(db.fs))
	if err != nil {
		t.Fatal(err)
	}
	if got := levelFileNums(db); !slices.EqualFunc(got, nums, slices.Equal) {
		t.Fatalf("after reopen %v, want %v", got, nums)
	}
	checkAll(t, db, nil, m)
}

// TestCompactRangeChangeLevelRange checks that only files overlapping the
// range move.
func TestCompactRangeChangeLevelRange(t *testing.T) {
	db, err := Open("/db", levelOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := model{}
	for _, prefix := range []string{"a", "m"} {
		for k := range 100 {
			key := fmt.Sprintf("%s%03d", prefix, k)
			m[key] = "v" + key
			if err := db.Put([]byte(key), []byte(m[key]), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := shapeString(db); got != "L0:2" {
		t.Fatalf("shape %q, want L0:2", got)
	}
	if err := db.CompactRangeWithOptions([]byte("m000"), []byte("m050"), &CompactRangeOptions{ChangeLevel: true, TargetLevel: 3}); err != nil {
		t.Fatal(err)
	}
	if got := shapeString(db); got != "L0:1 L3:1" {
		t.Fatalf("shape %q, want L0:1 L3:1", got)
	}
	v := db.versions.Current()
	if f := v.Levels[3][0]; string(f.Smallest.UserKey) != "m000" {
		t.Errorf("L3 starts at %q, want m000", f.Smallest.UserKey)
	}
	v.Unref()
	checkAll(t, db, nil, m)
}

func TestCompactRangeWithOptionsErrors(t *testing.T) {
	db, err := Open("/db", levelOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	for _, target := range []int{-1, 0, db.opts.NumLevels, 100} {
		err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: target})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "CompactRangeOptions.TargetLevel") ||
			!strings.Contains(err.Error(), fmt.Sprint(target)) {
			t.Fatalf("TargetLevel %d: err = %v, want ErrInvalidArgument naming the field and value", target, err)
		}
	}
	// A refused call did nothing (not even the flush).
	if got := shapeString(db); got != "" {
		t.Fatalf("refused call changed the shape: %q", got)
	}
	// Without ChangeLevel, TargetLevel is ignored: CompactRange, all to the
	// last level.
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{TargetLevel: -5}); err != nil {
		t.Fatal(err)
	}
	if got, want := shapeString(db), fmt.Sprintf("L%d:1", db.opts.NumLevels-1); got != want {
		t.Fatalf("shape %q, want %q", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// TestCompactRangeChangeLevelModel mixes random writes, deletes, range
// deletes and snapshots with ChangeLevel compactions to random levels and
// random ranges, with automatic compactions on, and checks every key and a
// snapshot against the model.
func TestCompactRangeChangeLevelModel(t *testing.T) {
	forEachSeed(t, bySize(3, 2, 20), func(t *testing.T, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e37))
		o := testOptions(vfs.NewMem())
		o.DisableAutoCompactions = rng.IntN(2) == 0
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		m := model{}
		key := func() string { return fmt.Sprintf("k%04d", rng.IntN(800)) }
		var snap *Snapshot
		var snapModel model
		for op := range bySize(3000, 1500, 20000) {
			switch r := rng.IntN(100); {
			case r < 70:
				k, v := key(), fmt.Sprintf("v%d-%d", op, rng.IntN(1000))
				if err := db.Put([]byte(k), []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				m[k] = v
			case r < 85:
				k := key()
				if err := db.Delete([]byte(k), nil); err != nil {
					t.Fatal(err)
				}
				delete(m, k)
			case r < 88:
				a, b := key(), key()
				if a == b {
					continue
				}
				if a > b {
					a, b = b, a
				}
				if err := db.DeleteRange([]byte(a), []byte(b), nil); err != nil {
					t.Fatal(err)
				}
				for k := range m {
					if k >= a && k < b {
						delete(m, k)
					}
				}
			case r < 97:
				var start, end []byte
				if rng.IntN(2) == 0 {
					a, b := key(), key()
					if a > b {
						a, b = b, a
					}
					start, end = []byte(a), []byte(b)
				}
				target := 1 + rng.IntN(o.NumLevels-1)
				below := levelFileNums(db)[target+1:]
				if err := db.CompactRangeWithOptions(start, end, &CompactRangeOptions{ChangeLevel: true, TargetLevel: target}); err != nil {
					t.Fatalf("op %d: CompactRangeWithOptions(%q, %q, target %d): %v", op, start, end, target, err)
				}
				if got := levelFileNums(db)[target+1:]; o.DisableAutoCompactions && !slices.EqualFunc(got, below, slices.Equal) {
					t.Fatalf("op %d: target %d changed the levels below it: %v, was %v", op, target, got, below)
				}
				if start == nil {
					nums := levelFileNums(db)
					for l := 0; l < target; l++ {
						if len(nums[l]) > 0 && o.DisableAutoCompactions {
							t.Fatalf("op %d: target %d over everything left files in L%d: %v", op, target, l, nums)
						}
					}
				}
			default:
				if snap != nil {
					snap.Release()
				}
				snap, snapModel = db.NewSnapshot(), m.clone()
			}
		}
		checkAll(t, db, nil, m)
		if snap != nil {
			checkAll(t, db, &ReadOptions{Snapshot: snap}, snapModel)
			snap.Release()
		}
		t.Logf("final shape %s", shapeString(db))
	})
}

// TestCompactRangeChangeLevelConcurrent runs ChangeLevel compactions to
// random levels and ranges while a writer puts, deletes, range-deletes and
// flushes, with automatic compactions on; readers check snapshots as they
// go, and every key against the model at the end (-race).
func TestCompactRangeChangeLevelConcurrent(t *testing.T) {
	forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
		o := testOptions(vfs.NewMem())
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		key := func(rng *rand.Rand) string { return fmt.Sprintf("k%04d", rng.IntN(600)) }
		m := model{}
		var mu sync.Mutex // guards snaps
		type snapState struct {
			s *Snapshot
			m model
		}
		var snaps []snapState
		done := make(chan struct{})
		var wg sync.WaitGroup
		errc := make(chan error, 4)
		wg.Go(func() { // the compactor
			rng := rand.New(rand.NewPCG(seed, 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				var start, end []byte
				if rng.IntN(3) > 0 {
					a, b := key(rng), key(rng)
					if a > b {
						a, b = b, a
					}
					start, end = []byte(a), []byte(b)
				}
				target := 1 + rng.IntN(o.NumLevels-1)
				if err := db.CompactRangeWithOptions(start, end, &CompactRangeOptions{ChangeLevel: true, TargetLevel: target}); err != nil {
					errc <- fmt.Errorf("CompactRangeWithOptions(%q, %q, %d): %w", start, end, target, err)
					return
				}
			}
		})
		wg.Go(func() { // a snapshot reader
			for {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				var ss snapState
				if len(snaps) > 0 {
					ss = snaps[len(snaps)-1]
				}
				mu.Unlock()
				if ss.s == nil {
					continue
				}
				for k := range 600 {
					key := fmt.Sprintf("k%04d", k)
					v, err := db.Get([]byte(key), &ReadOptions{Snapshot: ss.s})
					want, ok := ss.m[key]
					if (err == nil) != ok || (ok && string(v) != want) || (err != nil && !errors.Is(err, ErrNotFound)) {
						errc <- fmt.Errorf("snapshot Get(%s) = %q, %v; want %q (present %v)", key, v, err, want, ok)
						return
					}
				}
			}
		})
		rng := rand.New(rand.NewPCG(seed, 2))
		for op := range bySize(4000, 1500, 30000) {
			switch r := rng.IntN(100); {
			case r < 70:
				k, v := key(rng), fmt.Sprintf("v%d", op)
				if err := db.Put([]byte(k), []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				m[k] = v
			case r < 88:
				k := key(rng)
				if err := db.Delete([]byte(k), nil); err != nil {
					t.Fatal(err)
				}
				delete(m, k)
			case r < 90:
				a, b := key(rng), key(rng)
				if a > b {
					a, b = b, a
				}
				if err := db.DeleteRange([]byte(a), []byte(b), nil); err != nil {
					t.Fatal(err)
				}
				for k := range m {
					if k >= a && k < b {
						delete(m, k)
					}
				}
			case r < 95:
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			default:
				s := db.NewSnapshot()
				mu.Lock()
				snaps = append(snaps, snapState{s, m.clone()})
				mu.Unlock()
			}
			select {
			case err := <-errc:
				t.Fatal(err)
			default:
			}
		}
		close(done)
		wg.Wait()
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		checkAll(t, db, nil, m)
		for _, ss := range snaps {
			checkAll(t, db, &ReadOptions{Snapshot: ss.s}, ss.m)
			ss.s.Release()
		}
	})
}

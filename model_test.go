package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// model is the in-memory reference the DB is checked against.
type model map[string]string

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m model) sortedKeys(lower, upper []byte) []string {
	var keys []string
	for k := range m {
		if lower != nil && k < string(lower) {
			continue
		}
		if upper != nil && k >= string(upper) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func testOptions(fs vfs.FS) *Options {
	return &Options{
		CreateIfMissing:                true,
		FS:                             fs,
		WriteBufferSize:                16 << 10,
		TargetFileSizeBase:             8 << 10,
		MaxBytesForLevelBase:           32 << 10,
		Level0FileNumCompactionTrigger: 2,
		Level0SlowdownWritesTrigger:    8,
		Level0StopWritesTrigger:        12,
		BlockSize:                      1 << 10,
		NumLevels:                      5,
		MaxManifestFileSize:            1 << 10, // rotate often
	}
}

// stress reports whether long randomized runs are asked for (SHALE_STRESS=1).
func stress() bool { return os.Getenv("SHALE_STRESS") != "" }

func modelSeed(t *testing.T) uint64 {
	if s := os.Getenv("SHALE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return rand.Uint64()
}

// bySize picks how much a randomized test does: normal, short under
// -short, stressed when SHALE_STRESS is set (which wins over -short).
func bySize(normal, short, stressed int) int {
	switch {
	case stress():
		return stressed
	case testing.Short():
		return short
	}
	return normal
}

// forEachSeed runs fn in rounds subtests, each named after a fresh seed
// (SHALE_SEED fixes it) and logging how to rerun it.
func forEachSeed(t *testing.T, rounds int, fn func(t *testing.T, seed uint64)) {
	t.Helper()
	for range rounds {
		seed := modelSeed(t)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d (rerun with SHALE_SEED=%d)", seed, seed)
			fn(t, seed)
		})
	}
}

// TestModel runs random operations against the DB and an in-memory model,
// with tiny buffers so flushes and compactions run, and checks every read.
func TestModel(t *testing.T) {
	ops := bySize(4000, 1500, 20000)
	forEachSeed(t, bySize(3, 3, 20), func(t *testing.T, seed uint64) {
		runModel(t, seed, ops)
	})
}

type modelSnapshot struct {
	snap  *Snapshot
	state model
}

func runModel(t *testing.T, seed uint64, ops int, variants ...func(*Options)) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fs := vfs.NewMem()
	opts := testOptions(fs)
	for _, v := range variants {
		v(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	const numKeys = 300
	key := func() []byte { return []byte(fmt.Sprintf("key%05d", rng.IntN(numKeys))) }
	value := func(i int) []byte {
		v := make([]byte, 20+rng.IntN(200))
		copy(v, fmt.Sprintf("v%d-", i))
		for j := len(fmt.Sprintf("v%d-", i)); j < len(v); j++ {
			v[j] = 'a' + byte(rng.IntN(26))
		}
		return v
	}
	cur := model{}
	tracing := os.Getenv("SHALE_MODEL_TRACE") != ""
	traceKey := os.Getenv("SHALE_MODEL_TRACE")
	trace := func(format string, args ...any) {
		if tracing {
			t.Logf(format, args...)
			t.Logf("  %s:%s", traceKey, db.dumpKey(traceKey))
		}
	}
	var flushes, compactions uint64
	countWork := func() {
		m := db.Metrics()
		flushes += m.Flush.Count
		compactions += m.Compact.Count + m.Compact.TrivialMoves
	}
	// putsSince counts Puts since the key was last deleted; SingleDelete is
	// only defined for a key Put exactly once.
	putsSince := map[string]int{}
	var snaps []modelSnapshot

	applyDeleteRange := func(m model, s, e string) {
		for k := range m {
			if k >= s && k < e {
				delete(m, k)
			}
		}
	}
	for i := 0; i < ops; i++ {
		switch r := rng.IntN(100); {
		case r < 35:
			k, v := key(), value(i)
			if err := db.Put(k, v, nil); err != nil {
				t.Fatalf("op %d: Put: %v", i, err)
			}
			cur[string(k)] = string(v)
			putsSince[string(k)]++
			trace("op %d: Put %s = %.8s", i, k, v)
		case r < 42:
			k := key()
			if err := db.Delete(k, nil); err != nil {
				t.Fatalf("op %d: Delete: %v", i, err)
			}
			delete(cur, string(k))
			putsSince[string(k)] = 0
			trace("op %d: Delete %s", i, k)
		case r < 46:
			k := key()
			if putsSince[string(k)] != 1 {
				continue
			}
			if err := db.SingleDelete(k, nil); err != nil {
				t.Fatalf("op %d: SingleDelete: %v", i, err)
			}
			trace("op %d: SingleDelete %s", i, k)
			delete(cur, string(k))
			putsSince[string(k)] = 0
		case r < 48:
			s, e := key(), key()
			if bytes.Compare(s, e) > 0 {
				s, e = e, s
			}
			if err := db.DeleteRange(s, e, nil); err != nil {
				t.Fatalf("op %d: DeleteRange: %v", i, err)
			}
			applyDeleteRange(cur, string(s), string(e))
			trace("op %d: DeleteRange %s %s", i, s, e)
			for k := range putsSince {
				if k >= string(s) && k < string(e) {
					// A range tombstone under a later Put would leave a
					// SingleDelete meeting an older Put: keep them apart.
					putsSince[k] = 2
				}
			}
		case r < 55:
			b := db.NewBatch()
			next := cur.clone()
			for n := rng.IntN(10); n >= 0; n-- {
				k := key()
				if rng.IntN(4) == 0 {
					b.Delete(k)
					delete(next, string(k))
					putsSince[string(k)] = 0
				} else {
					v := value(i)
					b.Put(k, v)
					next[string(k)] = string(v)
					putsSince[string(k)] = 2
				}
			}
			if err := db.Write(b, &WriteOptions{Sync: rng.IntN(4) == 0}); err != nil {
				t.Fatalf("op %d: Write: %v", i, err)
			}
			trace("op %d: batch of %d", i, b.Len())
			cur = next
		case r < 75:
			k := key()
			checkGet(t, db, nil, cur, k, i)
		case r < 80:
			checkIterator(t, rng, db, nil, cur, i)
		case r < 83:
			snaps = append(snaps, modelSnapshot{db.NewSnapshot(), cur.clone()})
			trace("op %d: snapshot at %d", i, snaps[len(snaps)-1].snap.seq)
		case r < 88:
			if len(snaps) == 0 {
				continue
			}
			s := snaps[rng.IntN(len(snaps))]
			ro := &ReadOptions{Snapshot: s.snap}
			if rng.IntN(2) == 0 {
				checkGet(t, db, ro, s.state, key(), i)
			} else {
				checkIterator(t, rng, db, ro, s.state, i)
			}
		case r < 90:
			if len(snaps) == 0 {
				continue
			}
			j := rng.IntN(len(snaps))
			snaps[j].snap.Release()
			trace("op %d: release snapshot %d", i, snaps[j].snap.seq)
			snaps = slices.Delete(snaps, j, j+1)
		case r < 92:
			if err := db.Flush(); err != nil {
				t.Fatalf("op %d: Flush: %v", i, err)
			}
			trace("op %d: Flush\n%s", i, db.versionString())
		case r < 93:
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatalf("op %d: CompactRange: %v", i, err)
			}
			trace("op %d: CompactRange\n%s", i, db.versionString())
		case r < 94:
			// Close and reopen: snapshots do not survive.
			for _, s := range snaps {
				s.snap.Release()
			}
			snaps = nil
			countWork()
			if err := db.Close(); err != nil {
				t.Fatalf("op %d: Close: %v", i, err)
			}
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatalf("op %d: reopen: %v", i, err)
			}
			trace("op %d: reopened\n%s", i, db.versionString())
		default:
			k := key()
			checkGet(t, db, nil, cur, k, i)
		}
	}
	// A final full check at the latest state and every snapshot.
	checkAll(t, db, nil, cur)
	for _, s := range snaps {
		checkAll(t, db, &ReadOptions{Snapshot: s.snap}, s.state)
		s.snap.Release()
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkAll(t, db, nil, cur)
	countWork()
	if flushes == 0 || compactions == 0 {
		t.Fatalf("test did not exercise flushes (%d) and compactions (%d):\n%s", flushes, compactions, db.Metrics())
	}
}

func checkGet(t *testing.T, db *DB, ro *ReadOptions, m model, k []byte, op int) {
	t.Helper()
	got, err := db.Get(k, ro)
	want, ok := m[string(k)]
	switch {
	case ok && err != nil:
		t.Fatalf("op %d: Get(%s) = %v, want %q", op, k, err, want)
	case !ok && !errors.Is(err, ErrNotFound):
		t.Fatalf("op %d: Get(%s) = %q, %v; want ErrNotFound", op, k, got, err)
	case ok && string(got) != want:
		t.Fatalf("op %d: Get(%s) = %q, want %q", op, k, got, want)
	}
}

func checkAll(t *testing.T, db *DB, ro *ReadOptions, m model) {
	t.Helper()
	it := db.NewIterator(ro)
	defer it.Close()
	keys := m.sortedKeys(nil, nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != m[keys[i]] {
			t.Fatalf("full scan: at %d got %q, want %v", i, it.Key(), keys[min(i, len(keys)-1):min(i+1, len(keys))])
		}
		i++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(keys) {
		t.Fatalf("full scan: got %d keys, want %d", i, len(keys))
	}
	for k, v := range m {
		got, err := db.Get([]byte(k), ro)
		if err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	vals, errs := db.MultiGet([][]byte{[]byte(keys0(keys)), []byte("zzz-absent")}, ro)
	if len(keys) > 0 && (errs[0] != nil || string(vals[0]) != m[keys[0]]) {
		t.Fatalf("MultiGet(%s) = %q, %v", keys[0], vals[0], errs[0])
	}
	if !errors.Is(errs[1], ErrNotFound) {
		t.Fatalf("MultiGet(absent) = %v", errs[1])
	}
}

func keys0(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return keys[0]
}

// checkIterator walks an iterator with random operations (and random
// bounds) and compares each position with the model.
func checkIterator(t *testing.T, rng *rand.Rand, db *DB, ro *ReadOptions, m model, op int) {
	t.Helper()
	var o ReadOptions
	if ro != nil {
		o = *ro
	}
	if rng.IntN(3) == 0 {
		o.LowerBound = []byte(fmt.Sprintf("key%05d", rng.IntN(300)))
	}
	if rng.IntN(3) == 0 {
		o.UpperBound = []byte(fmt.Sprintf("key%05d", rng.IntN(300)))
	}
	keys := m.sortedKeys(o.LowerBound, o.UpperBound)
	it := db.NewIterator(&o)
	defer it.Close()
	pos := -1 // index into keys; -1 or len(keys) = invalid
	for step := 0; step < 30; step++ {
		var desc string
		switch r := rng.IntN(6); {
		case r == 0:
			it.First()
			pos, desc = 0, "First"
		case r == 1:
			it.Last()
			pos, desc = len(keys)-1, "Last"
		case r == 2:
			k := fmt.Sprintf("key%05d", rng.IntN(300))
			it.Seek([]byte(k))
			pos, _ = slices.BinarySearch(keys, k)
			desc = "Seek(" + k + ")"
		case r == 3:
			k := fmt.Sprintf("key%05d", rng.IntN(300))
			it.SeekForPrev([]byte(k))
			i, found := slices.BinarySearch(keys, k)
			if !found {
				i--
			}
			pos, desc = i, "SeekForPrev("+k+")"
		case r == 4:
			if pos < 0 || pos >= len(keys) {
				continue
			}
			it.Next()
			pos, desc = pos+1, "Next"
		default:
			if pos < 0 || pos >= len(keys) {
				continue
			}
			it.Prev()
			pos, desc = pos-1, "Prev"
		}
		valid := pos >= 0 && pos < len(keys)
		if it.Valid() != valid {
			t.Fatalf("op %d step %d %s [%q,%q): valid=%v want %v (key %q, err %v)", op, step, desc, o.LowerBound, o.UpperBound, it.Valid(), valid, it.Key(), it.Err())
		}
		if !valid {
			pos = -1
			continue
		}
		if string(it.Key()) != keys[pos] || string(it.Value()) != m[keys[pos]] {
			t.Fatalf("op %d step %d %s [%q,%q): at %q, want %q", op, step, desc, o.LowerBound, o.UpperBound, it.Key(), keys[pos])
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("op %d: iterator: %v", op, err)
	}
}

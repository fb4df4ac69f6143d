package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// markerValue is a value that names its write: "<M0000042>" repeated, so
// that the write can be found in the raw bytes of any file holding it
// (compression off).
func markerValue(id int, size int) []byte {
	m := fmt.Sprintf("<M%07d>", id)
	return bytes.Repeat([]byte(m), max(1, size/len(m)))
}

// markersIn returns the ids of the marker values found in every file of
// dir, and the names of the files holding each.
func markersIn(t testing.TB, fs vfs.FS, dir string) map[int][]string {
	t.Helper()
	found := map[int][]string{}
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		data, err := readWholeFile(fs, fs.PathJoin(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since the listing, as obsolete
		} else if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for {
			i := bytes.Index(data, []byte("<M"))
			if i < 0 {
				break
			}
			data = data[i+2:]
			if len(data) < 8 || data[7] != '>' {
				continue
			}
			id, err := strconv.Atoi(string(data[:7]))
			if err != nil || seen[id] {
				continue
			}
			seen[id] = true
			found[id] = append(found[id], name)
		}
	}
	return found
}

func readWholeFile(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// TestDeletePersistenceBound writes, overwrites and deletes (point and
// range deletes) on a fake clock moved in steps of an eighth of the
// threshold, with flushes, compactions and reopens along the way, letting
// the background work settle at each step. At every step, no file of the
// directory (table or WAL) may hold a value that a tombstone written at
// least the threshold ago deletes, and Metrics must report nothing past its
// deadline. Nothing but the clock wakes the DB in the last steps, which
// write nothing.
func TestDeletePersistenceBound(t *testing.T) {
	forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
		runDeletePersistenceBound(t, seed, true)
	})
}

// runDeletePersistenceBound runs the test; with fade false the threshold
// is off and the test is expected to find deleted values (it shows that the
// test can fail).
func runDeletePersistenceBound(t *testing.T, seed uint64, fade bool) (violations int) {
	const d = time.Hour
	rng := rand.New(rand.NewPCG(seed, 12))
	clock := newFakeClock(0)
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.Compression = NoCompression
	opts.Clock = clock
	if fade {
		opts.DeletePersistenceThreshold = d
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()

	const keys = 600
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	// versions[i] are the ids of the writes of key i since its last delete.
	versions := make([][]int, keys)
	// deletedAt[id] is when a tombstone deleting write id was written.
	deletedAt := map[int]time.Time{}
	live := map[int]bool{}
	nextID := 0
	deleteKey := func(i int, at time.Time) {
		for _, id := range versions[i] {
			deletedAt[id] = at
			delete(live, id)
		}
		versions[i] = nil
	}
	compactions := uint64(0)
	const writeSteps, steps = 24, 40
	for step := 0; step < steps; step++ {
		if step < writeSteps {
			for range 250 {
				i := rng.IntN(keys)
				if rng.IntN(3) > 0 {
					id := nextID
					nextID++
					if err := db.Put(key(i), markerValue(id, 40+rng.IntN(80)), nil); err != nil {
						t.Fatal(err)
					}
					if len(versions[i]) > 0 {
						delete(live, versions[i][len(versions[i])-1])
					}
					versions[i] = append(versions[i], id)
					live[id] = true
					continue
				}
				now := clock.Now()
				if rng.IntN(20) == 0 {
					n := 1 + rng.IntN(12)
					if err := db.DeleteRange(key(i), key(i+n), nil); err != nil {
						t.Fatal(err)
					}
					for j := i; j < min(i+n, keys); j++ {
						deleteKey(j, now)
					}
					continue
				}
				if err := db.Delete(key(i), nil); err != nil {
					t.Fatal(err)
				}
				deleteKey(i, now)
			}
			if rng.IntN(4) == 0 {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if step == 8 || step == 17 || step == writeSteps+3 {
			compactions += db.Metrics().Compact.Count
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// Time passes while the DB is closed, and counts.
			clock.Advance(d / 4)
			if db, err = Open("/db", opts); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(d / 8)
		settle(t, db, clock)
		now := clock.Now()
		found := markersIn(t, fs, "/db")
		for id, at := range deletedAt {
			if files, ok := found[id]; ok && !now.Before(at.Add(d)) {
				violations++
				if fade {
					t.Errorf("step %d: write %d, deleted %v ago (threshold %v), is still in %v", step, id, now.Sub(at), d, files)
				}
			}
		}
		for id := range live {
			if _, ok := found[id]; !ok {
				t.Fatalf("step %d: the live write %d is in no file: the search does not work", step, id)
			}
		}
		if violations > 0 && fade {
			v := db.versions.Current()
			for l, files := range v.Levels {
				for _, f := range files {
					t.Logf("L%d %s [%s-%s] seq %d-%d dels %d tomb %v comp=%v", l, f.FileNum, f.Smallest, f.Largest, f.SmallestSeq, f.LargestSeq, f.NumDeletions, time.Unix(0, int64(f.OldestTombstoneTime)).UTC(), f.Compacting)
				}
			}
			v.Unref()
			t.Logf("now %v, metrics %+v", now.UTC(), db.Metrics().DeletePersistence)
		}
		if !fade {
			continue
		}
		m := db.Metrics().DeletePersistence
		if m.FilesPastTTL != 0 || m.MemtablesPastTTL != 0 {
			t.Errorf("step %d: %d tables and %d memtables past their deadline after the work settled\n%s\n%s",
				step, m.FilesPastTTL, m.MemtablesPastTTL, db.Metrics(), db.versionString())
		}
		if m.OldestTombstoneAge > d {
			t.Errorf("step %d: oldest tombstone %v old, past the threshold %v", step, m.OldestTombstoneAge, d)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if fade && (len(deletedAt) == 0 || compactions+db.Metrics().Compact.Count == 0) {
		t.Fatalf("nothing was deleted (%d) or compacted:\n%s", len(deletedAt), db.Metrics())
	}
	return violations
}

// TestDeletePersistenceBoundCanFail runs the bound test with the threshold
// off: deleted values must then be found on disk long after their delete,
// or the bound test would prove nothing.
func TestDeletePersistenceBoundCanFail(t *testing.T) {
	if v := runDeletePersistenceBound(t, 1, false); v == 0 {
		t.Fatal("with no threshold every deleted value still left the files in time: the bound test cannot fail")
	}
}

// TestDeletePersistenceSnapshot checks that a snapshot keeps what it sees
// past the threshold, and that once it is released the deleted value goes
// at once (its deadline having passed), without writes or time passing.
func TestDeletePersistenceSnapshot(t *testing.T) {
	const d = time.Minute
	clock := newFakeClock(0)
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.Compression = NoCompression
	opts.Clock = clock
	opts.DeletePersistenceThreshold = d
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 200 {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), markerValue(i, 60), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CompactRange(nil, nil); err != nil { // the values at the bottom level
		t.Fatal(err)
	}
	snap := db.NewSnapshot()
	if err := db.Delete([]byte("k0007"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("k0100"), []byte("k0110"), nil); err != nil {
		t.Fatal(err)
	}
	gone := []int{7, 100, 101, 109}
	clock.Advance(2 * d)
	settle(t, db, clock)
	found := markersIn(t, fs, "/db")
	for _, id := range gone {
		if _, ok := found[id]; !ok {
			t.Fatalf("write %d left the files while a snapshot sees it", id)
		}
	}
	if v, err := db.Get([]byte("k0007"), &ReadOptions{Snapshot: snap}); err != nil || !bytes.Equal(v, markerValue(7, 60)) {
		t.Fatalf("Get at the snapshot = %q, %v", v, err)
	}
	if m := db.Metrics().DeletePersistence; m.FilesPastTTL == 0 {
		t.Fatalf("no table past its deadline while the snapshot holds it back: %+v\n%s", m, db.versionString())
	}
	snap.Release()
	settle(t, db, clock) // the clock does not move
	found = markersIn(t, fs, "/db")
	for _, id := range gone {
		if files, ok := found[id]; ok {
			t.Errorf("write %d is still in %v after the snapshot's release", id, files)
		}
	}
	if _, ok := found[8]; !ok {
		t.Error("the live write 8 is in no file")
	}
	if m := db.Metrics().DeletePersistence; m.FilesPastTTL != 0 {
		t.Errorf("%d tables past their deadline after the release", m.FilesPastTTL)
	}
	if _, err := db.Get([]byte("k0007"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(k0007) after the delete: %v", err)
	}
}

// TestDeletePersistenceCloseStopsTimer checks that Close stops the armed
// timer, and that a DB without a threshold arms none.
func TestDeletePersistenceCloseStopsTimer(t *testing.T) {
	for _, threshold := range []time.Duration{0, time.Hour} {
		clock := newFakeClock(0)
		opts := testOptions(vfs.NewMem())
		opts.Clock = clock
		opts.DeletePersistenceThreshold = threshold
		db, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Delete([]byte("a"), nil); err != nil {
			t.Fatal(err)
		}
		pending := func() int {
			clock.mu.Lock()
			defer clock.mu.Unlock()
			n := 0
			for _, tm := range clock.timers {
				if !tm.done {
					n++
				}
			}
			return n
		}
		if got, want := pending(), map[bool]int{false: 0, true: 1}[threshold > 0]; got != want {
			t.Fatalf("threshold %v: %d timers armed, want %d", threshold, got, want)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if n := pending(); n != 0 {
			t.Fatalf("threshold %v: %d timers still armed after Close", threshold, n)
		}
	}
}

// TestDeletePersistenceOnDisk runs on the operating system's file system
// with the real clock and a 2 s threshold: it writes values holding unique
// markers (compression off, so the markers are plain in the files), deletes
// most of them with point and range deletes, waits the threshold and a
// margin for the compactions to run, and finds no deleted marker in any
// file of the directory, while every live one is still there.
func TestDeletePersistenceOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 3 s of real time")
	}
	const d = 2 * time.Second
	dir := testdir.New(t)
	opts := &Options{
		CreateIfMissing:            true,
		FS:                         vfs.Default,
		Compression:                NoCompression,
		WriteBufferSize:            64 << 10,
		TargetFileSizeBase:         32 << 10,
		MaxBytesForLevelBase:       128 << 10,
		DeletePersistenceThreshold: d,
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 4000
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	for i := range n {
		if err := db.Put(key(i), markerValue(i, 100), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Every fourth key stays; ranges delete [k01000, k02000).
	for i := range n {
		if i%4 != 0 && (i < 1000 || i >= 2000) {
			if err := db.Delete(key(i), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.DeleteRange(key(1000), key(2000), nil); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if found := markersIn(t, vfs.Default, dir); len(found) < n/2 {
		t.Fatalf("right after the deletes only %d markers are on disk: the search does not work", len(found))
	}
	time.Sleep(time.Until(deleted.Add(d + time.Second)))
	found := markersIn(t, vfs.Default, dir)
	bad := 0
	for i := range n {
		_, ok := found[i]
		switch isLive := i%4 == 0 && (i < 1000 || i >= 2000); {
		case isLive && !ok:
			t.Errorf("the live value of %s is in no file", key(i))
		case !isLive && ok:
			if bad++; bad <= 5 {
				t.Errorf("the deleted value of %s is still in %v, %v after its delete", key(i), found[i], time.Since(deleted))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d deleted values still on disk\n%s", bad, db.Metrics())
	}
	if m := db.Metrics().DeletePersistence; m.FilesPastTTL != 0 || m.MemtablesPastTTL != 0 {
		t.Errorf("past their deadline: %d tables, %d memtables", m.FilesPastTTL, m.MemtablesPastTTL)
	}
	if _, err := db.Get(key(1500), nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(%s) = %v, want ErrNotFound", key(1500), err)
	}
}

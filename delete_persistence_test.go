package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/compact"
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

// fadeTestOptions are testOptions on fs with compression off (so that
// markers are plain in the files) and a delete persistence threshold d on
// clock.
func fadeTestOptions(fs vfs.FS, clock *fakeClock, d time.Duration) *Options {
	opts := testOptions(fs)
	opts.Compression = NoCompression
	opts.Clock = clock
	opts.DeletePersistenceThreshold = d
	return opts
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
		runDeletePersistenceBound(t, seed, true, nil)
	})
}

// TestDeletePersistenceBoundBlobFiles is TestDeletePersistenceBound with
// every value in a blob file (setBlobTestOptions): a deleted value is gone
// only once its blob file is, so blob files holding values of deleted keys
// (also the versions a key had before it was deleted, dropped earlier as
// overwritten) must be rewritten in time; with blob garbage collection on
// too (relocating by age, which must not keep a file past its deadline).
func TestDeletePersistenceBoundBlobFiles(t *testing.T) {
	for _, gc := range []bool{false, true} {
		t.Run(fmt.Sprintf("gc=%v", gc), func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
				runDeletePersistenceBound(t, seed, true, func(o *Options) {
					setBlobTestOptions(o)
					if gc {
						setBlobGCTestOptions(o)
						o.BlobGarbageCollectionAgeCutoff = 0.5
					}
				})
			})
		})
	}
}

// runDeletePersistenceBound runs the test with the options set changes
// (nil: none); with fade false the threshold is off and the test is
// expected to find deleted values (it shows that the test can fail).
func runDeletePersistenceBound(t *testing.T, seed uint64, fade bool, set func(*Options)) (violations int) {
	const d = time.Hour
	rng := rand.New(rand.NewPCG(seed, 12))
	clock := newFakeClock(0)
	fs := vfs.NewMem()
	opts := fadeTestOptions(fs, clock, d)
	if !fade {
		opts.DeletePersistenceThreshold = 0
	}
	if set != nil {
		set(opts)
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
	// current[i] is key i's value (nil: deleted or never written).
	current := make([][]byte, keys)
	// inBlobFiles counts the live writes found in blob files.
	inBlobFiles := 0
	nextID := 0
	deleteKey := func(i int, at time.Time) {
		for _, id := range versions[i] {
			deletedAt[id] = at
			delete(live, id)
		}
		versions[i] = nil
		current[i] = nil
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
					value := markerValue(id, 40+rng.IntN(80))
					if err := db.Put(key(i), value, nil); err != nil {
						t.Fatal(err)
					}
					current[i] = value
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
			files, ok := found[id]
			if !ok {
				t.Fatalf("step %d: the live write %d is in no file: the search does not work", step, id)
			}
			for _, f := range files {
				if strings.HasSuffix(f, ".blob") {
					inBlobFiles++
					break
				}
			}
		}
		for i, want := range current {
			got, err := db.Get(key(i), nil)
			if want == nil && !errors.Is(err, ErrNotFound) || want != nil && (err != nil || !bytes.Equal(got, want)) {
				t.Fatalf("step %d: Get(%s) = %.20q, %v; want %.20q", step, key(i), got, err, want)
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
			t.Errorf("step %d: %d files and %d memtables past their deadline after the work settled\n%s\n%s",
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
	if opts.EnableBlobFiles && inBlobFiles == 0 {
		t.Fatal("blob files are on, but no live value was ever in one")
	}
	// What the rewrites left is a sound database: shale check finds every
	// live blob file whole and every blob index reading back.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil || !rep.OK() {
		t.Fatalf("Check: %v\n%s", err, rep)
	}
	if db, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	return violations
}

// TestDeletePersistenceBoundCanFail runs the bound test with the threshold
// off: deleted values must then be found on disk long after their delete,
// or the bound test would prove nothing.
func TestDeletePersistenceBoundCanFail(t *testing.T) {
	if v := runDeletePersistenceBound(t, 1, false, nil); v == 0 {
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
	db, err := Open("/db", fadeTestOptions(fs, clock, d))
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
	runDeletePersistenceOnDisk(t, nil)
}

// TestDeletePersistenceOnDiskBlobFiles is TestDeletePersistenceOnDisk with
// every value in a blob file: the blob files holding deleted values are
// rewritten and removed from the directory within the threshold.
func TestDeletePersistenceOnDiskBlobFiles(t *testing.T) {
	runDeletePersistenceOnDisk(t, func(o *Options) {
		o.EnableBlobFiles = true
		o.MinBlobSize = 50
		o.BlobFileSize = 64 << 10
	})
}

// runDeletePersistenceOnDisk runs the test with the options set changes
// (nil: none).
func runDeletePersistenceOnDisk(t *testing.T, set func(*Options)) {
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
	if set != nil {
		set(opts)
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
	if opts.EnableBlobFiles {
		inBlob := 0
		for _, files := range found {
			for _, f := range files {
				if strings.HasSuffix(f, ".blob") {
					inBlob++
				}
			}
		}
		if inBlob == 0 {
			t.Error("blob files are on, but no live value is in one")
		}
	}
	if m := db.Metrics().DeletePersistence; m.FilesPastTTL != 0 || m.MemtablesPastTTL != 0 {
		t.Errorf("past their deadline: %d files, %d memtables", m.FilesPastTTL, m.MemtablesPastTTL)
	}
	if _, err := db.Get(key(1500), nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(%s) = %v, want ErrNotFound", key(1500), err)
	}
}

// TestDeletePersistenceBlobVersionsBeforeDelete checks the versions a key
// had before its delete: k=v1 lies in a blob file of L2, k=v2 in L1, and
// the delete in L0 when a compaction of L1 into L2 drops v1 as overwritten,
// with no tombstone among its inputs, half the threshold after the delete.
// The delete still deletes v1 (it was the key's value before v2), so the
// blob file holding it must go within the threshold of the delete: its
// garbage is dated by the delete above the compaction, not by the
// compaction. Undated, the file would keep v1 for as long as its other
// values live; dated by the compaction, it would go half a threshold late.
// Before compactions are turned on, Metrics counts the file past its
// deadline, and its garbage as old as the delete.
func TestDeletePersistenceBlobVersionsBeforeDelete(t *testing.T) {
	const d = time.Hour
	clock := newFakeClock(0)
	fs := vfs.NewMem()
	opts := fadeTestOptions(fs, clock, d)
	opts.NumLevels = 3
	opts.DisableDynamicLevelBytes = true
	opts.DisableAutoCompactions = true
	setBlobTestOptions(opts)
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	// Key 0 gets v1 (marker 1000) and v2 (marker 1001); keys 1 to 20 keep
	// their values (markers 1 to 20), in v1's blob file.
	for i := 1; i <= 20; i++ {
		if err := db.Put(key(i), markerValue(i, 60), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put(key(0), markerValue(1000, 60), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 2}); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(key(0), markerValue(1001, 60), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}); err != nil {
		t.Fatal(err)
	}
	deleted := clock.Now()
	if err := db.Delete(key(0), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(d / 2)
	// L1 into L2, as a size compaction would: the delete stays in L0.
	db.mu.Lock()
	v := db.versions.Current()
	co := db.compactOptions()
	c := compact.PickManual(v, &co, 1, nil, nil)
	if c == nil || c.OutputLevel != 2 || len(v.Levels[0]) != 1 {
		db.mu.Unlock()
		t.Fatalf("no L1->L2 compaction under the delete (%v):\n%s", c, v)
	}
	db.startCompactionLocked(c)
	db.mu.Unlock()
	err = db.runCompaction(c, v)
	db.mu.Lock()
	db.finishCompactionLocked(c)
	db.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if found := markersIn(t, fs, "/db"); len(found[1000]) == 0 || len(found[1001]) == 0 {
		t.Fatalf("v1 in %v, v2 in %v: the setup does not leave both on disk", found[1000], found[1001])
	}
	// Past the blob files' deadline (nine tenths of the threshold), with
	// compactions still off: the delete's table and v1's blob file are
	// past theirs, and v1's garbage is as old as the delete.
	clock.Advance(d/2 - d/20)
	m := db.Metrics().DeletePersistence
	if m.FilesPastTTL != 2 || m.BlobTTL != d-d/10 || m.OldestTombstoneAge != clock.Now().Sub(deleted) {
		t.Fatalf("metrics %+v, want 2 files (the delete's table, v1's blob file) past deadlines, a blob TTL of %v, the oldest tombstone %v old\n%s",
			m, d-d/10, clock.Now().Sub(deleted), db.versionString())
	}
	if err := db.SetOptions(map[string]string{"disable_auto_compactions": "false"}); err != nil {
		t.Fatal(err)
	}
	settle(t, db, clock)
	for !clock.Now().After(deleted.Add(d)) {
		found := markersIn(t, fs, "/db")
		for _, id := range []int{1000, 1001} {
			if files, ok := found[id]; ok {
				t.Fatalf("write %d of the deleted key, deleted %v ago (the blob files' deadline %v), is still in %v\n%s",
					id, clock.Now().Sub(deleted), d-d/10, files, db.versionString())
			}
		}
		clock.Advance(d / 32)
		settle(t, db, clock)
	}
	found := markersIn(t, fs, "/db")
	for _, id := range []int{1000, 1001} {
		if files, ok := found[id]; ok {
			t.Errorf("write %d of the deleted key, deleted %v ago (threshold %v), is still in %v\n%s",
				id, clock.Now().Sub(deleted), d, files, db.versionString())
		}
	}
	for i := 1; i <= 20; i++ {
		if got, err := db.Get(key(i), nil); err != nil || !bytes.Equal(got, markerValue(i, 60)) {
			t.Fatalf("Get(%s) = %.20q, %v", key(i), got, err)
		}
	}
	if _, err := db.Get(key(0), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%s) after its delete: %v", key(0), err)
	}
}

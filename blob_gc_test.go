package shale

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// blobGCKey and blobGCValue are the keys and values of the GC tests; round
// tells the writes of a key apart.
func blobGCKey(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }

func blobGCValue(i, round int) []byte {
	return append(blobTestValue(i), fmt.Sprintf("-round-%d", round)...)
}

// writeBlobGCRounds writes keys [0, n) with round 0, then, for each later
// round r, every step[r-1]-th key again, flushing after each round; want
// is updated with what each key holds.
func writeBlobGCRounds(t *testing.T, d *DB, n int, want map[int]int, steps ...int) {
	t.Helper()
	put := func(i, round int) {
		t.Helper()
		if err := d.Put(blobGCKey(i), blobGCValue(i, round), nil); err != nil {
			t.Fatal(err)
		}
		want[i] = round
	}
	for i := range n {
		put(i, 0)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	for r, step := range steps {
		for i := 0; i < n; i += step {
			put(i, r+1)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkBlobGCValues checks that every key reads back its value of round
// want[key], through Get and an iterator.
func checkBlobGCValues(t *testing.T, d *DB, want map[int]int) {
	t.Helper()
	for i, round := range want {
		got, err := d.Get(blobGCKey(i), nil)
		if err != nil || !bytes.Equal(got, blobGCValue(i, round)) {
			t.Fatalf("Get(%s) = %q, %v; want round %d", blobGCKey(i), got, err, round)
		}
	}
	it := d.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		var i int
		if _, err := fmt.Sscanf(string(it.Key()), "k%05d", &i); err != nil {
			t.Fatalf("unexpected key %q", it.Key())
		}
		if want := blobGCValue(i, want[i]); !bytes.Equal(it.Value(), want) {
			t.Fatalf("iterator at %s: %q, want %q", it.Key(), it.Value(), want)
		}
		n++
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("iterator saw %d keys, want %d", n, len(want))
	}
}

// liveBlobFiles returns the blob files of d's current version.
func liveBlobFiles(d *DB) []manifest.BlobFileMetadata {
	v := d.versions.Current()
	defer v.Unref()
	out := make([]manifest.BlobFileMetadata, len(v.BlobFiles))
	for i, b := range v.BlobFiles {
		out[i] = *b
	}
	return out
}

// TestBlobGCFullCompactRangeLeavesNoGarbage: with garbage collection on and
// an age cutoff of 1, a full CompactRange leaves no blob file holding
// garbage (the promise), removes every blob file written before it
// from the MANIFEST and the disk, counts what it moved (Metrics, the
// listener's BlobBytesRelocated), and every value reads back, before and
// after a reopen. Without garbage collection the same writes leave
// garbage: the check can fail.
func TestBlobGCFullCompactRangeLeavesNoGarbage(t *testing.T) {
	for _, gc := range []bool{false, true} {
		t.Run(fmt.Sprintf("gc=%v", gc), func(t *testing.T) {
			mem := vfs.NewMem()
			l := &recordingListener{}
			opts := blobTestOptions(mem)
			opts.DisableAutoCompactions = true
			opts.EventListener = l
			opts.EnableBlobGarbageCollection = gc
			opts.BlobGarbageCollectionAgeCutoff = 1
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if d != nil {
					d.Close()
				}
			}()
			want := map[int]int{}
			// Keys overwritten at different rates, so old blob files hold
			// garbage and live values side by side.
			writeBlobGCRounds(t, d, 300, want, 2, 3, 7)
			before := blobFileNums(t, mem)
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			d.deleteObsoleteFiles(false)
			checkBlobReferences(t, d)
			var garbage uint64
			for _, b := range liveBlobFiles(d) {
				garbage += b.GarbageBytes
				if gc && b.GarbageBytes != 0 {
					t.Errorf("blob file %s holds %d garbage bytes after a full compaction with GC", b.FileNum, b.GarbageBytes)
				}
			}
			m := d.Metrics()
			if !gc {
				if garbage == 0 {
					t.Fatal("without GC the overwritten values left no garbage: the test shows nothing")
				}
				if m.Blob.Relocated != 0 {
					t.Errorf("Metrics().Blob.Relocated = %d without GC", m.Blob.Relocated)
				}
				return
			}
			for _, num := range blobFileNums(t, mem) {
				if slices.Contains(before, num) {
					t.Errorf("blob file %s written before the compaction is still on disk", num)
				}
			}
			if m.Blob.Relocated != 300 || m.Blob.BytesRelocated == 0 || m.Blob.GarbageBytes != 0 {
				t.Errorf("Metrics().Blob = %+v, want 300 values relocated and no garbage", m.Blob)
			}
			checkBlobGCValues(t, d, want)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = nil
			var relocated uint64
			for _, c := range ofKind[CompactionInfo](l, "CompactionCompleted") {
				relocated += c.BlobBytesRelocated
			}
			if relocated != m.Blob.BytesRelocated {
				t.Errorf("the listener was told of %d bytes relocated, Metrics says %d", relocated, m.Blob.BytesRelocated)
			}
			if d, err = Open("/db", opts); err != nil {
				t.Fatal(err)
			}
			checkBlobGCValues(t, d, want)
			checkBlobReferences(t, d)
		})
	}
}

// TestBlobGCAgeCutoffRelocatesOldestFiles: with an age cutoff of 0.5 an L0
// compaction relocates the values of the older half of the blob files and
// passes the indexes into the younger half on: afterwards the older files
// are gone and the younger ones all still live.
func TestBlobGCAgeCutoffRelocatesOldestFiles(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want := map[int]int{}
	writeBlobGCRounds(t, d, 300, want, 2)
	files := liveBlobFiles(d)
	if len(files) < 4 {
		t.Fatalf("want at least 4 blob files, got %d", len(files))
	}
	if err := d.SetOptions(map[string]string{"enable_blob_garbage_collection": "true",
		"blob_garbage_collection_age_cutoff": "0.5"}); err != nil {
		t.Fatal(err)
	}
	// One compaction (L0 into L1): each compaction takes the cutoff of the
	// version it compacts, so a chain of them would move it on.
	if err := d.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}); err != nil {
		t.Fatal(err)
	}
	checkBlobReferences(t, d)
	after := liveBlobFiles(d)
	isLive := func(n base.FileNum) bool {
		return slices.ContainsFunc(after, func(b manifest.BlobFileMetadata) bool { return b.FileNum == n })
	}
	old := len(files) / 2 // int(0.5 * n)
	for i, b := range files {
		if i < old && isLive(b.FileNum) {
			t.Errorf("blob file %s, among the oldest half, is still live", b.FileNum)
		}
		if i >= old && !isLive(b.FileNum) {
			t.Errorf("blob file %s, among the youngest half, was deleted", b.FileNum)
		}
	}
	if m := d.Metrics(); m.Blob.Relocated == 0 || m.Blob.Relocated >= 300 {
		t.Errorf("Metrics().Blob.Relocated = %d, want some of the 300 values", m.Blob.Relocated)
	}
	checkBlobGCValues(t, d, want)
}

// TestBlobGCForceThresholdCompactsReferencingTables: tables that no size
// compaction would touch reference an old blob file half garbage. With the
// force threshold above that ratio nothing is picked; once it is at or
// below it, the picker forces compactions of those tables (reason
// blob-gc), the file goes, and no value is lost.
func TestBlobGCForceThresholdCompactsReferencingTables(t *testing.T) {
	mem := vfs.NewMem()
	l := &recordingListener{}
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	opts.EventListener = l
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]int{}
	// Round 0 in the last level; every other key rewritten and compacted
	// down too, so the old files are half garbage and their other half is
	// referenced by settled last-level tables.
	writeBlobGCRounds(t, d, 300, want)
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	old := liveBlobFiles(d)
	writeBlobGCRounds(t, d, 0, want)
	for i := 0; i < 300; i += 2 {
		if err := d.Put(blobGCKey(i), blobGCValue(i, 1), nil); err != nil {
			t.Fatal(err)
		}
		want[i] = 1
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	var ratio float64
	for _, b := range liveBlobFiles(d) {
		if b.FileNum == old[0].FileNum {
			ratio = float64(b.GarbageBytes) / float64(b.TotalBytes)
		}
	}
	if ratio < 0.3 || ratio > 0.7 {
		t.Fatalf("the oldest blob file is %.2f garbage, want about half", ratio)
	}
	pick := func(threshold float64) *compact.Compaction {
		co := d.compactOptions()
		co.BlobGC, co.BlobGCAgeCutoff, co.BlobGCForceThreshold = true, 1, threshold
		v := d.versions.Current()
		defer v.Unref()
		return compact.PickAuto(v, &co, compact.PickEnv{})
	}
	if c := pick(0.9); c != nil {
		t.Fatalf("force threshold 0.9 picked %s compaction L%d->L%d", c.Reason, c.Level, c.OutputLevel)
	}
	if c := pick(0.25); c == nil || c.Reason != compact.ReasonBlobGC || c.Level != c.OutputLevel {
		t.Fatalf("force threshold 0.25 picked %+v, want an in-place blob-gc rewrite", c)
	}
	// Outside the off-peak window only a forced compaction collects: the
	// forced ones must finish the job on their own.
	if err := d.SetOptions(map[string]string{"enable_blob_garbage_collection": "true",
		"blob_garbage_collection_age_cutoff": "1", "blob_garbage_collection_force_threshold": "0.25",
		"blob_garbage_collection_off_peak_window": offPeakWindowAvoiding(time.Now()),
		"disable_auto_compactions":                "false"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		gone := true
		for _, b := range liveBlobFiles(d) {
			gone = gone && !slices.ContainsFunc(old, func(o manifest.BlobFileMetadata) bool { return o.FileNum == b.FileNum })
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("old blob files still live after forced GC: %v", liveBlobFiles(d))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	checkBlobReferences(t, d)
	checkBlobGCValues(t, d, want)
	if err := d.Close(); err != nil { // every event delivered
		t.Fatal(err)
	}
	forced := 0
	for _, c := range ofKind[CompactionInfo](l, "CompactionCompleted") {
		if c.Reason == compact.ReasonBlobGC {
			forced++
			if c.Err != nil || c.BlobBytesRelocated == 0 || c.InputLevel != c.OutputLevel {
				t.Errorf("forced blob GC compaction: %+v", c)
			}
		}
	}
	if forced == 0 {
		t.Error("no compaction reported with reason blob-gc")
	}
}

// offPeakWindowAvoiding returns a one-minute window twelve hours from t.
func offPeakWindowAvoiding(t time.Time) string {
	s := t.UTC().Add(12 * time.Hour)
	return fmt.Sprintf("%02d:%02d-%02d:%02d", s.Hour(), s.Minute(), s.Hour(), s.Minute())
}

// TestBlobGCOffPeakWindow: an automatic compaction collects only inside
// BlobGarbageCollectionOffPeakWindow (windows spanning midnight too); a
// forced or manual one always; with GC off or no blob files, none. Bad
// windows are refused by Open and SetOptions, naming the option, and
// change nothing.
func TestBlobGCOffPeakWindow(t *testing.T) {
	for _, tc := range []struct {
		window string
		at     string // HH:MM UTC
		inside bool
	}{
		{"", "12:00", true},
		{"01:00-05:00", "01:00", true},
		{"01:00-05:00", "05:00", true},
		{"01:00-05:00", "05:01", false},
		{"01:00-05:00", "00:59", false},
		{"23:30-04:00", "23:45", true},
		{"23:30-04:00", "03:59", true},
		{"23:30-04:00", "12:00", false},
		{"00:00-23:59", "23:59", true},
		{"7:05-7:05", "07:05", true},
		{"7:05-7:05", "07:06", false},
	} {
		w, err := parseOffPeakWindow(tc.window)
		if err != nil {
			t.Fatalf("parseOffPeakWindow(%q): %v", tc.window, err)
		}
		at, _ := time.Parse("15:04", tc.at)
		if got := w.contains(time.Date(2026, 3, 4, at.Hour(), at.Minute(), 30, 0, time.UTC)); got != tc.inside {
			t.Errorf("window %q at %s: inside = %v, want %v", tc.window, tc.at, got, tc.inside)
		}
	}
	for _, bad := range []string{"1-2", "01:00", "24:00-01:00", "01:60-02:00", "01:00-02:00-03:00", "aa:bb-cc:dd", "01:0-02:00"} {
		if _, err := parseOffPeakWindow(bad); err == nil {
			t.Errorf("parseOffPeakWindow(%q) accepted", bad)
		}
		o := testOptions(vfs.NewMem())
		o.BlobGarbageCollectionOffPeakWindow = bad
		if _, err := Open("/db", o); err == nil || !strings.Contains(err.Error(), "BlobGarbageCollectionOffPeakWindow") {
			t.Errorf("Open with window %q: %v", bad, err)
		}
	}

	clock := newFakeClock(0)
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	opts.Clock = clock
	d := writeBlobDB(t, mem, opts, 50)
	defer d.Close()
	if err := d.SetOptions(map[string]string{"blob_garbage_collection_off_peak_window": "25:00-01:00"}); err == nil ||
		!strings.Contains(err.Error(), "blob_garbage_collection_off_peak_window") {
		t.Fatalf("SetOptions with a bad window: %v", err)
	}
	if got := d.GetOptions().BlobGarbageCollectionOffPeakWindow; got != "" {
		t.Fatalf("a refused SetOptions changed the window to %q", got)
	}
	v := d.versions.Current()
	defer v.Unref()
	collects := func(reason string) bool {
		return d.blobGCFor(&compact.Compaction{Reason: reason}, v, d.mutableOptions()) != nil
	}
	if collects(compact.ReasonSize) {
		t.Error("a compaction collects with GC off")
	}
	now := clock.Now().UTC() // 03:04
	for _, tc := range []struct {
		window               string
		size, forced, manual bool
	}{
		{"", true, true, true},
		{fmt.Sprintf("%02d:00-%02d:59", now.Hour(), now.Hour()), true, true, true},
		{offPeakWindowAvoiding(now), false, true, true},
	} {
		if err := d.SetOptions(map[string]string{"enable_blob_garbage_collection": "true",
			"blob_garbage_collection_off_peak_window": tc.window}); err != nil {
			t.Fatal(err)
		}
		if got := collects(compact.ReasonSize); got != tc.size {
			t.Errorf("window %q at %s: a size compaction collects = %v, want %v", tc.window, now.Format("15:04"), got, tc.size)
		}
		if got := collects(compact.ReasonBlobGC); got != tc.forced {
			t.Errorf("window %q: a forced compaction collects = %v", tc.window, got)
		}
		if got := collects(compact.ReasonManual); got != tc.manual {
			t.Errorf("window %q: a manual compaction collects = %v", tc.window, got)
		}
	}
}

// TestBlobGCTrivialMoveRefused: a compaction that would move a table
// referencing an old blob file holding garbage rewrites it instead (with
// GC on), relocating its values; a table whose blob files hold no garbage,
// or any table with GC off, is moved.
func TestBlobGCTrivialMoveRefused(t *testing.T) {
	for _, tc := range []struct {
		name          string
		gc, garbage   bool
		wantRewritten bool
	}{
		{"gc-garbage", true, true, true},
		{"gc-no-garbage", true, false, false},
		{"no-gc-garbage", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobTestOptions(mem)
			opts.DisableAutoCompactions = true
			opts.TargetFileSizeBase = 4 << 10
			const n = 1000
			d := writeBlobDB(t, mem, opts, n)
			defer d.Close()
			toL1 := &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}
			// Several L1 tables sharing blob files; then k00000's old value
			// is dropped, which leaves garbage in its blob file, which
			// other L1 tables still reference.
			if err := d.CompactRangeWithOptions(nil, nil, toL1); err != nil {
				t.Fatal(err)
			}
			if err := d.Put([]byte("k00000"), []byte("new value of k00000"), nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.CompactRangeWithOptions([]byte("k00000"), []byte("k00000"), toL1); err != nil {
				t.Fatal(err)
			}
			if err := d.SetOptions(map[string]string{"enable_blob_garbage_collection": fmt.Sprint(tc.gc),
				"blob_garbage_collection_age_cutoff": "1"}); err != nil {
				t.Fatal(err)
			}
			v := d.versions.Current()
			var f *manifest.FileMetadata
			for _, t1 := range v.Levels[1] {
				garbage := false
				for _, n := range t1.BlobFiles {
					garbage = garbage || v.BlobFile(n).GarbageBytes > 0
				}
				if garbage == tc.garbage {
					f = t1
				}
			}
			if f == nil {
				v.Unref()
				t.Fatalf("no L1 table with garbage = %v in its blob files: %v", tc.garbage, v)
			}
			c := &compact.Compaction{Level: 1, OutputLevel: 2, Inputs: [2][]*manifest.FileMetadata{{f}}, Reason: compact.ReasonSize,
				MaxOutputFileSize: 1 << 30}
			if !c.IsTrivialMove() {
				v.Unref()
				t.Fatal("the compaction is no trivial move to begin with")
			}
			d.mu.Lock()
			d.startCompactionLocked(c)
			d.mu.Unlock()
			err := d.runCompaction(c, v)
			d.mu.Lock()
			d.finishCompactionLocked(c)
			d.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			v = d.versions.Current()
			defer v.Unref()
			moved := len(v.Levels[2]) == 1 && v.Levels[2][0].FileNum == f.FileNum
			if moved == tc.wantRewritten {
				t.Errorf("table moved = %v, want rewritten = %v (L2: %v)", moved, tc.wantRewritten, v.Levels[2])
			}
			if m := d.Metrics(); (m.Blob.Relocated > 0) != tc.wantRewritten {
				t.Errorf("Metrics().Blob.Relocated = %d", m.Blob.Relocated)
			}
			checkBlobReferences(t, d)
			if got, err := d.Get([]byte("k00000"), nil); err != nil || string(got) != "new value of k00000" {
				t.Fatalf("Get(k00000) = %q, %v", got, err)
			}
			for i := 1; i < n; i++ {
				if got, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil || !bytes.Equal(got, blobTestValue(i)) {
					t.Fatalf("Get(k%05d) = %q, %v", i, got, err)
				}
			}
		})
	}
}

// TestBlobGCReadFaultFailsCompactionLosesNothing: a read error in an old
// blob file while a compaction relocates its values fails the compaction
// (a background error, the DB read-only) and changes nothing: every value
// reads back, and after a reopen without the fault the compaction succeeds.
// A flipped byte in a record fails it the same way, as corruption.
func TestBlobGCReadFaultFailsCompactionLosesNothing(t *testing.T) {
	for _, mode := range []string{"read-error", "corruption"} {
		t.Run(mode, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs := errorfs.New(mem, 1)
			opts := blobTestOptions(ffs)
			opts.DisableAutoCompactions = true
			opts.BlockCacheSize = -1 // reads reach the files
			setBlobGCTestOptions(opts)
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int]int{}
			writeBlobGCRounds(t, d, 200, want, 2)
			target := liveBlobFiles(d)[0].FileNum
			name := d.blobPath(target)
			var restore func()
			switch mode {
			case "read-error":
				ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: name})
				restore = ffs.ClearRules
			case "corruption":
				data := readFile(t, mem, name)
				orig := slices.Clone(data)
				data[len(data)/2] ^= 0x40
				writeFile(t, mem, name, data)
				restore = func() { writeFile(t, mem, name, orig) }
			}
			d.fileCache.evictObsolete(fileKindBlob, target) // reopen the damaged file
			err = d.CompactRange(nil, nil)
			if err == nil {
				t.Fatal("CompactRange relocating from a failing blob file succeeded")
			}
			if mode == "corruption" && !errors.Is(err, base.ErrCorruption) {
				t.Errorf("CompactRange: %v, want a corruption error", err)
			}
			restore()
			d.fileCache.evictObsolete(fileKindBlob, target)
			checkBlobGCValues(t, d, want)
			if err := d.Resume(); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if d, err = Open("/db", opts); err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			checkBlobReferences(t, d)
			checkBlobGCValues(t, d, want)
			for _, b := range liveBlobFiles(d) {
				if b.GarbageBytes != 0 {
					t.Errorf("blob file %s holds garbage after the full compaction", b.FileNum)
				}
			}
		})
	}
}

// TestStatisticsBlobTickers: the blob tickers count what Metrics().Blob
// and the flushes and compactions did: blob file bytes written (the live
// blob files' sizes after flushes alone), reads and bytes read of blob
// values (Get with the cache off), cache hits (Get again with it on),
// and the values and bytes garbage collection relocated; a closed DB's
// counts stay, and Reset zeroes them.
func TestStatisticsBlobTickers(t *testing.T) {
	mem := vfs.NewMem()
	st := NewStatistics()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	opts.Statistics = st
	setBlobGCTestOptions(opts)
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	// Every other key overwritten: the old blob files hold garbage for
	// the compaction to collect.
	writeBlobGCRounds(t, d, 100, map[int]int{}, 2)
	var size uint64
	for _, b := range liveBlobFiles(d) {
		size += b.Size
	}
	if got := st.TickerCount(TickerBlobFileBytesWritten); got != size || size == 0 {
		t.Errorf("%s = %d, want the %d bytes of the flushed blob files", TickerBlobFileBytesWritten, got, size)
	}
	for i := range 100 {
		if _, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), &ReadOptions{FillCache: true}); err != nil {
			t.Fatal(err)
		}
	}
	m := d.Metrics()
	if st.TickerCount(TickerBlobFileReads) != m.Blob.Reads || st.TickerCount(TickerBlobFileBytesRead) != m.Blob.BytesRead || m.Blob.Reads == 0 {
		t.Errorf("blob read tickers %d/%d, Metrics %+v", st.TickerCount(TickerBlobFileReads), st.TickerCount(TickerBlobFileBytesRead), m.Blob)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	m = d.Metrics()
	if st.TickerCount(TickerBlobGCNumKeysRelocated) != m.Blob.Relocated || st.TickerCount(TickerBlobGCBytesRelocated) != m.Blob.BytesRelocated ||
		m.Blob.Relocated != 100 {
		t.Errorf("GC tickers %d/%d, Metrics %+v", st.TickerCount(TickerBlobGCNumKeysRelocated), st.TickerCount(TickerBlobGCBytesRelocated), m.Blob)
	}
	if st.TickerCount(TickerBlobFileBytesWritten) <= size {
		t.Errorf("%s did not grow with the relocation's blob files", TickerBlobFileBytesWritten)
	}
	if st.TickerCount(TickerBlobCacheHits) != m.Blob.CacheHits {
		t.Errorf("%s = %d, Metrics %d", TickerBlobCacheHits, st.TickerCount(TickerBlobCacheHits), m.Blob.CacheHits)
	}
	reads := st.TickerCount(TickerBlobFileReads)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := st.TickerCount(TickerBlobFileReads); got != reads {
		t.Errorf("after Close %s = %d, want %d kept", TickerBlobFileReads, got, reads)
	}
	st.Reset()
	for _, tk := range []Ticker{TickerBlobFileBytesRead, TickerBlobFileReads, TickerBlobFileBytesWritten, TickerBlobGCNumKeysRelocated} {
		if got := st.TickerCount(tk); got != 0 {
			t.Errorf("after Reset %s = %d", tk, got)
		}
	}
}

// blobGCCompactionLog records the reason and relocated bytes of every
// compaction that completes.
type blobGCCompactionLog struct {
	NoopEventListener
	mu   sync.Mutex
	jobs []CompactionInfo
}

func (l *blobGCCompactionLog) OnCompactionCompleted(info CompactionInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.jobs = append(l.jobs, info)
}

// TestBlobGCMaxRelocationBytesBoundsEachCompaction: with every blob file
// old enough (age cutoff 1), an automatic L0 compaction bounded by
// BlobGarbageCollectionMaxRelocationBytes relocates at most the bound (plus
// one file's share), and compactions for the files it left out
// (blob-gc-continued) follow until every blob file of before is gone; no
// value is lost and no index dangles. Without the bound one compaction
// relocates it all.
func TestBlobGCMaxRelocationBytesBoundsEachCompaction(t *testing.T) {
	const bound = 8 << 10
	for _, tc := range []struct {
		name    string
		bound   int64
		bounded bool
	}{{"bounded", bound, true}, {"unbounded", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobTestOptions(mem)
			opts.DisableAutoCompactions = true
			opts.EnableBlobGarbageCollection = true
			opts.BlobGarbageCollectionAgeCutoff = 1
			opts.BlobGarbageCollectionMaxRelocationBytes = tc.bound
			opts.Level0FileNumCompactionTrigger = 3
			log := &blobGCCompactionLog{}
			opts.EventListener = log
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			want := map[int]int{}
			writeBlobGCRounds(t, d, 300, want, 2, 3)
			before := liveBlobFiles(d)
			if len(before) < 8 {
				t.Fatalf("want at least 8 blob files, got %d", len(before))
			}
			if err := d.SetOptions(map[string]string{"disable_auto_compactions": "false"}); err != nil {
				t.Fatal(err)
			}
			if err := d.WaitForCompact(nil); err != nil {
				t.Fatal(err)
			}
			checkBlobReferences(t, d)
			checkBlobGCValues(t, d, want)
			after := liveBlobFiles(d)
			for _, b := range before {
				if slices.ContainsFunc(after, func(a manifest.BlobFileMetadata) bool { return a.FileNum == b.FileNum }) {
					t.Errorf("blob file %s of before the compactions is still live", b.FileNum)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			var continued int
			var most, total uint64
			for _, j := range log.jobs {
				if j.Reason == compact.ReasonBlobGCContinued {
					continued++
				}
				most = max(most, j.BlobBytesRelocated)
				total += j.BlobBytesRelocated
			}
			t.Logf("%d compactions, %d continued; relocated %d bytes, at most %d in one", len(log.jobs), continued, total, most)
			if total <= bound {
				t.Fatalf("relocated %d bytes in all, want more than the bound %d for the test to mean something", total, bound)
			}
			if tc.bounded {
				if limit := uint64(bound + opts.BlobFileSize); most > limit {
					t.Errorf("a compaction relocated %d bytes, want at most %d (the bound and one file)", most, limit)
				}
				if continued == 0 {
					t.Errorf("no %s compaction", compact.ReasonBlobGCContinued)
				}
			} else {
				if continued != 0 {
					t.Errorf("%d %s compactions without a bound", continued, compact.ReasonBlobGCContinued)
				}
				if most != total {
					t.Errorf("a compaction relocated %d of %d bytes, want all in one without a bound", most, total)
				}
			}
		})
	}
}

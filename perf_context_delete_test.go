package shale

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// openCountingDB opens a DB on a MemFS with automatic compactions off, so
// that the shapes the tests build stay as built.
func openCountingDB(t *testing.T, set func(*Options)) *DB {
	t.Helper()
	o := &Options{CreateIfMissing: true, FS: vfs.NewMem(), DisableAutoCompactions: true, WriteBufferSize: 1 << 20}
	if set != nil {
		set(o)
	}
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func countKey(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }

// iterCounts are the delete counters of a PerfContext.
type iterCounts struct{ key, del, recent, rangeReseek uint64 }

func countsOf(p *PerfContext) iterCounts {
	return iterCounts{p.InternalKeySkippedCount, p.InternalDeleteSkippedCount, p.InternalRecentSkippedCount, p.InternalRangeDelReseekCount}
}

// scanCounted runs moves on a new iterator reading with a PerfContext and
// returns the keys the moves landed on ("." for none) and the counts: those
// of Iterator.Stats before Close, which must equal what Close put in the
// PerfContext.
func scanCounted(t *testing.T, d *DB, ro ReadOptions, moves func(it *Iterator) []string) ([]string, iterCounts) {
	t.Helper()
	var pc PerfContext
	ro.PerfContext = &pc
	it := d.NewIterator(&ro)
	keys := moves(it)
	stats := it.Stats()
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := countsOf(&pc), countsOf(&stats); got != want {
		t.Fatalf("ReadOptions.PerfContext after Close has %+v, Iterator.Stats before it %+v", got, want)
	}
	return keys, countsOf(&stats)
}

func forwardScan(it *Iterator) []string {
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	return keys
}

func backwardScan(it *Iterator) []string {
	var keys []string
	for ok := it.Last(); ok; ok = it.Prev() {
		keys = append(keys, string(it.Key()))
	}
	return keys
}

// TestPerfContextDeletedPrefix is the seed's scan at a small scale: 100
// keys in a table, the lowest 90 deleted in the memtable. Forward, each
// deleted key costs one delete skipped and one key skipped (the value the
// tombstone hides), and each Next one key skipped (the key it leaves).
// Deleted keys are distinct keys, so no setting of
// MaxSequentialSkipInIterations seeks past them forward. Backward, as in
// RocksDB, a key is decided by stepping up from its oldest entry until
// MaxSequentialSkipInIterations entries have been stepped over, then by a
// seek to its newest: with the default both entries of a deleted key are
// stepped over (two keys skipped, the tombstone a delete too); with 1 the
// seek finds the tombstone, which counts when the iterator steps back over
// it (two keys skipped, no delete); with RocksDB's 0 the seek comes first
// and only the tombstone is stepped back over (one key skipped).
func TestPerfContextDeletedPrefix(t *testing.T) {
	for _, c := range []struct {
		maxSkip int
		bwd     iterCounts
	}{
		{8, iterCounts{key: 10 + 2*90, del: 90}},
		{1, iterCounts{key: 10 + 2*90}},
		{-1, iterCounts{key: 10 + 90}},
	} {
		t.Run(fmt.Sprintf("max-skip-%d", c.maxSkip), func(t *testing.T) {
			d := openCountingDB(t, func(o *Options) { o.MaxSequentialSkipInIterations = c.maxSkip })
			for i := range 100 {
				if err := d.Put(countKey(i), []byte("v"), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			for i := range 90 {
				if err := d.Delete(countKey(i), nil); err != nil {
					t.Fatal(err)
				}
			}
			keys, got := scanCounted(t, d, ReadOptions{}, func(it *Iterator) []string {
				var keys []string
				for ok := it.First(); ok; ok = it.Next() {
					if len(keys) == 0 {
						first := it.Stats()
						if c := countsOf(&first); c != (iterCounts{key: 90, del: 90}) {
							t.Errorf("First counted %+v, want 90 keys and 90 deletes skipped", c)
						}
					}
					keys = append(keys, string(it.Key()))
				}
				return keys
			})
			if len(keys) != 10 || keys[0] != "k090" {
				t.Fatalf("forward scan found %v", keys)
			}
			// 90 hidden values and the 10 live keys left by Next.
			if want := (iterCounts{key: 100, del: 90}); got != want {
				t.Errorf("forward scan counted %+v, want %+v", got, want)
			}
			keys, got = scanCounted(t, d, ReadOptions{}, backwardScan)
			if len(keys) != 10 || keys[9] != "k090" {
				t.Fatalf("backward scan found %v", keys)
			}
			if got != c.bwd {
				t.Errorf("backward scan counted %+v, want %+v", got, c.bwd)
			}
		})
	}
}

// TestPerfContextRecentVersionsReseek reads at a snapshot under which one
// key was overwritten 20 times: the newer versions are recent skips, until
// more than MaxSequentialSkipInIterations of them in a row make the
// iterator seek to the newest version the snapshot sees.
func TestPerfContextRecentVersionsReseek(t *testing.T) {
	for _, c := range []struct {
		maxSkip int
		recent  uint64
	}{
		// The first newer version sets the run's key, each one after it
		// adds to the run; the seek comes once the run exceeds the setting.
		{maxSkip: 0, recent: 1 + 9 + 1}, // default 8
		{maxSkip: 2, recent: 1 + 3 + 1},
		{maxSkip: -1, recent: 1 + 1 + 1}, // RocksDB's 0
		{maxSkip: 1000, recent: 20 + 1},  // never within 20 versions
	} {
		t.Run(fmt.Sprintf("max-skip-%d", c.maxSkip), func(t *testing.T) {
			d := openCountingDB(t, func(o *Options) { o.MaxSequentialSkipInIterations = c.maxSkip })
			if err := d.Put([]byte("a"), []byte("old"), nil); err != nil {
				t.Fatal(err)
			}
			snap := d.NewSnapshot()
			defer snap.Release()
			for i := range 20 {
				if err := d.Put([]byte("a"), fmt.Appendf(nil, "new%d", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Put([]byte("b"), []byte("new"), nil); err != nil {
				t.Fatal(err)
			}
			var value []byte
			keys, got := scanCounted(t, d, ReadOptions{Snapshot: snap}, func(it *Iterator) []string {
				var keys []string
				for ok := it.First(); ok; ok = it.Next() {
					keys = append(keys, string(it.Key()))
					if value == nil {
						value = bytes.Clone(it.Value())
					}
				}
				return keys
			})
			if strings.Join(keys, ",") != "a" || string(value) != "old" {
				t.Fatalf("scan at the snapshot found %v (a=%q)", keys, value)
			}
			// a@1 is left by the final Next (a key skipped); b is newer than
			// the snapshot (the last recent skip).
			if want := (iterCounts{key: 1, recent: c.recent}); got != want {
				t.Errorf("counted %+v, want %+v", got, want)
			}
		})
	}
}

// TestPerfContextOlderVersionsReseek keeps 20 versions of a key in a table
// (a snapshot after each write), then reads the newest: Next from it skips
// the older versions and, after 9 of them (the default 8 exceeded), seeks
// past the key, in an L0 table and in a level below it.
func TestPerfContextOlderVersionsReseek(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compact), func(t *testing.T) {
			stats := NewStatistics()
			d := openCountingDB(t, func(o *Options) { o.Statistics = stats })
			for i := range 20 {
				if err := d.Put([]byte("a"), fmt.Appendf(nil, "v%d", i), nil); err != nil {
					t.Fatal(err)
				}
				defer d.NewSnapshot().Release()
			}
			if err := d.Put([]byte("b"), []byte("b"), nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if compact {
				if err := d.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
				if m := d.Metrics(); m.Levels[0].NumFiles != 0 {
					t.Fatalf("L0 still holds %d files after CompactRange", m.Levels[0].NumFiles)
				}
			}
			keys, got := scanCounted(t, d, ReadOptions{}, forwardScan)
			if strings.Join(keys, ",") != "a,b" {
				t.Fatalf("scan found %v", keys)
			}
			// Next from a: a itself, then 9 older versions before the seek;
			// Next from b: b.
			if want := (iterCounts{key: 1 + 9 + 1}); got != want {
				t.Errorf("counted %+v, want %+v", got, want)
			}
			// The seek past a's versions, counted when the iterator closed.
			if n := stats.TickerCount(TickerNumberOfReseeksInIteration); n != 1 {
				t.Errorf("%s = %d, want 1", TickerNumberOfReseeksInIteration, n)
			}
		})
	}
}

// TestPerfContextRangeDelReseek deletes the middle of a table's keys with a
// range tombstone in the memtable: a scan in either direction jumps past
// them with one seek of the table's source (counted), and counts them
// neither as deletes nor as keys skipped, since the merge never returns
// them. It checks an L0 table and a table of a lower level.
func TestPerfContextRangeDelReseek(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compact), func(t *testing.T) {
			d := openCountingDB(t, nil)
			for i := range 10 {
				if err := d.Put(countKey(i), []byte("v"), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if compact {
				if err := d.CompactRange(nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.DeleteRange(countKey(2), countKey(7), nil); err != nil {
				t.Fatal(err)
			}
			keys, got := scanCounted(t, d, ReadOptions{}, forwardScan)
			if want := "k000,k001,k007,k008,k009"; strings.Join(keys, ",") != want {
				t.Fatalf("forward scan found %v, want %s", keys, want)
			}
			if want := (iterCounts{key: 5, rangeReseek: 1}); got != want {
				t.Errorf("forward scan counted %+v, want %+v", got, want)
			}
			keys, got = scanCounted(t, d, ReadOptions{}, backwardScan)
			if want := "k009,k008,k007,k001,k000"; strings.Join(keys, ",") != want {
				t.Fatalf("backward scan found %v, want %s", keys, want)
			}
			if want := (iterCounts{key: 5, rangeReseek: 1}); got != want {
				t.Errorf("backward scan counted %+v, want %+v", got, want)
			}
		})
	}
}

// TestPerfContextGetDeleted checks that Get and MultiGet count a key found
// deleted, by a point or a range tombstone, and nothing for a key found or
// never written.
func TestPerfContextGetDeleted(t *testing.T) {
	d := openCountingDB(t, nil)
	for _, k := range []string{"live", "deleted", "ranged", "flushed-deleted"} {
		if err := d.Put([]byte(k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete([]byte("flushed-deleted"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete([]byte("deleted"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRange([]byte("ranged"), []byte("ranged\x00"), nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key     string
		found   bool
		deleted uint64
	}{
		{"live", true, 0}, {"absent", false, 0}, {"deleted", false, 1}, {"ranged", false, 1}, {"flushed-deleted", false, 1},
	} {
		var pc PerfContext
		_, err := d.Get([]byte(c.key), &ReadOptions{PerfContext: &pc})
		if found := err == nil; found != c.found || (err != nil && !errors.Is(err, ErrNotFound)) {
			t.Fatalf("Get(%s): %v", c.key, err)
		}
		if pc.InternalDeleteSkippedCount != c.deleted {
			t.Errorf("Get(%s) counted %d deletes, want %d", c.key, pc.InternalDeleteSkippedCount, c.deleted)
		}
		if pc.InternalKeySkippedCount != 0 || pc.InternalRecentSkippedCount != 0 || pc.InternalRangeDelReseekCount != 0 {
			t.Errorf("Get(%s) counted skipped keys: %+v", c.key, countsOf(&pc))
		}
	}
	var pc PerfContext
	keys := [][]byte{[]byte("live"), []byte("absent"), []byte("deleted"), []byte("ranged"), []byte("flushed-deleted")}
	for _, opt := range []bool{false, true} {
		pc = PerfContext{}
		_, errs := d.MultiGet(keys, &ReadOptions{PerfContext: &pc, AsyncIO: opt, OptimizeMultiGetForIO: opt})
		if errs[0] != nil {
			t.Fatalf("MultiGet: live: %v", errs[0])
		}
		if pc.InternalDeleteSkippedCount != 3 {
			t.Errorf("MultiGet (AsyncIO %v) counted %d deletes, want 3", opt, pc.InternalDeleteSkippedCount)
		}
	}
}

// TestMaxSequentialSkipInIterationsOptionsFile checks the option's default
// and its round trip through the OPTIONS file, which records RocksDB's
// value (0 for a negative setting).
func TestMaxSequentialSkipInIterationsOptionsFile(t *testing.T) {
	for _, c := range []struct {
		set, after int
		file       string
	}{
		{0, 8, "max_sequential_skip_in_iterations=8"},
		{3, 3, "max_sequential_skip_in_iterations=3"},
		{-1, -1, "max_sequential_skip_in_iterations=0"},
		{-7, -1, "max_sequential_skip_in_iterations=0"},
	} {
		o := (&Options{MaxSequentialSkipInIterations: c.set}).EnsureDefaults()
		if o.MaxSequentialSkipInIterations != c.after {
			t.Errorf("EnsureDefaults made %d into %d, want %d", c.set, o.MaxSequentialSkipInIterations, c.after)
		}
		file := o.encodeOptionsFile()
		if !bytes.Contains(file, []byte("\n  "+c.file+"\n")) {
			t.Errorf("OPTIONS file for %d lacks %q:\n%s", c.set, c.file, file)
		}
		back, err := ParseOptionsFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if back.EnsureDefaults().MaxSequentialSkipInIterations != c.after {
			t.Errorf("OPTIONS file for %d parses back as %d", c.set, back.MaxSequentialSkipInIterations)
		}
	}
}

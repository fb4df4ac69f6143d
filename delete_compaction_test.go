package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// deleteScanResult is what one run of the seed scenario measured.
type deleteScanResult struct {
	// scan is the time to read the first 500 live keys from the start.
	scan time.Duration
	// tombstones counts the tombstones left in the tables whose key range
	// meets the keys the scan passes over (those before the first live
	// key, and the 500 it reads): the tombstones a scan may have to step
	// over.
	tombstones uint64
	// blocks counts the data blocks the scan read or found in the cache.
	blocks   uint64
	writeAmp float64
	metrics  string
}

func deleteScanKey(i int) []byte { return []byte(fmt.Sprintf("test_compaction_%09d", i)) }

// runDeleteScan runs the seed's scenario at n keys: n keys with one prefix
// written in increasing order with 500-byte values, the lowest 90% deleted,
// and, once background compactions have settled, a scan from the start for
// the first 500 live keys. Flushes after the writes and after the deletes
// stand in for the memtables that fill at the seed's scale (10M keys) and
// would not at this one; they change no option.
func runDeleteScan(t *testing.T, dir string, opts *Options, n int) deleteScanResult {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	value := make([]byte, 500)
	b := db.NewBatch()
	for i := range n {
		for j := range value {
			value[j] = byte('a' + rng.IntN(26))
		}
		b.Put(deleteScanKey(i), value)
		if i%1000 == 999 || i == n-1 {
			if err := db.Write(b, nil); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	deleted := n - n/10
	for i := range deleted {
		if err := db.Delete(deleteScanKey(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}

	var res deleteScanResult
	start := time.Now()
	it := db.NewIterator(nil)
	got := 0
	for ok := it.First(); ok && got < 500; ok = it.Next() {
		if want := deleteScanKey(deleted + got); string(it.Key()) != string(want) {
			t.Fatalf("live key %d is %q, want %q", got, it.Key(), want)
		}
		got++
	}
	res.scan = time.Since(start)
	st := it.Stats()
	res.blocks = st.BlockReads + st.BlockCacheHits
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if got != 500 {
		t.Fatalf("scan found %d live keys, want 500", got)
	}
	last := deleteScanKey(deleted + 499)
	for _, f := range db.GetLiveFilesMetaData() {
		if string(f.SmallestKey) <= string(last) {
			res.tombstones += f.NumDeletions
		}
	}
	m := db.Metrics()
	res.writeAmp = m.WriteAmp
	res.metrics = m.String()
	return res
}

// TestDeleteScanSettlesWithDefaultOptions is the seed's scenario at 100,000
// keys with nil Options: once background compactions settle, the first 500
// live keys are read without stepping over the 90,000 tombstones, because
// the table of tombstones is tombstone-dense and is compacted, with the
// data it deletes, into the last level, where both go. With the built-in
// policy off, the tombstones stay and the scan steps over all of them.
// SHALE_DELETESCAN_KEYS=n runs it at n keys (the measurements are logged).
func TestDeleteScanSettlesWithDefaultOptions(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 30_000
	}
	if s := os.Getenv("SHALE_DELETESCAN_KEYS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	on := runDeleteScan(t, testdir.New(t), nil, n)
	t.Logf("default options: first 500 live keys in %v, %d tombstones in the tables the scan meets, %d blocks, write amp %.2f\n%s",
		on.scan, on.tombstones, on.blocks, on.writeAmp, on.metrics)
	off := runDeleteScan(t, testdir.New(t), &Options{CreateIfMissing: true, DisableDeleteAwareCompaction: true}, n)
	t.Logf("DisableDeleteAwareCompaction: first 500 live keys in %v, %d tombstones in the tables the scan meets, %d blocks, write amp %.2f\n%s",
		off.scan, off.tombstones, off.blocks, off.writeAmp, off.metrics)

	deleted := uint64(n - n/10)
	if on.tombstones > 100 {
		t.Errorf("default options: %d tombstones left in the tables at the start of the key space, want (almost) none", on.tombstones)
	}
	// With the policy off, compactions by score may drop some tombstones
	// at larger scales (at 1M keys about a third), never most of them.
	if off.tombstones < deleted/2 {
		t.Errorf("policy off: %d tombstones left, want at least half of %d (else this test measures nothing)", off.tombstones, deleted)
	}
	// Stepping over the tombstones reads their blocks: hundreds of them
	// (about 150 tombstones a block), against the few blocks 500 values
	// take (about 8 a block).
	if on.blocks*5 > off.blocks {
		t.Errorf("default options read %d blocks, policy off %d: want far fewer", on.blocks, off.blocks)
	}
}

// TestTombstoneDropTickers checks where tombstones are dropped and how the
// tickers count them: a flush drops the tombstone of a key no table holds
// (early), a compaction above the last level drops those with nothing
// below (early), and a compaction into the last level drops the rest.
func TestTombstoneDropTickers(t *testing.T) {
	stats := NewStatistics()
	opts := testOptions(vfs.NewMem())
	opts.Statistics = stats
	opts.DisableAutoCompactions = true
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tombstones := func() (n uint64) {
		for _, f := range db.GetLiveFilesMetaData() {
			n += f.NumDeletions
		}
		return n
	}
	counts := func() string {
		return fmt.Sprintf("obsolete=%d early=%d new=%d range_del=%d",
			stats.TickerCount(TickerCompactionKeyDropObsolete), stats.TickerCount(TickerCompactionOptimizedDelDropObsolete),
			stats.TickerCount(TickerCompactionKeyDropNewerEntry), stats.TickerCount(TickerCompactionKeyDropRangeDel))
	}

	// A put and its delete in one memtable, nothing on disk: the flush
	// drops both (the put hidden by the delete, the delete as obsolete).
	db.Put([]byte("a"), []byte("1"), nil)
	db.Delete([]byte("a"), nil)
	db.Put([]byte("b"), []byte("1"), nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(), "obsolete=1 early=1 new=1 range_del=0"; got != want {
		t.Fatalf("after the first flush: %s, want %s", got, want)
	}
	if n := tombstones(); n != 0 {
		t.Fatalf("%d tombstones in tables after the flush", n)
	}
	// A delete of a key a table holds stays through the flush.
	db.Delete([]byte("b"), nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := tombstones(); n != 1 {
		t.Fatalf("%d tombstones in tables, want the one deleting b", n)
	}
	// Into L1 of 5 levels, with nothing below: dropped early, with b.
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(), "obsolete=2 early=2 new=2 range_del=0"; got != want {
		t.Fatalf("after the compaction into L1: %s, want %s", got, want)
	}
	// c goes to L4, the last level; its delete, compacted to L2, stays
	// (c's value lies below), then goes with c in the compaction into L4:
	// dropped at the last level, not early.
	db.Put([]byte("c"), []byte("1"), nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 4}); err != nil {
		t.Fatal(err)
	}
	db.Delete([]byte("c"), nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 2}); err != nil {
		t.Fatal(err)
	}
	if n := tombstones(); n != 1 {
		t.Fatalf("%d tombstones in tables, want c's, kept above L4", n)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(), "obsolete=3 early=2 new=3 range_del=0"; got != want {
		t.Fatalf("after the full compaction: %s, want %s", got, want)
	}
	if n := tombstones(); n != 0 {
		t.Fatalf("%d tombstones left", n)
	}
	// A range tombstone over a key in a table: the key goes, counted.
	db.Put([]byte("d"), []byte("1"), nil)
	db.Put([]byte("e"), []byte("1"), nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.DeleteRange([]byte("d"), []byte("e"), nil)
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := stats.TickerCount(TickerCompactionKeyDropRangeDel); got != 1 {
		t.Fatalf("range_del = %d, want 1", got)
	}
}

// TestLastLevelTombstonesGoWhenSnapshotReleased holds a snapshot while
// keys of the last level are deleted and compacted into it, so the
// tombstones stay; releasing the snapshot lets an elision-only compaction
// rewrite the table without them (not with the built-in policy off).
func TestLastLevelTombstonesGoWhenSnapshotReleased(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableDeleteAwareCompaction=%v", off), func(t *testing.T) {
			opts := testOptions(vfs.NewMem())
			opts.DisableDeleteAwareCompaction = off
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i := range 100 {
				db.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("v"), nil)
			}
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			snap := db.NewSnapshot()
			for i := range 50 {
				db.Delete([]byte(fmt.Sprintf("k%03d", i)), nil)
			}
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := db.WaitForCompact(nil); err != nil {
				t.Fatal(err)
			}
			tombstones := func() (n uint64) {
				for _, f := range db.GetLiveFilesMetaData() {
					if f.Level != opts.NumLevels-1 {
						t.Fatalf("table in L%d", f.Level)
					}
					n += f.NumDeletions
				}
				return n
			}
			if n := tombstones(); n != 50 {
				t.Fatalf("%d tombstones with the snapshot held, want 50", n)
			}
			snap.Release()
			if err := db.WaitForCompact(nil); err != nil {
				t.Fatal(err)
			}
			n := tombstones()
			if !off && n != 0 {
				t.Fatalf("%d tombstones left after the snapshot went", n)
			}
			if off && n != 50 {
				t.Fatalf("%d tombstones with the policy off, want the 50 still there", n)
			}
		})
	}
}

// TestWaitForCompact checks that WaitForCompact returns once background
// work is done (flushing first when asked), at once when automatic
// compactions are off, and ErrClosed on a closed DB.
func TestWaitForCompact(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		db.Put([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte("v"), 100), nil)
	}
	if err := db.WaitForCompact(&WaitForCompactOptions{Flush: true, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.MemtableSize > 1<<10 {
		t.Fatalf("memtables hold %d bytes after a flushing wait", m.MemtableSize)
	}
	d := db
	d.mu.Lock()
	busy := d.mu.compact.running > 0 || d.mu.compact.flushing || len(d.mu.mem.queue) > 0
	v := d.versions.Current()
	needs := d.picker.NeedsCompaction(v, d.pickEnvLocked())
	v.Unref()
	d.mu.Unlock()
	if busy || needs {
		t.Fatalf("after WaitForCompact: busy %v, compaction needed %v\n%s", busy, needs, m)
	}
	db.Close()
	if err := db.WaitForCompact(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitForCompact on a closed DB: %v", err)
	}

	opts.DisableAutoCompactions = true
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 3000 {
		db.Put([]byte(fmt.Sprintf("j%05d", i)), bytes.Repeat([]byte("v"), 100), nil)
	}
	if err := db.WaitForCompact(&WaitForCompactOptions{Flush: true}); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDBWrittenBeforeCompactionStats opens a database written by shale
// before tables recorded raw sizes and block counts in the MANIFEST
// (testdata/db-before-compaction-stats: 400 keys, every fourth deleted, a
// range tombstone, all compacted to L6; then an L0 table of 60 tombstones
// written under a snapshot, and 10 keys left in the WAL). It opens with
// its data, its tables read as having none of the new counts, Check finds
// it sound, and new writes, compactions and a reopen work on it.
func TestOpenDBWrittenBeforeCompactionStats(t *testing.T) {
	const src = "testdata/db-before-compaction-stats"
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		data, err := os.ReadFile(src + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, "/db/"+e.Name(), data)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil || !rep.OK() {
		t.Fatalf("Check: %v\n%s", err, rep)
	}
	want := map[string]string{}
	for i := range 400 {
		if i%4 != 0 && (i < 100 || i >= 120) && (i < 300 || i >= 360) {
			want[fmt.Sprintf("key%04d", i)] = fmt.Sprintf("value-%04d-old", i)
		}
	}
	for i := range 10 {
		want[fmt.Sprintf("wal%02d", i)] = "in the WAL"
	}
	checkContents := func(db *DB, what string) {
		t.Helper()
		got := map[string]string{}
		it := db.NewIterator(nil)
		for ok := it.First(); ok; ok = it.Next() {
			got[string(it.Key())] = string(it.Value())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: %s = %q, want %q", what, k, got[k], v)
			}
		}
	}

	// 7 levels, as the fixture; small memtables, as a test's.
	opts := &Options{FS: fs, DisableAutoCompactions: true, WriteBufferSize: 64 << 10}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkContents(db, "opened")
	v := db.versions.Current()
	var tables, withTombstones int
	for _, files := range v.Levels {
		for _, f := range files {
			tables++
			if f.RawKeySize != 0 || f.RawValueSize != 0 || f.NumDataBlocks != 0 || f.NumTombstoneDenseBlocks != 0 || f.RangeDeletionsBytesEstimate != 0 {
				t.Errorf("table %s of the old MANIFEST has new counts: %+v", f.FileNum, f)
			}
			if f.NumDeletions > 0 {
				withTombstones++
			}
		}
	}
	v.Unref()
	if tables != 2 || withTombstones != 1 {
		t.Fatalf("%d tables, %d with tombstones; the fixture has 2 and 1", tables, withTombstones)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// With automatic compactions, new writes and a full compaction: the
	// old tables are compacted as any other, the new ones get the counts.
	opts.DisableAutoCompactions = false
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		k := fmt.Sprintf("new%04d", i)
		want[k] = "fresh"
		db.Put([]byte(k), []byte("fresh"), nil)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	checkContents(db, "compacted")
	for _, f := range db.GetLiveFilesMetaData() {
		if f.NumDeletions != 0 {
			t.Errorf("table %s kept %d tombstones after a full compaction", f.Name, f.NumDeletions)
		}
	}
	v = db.versions.Current()
	for _, files := range v.Levels {
		for _, f := range files {
			if f.RawKeySize == 0 || f.NumDataBlocks == 0 {
				t.Errorf("new table %s lacks the new counts: %+v", f.FileNum, f)
			}
		}
	}
	v.Unref()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkContents(db, "reopened")

}

// TestDeleteAwareOptions checks the defaults, the validation (errors name
// the field) and the OPTIONS file of the delete-aware options.
func TestDeleteAwareOptions(t *testing.T) {
	o := (&Options{}).EnsureDefaults()
	if o.TombstoneDenseCompactionThreshold != 0.10 || o.NumDeletionsThreshold != 100 || o.DeletionSizeRatioThreshold != 0.5 || o.DisableDeleteAwareCompaction {
		t.Fatalf("defaults: %g %d %g %v", o.TombstoneDenseCompactionThreshold, o.NumDeletionsThreshold, o.DeletionSizeRatioThreshold, o.DisableDeleteAwareCompaction)
	}
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.TombstoneDenseCompactionThreshold = 1.5 }, "Options.TombstoneDenseCompactionThreshold"},
		{func(o *Options) { o.DeletionSizeRatioThreshold = 2 }, "Options.DeletionSizeRatioThreshold"},
		{func(o *Options) {
			o.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{markAllFactory{}, nil}
		}, "Options.TablePropertiesCollectorFactories[1] is nil"},
	} {
		o := &Options{}
		tc.set(o)
		err := o.EnsureDefaults().Validate()
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
		}
	}
	// Negative values turn the tests off and are valid.
	off := &Options{TombstoneDenseCompactionThreshold: -1, NumDeletionsThreshold: -1, DeletionSizeRatioThreshold: -1}
	if err := off.EnsureDefaults().Validate(); err != nil {
		t.Fatal(err)
	}

	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.TombstoneDenseCompactionThreshold = 0.25
	opts.NumDeletionsThreshold = 7
	opts.DeletionSizeRatioThreshold = -1
	opts.DisableDeleteAwareCompaction = true
	opts.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{NewCompactOnDeletionCollectorFactory(1000, 100, 0.5), markAllFactory{}}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	data := readFile(t, fs, "/db/"+findFile(t, fs, "/db", base.FileTypeOptions))
	if want := "table_properties_collectors=[CompactOnDeletionCollector (Sliding window size = 1000 Deletion trigger = 100 Deletion ratio = 0.5); test.marks-every-table]"; !strings.Contains(string(data), want) {
		t.Fatalf("OPTIONS file lacks %q:\n%s", want, data)
	}
	p, err := ParseOptionsFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.TombstoneDenseCompactionThreshold != 0.25 || p.NumDeletionsThreshold != 7 || p.DeletionSizeRatioThreshold != -1 ||
		!p.DisableDeleteAwareCompaction || len(p.TablePropertiesCollectorFactories) != 0 {
		t.Fatalf("parsed back: %g %d %g %v %v", p.TombstoneDenseCompactionThreshold, p.NumDeletionsThreshold,
			p.DeletionSizeRatioThreshold, p.DisableDeleteAwareCompaction, p.TablePropertiesCollectorFactories)
	}
}

// TestWaitForCompactDeletesObsoleteFiles checks that once WaitForCompact
// returns, the directory holds no table or blob file the current version
// does not reference: the files the waited-for work made obsolete are gone.
func TestWaitForCompactDeletesObsoleteFiles(t *testing.T) {
	fs := vfs.NewMem()
	opts := blobTestOptions(fs)
	setBlobGCTestOptions(opts)
	opts.WriteBufferSize = 8 << 10
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 5 {
		for i := range 400 {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), blobTestValue(i+round), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.WaitForCompact(&WaitForCompactOptions{Flush: true, Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		live, liveBlobs := db.versions.LiveFileNums(), db.versions.LiveBlobFileNums()
		names, err := fs.List("/db")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			typ, num, ok := base.ParseFilename(name)
			switch {
			case !ok:
			case typ == base.FileTypeTable:
				if _, ok := live[num]; !ok {
					t.Fatalf("round %d: obsolete table %s still in the directory after WaitForCompact", round, name)
				}
			case typ == base.FileTypeBlob:
				if _, ok := liveBlobs[num]; !ok {
					t.Fatalf("round %d: obsolete blob file %s still in the directory after WaitForCompact", round, name)
				}
			}
		}
	}
}

package shale

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// blobTestOptions are testOptions with setBlobTestOptions.
func blobTestOptions(fs vfs.FS) *Options {
	o := testOptions(fs)
	o.Logger = discardLogger()
	setBlobTestOptions(o)
	return o
}

func blobTestValue(i int) []byte {
	return []byte(fmt.Sprintf("value-%05d-%s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, 40+i%50)))
}

// TestBlobFilesFlushSeparatesValues: a flush with blob files on writes
// blob files (rolled at BlobFileSize), its table holds blob indexes, the
// MANIFEST records both, and Get, MultiGet (both modes) and iterators read
// the values back, before and after a reopen. Short values stay inline.
func TestBlobFilesFlushSeparatesValues(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), blobTestValue(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put([]byte("short"), []byte("tiny"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	v := d.versions.Current()
	if len(v.BlobFiles) < 2 {
		t.Fatalf("want several blob files (4 KiB each), got %d", len(v.BlobFiles))
	}
	var total uint64
	for _, b := range v.BlobFiles {
		total += b.TotalCount
		if b.TotalBytes+56 != b.Size {
			t.Errorf("blob file %s: total bytes %d, size %d: want size = bytes + header + footer", b.FileNum, b.TotalBytes, b.Size)
		}
	}
	if total != n {
		t.Errorf("blob files hold %d values, want %d", total, n)
	}
	for _, f := range v.Levels[0] {
		if len(f.BlobFiles) == 0 {
			t.Errorf("L0 table %s references no blob file", f.FileNum)
		}
	}
	v.Unref()
	if got := countFiles(t, mem, base.FileTypeBlob); got < 2 {
		t.Fatalf("%d blob files on disk", got)
	}
	check := func(d *DB) {
		t.Helper()
		for i := range n {
			k := []byte(fmt.Sprintf("k%05d", i))
			got, err := d.Get(k, nil)
			if err != nil || !bytes.Equal(got, blobTestValue(i)) {
				t.Fatalf("Get(%s) = %q, %v", k, got, err)
			}
		}
		if got, err := d.Get([]byte("short"), nil); err != nil || string(got) != "tiny" {
			t.Fatalf("Get(short) = %q, %v", got, err)
		}
		for _, async := range []bool{false, true} {
			var keys [][]byte
			for i := 0; i < n; i += 7 {
				keys = append(keys, []byte(fmt.Sprintf("k%05d", i)))
			}
			keys = append(keys, []byte("missing"), []byte("short"))
			vals, errs := d.MultiGet(keys, &ReadOptions{AsyncIO: async})
			for j := range keys[:len(keys)-2] {
				if errs[j] != nil || !bytes.Equal(vals[j], blobTestValue(j*7)) {
					t.Fatalf("async %v: MultiGet %s = %q, %v", async, keys[j], vals[j], errs[j])
				}
			}
			if !errors.Is(errs[len(keys)-2], ErrNotFound) || string(vals[len(keys)-1]) != "tiny" {
				t.Fatalf("async %v: MultiGet missing/short = %v / %q", async, errs[len(keys)-2], vals[len(keys)-1])
			}
		}
		it := d.NewIterator(nil)
		i := 0
		for ok := it.First(); ok && i < n; ok = it.Next() {
			if want := fmt.Sprintf("k%05d", i); string(it.Key()) != want || !bytes.Equal(it.Value(), blobTestValue(i)) {
				t.Fatalf("iterator at %q = %q, want %s", it.Key(), it.Value(), want)
			}
			i++
		}
		if i != n || string(it.Key()) != "short" || string(it.Value()) != "tiny" {
			t.Fatalf("iterator stopped at %d (%q)", i, it.Key())
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			_ = it.Value()
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check(d)
	if got := checkBlobReferences(t, d); got != n {
		t.Errorf("tables hold %d blob indexes, want %d", got, n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	check(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestModelBlobFiles is TestModel with blob files on: tiny memtables and
// blob files, so values go through flushes into blob files, compactions
// pass their indexes on and drop the overwritten ones, and blob files are
// deleted; with separation starting at L1 (compactions separate values
// that flushes kept inline); with SetOptions turning blob files on and
// off, and changing their sizes, mid-run; with garbage collection; and
// with a delete persistence threshold (blob files rewritten at deadlines).
func TestModelBlobFiles(t *testing.T) {
	ops := bySize(3000, 1200, 20000)
	gc := func(o *Options) {
		setBlobTestOptions(o)
		setBlobGCTestOptions(o)
		o.WriteBufferSize = 8 << 10
		o.TargetFileSizeBase = 4 << 10
	}
	variants := []struct {
		name string
		cfg  dbRunConfig
		set  func(*Options)
	}{
		{name: "tiny", set: setBlobTinyTestOptions},
		{name: "min-100-starting-level-1", set: func(o *Options) {
			setBlobTestOptions(o)
			o.MinBlobSize = 100
			o.BlobFileStartingLevel = 1
		}},
		{name: "set-options", cfg: dbRunConfig{setOptions: true}, set: setBlobTestOptions},
		{name: "gc", set: gc},
		{name: "mmap-reads-gc", set: func(o *Options) {
			setBlobTestOptions(o)
			setBlobGCTestOptions(o)
			o.AllowMmapReads = true
		}},
		{name: "delete-persistence", set: setBlobDeletePersistenceTestOptions},
		{name: "write-separation-tiny", set: withBlobWriteSeparation(setBlobTinyTestOptions)},
		{name: "write-separation-gc", set: withBlobWriteSeparation(gc)},
		{name: "write-separation-set-options", cfg: dbRunConfig{setOptions: true}, set: setBlobWriteSeparationTestOptions},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 10), func(t *testing.T, seed uint64) {
				cfg := v.cfg
				if cfg.setOptions {
					cfg.setOptionsSeed = seed
				} else {
					cfg.wantBlobIndexes = true
				}
				runModelWith(t, seed, ops, cfg, v.set)
			})
		})
	}
}

// TestCrashRecoveryBlobFiles is TestCrashRecovery with blob files on: each
// crash clone recovers a prefix of the writes holding every acknowledged
// one, and no table of the recovered version holds a blob index that does
// not read back from a live blob file (checkCrashState checks both).
func TestCrashRecoveryBlobFiles(t *testing.T) {
	forEachSeed(t, bySize(3, 2, 30), func(t *testing.T, seed uint64) {
		runCrashWith(t, seed, func(o *Options) {
			o.Logger = discardLogger()
			setBlobTestOptions(o)
		}, nil)
	})
}

// TestPowerLossBlobFiles is TestPowerLoss with blob files on: crashes after
// every mutation, blob file writes (by flushes, and with separation from
// L1 on by compactions), syncs and the edits adding and deleting blob
// files among them; every recovered image holds a prefix of
// the writes with every acknowledged one, and its tables no dangling blob
// index (checkPowerLossImage).
func TestPowerLossBlobFiles(t *testing.T) {
	sample := 1.0
	if testing.Short() && !stress() {
		sample = 0.5
	}
	for _, level := range []int{0, 1} {
		// From L1 on, compactions write the blob files.
		t.Run(fmt.Sprintf("starting-level-%d", level), func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, func(o *Options) {
					setBlobTestOptions(o)
					o.BlobFileStartingLevel = level
				})
			})
		})
	}
	// Values separated at commit: crashes land in the commit path's blob
	// writes and syncs, and between a value and its WAL record.
	t.Run("write-separation", func(t *testing.T) {
		forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
			runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, setBlobWriteSeparationTestOptions)
		})
	})
	// Garbage collection: crashes also land in relocations and in the
	// edits deleting the blob files they empty.
	t.Run("gc", func(t *testing.T) {
		forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
			runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, func(o *Options) {
				setBlobTestOptions(o)
				setBlobGCTestOptions(o)
				o.AllowMmapReads = seed%2 == 1 // half the seeds read through mappings
			})
		})
	})
}

// TestCrashRecoveryBlobWriteSeparation is TestCrashRecoveryBlobFiles with
// values separated at commit: the crash clones' WALs hold blob indexes
// into the memtables' unfinished blob files, which recovery reads back.
func TestCrashRecoveryBlobWriteSeparation(t *testing.T) {
	forEachSeed(t, bySize(3, 2, 30), func(t *testing.T, seed uint64) {
		runCrashWith(t, seed, func(o *Options) {
			o.Logger = discardLogger()
			setBlobWriteSeparationTestOptions(o)
			if seed%2 == 1 {
				setBlobGCTestOptions(o)
			}
		}, nil)
	})
}

// TestCrashRecoveryBlobGC is TestCrashRecoveryBlobFiles with garbage
// collection relocating every blob file's values.
func TestCrashRecoveryBlobGC(t *testing.T) {
	forEachSeed(t, bySize(3, 2, 30), func(t *testing.T, seed uint64) {
		runCrashWith(t, seed, func(o *Options) {
			o.Logger = discardLogger()
			setBlobTestOptions(o)
			setBlobGCTestOptions(o)
			o.AllowMmapReads = seed%2 == 1 // half the seeds read through mappings
		}, nil)
	})
}

// writeBlobDB writes n keys with blob values to a DB in /db on fs and
// flushes them; the DB is returned open.
func writeBlobDB(t *testing.T, fs vfs.FS, opts *Options, n int) *DB {
	t.Helper()
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), blobTestValue(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	return d
}

// blobFileNums lists the blob files on disk.
func blobFileNums(t *testing.T, fs vfs.FS) []base.FileNum {
	t.Helper()
	var nums []base.FileNum
	for _, name := range listNames(t, fs, "/db") {
		if ft, num, ok := base.ParseFilename(name); ok && ft == base.FileTypeBlob {
			nums = append(nums, num)
		}
	}
	return nums
}

// TestBlobFilesDeletedOnceUnreferenced: after a full compaction that
// overwrote half the keys, the old blob files stay (the other half still
// points into them) and hold as garbage exactly the overwritten values;
// after one that overwrote every key, the old blob files are gone from the
// MANIFEST and from disk, and only the new ones remain.
func TestBlobFilesDeletedOnceUnreferenced(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	const n = 200
	d := writeBlobDB(t, mem, opts, n)
	old := blobFileNums(t, mem)
	if len(old) < 2 {
		t.Fatalf("want several blob files, got %v", old)
	}
	overwrite := func(from, step int) {
		t.Helper()
		for i := from; i < n; i += step {
			if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), append(blobTestValue(i), "-new"...), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		d.deleteObsoleteFiles(false)
	}
	overwrite(0, 2)
	v := d.versions.Current()
	var garbage uint64
	for _, num := range old {
		b := v.BlobFile(num)
		if b == nil {
			t.Fatalf("blob file %s deleted while half its values are live", num)
		}
		garbage += b.GarbageCount
		if b.GarbageBytes == 0 || b.GarbageBytes >= b.TotalBytes {
			t.Errorf("blob file %s: garbage %d of %d bytes", num, b.GarbageBytes, b.TotalBytes)
		}
	}
	if m := d.Metrics(); m.Blob.Files != len(v.BlobFiles) || m.Blob.GarbageBytes == 0 || m.Blob.GarbageBytes >= m.Blob.TotalBytes {
		t.Errorf("Metrics().Blob = %+v with %d live blob files", m.Blob, len(v.BlobFiles))
	}
	v.Unref()
	if garbage != n/2 {
		t.Errorf("old blob files hold %d garbage values, want %d (the overwritten ones)", garbage, n/2)
	}
	checkBlobReferences(t, d)

	overwrite(1, 2)
	v = d.versions.Current()
	for _, num := range old {
		if v.BlobFile(num) != nil {
			t.Errorf("blob file %s still live after every value in it was overwritten", num)
		}
	}
	v.Unref()
	for _, num := range blobFileNums(t, mem) {
		if slices.Contains(old, num) {
			t.Errorf("blob file %s still on disk after every value in it was overwritten", num)
		}
	}
	if got := checkBlobReferences(t, d); got != n {
		t.Errorf("tables hold %d blob indexes, want %d", got, n)
	}
	for i := range n {
		got, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
		if want := append(blobTestValue(i), "-new"...); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get(k%05d) = %q, %v", i, got, err)
		}
	}
	// The sweep at Open removes blob files the MANIFEST does not know.
	writeFile(t, mem, "/db/"+base.MakeFilename(base.FileTypeBlob, 999999), []byte("left by a crashed flush"))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if slices.Contains(blobFileNums(t, mem), 999999) {
		t.Error("Open left a blob file the MANIFEST does not know")
	}
}

// blobReadCountingFS counts the reads of .blob files.
type blobReadCountingFS struct {
	vfs.FS
	reads atomic.Int64
}

func (fs *blobReadCountingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".blob") {
		return f, err
	}
	return &blobReadCountingFile{File: f, reads: &fs.reads}, nil
}

type blobReadCountingFile struct {
	vfs.File
	reads *atomic.Int64
}

func (f *blobReadCountingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	return f.File.ReadAt(p, off)
}

// TestBlobFilesKeyOnlyScanReadsNoBlobFile: iterators read a blob value only
// when Value is called. A scan of keys, Seeks and SeekForPrevs, forward and
// backward, read no blob file (blob files are opened, header and footer
// read, when first needed only); reading the values then does, and a second
// Value at the same key reads nothing more.
func TestBlobFilesKeyOnlyScanReadsNoBlobFile(t *testing.T) {
	fs := &blobReadCountingFS{FS: vfs.NewMem()}
	opts := blobTestOptions(fs)
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = -1 // no value served from a cache
	const n = 200
	d := writeBlobDB(t, fs, opts, n)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open("/db", opts) // blob files closed, nothing cached
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fs.reads.Store(0)
	for _, async := range []bool{false, true} {
		it := d.NewIterator(&ReadOptions{AsyncIO: async})
		keys := 0
		for ok := it.First(); ok; ok = it.Next() {
			keys++
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			keys++
		}
		for i := 0; i < n; i += 13 {
			it.Seek([]byte(fmt.Sprintf("k%05d", i)))
			it.SeekForPrev([]byte(fmt.Sprintf("k%05d", i)))
		}
		if s := it.Stats(); s.BlobReadCount != 0 || s.BlobCacheHitCount != 0 {
			t.Fatalf("async %v: key-only scans and seeks count %d blob reads, %d blob cache hits", async, s.BlobReadCount, s.BlobCacheHitCount)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if keys != 2*n {
			t.Fatalf("scans saw %d keys, want %d", keys, 2*n)
		}
		if got := fs.reads.Load(); got != 0 {
			t.Fatalf("async %v: key-only scans and seeks read blob files %d times", async, got)
		}
	}
	it := d.NewIterator(nil)
	defer it.Close()
	if !it.Seek([]byte("k00100")) {
		t.Fatal("Seek found nothing")
	}
	if v := it.Value(); !bytes.Equal(v, blobTestValue(100)) {
		t.Fatalf("Value = %q", v)
	}
	after := fs.reads.Load()
	if after == 0 {
		t.Fatal("Value read no blob file (the counting file system counts nothing)")
	}
	if v := it.Value(); !bytes.Equal(v, blobTestValue(100)) || fs.reads.Load() != after {
		t.Fatalf("a second Value at the same key read again (%d reads, then %d)", after, fs.reads.Load())
	}
	if s := it.Stats(); s.BlobReadCount != 1 || s.BlobReadBytes == 0 {
		t.Errorf("iterator Stats after one Value: %d blob reads of %d bytes, want 1", s.BlobReadCount, s.BlobReadBytes)
	}
	// Get and MultiGet count their blob reads in ReadOptions.PerfContext.
	var pc PerfContext
	if _, err := d.Get([]byte("k00007"), &ReadOptions{PerfContext: &pc}); err != nil {
		t.Fatal(err)
	}
	if pc.BlobReadCount != 1 || pc.BlobReadBytes == 0 {
		t.Errorf("Get: PerfContext counts %d blob reads of %d bytes, want 1", pc.BlobReadCount, pc.BlobReadBytes)
	}
	for _, async := range []bool{false, true} {
		pc = PerfContext{}
		d.MultiGet([][]byte{[]byte("k00011"), []byte("k00150")}, &ReadOptions{PerfContext: &pc, AsyncIO: async, SkipFillCache: true})
		if pc.BlobReadCount != 2 {
			t.Errorf("MultiGet (async %v): PerfContext counts %d blob reads, want 2", async, pc.BlobReadCount)
		}
	}
}

// flipByteAt flips the bits of one byte of a file.
func flipByteAt(t *testing.T, fs vfs.FS, name string, off int64) {
	t.Helper()
	b := readFile(t, fs, name)
	b[off] ^= 0x5a
	writeFile(t, fs, name, b)
}

// TestBlobFilesCorruptionDetected: a byte flipped anywhere in a blob file
// is reported by Check (the blob file damaged) and by VerifyChecksum, and
// a Get or iterator reading a value through it returns an error matching
// ErrCorruption, never another value; reads of values elsewhere still
// succeed.
func TestBlobFilesCorruptionDetected(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = -1
	const n = 5
	d := writeBlobDB(t, mem, opts, n)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	nums := blobFileNums(t, mem)
	if len(nums) != 1 {
		t.Fatalf("want one blob file, got %v", nums)
	}
	name := "/db/" + base.MakeFilename(base.FileTypeBlob, nums[0])
	clean := readFile(t, mem, name)
	rep, err := Check("/db", &Options{FS: mem})
	if err != nil || !rep.OK() {
		t.Fatalf("clean database: %v\n%s", err, rep)
	}
	if !strings.Contains(rep.String(), "5 blob indexes read back") {
		t.Errorf("Check does not say it read the blob indexes:\n%s", rep)
	}
	for off := range int64(len(clean)) {
		writeFile(t, mem, name, clean)
		flipByteAt(t, mem, name, off)
		rep, err := Check("/db", &Options{FS: mem})
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() {
			t.Fatalf("byte %d flipped: Check found nothing\n%s", off, rep)
		}
		d, err := Open("/db", opts)
		if err != nil {
			t.Fatalf("byte %d flipped: Open: %v", off, err)
		}
		if err := d.VerifyChecksum(); !errors.Is(err, ErrCorruption) {
			t.Errorf("byte %d flipped: VerifyChecksum = %v", off, err)
		}
		bad := 0
		for i := range n {
			got, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil)
			switch {
			case err == nil && !bytes.Equal(got, blobTestValue(i)):
				t.Fatalf("byte %d flipped: Get(k%05d) returned wrong data %q", off, i, got)
			case err != nil && !errors.Is(err, ErrCorruption):
				t.Fatalf("byte %d flipped: Get(k%05d): %v, not corruption", off, i, err)
			case err != nil:
				bad++
			}
		}
		it := d.NewIterator(nil)
		seen := 0
		for ok := it.First(); ok; ok = it.Next() {
			if v := it.Value(); v != nil {
				if !bytes.Equal(v, blobTestValue(seen)) {
					t.Fatalf("byte %d flipped: iterator returned wrong data %q at %s", off, v, it.Key())
				}
				seen++
			}
		}
		itErr := it.Close()
		if bad > 0 && !errors.Is(itErr, ErrCorruption) {
			t.Fatalf("byte %d flipped: %d Gets failed, the iterator's error is %v", off, bad, itErr)
		}
		if bad == 0 && itErr != nil {
			t.Fatalf("byte %d flipped: every Get succeeded, the iterator failed: %v", off, itErr)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBlobFilesPrepopulateBlobCache: with PrepopulateBlobCache, the values a
// flush writes are in the cache, and reading them reads no blob file;
// without it, reads after the flush read the blob files.
func TestBlobFilesPrepopulateBlobCache(t *testing.T) {
	for _, c := range []struct{ prepopulate, atWrite bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		prepopulate := c.prepopulate
		t.Run(fmt.Sprintf("%v-separated-at-write-%v", prepopulate, c.atWrite), func(t *testing.T) {
			fs := &blobReadCountingFS{FS: vfs.NewMem()}
			opts := blobTestOptions(fs)
			opts.DisableAutoCompactions = true
			opts.PrepopulateBlobCache = prepopulate
			opts.EnableBlobWriteSeparation = c.atWrite
			const n = 100
			d := writeBlobDB(t, fs, opts, n)
			defer d.Close()
			fs.reads.Store(0)
			before := d.Metrics().Blob.Reads
			for i := range n {
				if got, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil || !bytes.Equal(got, blobTestValue(i)) {
					t.Fatalf("Get(k%05d) = %q, %v", i, got, err)
				}
			}
			reads, counted := fs.reads.Load(), d.Metrics().Blob.Reads-before
			if prepopulate && (reads != 0 || counted != 0) {
				t.Errorf("prepopulated: Gets read blob files %d times (Metrics: %d)", reads, counted)
			}
			if hits := d.Metrics().Blob.CacheHits; prepopulate && hits < n {
				t.Errorf("prepopulated: %d blob cache hits for %d Gets", hits, n)
			}
			if !prepopulate && (reads < n || counted < n) {
				t.Errorf("not prepopulated: Gets read blob files %d times (Metrics: %d), want at least %d", reads, counted, n)
			}
		})
	}
}

// TestBlobFilesReadOnly: a read-only DB reads blob values (its blob files
// pinned and opened at load like its tables), by Get, MultiGet and
// iterators.
func TestBlobFilesReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	const n = 100
	d := writeBlobDB(t, mem, opts, n)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenForReadOnly("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for i := range n {
		k := []byte(fmt.Sprintf("k%05d", i))
		if got, err := ro.Get(k, nil); err != nil || !bytes.Equal(got, blobTestValue(i)) {
			t.Fatalf("Get(%s) = %q, %v", k, got, err)
		}
	}
	vals, errs := ro.MultiGet([][]byte{[]byte("k00003"), []byte("k00042")}, &ReadOptions{AsyncIO: true})
	if errs[0] != nil || errs[1] != nil || !bytes.Equal(vals[0], blobTestValue(3)) || !bytes.Equal(vals[1], blobTestValue(42)) {
		t.Fatalf("MultiGet = %q, %v", vals, errs)
	}
	it := ro.NewIterator(nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Value(), blobTestValue(i)) {
			t.Fatalf("iterator at %s: %q", it.Key(), it.Value())
		}
		i++
	}
	if err := it.Close(); err != nil || i != n {
		t.Fatalf("iterator saw %d keys: %v", i, err)
	}
}

// TestBlobFilesWriteFaults fails a flush's blob file creation, writes or
// sync: the flush fails (the DB goes read-only, reads still work), no blob
// file of the failed flush stays on disk, and after Resume the flush
// succeeds and every value reads back from blob files. MinBlobSize 0
// separates every value.
func TestBlobFilesWriteFaults(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync} {
		t.Run(fmt.Sprint(op), func(t *testing.T) {
			ffs, _, db := openFaultDB(t, vfs.NewMem(), func(o *Options) {
				setBlobTestOptions(o)
				o.MinBlobSize = 0
				o.DisableAutoCompactions = true
			})
			defer db.Close()
			putRange(t, db, 0, 300, nil)
			ffs.AddRule(errorfs.Rule{Op: op, PathContains: ".blob"})
			if err := db.Flush(); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("Flush with failing blob file %s: %v", op, err)
			}
			if ffs.Injected() == 0 {
				t.Fatal("no fault injected")
			}
			expectRange(t, db, 0, 300)
			ffs.ClearRules()
			if nums := blobFileNums(t, ffs); len(nums) > 0 {
				t.Errorf("the failed flush left blob files %v", nums)
			}
			if err := db.Resume(); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			expectRange(t, db, 0, 300)
			if got := checkBlobReferences(t, db); got != 300 {
				t.Errorf("tables hold %d blob indexes, want 300", got)
			}
		})
	}
}

// TestConcurrentStressBlobFiles is TestConcurrentStress with blob files on:
// readers (Gets, MultiGets, iterators, snapshots) race flushes writing blob
// files and compactions deleting them, and every invariant of the stress
// test holds; at the end no table holds a dangling blob index.
func TestConcurrentStressBlobFiles(t *testing.T) {
	d := stressDuration(t)
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		runConcurrentStress(t, seed, vfs.NewMem(), "/db", d, func(o *Options) {
			setBlobTestOptions(o)
			o.MinBlobSize = 0
			o.MaxOpenFiles = 8 // blob files and tables evicted while read
		})
	})
}

// TestBlobFilesStartingLevel: with BlobFileStartingLevel 1, a flush keeps
// values inline (no blob file), and the compaction into L1 separates them:
// afterwards every value is in a blob file and reads back.
func TestBlobFilesStartingLevel(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	opts.BlobFileStartingLevel = 1
	const n = 200
	d := writeBlobDB(t, mem, opts, n)
	defer d.Close()
	if got := len(blobFileNums(t, mem)); got != 0 {
		t.Fatalf("a flush to L0 below BlobFileStartingLevel 1 wrote %d blob files", got)
	}
	if got := checkBlobReferences(t, d); got != 0 {
		t.Fatalf("L0 tables hold %d blob indexes", got)
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := checkBlobReferences(t, d); got != n {
		t.Fatalf("after the compaction, tables hold %d blob indexes, want %d", got, n)
	}
	for i := range n {
		if got, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil || !bytes.Equal(got, blobTestValue(i)) {
			t.Fatalf("Get(k%05d) = %q, %v", i, got, err)
		}
	}
}

// TestBlobFilesSetOptions: SetOptions turns blob files off (the next flush
// keeps values inline, the blob values written before still read back) and
// on again (the next flush separates), and changes MinBlobSize.
func TestBlobFilesSetOptions(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	d := writeBlobDB(t, mem, opts, 50)
	defer d.Close()
	want := 50
	step := func(change map[string]string, from, to, wantIndexes int) {
		t.Helper()
		if err := d.SetOptions(change); err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), blobTestValue(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := checkBlobReferences(t, d); got != wantIndexes {
			t.Fatalf("after %v: tables hold %d blob indexes, want %d", change, got, wantIndexes)
		}
		for i := range to {
			if got, err := d.Get([]byte(fmt.Sprintf("k%05d", i)), nil); err != nil || !bytes.Equal(got, blobTestValue(i)) {
				t.Fatalf("after %v: Get(k%05d) = %q, %v", change, i, got, err)
			}
		}
	}
	step(map[string]string{"enable_blob_files": "false"}, 50, 100, want)
	want += 50
	step(map[string]string{"enable_blob_files": "true"}, 100, 150, want)
	// blobTestValue(i) is 52 + i%50 bytes long: 76 or more for 26 of the 50.
	step(map[string]string{"min_blob_size": "76"}, 150, 200, want+26)
}

// TestBlobFilesMultiGetBatch: with AsyncIO, MultiGet reads the blob values
// of its keys, across blob files, through the async reader (one read each,
// submitted together); without it, one by one and not through it.
func TestBlobFilesMultiGetBatch(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	opts.BlobCacheSize = 1 // blob values are not cached; table blocks are
	const n = 200
	d := writeBlobDB(t, mem, opts, n)
	defer d.Close()
	var keys [][]byte
	for i := 0; i < n; i += 25 {
		keys = append(keys, []byte(fmt.Sprintf("k%05d", i)))
	}
	v := d.versions.Current()
	nfiles := len(v.BlobFiles)
	v.Unref()
	for _, async := range []bool{false, true} {
		ro := &ReadOptions{AsyncIO: async}
		d.MultiGet(keys, ro) // table blocks into the block cache
		before, blobReads := d.Metrics().IO.ReadsSubmitted, d.Metrics().Blob.Reads
		vals, errs := d.MultiGet(keys, ro)
		for j := range keys {
			if errs[j] != nil || !bytes.Equal(vals[j], blobTestValue(j*25)) {
				t.Fatalf("async %v: MultiGet %s = %q, %v", async, keys[j], vals[j], errs[j])
			}
		}
		submitted, read := d.Metrics().IO.ReadsSubmitted-before, d.Metrics().Blob.Reads-blobReads
		if read != uint64(len(keys)) {
			t.Errorf("async %v: %d blob reads for %d keys", async, read, len(keys))
		}
		if want := uint64(0); async {
			if submitted != uint64(len(keys)) {
				t.Errorf("async: %d reads through the async reader for %d blob values", submitted, len(keys))
			}
		} else if submitted != want {
			t.Errorf("sync: %d reads through the async reader", submitted)
		}
	}
	if nfiles < 4 {
		t.Errorf("the keys' values lie in %d blob files; want several", nfiles)
	}
}

// TestBlobFilesParanoidChecksAtOpen: with ParanoidChecks, Open refuses a
// database whose live blob file is shorter than the MANIFEST records, or
// missing (ErrCorruption); without, Open succeeds and reads of its values
// fail: ErrCorruption, or the file system's not-exist error for a missing
// file, as for a missing table.
func TestBlobFilesParanoidChecksAtOpen(t *testing.T) {
	for _, damage := range []string{"truncated", "missing"} {
		t.Run(damage, func(t *testing.T) {
			mem := vfs.NewMem()
			opts := blobTestOptions(mem)
			opts.DisableAutoCompactions = true
			d := writeBlobDB(t, mem, opts, 20)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			name := "/db/" + base.MakeFilename(base.FileTypeBlob, blobFileNums(t, mem)[0])
			if damage == "missing" {
				if err := mem.Remove(name); err != nil {
					t.Fatal(err)
				}
			} else {
				b := readFile(t, mem, name)
				writeFile(t, mem, name, b[:len(b)-1])
			}
			paranoid := *opts
			paranoid.ParanoidChecks = true
			if d, err := Open("/db", &paranoid); !errors.Is(err, ErrCorruption) {
				if err == nil {
					d.Close()
				}
				t.Fatalf("Open with ParanoidChecks: %v", err)
			}
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := d.Get([]byte("k00000"), nil); !errors.Is(err, ErrCorruption) && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Get through the %s blob file: %v", damage, err)
			}
		})
	}
}

// TestEventListenerBlobFiles: the listener hears of every blob file a flush
// writes (with the flush's job, and its size), and of every blob file
// removed once unreferenced (obsolete, with its size); the blob files
// reported created and not deleted are the live ones.
func TestEventListenerBlobFiles(t *testing.T) {
	fs := vfs.NewMem()
	l := &recordingListener{}
	d := openListenerDB(t, fs, l, func(o *Options) {
		setBlobTestOptions(o)
		o.DisableAutoCompactions = true
	})
	for round := range 3 {
		for i := range 100 {
			if err := d.Put([]byte(fmt.Sprintf("k%05d", i)), append(blobTestValue(i), byte('a'+round)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	d.deleteObsoleteFiles(false)
	v := d.versions.Current()
	live := map[uint64]uint64{}
	for _, b := range v.BlobFiles {
		live[uint64(b.FileNum)] = b.Size
	}
	v.Unref()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	flushJobs := map[int]bool{}
	for _, f := range ofKind[FlushInfo](l, "FlushCompleted") {
		flushJobs[f.JobID] = true
	}
	created := map[uint64]BlobFileInfo{}
	for _, c := range ofKind[BlobFileInfo](l, "BlobFileCreated") {
		if c.Err != nil || c.Reason != FileReasonFlush || !flushJobs[c.JobID] || c.Size == 0 || !strings.HasSuffix(c.Path, ".blob") {
			t.Errorf("blob file created: %+v", c)
		}
		created[c.FileNum] = c
	}
	deleted := ofKind[BlobFileInfo](l, "BlobFileDeleted")
	if len(deleted) == 0 {
		t.Fatal("no blob file reported deleted after every value was overwritten twice")
	}
	for _, del := range deleted {
		c, ok := created[del.FileNum]
		if !ok || del.Err != nil || del.Reason != FileReasonObsolete || del.Size != c.Size {
			t.Errorf("blob file deleted: %+v (created: %+v)", del, c)
		}
		delete(created, del.FileNum)
	}
	if len(created) != len(live) {
		t.Errorf("%d blob files reported created and not deleted, %d live", len(created), len(live))
	}
	for num, c := range created {
		if size, ok := live[num]; !ok || size != c.Size {
			t.Errorf("blob file %d reported created (%d bytes) and not deleted is not live (live: %v)", num, c.Size, live)
		}
	}
}

// TestFileCacheBlobOpenRacingCloseClosesReader: a blob read that misses the
// file cache just before Close adds the entry, Close passes it unopened,
// then the read opens the blob file: that open closes its reader and fails
// with ErrClosed, as a table's does.
func TestFileCacheBlobOpenRacingCloseClosesReader(t *testing.T) {
	mem := vfs.NewMem()
	opts := blobTestOptions(mem)
	opts.DisableAutoCompactions = true
	d := writeBlobDB(t, mem, opts, 10)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	num := blobFileNums(t, mem)[0]
	f, err := d.fileCache.insert(fileKindBlob, num) // findBlob's miss path, up to its once.Do
	if err != nil {
		t.Fatal(err)
	}
	// The reference f holds is the racing read's: counted as an open
	// reader, so that Close's invariants check (which reports references
	// left with no reader open) expects it.
	d.openIters.Add(1)
	defer d.openIters.Add(-1)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	f.once.Do(func() { f.err = d.fileCache.open(f); f.ready.Store(f.err == nil) })
	if !errors.Is(f.err, ErrClosed) || f.blobReader != nil {
		t.Errorf("open after Close: %v (reader kept: %v), want ErrClosed", f.err, f.blobReader != nil)
	}
	f.release()
}

// TestBlobFilesIteratorReadsAhead: an iterator reading the values of a
// flushed blob file in key order reads them through readahead windows: far
// fewer reads of the file than values.
func TestBlobFilesIteratorReadsAhead(t *testing.T) {
	fs := &blobReadCountingFS{FS: vfs.NewMem()}
	opts := blobTestOptions(fs)
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = -1
	opts.BlobFileSize = 1 << 20 // one blob file
	const n = 500
	d := writeBlobDB(t, fs, opts, n)
	defer d.Close()
	fs.reads.Store(0)
	it := d.NewIterator(nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Value(), blobTestValue(i)) {
			t.Fatalf("iterator at %s: %q", it.Key(), it.Value())
		}
		i++
	}
	s := it.Stats()
	if err := it.Close(); err != nil || i != n {
		t.Fatalf("iterator saw %d keys: %v", i, err)
	}
	// The file system also sees the reads that open the file (header and
	// footer), which the Reader, not the iterator, counts.
	if reads := fs.reads.Load(); reads > n/10 || s.BlobReadCount == 0 || s.BlobReadCount > uint64(reads) {
		t.Errorf("a scan of %d values made %d reads of the blob file (Stats: %d), want readahead", n, reads, s.BlobReadCount)
	}
}

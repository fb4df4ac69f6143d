package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// tableFileFS counts the handles of table files (*.sst) opened through
// Open: how many are open now, the most open at once, and how many opens
// there were. It records every misuse of a handle: a second Close, or a
// read after Close (which could reach a descriptor since reused by another
// file on an OS file system).
type tableFileFS struct {
	vfs.FS
	mu     sync.Mutex
	open   int
	peak   int
	opens  int
	misuse []string
}

type tableFile struct {
	vfs.File
	fs     *tableFileFS
	name   string
	closed atomic.Bool
}

func newTableFileFS(fs vfs.FS) *tableFileFS { return &tableFileFS{FS: fs} }

func (fs *tableFileFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	fs.mu.Lock()
	fs.open++
	fs.opens++
	fs.peak = max(fs.peak, fs.open)
	fs.mu.Unlock()
	return &tableFile{File: f, fs: fs, name: name}, nil
}

func (f *tableFile) Close() error {
	f.fs.mu.Lock()
	if f.closed.Swap(true) {
		f.fs.misuse = append(f.fs.misuse, "closed twice: "+f.name)
	} else {
		f.fs.open--
	}
	f.fs.mu.Unlock()
	return f.File.Close()
}

func (f *tableFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed.Load() {
		f.fs.mu.Lock()
		f.fs.misuse = append(f.fs.misuse, "read after close: "+f.name)
		f.fs.mu.Unlock()
	}
	return f.File.ReadAt(p, off)
}

// counts returns the open handles now, the most at once, and the opens.
func (fs *tableFileFS) counts() (open, peak, opens int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.open, fs.peak, fs.opens
}

// resetPeak makes the peak the number open now.
func (fs *tableFileFS) resetPeak() {
	fs.mu.Lock()
	fs.peak = fs.open
	fs.mu.Unlock()
}

func (fs *tableFileFS) checkMisuse(t *testing.T) {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, m := range fs.misuse {
		t.Error("table handle misused: " + m)
	}
}

// TestFileCacheClosesFailedOpenOnce opens a table whose footer is damaged
// through the file cache: the handle must be closed exactly once
// (sstable.NewReader closes it on error; closing it again could close a
// descriptor another file has reused, on a file system that does not guard
// against it).
func TestFileCacheClosesFailedOpenOnce(t *testing.T) {
	mem := vfs.NewMem()
	db := openMemFS(t, mem)
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := mem.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, n := range names {
		if !strings.HasSuffix(n, ".sst") {
			continue
		}
		path := mem.PathJoin("/db", n)
		f, err := mem.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b[len(b)-1] ^= 0xff // the table magic
		w, err := mem.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		w.Close()
		damaged++
	}
	if damaged == 0 {
		t.Fatal("no table to damage")
	}
	fs := newTableFileFS(mem)
	db, err = Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k"), nil); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Get from a table with a damaged footer: %v, want ErrCorruption", err)
	}
	db.Close()
	if open, _, opens := fs.counts(); opens == 0 || open != 0 {
		t.Fatalf("%d table opens, %d handles left open; want some, and none", opens, open)
	}
	fs.checkMisuse(t)
}

// manyTablesValue is the value of key in buildManyTables' databases:
// incompressible, so that tables hold a few entries each.
func manyTablesValue(key []byte, size int) []byte {
	var seed [32]byte
	copy(seed[:], key)
	v := make([]byte, size)
	rand.NewChaCha8(seed).Read(v)
	return v
}

// buildManyTables writes n keys of valueSize-byte values into a new
// database in dir and compacts them into tables of about 4 KiB, a few
// entries each, in the last level. Key j is bulkKey(j, n). It returns the
// number of tables.
func buildManyTables(t *testing.T, fs vfs.FS, dir string, n, valueSize int) int {
	t.Helper()
	opts := testOptions(fs)
	opts.WriteBufferSize = 1 << 20
	opts.TargetFileSizeBase = 4 << 10
	opts.DisableAutoCompactions = true
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for j := range n {
		k := bulkKey(j, n)
		b.Put(k, manyTablesValue(k, valueSize))
		if b.Len() == 256 || j == n-1 {
			if err := db.Write(b, nil); err != nil {
				t.Fatal(err)
			}
			b = db.NewBatch()
		}
	}
	// A second L0 table overlapping the first, so that the compaction
	// rewrites them instead of moving one table down.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	k := bulkKey(0, n)
	if err := db.Put(k, manyTablesValue(k, valueSize), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, l := range db.Metrics().Levels {
		tables += int(l.NumFiles)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return tables
}

// bulkKey is key j of n bulk keys, spread between the model's keys
// (key00000 ... key00299): "key00123/000042" sorts after key00123 and
// before key00124, and after the model's between-key bound "key00123!".
func bulkKey(j, n int) []byte {
	per := (n + modelKeys - 1) / modelKeys
	return fmt.Appendf(nil, "key%05d/%06d", j/per, j%per)
}

// TestModelWithThousandsOfTablesAndMaxOpenFiles16 runs the model test on a
// database of several thousand tables read through 16 open files: every
// read and compaction reopens tables the cache evicted, and iterators keep
// reading tables the cache has let go.
func TestModelWithThousandsOfTablesAndMaxOpenFiles16(t *testing.T) {
	const n = 16000
	ops := bySize(1500, 800, 6000)
	forEachSeed(t, 1, func(t *testing.T, seed uint64) {
		mem := vfs.NewMem()
		fs := newTableFileFS(mem)
		tables := buildManyTables(t, fs, "/db", n, 900)
		if tables < 3000 {
			t.Fatalf("built %d tables, want at least 3000", tables)
		}
		opts := testOptions(fs)
		opts.MaxOpenFiles = 16
		d, err := openDBTarget("/db", opts, dbRunConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := d.close(); err != nil {
				t.Error(err)
			}
			if open, _, _ := fs.counts(); open != 0 {
				t.Errorf("%d table handles open after Close", open)
			}
			fs.checkMisuse(t)
		}()
		m := newModelTarget()
		for j := range n {
			k := bulkKey(j, n)
			m.cur[string(k)] = string(manyTablesValue(k, 900))
		}
		_, _, opensBefore := fs.counts()
		runModelOn(t, d, m, seed, ops)
		open, peak, opens := fs.counts()
		t.Logf("%d tables; %d table opens during the run, at most %d handles at once, %d open at the end",
			tables, opens-opensBefore, peak, open)
		if opens-opensBefore <= tables {
			t.Errorf("%d table opens for %d tables: the cache did not evict and reopen", opens-opensBefore, tables)
		}
	})
}

// TestMaxOpenFilesBoundsOpenTables counts the table handles through the
// file system: with no iterator open, never more than MaxOpenFiles, after
// Gets, MultiGets, scans and compactions; while an iterator scans, at
// most one more per level it reads.
func TestMaxOpenFilesBoundsOpenTables(t *testing.T) {
	const bound = 16
	mem := vfs.NewMem()
	fs := newTableFileFS(mem)
	const n = 2400
	tables := buildManyTables(t, fs, "/db", n, 900)
	if tables < 10*bound {
		t.Fatalf("built %d tables, want many more than %d", tables, bound)
	}
	opts := testOptions(fs)
	opts.MaxOpenFiles = bound
	opts.BlockCacheSize = -1 // every block from its file
	opts.DisableAutoCompactions = true
	_, _, opensBefore := fs.counts()
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	// The DB that built the tables held them open (under its own bound).
	fs.resetPeak()
	check := func(what string, limit int) {
		t.Helper()
		open, peak, _ := fs.counts()
		if open > bound {
			t.Fatalf("after %s: %d table handles open, MaxOpenFiles is %d", what, open, bound)
		}
		if peak > limit {
			t.Fatalf("during %s: %d table handles open at once, want at most %d", what, peak, limit)
		}
		if cached, lingering := db.fileCache.numOpen(); cached > bound || lingering != 0 {
			t.Fatalf("after %s: the file cache holds %d files (bound %d), %d evicted ones still open", what, cached, bound, lingering)
		}
		if u := tableUsers(db); u != 0 {
			t.Fatalf("after %s: %d table references not released", what, u)
		}
		fs.resetPeak()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		j := rng.IntN(n)
		k := bulkKey(j, n)
		v, err := db.Get(k, nil)
		if err != nil || string(v) != string(manyTablesValue(k, 900)) {
			t.Fatalf("Get(%s) = %d bytes, %v", k, len(v), err)
		}
		if i%100 == 0 {
			check("Gets", bound) // one Get at a time holds one table
		}
	}
	check("Gets", bound)
	open, _, opens := fs.counts()
	opens -= opensBefore
	if opens < 2*tables {
		t.Fatalf("%d table opens for 3000 Gets over %d tables through %d files: tables were not evicted and reopened", opens, tables, bound)
	}
	// Every file opened is open still or was evicted.
	m := db.Metrics().FileCache
	if m.Open != open || m.Capacity != bound || m.Opens != uint64(opens) || m.Evictions != uint64(opens-open) {
		t.Fatalf("Metrics().FileCache %+v; the file system saw %d opens, %d open now (bound %d)", m, opens, open, bound)
	}
	if s := db.Metrics().String(); !strings.Contains(s, fmt.Sprintf("open tables: %d (bound %d), %d opens, %d evictions", open, bound, opens, opens-open)) {
		t.Fatalf("Metrics().String() lacks the open tables:\n%s", s)
	}

	keys := make([][]byte, 200)
	for i := range keys {
		keys[i] = bulkKey(rng.IntN(n), n)
	}
	vals, errs := db.MultiGet(keys, nil)
	for i := range keys {
		if errs[i] != nil || string(vals[i]) != string(manyTablesValue(keys[i], 900)) {
			t.Fatalf("MultiGet key %s: %d bytes, %v", keys[i], len(vals[i]), errs[i])
		}
	}
	check("a MultiGet", len(keys)+bound) // it may hold each table it reads

	// While an iterator scans, each level iterator holds its table: the
	// data sits in one level, so at most one handle over the bound.
	it := db.NewIterator(nil)
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
		if open, _, _ := fs.counts(); open > bound+1 {
			t.Fatalf("scan at %s: %d table handles open, want at most %d+1", it.Key(), open, bound)
		}
		if count%500 == 0 {
			// A Get in between evicts tables, the scanned one too if it
			// comes to that; the scan goes on reading it.
			if _, err := db.Get(bulkKey(rng.IntN(n), n), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := it.Close(); err != nil || count != n {
		t.Fatalf("scan: %d keys, %v; want %d", count, err, n)
	}
	check("a scan", bound+1)

	if err := db.CompactRange(bulkKey(0, n), bulkKey(n/4, n)); err != nil {
		t.Fatal(err)
	}
	open, _, _ = fs.counts()
	t.Logf("%d tables, %d table opens after the Gets, %d open after a compaction", tables, opens, open)
	check("a compaction", 1<<30) // a compaction holds all its inputs
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if open, _, _ := fs.counts(); open != 0 {
		t.Fatalf("%d table handles open after Close", open)
	}
	fs.checkMisuse(t)
}

// tableUsers returns the references users hold to the files of db's file
// cache (the cache's own not counted).
func tableUsers(db *DB) int {
	c := db.fileCache
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.cachedLocked(fileKindTable) {
		n += int(f.refs.Load()) - 1
	}
	for f := range c.lingering {
		n += int(f.refs.Load())
	}
	return n
}

// currentTables returns the tables of db's current version, in level order.
func currentTables(db *DB) []*manifest.FileMetadata {
	v := db.versions.Current()
	defer v.Unref()
	var files []*manifest.FileMetadata
	for _, level := range v.Levels {
		files = append(files, level...)
	}
	return files
}

// tableNums returns the numbers of db's live tables, in level order.
func tableNums(db *DB) []base.FileNum {
	var nums []base.FileNum
	for _, f := range currentTables(db) {
		nums = append(nums, f.FileNum)
	}
	return nums
}

// cachedTables returns the tables db's file cache holds, sorted.
func cachedTables(db *DB) []base.FileNum {
	c := db.fileCache
	c.mu.Lock()
	defer c.mu.Unlock()
	var nums []base.FileNum
	for _, f := range c.cachedLocked(fileKindTable) {
		nums = append(nums, f.num)
	}
	slices.Sort(nums)
	return nums
}

// openTablesDB opens a database of keys bulk keys, about one table per
// four, with MaxOpenFiles bound and no block cache.
func openTablesDB(t *testing.T, keys, bound int, fs vfs.FS) *DB {
	t.Helper()
	buildManyTables(t, fs, "/db", keys, 900)
	opts := testOptions(fs)
	opts.MaxOpenFiles = bound
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = -1
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestFileCacheEvictsLeastRecentlyUsed: with room for two tables, A and B
// opened, then A used again, opening C evicts B, not A.
func TestFileCacheEvictsLeastRecentlyUsed(t *testing.T) {
	db := openTablesDB(t, 40, 2, vfs.NewMem())
	defer db.Close()
	nums := tableNums(db)
	if len(nums) < 3 {
		t.Fatalf("%d tables", len(nums))
	}
	a, b, c := nums[0], nums[1], nums[2]
	use := func(num base.FileNum) {
		t.Helper()
		f, err := db.fileCache.findTable(num)
		if err != nil {
			t.Fatal(err)
		}
		f.release()
	}
	use(a)
	use(b)
	use(a)
	use(c)
	if got, want := cachedTables(db), []base.FileNum{a, c}; !slices.Equal(got, want) {
		t.Fatalf("cached %v after using %s, %s, %s again, then %s with room for 2: want %v", got, a, b, a, c, want)
	}
	// Neither used since the hand last passed: the older one goes.
	use(b)
	if got := cachedTables(db); len(got) != 2 || !slices.Contains(got, b) {
		t.Fatalf("cached %v after using %s: want it and one other", got, b)
	}
}

// TestFileCacheEvictedTableStaysOpenForIterator: with room for one table,
// an iterator reading table A while Gets open other tables keeps A open
// (evicted from the cache, not closed) and reads on; A closes once, when
// the iterator leaves it.
func TestFileCacheEvictedTableStaysOpenForIterator(t *testing.T) {
	fs := newTableFileFS(vfs.NewMem())
	const keys = 100
	db := openTablesDB(t, keys, 1, fs)
	files := currentTables(db)
	it := db.NewIterator(nil)
	if !it.First() {
		t.Fatal(it.Err())
	}
	for _, f := range files[len(files)-3:] {
		// Tables far from the iterator's.
		if _, err := db.Get(f.Smallest.UserKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	if cached, lingering := db.fileCache.numOpen(); cached != 1 || lingering != 1 {
		t.Fatalf("cache holds %d tables and %d evicted ones in use; want 1 and 1 (the iterator's)", cached, lingering)
	}
	if open, _, _ := fs.counts(); open != 2 {
		t.Fatalf("%d table handles open, want 2 (the cached one and the iterator's)", open)
	}
	// Every block comes from the file (no block cache): the iterator reads
	// its evicted table to its end and on into the next tables.
	n := 1
	for it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != keys {
		t.Fatalf("scan: %d keys, want %d", n, keys)
	}
	if cached, lingering := db.fileCache.numOpen(); cached != 1 || lingering != 0 {
		t.Fatalf("after the iterator closed: %d cached, %d evicted still open; want 1 and 0", cached, lingering)
	}
	if u := tableUsers(db); u != 0 {
		t.Fatalf("after the iterator closed: %d table references not released", u)
	}
	if open, _, _ := fs.counts(); open != 1 {
		t.Fatalf("%d table handles open after the iterator closed, want 1", open)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fs.checkMisuse(t)
}

// TestMaxOpenFiles4UnderConcurrentReadsAndCompactions runs Gets, MultiGets
// and scans from several goroutines while writers overwrite keys (with the
// same values) and compactions run, all through 4 open files and no block
// cache: every answer must be right, no handle read after it was closed or
// closed twice, and every handle closed at the end. Meant for -race.
func TestMaxOpenFiles4UnderConcurrentReadsAndCompactions(t *testing.T) {
	const n = 3000
	mem := vfs.NewMem()
	fs := newTableFileFS(mem)
	buildManyTables(t, fs, "/db", n, 300)
	opts := testOptions(fs)
	opts.MaxOpenFiles = 4
	opts.BlockCacheSize = -1
	opts.TargetFileSizeBase = 4 << 10
	opts.MaxBackgroundJobs = 3
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	value := func(k []byte) []byte { return manyTablesValue(k, 300) }
	rounds := bySize(300, 100, 2000)
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for g := range 2 { // writers: overwrites keep the values, move the tables
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range rounds {
				b := db.NewBatch()
				for range 20 {
					k := bulkKey(rng.IntN(n), n)
					b.Put(k, value(k))
				}
				if err := db.Write(b, nil); err != nil {
					report(err)
					return
				}
			}
		})
	}
	for g := range 2 { // Gets and MultiGets
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for r := range rounds {
				k := bulkKey(rng.IntN(n), n)
				if v, err := db.Get(k, nil); err != nil || string(v) != string(value(k)) {
					report(fmt.Errorf("Get(%s): %d bytes, %v", k, len(v), err))
					return
				}
				if r%10 == 0 {
					keys := make([][]byte, 30)
					for i := range keys {
						keys[i] = bulkKey(rng.IntN(n), n)
					}
					vals, errs := db.MultiGet(keys, &ReadOptions{AsyncIO: r%20 == 0})
					for i := range keys {
						if errs[i] != nil || string(vals[i]) != string(value(keys[i])) {
							report(fmt.Errorf("MultiGet(%s): %d bytes, %v", keys[i], len(vals[i]), errs[i]))
							return
						}
					}
				}
			}
		})
	}
	for g := range 2 { // bounded scans
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for range rounds / 10 {
				from := rng.IntN(n - 200)
				it := db.NewIterator(&ReadOptions{LowerBound: bulkKey(from, n), UpperBound: bulkKey(from+200, n)})
				count := 0
				for ok := it.First(); ok; ok = it.Next() {
					if string(it.Value()) != string(value(it.Key())) {
						report(fmt.Errorf("scan: wrong value at %s", it.Key()))
						break
					}
					count++
				}
				if err := it.Close(); err != nil || count != 200 {
					report(fmt.Errorf("scan from %s: %d keys, %v; want 200", bulkKey(from, n), count, err))
					return
				}
			}
		})
	}
	wg.Go(func() { // manual compactions beside the automatic ones
		for i := range 4 {
			if err := db.CompactRange(bulkKey(i*n/4, n), bulkKey((i+1)*n/4-1, n)); err != nil {
				report(err)
				return
			}
		}
	})
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	m := db.Metrics()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	open, peak, opens := fs.counts()
	t.Logf("%d table opens, at most %d open at once; %d compactions", opens, peak, m.Compact.Count)
	if open != 0 {
		t.Errorf("%d table handles open after Close", open)
	}
	if m.Compact.Count == 0 {
		t.Error("no compaction ran")
	}
	fs.checkMisuse(t)
}

// TestOpenForReadOnlyKeepsEveryTableOpen: a read-only DB opened with
// MaxOpenFiles = 2 keeps all its tables open (it cannot reopen one a writer
// has removed), so it reads its whole view after the writer has rewritten
// and removed every table.
func TestOpenForReadOnlyKeepsEveryTableOpen(t *testing.T) {
	const n = 200
	mem := vfs.NewMem()
	fs := newTableFileFS(mem)
	tables := buildManyTables(t, fs, "/db", n, 900)
	writer, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(fs)
	opts.MaxOpenFiles = 2
	opts.BlockCacheSize = -1
	ro, err := OpenForReadOnly("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if cached, _ := ro.fileCache.numOpen(); cached != tables {
		t.Fatalf("the read-only DB holds %d of its %d tables open, want all", cached, tables)
	}
	old := tableNums(ro)
	for j := range n {
		k := bulkKey(j, n)
		if err := writer.Put(k, []byte("new"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(); err != nil { // removes the obsolete tables
		t.Fatal(err)
	}
	for _, num := range old {
		if _, err := mem.Stat(ro.tablePath(num)); err == nil {
			t.Fatalf("the writer kept table %s: the test needs it removed", num)
		}
	}
	for j := range n {
		k := bulkKey(j, n)
		if v, err := ro.Get(k, nil); err != nil || string(v) != string(manyTablesValue(k, 900)) {
			t.Fatalf("read-only Get(%s) after the writer removed its tables: %d bytes, %v", k, len(v), err)
		}
	}
	it := ro.NewIterator(nil)
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	if err := it.Close(); err != nil || count != n {
		t.Fatalf("read-only scan: %d keys, %v; want %d", count, err, n)
	}
}

// TestMaxOpenFilesOption: the default, -1 and validation naming the field,
// and the OPTIONS file recording it.
func TestMaxOpenFilesOption(t *testing.T) {
	if got := (&Options{}).EnsureDefaults().MaxOpenFiles; got != 1000 {
		t.Fatalf("default MaxOpenFiles %d, want 1000", got)
	}
	for _, v := range []int{-2, -100} {
		o := testOptions(vfs.NewMem())
		o.MaxOpenFiles = v
		_, err := Open("/db", o)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Options.MaxOpenFiles") {
			t.Fatalf("MaxOpenFiles %d: Open error %v, want ErrInvalidArgument naming Options.MaxOpenFiles", v, err)
		}
	}
	for _, v := range []int{-1, 1, 16} {
		fs := vfs.NewMem()
		o := testOptions(fs)
		o.MaxOpenFiles = v
		db, err := Open("/db", o)
		if err != nil {
			t.Fatalf("MaxOpenFiles %d: %v", v, err)
		}
		if want := max(v, 0); db.fileCache.capacity != want {
			t.Errorf("MaxOpenFiles %d: cache capacity %d, want %d", v, db.fileCache.capacity, want)
		}
		db.Close()
		parsed, err := ParseOptionsFile(readFile(t, fs, "/db/"+findFile(t, fs, "/db", base.FileTypeOptions)))
		if err != nil {
			t.Fatal(err)
		}
		if parsed.MaxOpenFiles != v {
			t.Errorf("OPTIONS file records MaxOpenFiles %d, want %d", parsed.MaxOpenFiles, v)
		}
	}
}

// TestFileCacheReopenedTableFindsItsCachedBlocks: a table evicted from the
// file cache and opened again reads its data blocks from the block cache,
// where they stayed under the table's cache ID.
func TestFileCacheReopenedTableFindsItsCachedBlocks(t *testing.T) {
	fs := newTableFileFS(vfs.NewMem())
	buildManyTables(t, fs, "/db", 40, 900)
	opts := testOptions(fs)
	opts.MaxOpenFiles = 1
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := currentTables(db)
	a, b := files[0].Smallest.UserKey, files[len(files)-1].Smallest.UserKey
	get := func(k []byte) PerfContext {
		t.Helper()
		var pc PerfContext
		if _, err := db.Get(k, &ReadOptions{PerfContext: &pc}); err != nil {
			t.Fatal(err)
		}
		return pc
	}
	if pc := get(a); pc.BlockReads != 1 {
		t.Fatalf("first Get: %d data block reads, want 1", pc.BlockReads)
	}
	get(b) // evicts a's table
	_, _, opens := fs.counts()
	pc := get(a)
	if _, _, now := fs.counts(); now != opens+1 {
		t.Fatalf("the third Get opened %d tables, want 1 (its table was evicted)", now-opens)
	}
	if pc.BlockReads != 0 || pc.BlockCacheHits != 1 {
		t.Fatalf("Get from the reopened table: %d block reads, %d cache hits; want 0 and 1", pc.BlockReads, pc.BlockCacheHits)
	}
}

// TestFileCacheLookupsRaceEvictions has four goroutines take and release
// references to three tables through a cache of 2 entries, so lookups
// (which take no lock) race with evictions of the entry they found: every
// reference handed out must be to an open reader that can read its table,
// and once all are released nothing lingers, the cache holds at most its
// capacity, and the file system saw no handle used after close. Meant for
// -race too.
func TestFileCacheLookupsRaceEvictions(t *testing.T) {
	mem := vfs.NewMem()
	fs := newTableFileFS(mem)
	buildManyTables(t, fs, "/db", 400, 100)
	opts := testOptions(fs)
	opts.MaxOpenFiles = 2
	opts.BlockCacheSize = -1
	opts.DisableAutoCompactions = true
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	// Three tables through two entries: most lookups hit, and most misses
	// evict an entry another goroutine has just found.
	tables := currentTables(db)
	if len(tables) < 3 {
		t.Fatalf("only %d tables", len(tables))
	}
	tables = tables[:3]
	rounds := bySize(20000, 5000, 200000)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				m := tables[rng.IntN(len(tables))]
				f, err := db.fileCache.findTable(m.FileNum)
				if err != nil {
					errc <- err
					return
				}
				if rng.IntN(2) == 0 {
					f.ref() // a second holder, as a holder may take one with ref
					f.release()
				}
				_, _, _, ok, err := f.reader.GetCounted(m.Smallest.UserKey, base.SeqNumMax, false, nil, nil)
				f.release()
				if err != nil || !ok {
					errc <- fmt.Errorf("table %s: Get(%s) found %v, %v", m.FileNum, m.Smallest.UserKey, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	cached, lingering := db.fileCache.numOpen()
	if open, _, _ := fs.counts(); cached > 2 || lingering != 0 || open != cached {
		t.Errorf("after every release: %d cached (capacity 2), %d lingering, %d handles open", cached, lingering, open)
	}
	if n := tableUsers(db); n != 0 {
		t.Errorf("%d references still held", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if open, _, _ := fs.counts(); open != 0 {
		t.Errorf("%d table handles open after Close", open)
	}
	fs.checkMisuse(t)
}

// TestFileCacheOpenRacingCloseClosesReader: a Get that misses the file
// cache just before Close adds the entry, Close passes it unopened, then the
// Get opens the table: that open must close its reader and fail.
func TestFileCacheOpenRacingCloseClosesReader(t *testing.T) {
	fs := newTableFileFS(vfs.NewMem())
	o := testOptions(fs)
	o.DisableAutoCompactions = true
	o.MaxOpenFiles = 1
	d, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		d.Put([]byte(k), []byte("v"), nil)
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	l0 := d.versions.Current().Levels[0]
	num := l0[len(l0)-1].FileNum // the older table: evicted by the newer one
	if d.fileCache.lookup(fileKindTable, num) != nil {
		t.Skip("table still cached")
	}
	// findTable's miss path, up to its once.Do:
	f, err := d.fileCache.insert(fileKindTable, num)
	if err != nil {
		t.Fatal(err)
	}
	// The reference f holds is the racing Get's: counted as an open reader,
	// so that Close's invariants check (under -race, which reports
	// references left with no reader open) expects it.
	d.openIters.Add(1)
	defer d.openIters.Add(-1)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// ... and the rest of findTable, after Close:
	f.once.Do(func() { f.err = d.fileCache.open(f); f.ready.Store(f.err == nil) })
	if !errors.Is(f.err, ErrClosed) {
		t.Errorf("open after Close: %v, want ErrClosed", f.err)
	}
	f.release()
	if open, _, _ := fs.counts(); open != 0 {
		t.Fatalf("%d table handles open after Close (the reader opened by a findTable racing Close is never closed)", open)
	}
}

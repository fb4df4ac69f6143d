package shale

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// fileCache keeps open readers of the DB's files, keyed by kind and file
// number: tables and blob files. It holds at most capacity of them, of both
// kinds together (Options.MaxOpenFiles; 0 is no bound), opens a file
// on first use and opens it again after it was evicted.
//
// References. An entry holds one reference for the cache while it is in
// the cache's map, and one for each user. findTable hands an entry out with
// a reference, which its user gives back with release once it no longer
// reads the file; a holder may take another with ref. A lookup takes no
// lock: it reads the index (copy-on-write maps, changed under mu) and takes
// its reference with tryRef, which fails once the count is zero. An entry
// in the index always holds the cache's reference (eviction removes it from
// the index before dropping that), so a lookup that found it in time gets
// a reference, and one that comes after the last reference is gone fails
// and goes to insert. Whoever drops the last reference closes the file:
// eviction drops only the cache's reference, and never closes a file that
// an iterator, Get, MultiGet or compaction still reads.
//
// Lookups take no lock because a Get probes a table on every level it
// consults: a read lock there is an atomic add on one word shared by every
// core, which made looped Gets on two cores some 10% slower.
//
// Eviction. Entries sit on a CLOCK ring (second chance, as in the block
// cache), an approximation of least recently used that costs a lookup no
// lock: a lookup sets its entry's used bit, and writes it only when it is
// clear. When an insert takes the cache past capacity,
// the hand sweeps the ring clearing used bits, passes entries in use, and
// evicts the first entry that is neither in use nor used since the hand
// last passed it. When every entry is in use, the one at the hand is
// evicted all the same: its users keep the file open until they release
// it. The cache thus never holds more than capacity entries, and the open
// files are at most capacity plus those evicted while in use.
//
// The blocks of a file are cached under one ID for as long as the file is
// live (ids), so a file opened again finds the blocks it cached before;
// they leave the block cache only when the file becomes obsolete.
type fileCache struct {
	d *DB
	// capacity bounds len(m[...]) over every kind; 0 is no bound.
	capacity int
	// mu guards every change to the cache; lookups do not take it.
	mu sync.Mutex
	// index holds the cached entries of each kind, sharded by file number
	// (fileIndexShards); n counts them. Each shard is a map replaced whole
	// under mu, never changed in place, so lookups read it without a lock.
	index [numFileKinds][fileIndexShards]atomic.Pointer[map[base.FileNum]*cachedFile]
	n     int
	// hand is the CLOCK hand: the ring's next entry to consider for
	// eviction, nil when the cache is empty. New entries go in just behind
	// it, so it reaches them last.
	hand *cachedFile
	// ids are the block cache IDs of the live files of each kind.
	ids [numFileKinds]map[base.FileNum]uint64
	// lingering holds the entries evicted while in use, whose files stay
	// open until their last user releases them; close closes them too.
	lingering map[*cachedFile]struct{}
	closed    bool
	// opens counts the files opened, evictions those evicted to keep the
	// bound (Metrics().FileCache); both change only on a miss.
	opens, evictions atomic.Uint64
	// stats counts the file reads of every reader (Metrics().IO). With
	// Options.Statistics set, the Statistics reads it while the DB is open
	// and keeps its counts at close (attach/detach): readers count once, and
	// a Statistics shared by several DBs does not mix their Metrics.
	stats *sstable.ReadStats
	// blobStats counts the reads of blob files (Metrics().Blob).
	blobStats *blob.ReadStats
	// counts holds stats and blobStats, as Options.Statistics reads them.
	counts *readCounts
}

// fileIndexShards is the number of maps the index of each file kind is
// split into: an insert or eviction copies one of them, about
// 1/fileIndexShards of the cached entries.
const fileIndexShards = 1024

// fileKind is the kind of file an entry of the file cache reads.
type fileKind uint8

const (
	fileKindTable fileKind = iota
	fileKindBlob
	numFileKinds
)

// compactionReadaheadSize is the explicit readahead of compaction input
// iterators (RocksDB's compaction_readahead_size default): compactions read
// whole tables front to back.
const compactionReadaheadSize = 2 << 20

// cachedFile is an entry of the file cache: an open file and what its
// users need ready. For a table: its reader and range tombstones.
type cachedFile struct {
	cache *fileCache
	kind  fileKind
	num   base.FileNum
	// refs counts the cache's reference (while in the map) and the users'.
	refs atomic.Int32
	// used is the CLOCK bit: set by lookups, cleared by the passing hand.
	used atomic.Bool
	// once opens the file; ready is set once it is open without error.
	once  sync.Once
	ready atomic.Bool
	err   error
	// closed is set by whoever closes the file, exactly once: the last
	// release, or the cache's close.
	closed atomic.Bool
	// prev and next link the CLOCK ring, under cache.mu.
	prev, next *cachedFile
	cacheID    uint64

	reader    *sstable.Reader
	rangeDels *rangedel.List // nil when the table has none
	// blobReader reads a blob file (fileKindBlob).
	blobReader *blob.Reader
}

// newFileCache returns the DB's file cache. A read-only DB keeps every table
// open whatever Options.MaxOpenFiles says: it opened them through pinned
// handles at load, and a writer beside it may have removed them since.
func newFileCache(d *DB) *fileCache {
	counts := new(readCounts)
	c := &fileCache{d: d, counts: counts, stats: &counts.tables, blobStats: &counts.blobs, lingering: map[*cachedFile]struct{}{}}
	if n := d.opts.MaxOpenFiles; n > 0 && !d.readOnly {
		c.capacity = n
	}
	for k := range c.ids {
		c.ids[k] = make(map[base.FileNum]uint64)
	}
	if st := d.opts.Statistics; st != nil {
		st.attach(c.counts)
	}
	return c
}

// findTable returns the open table num with a reference the caller must
// release, opening it if needed.
func (c *fileCache) findTable(num base.FileNum) (*cachedFile, error) {
	return c.find(fileKindTable, num)
}

// findBlob returns the open blob file num (its blobReader) with a
// reference the caller must release, opening it if needed.
func (c *fileCache) findBlob(num base.FileNum) (*cachedFile, error) {
	return c.find(fileKindBlob, num)
}

// find returns the open file (kind, num) with a reference, opening it if
// needed.
func (c *fileCache) find(kind fileKind, num base.FileNum) (*cachedFile, error) {
	f := c.lookup(kind, num)
	if f != nil && !f.tryRef() {
		f = nil // evicted since the lookup: insert finds or adds the new entry
	}
	if f != nil {
		// Only hits set the bit: an entry used once, when it was opened,
		// goes before one used again since.
		if !f.used.Load() {
			f.used.Store(true)
		}
	} else {
		var err error
		if f, err = c.insert(kind, num); err != nil {
			return nil, err
		}
	}
	f.once.Do(func() {
		f.err = c.open(f)
		f.ready.Store(f.err == nil)
	})
	if f.err != nil {
		// Forget the failure so a later call (after repair) may retry.
		c.remove(f)
		f.release()
		return nil, f.err
	}
	return f, nil
}

// findOpenTable returns table num with a reference when it is open,
// without opening it.
func (c *fileCache) findOpenTable(num base.FileNum) (*cachedFile, bool) {
	f := c.lookup(fileKindTable, num)
	if f == nil || !f.ready.Load() || !f.tryRef() {
		return nil, false
	}
	if !f.used.Load() {
		f.used.Store(true)
	}
	return f, true
}

// insert returns the entry of (kind, num) with a reference, adding an
// unopened one when there is none, and evicts past capacity.
func (c *fileCache) insert(kind fileKind, num base.FileNum) (*cachedFile, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	f := c.lookup(kind, num)
	if f != nil {
		f.ref() // in the index, so it holds the cache's reference
		c.mu.Unlock()
		return f, nil
	}
	id := c.ids[kind][num]
	if bc := c.d.cacheOf(kind); id == 0 && bc != nil {
		id = bc.NewID()
		c.ids[kind][num] = id
	}
	f = &cachedFile{cache: c, kind: kind, num: num, cacheID: id}
	f.refs.Store(2) // the cache's and the caller's
	c.storeLocked(f, true)
	c.n++
	if c.hand == nil {
		f.prev, f.next, c.hand = f, f, f
	} else {
		f.prev, f.next = c.hand.prev, c.hand
		f.prev.next, c.hand.prev = f, f
	}
	// Usually one victim. The cache's reference is dropped under mu, so
	// that a victim still in use is in lingering before its last user's
	// release (closeFile) looks for it there; one not in use is closed once
	// mu is released, as mu is not held across IO.
	var victims [1]*cachedFile
	unused := victims[:0]
	for c.capacity > 0 && c.n > c.capacity {
		v := c.victimLocked()
		c.removeLocked(v)
		if v.refs.Add(-1) > 0 {
			c.lingering[v] = struct{}{}
		} else {
			unused = append(unused, v)
		}
		c.evictions.Add(1)
	}
	c.mu.Unlock()
	for _, v := range unused {
		_ = v.closeReader()
	}
	return f, nil
}

// victimLocked picks the entry to evict (see fileCache). Two turns of the
// hand find one not in use, if there is one: the first clears every used
// bit. A lookup may take a reference to the entry picked as unused before
// insert removes it; the entry then lingers until that user releases it.
func (c *fileCache) victimLocked() *cachedFile {
	for range 2 * c.n {
		f := c.hand
		c.hand = f.next
		if f.used.Load() {
			f.used.Store(false)
			continue
		}
		if f.refs.Load() == 1 {
			return f
		}
	}
	f := c.hand
	c.hand = f.next
	return f
}

// removeLocked takes f out of the map and the ring; the caller then drops
// the cache's reference.
func (c *fileCache) removeLocked(f *cachedFile) {
	c.storeLocked(f, false)
	c.n--
	if f.next == f {
		c.hand = nil
	} else {
		if c.hand == f {
			c.hand = f.next
		}
		f.prev.next, f.next.prev = f.next, f.prev
	}
	f.prev, f.next = nil, nil
}

// remove takes f out of the cache, if it is still there, and drops the
// cache's reference.
func (c *fileCache) remove(f *cachedFile) {
	c.mu.Lock()
	in := c.lookup(f.kind, f.num) == f
	if in {
		c.removeLocked(f)
	}
	c.mu.Unlock()
	if in {
		f.release()
	}
}

// lookup returns the entry of (kind, num) in the index, nil when there is
// none. It takes no lock; under mu it sees the index as it is.
func (c *fileCache) lookup(kind fileKind, num base.FileNum) *cachedFile {
	if m := c.index[kind][uint64(num)%fileIndexShards].Load(); m != nil {
		return (*m)[num]
	}
	return nil
}

// storeLocked adds f to the index (add) or removes it, replacing its
// shard's map with a changed copy. c.mu must be held.
func (c *fileCache) storeLocked(f *cachedFile, add bool) {
	shard := &c.index[f.kind][uint64(f.num)%fileIndexShards]
	var m map[base.FileNum]*cachedFile
	if old := shard.Load(); old != nil {
		m = maps.Clone(*old)
	}
	if add {
		if m == nil {
			m = make(map[base.FileNum]*cachedFile, 1)
		}
		m[f.num] = f
	} else {
		delete(m, f.num)
	}
	shard.Store(&m)
}

// cachedLocked returns the entries of kind in the index. c.mu must be
// held.
func (c *fileCache) cachedLocked(kind fileKind) []*cachedFile {
	var files []*cachedFile
	for i := range c.index[kind] {
		if m := c.index[kind][i].Load(); m != nil {
			for _, f := range *m {
				files = append(files, f)
			}
		}
	}
	return files
}

// ref adds a reference to f, which the caller already holds one of.
func (f *cachedFile) ref() { f.refs.Add(1) }

// tryRef adds a reference to f unless its count is zero (its file closed
// or being closed), reporting whether it did.
func (f *cachedFile) tryRef() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the file.
func (f *cachedFile) release() {
	if n := f.refs.Add(-1); n == 0 {
		f.cache.closeFile(f)
	} else if invariants.Enabled && n < 0 {
		panic(fmt.Sprintf("shale: file cache: %s %s released more often than referenced", f.kind, f.num))
	}
}

// closeFile closes f once its last reference is gone.
func (c *fileCache) closeFile(f *cachedFile) {
	c.mu.Lock()
	delete(c.lingering, f)
	c.mu.Unlock()
	_ = f.closeReader()
}

// mapped reports whether f's reader reads through a mapping of its file.
func (f *cachedFile) mapped() bool {
	return f.reader != nil && f.reader.Mapped() || f.blobReader != nil && f.blobReader.Mapped()
}

// closeReader closes f's file unless that was done already.
func (f *cachedFile) closeReader() error {
	if f.reader == nil && f.blobReader == nil || f.closed.Swap(true) {
		return nil
	}
	if f.blobReader != nil {
		return f.blobReader.Close()
	}
	return f.reader.Close()
}

func (k fileKind) String() string {
	switch k {
	case fileKindTable:
		return "table"
	case fileKindBlob:
		return "blob file"
	}
	return fmt.Sprintf("fileKind(%d)", uint8(k))
}

// cacheOf returns the cache of the blocks or values of files of kind.
func (d *DB) cacheOf(kind fileKind) *cache.Cache {
	if kind == fileKindBlob {
		return d.blobCache
	}
	return d.blockCache
}

// tableOpenOptions open tables for random access (advise_random_on_open):
// the OS must not read ahead, since iterators do their own readahead.
var tableOpenOptions = []vfs.OpenOption{vfs.RandomAccess}

func (c *fileCache) open(t *cachedFile) error {
	d := c.d
	if t.kind == fileKindBlob {
		return c.openBlob(t)
	}
	name := d.tablePath(t.num)
	f, err := c.openForReads(name)
	if err != nil {
		return err
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{
		Comparer:             d.cmp,
		Cache:                d.blockCache,
		CacheID:              t.cacheID,
		FileName:             name,
		MaxAutoReadaheadSize: d.opts.MaxAutoReadaheadSize,
		AsyncReader:          d.ioReader,
		Stats:                c.stats,
		// Index and filter blocks in the block cache, pinned for L0 tables.
		CacheIndexAndFilterBlocks: d.opts.CacheIndexAndFilterBlocks,
		PinIndexAndFilterBlocks:   d.pinIndexAndFilter(t.num),
		MmapReads:                 d.opts.AllowMmapReads,
		// For point lookups in tables of prefixes only (whole_key_filtering
		// off); the reader keeps the extractor current at its open.
		PrefixExtractor: d.mutableOptions().PrefixExtractor,
		// An ingested table's entries read at its seqnum (ingest.go).
		GlobalSeqNum: d.tableGlobalSeqNum(t.num),
	})
	if err != nil {
		return err // NewReader has closed f
	}
	var rangeDels *rangedel.List
	if spans := r.RangeTombstones(); len(spans) > 0 {
		rangeDels = rangedel.NewList(d.cmp.Compare, spans)
	}
	return c.publish(r, func() { t.reader, t.rangeDels = r, rangeDels })
}

// openForReads opens the file name for the random reads of a reader (with
// direct IO under Options.UseDirectReads), counting the open.
func (c *fileCache) openForReads(name string) (vfs.File, error) {
	flags := tableOpenOptions
	if c.d.opts.UseDirectReads {
		flags = []vfs.OpenOption{vfs.RandomAccess, vfs.DirectIO}
	}
	c.opens.Add(1)
	return c.d.fs.Open(name, flags...)
}

// publish makes the reader r just opened an entry's (set) under mu, so that
// close either sees it (and closes it) or came first, and then r is closed
// here: a Get that missed the cache just before Close leaks no file.
func (c *fileCache) publish(r io.Closer, set func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = r.Close()
		return ErrClosed
	}
	set()
	return nil
}

// openBlob opens the blob file of t, for random reads as tables are.
func (c *fileCache) openBlob(t *cachedFile) error {
	d := c.d
	name := d.blobPath(t.num)
	f, err := c.openForReads(name)
	if err != nil {
		return err
	}
	unfinished := d.memBlobPins.unfinished(t.num)
	r, err := blob.NewReader(f, blob.ReaderOptions{
		FileNum:              t.num,
		FileName:             name,
		Cache:                d.blobCache,
		CacheID:              t.cacheID,
		AsyncReader:          d.ioReader,
		Stats:                c.blobStats,
		MaxAutoReadaheadSize: d.opts.MaxAutoReadaheadSize,
		MmapReads:            d.opts.AllowMmapReads,
		// A memtable's file still being written (blob_write.go).
		Unfinished: unfinished,
	})
	if err != nil {
		return err // NewReader has closed f
	}
	if err := c.publish(r, func() { t.blobReader = r }); err != nil {
		return err
	}
	if unfinished && !d.memBlobPins.unfinished(t.num) {
		// Finished meanwhile: either the flush's evictUnfinished found
		// this entry, or it ran before and this one goes now.
		c.remove(t)
	}
	return nil
}

// maxParallelOpens bounds the goroutines of openTables: opening a table is
// a few reads, and more in flight than this gains little on one device.
const maxParallelOpens = 8

// openTables opens the tables nums concurrently (findTable on each, at
// most maxParallelOpens at a time). files[i] receives table nums[i] with a
// reference the caller must release, or nil with errs[i] saying why. A
// MultiGet needing several unopened tables pays about one open's latency
// instead of one per table.
func (c *fileCache) openTables(nums []base.FileNum) (files []*cachedFile, errs []error) {
	files = make([]*cachedFile, len(nums))
	errs = make([]error, len(nums))
	if len(nums) == 1 {
		files[0], errs[0] = c.findTable(nums[0])
		return files, errs
	}
	sem := make(chan struct{}, maxParallelOpens)
	var wg sync.WaitGroup
	for i, num := range nums {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			files[i], errs[i] = c.findTable(num)
			<-sem
		}()
	}
	wg.Wait()
	return files, errs
}

// evictObsolete drops a table or blob file that no version references any
// more: its reader (closed now, as nobody can hold a reference to a file no
// version has) and its blocks or values in the cache.
func (c *fileCache) evictObsolete(kind fileKind, num base.FileNum) {
	c.mu.Lock()
	f := c.lookup(kind, num)
	if f != nil {
		c.removeLocked(f)
	}
	id := c.ids[kind][num]
	delete(c.ids[kind], num)
	c.mu.Unlock()
	if f != nil {
		if invariants.Enabled && f.refs.Load() != 1 {
			panic(fmt.Sprintf("shale: file cache: obsolete %s %s still has %d users", kind, num, f.refs.Load()-1))
		}
		f.release() // closes the reader, which unpins its blocks
	}
	if bc := c.d.cacheOf(kind); id != 0 && bc != nil {
		bc.EvictID(id)
	}
}

// evictUnfinished drops the cached reader of blob file num, opened while
// the file was a memtable's unfinished one (no footer bounds its records),
// so that the next find opens the finished file. Its cached values stay.
func (c *fileCache) evictUnfinished(num base.FileNum) {
	c.mu.Lock()
	f := c.lookup(fileKindBlob, num)
	if f != nil {
		c.removeLocked(f)
	}
	c.mu.Unlock()
	if f != nil {
		f.release()
	}
}

// checkReleased panics, in invariants builds, when a reference to one of
// files (the first cached of them still with the cache's own) is held at
// Close with no iterator open: a reader did not release what it acquired. A
// Get or MultiGet racing with Close may hold one for a moment, so it waits
// up to two seconds for them to be given back.
func (c *fileCache) checkReleased(files []*cachedFile, cached int) {
	var held []string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		held = held[:0]
		for i, f := range files {
			users := f.refs.Load()
			if i < cached {
				users--
			}
			if users > 0 {
				held = append(held, fmt.Sprintf("%s %s (%d users)", f.kind, f.num, users))
			}
		}
		if len(held) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(held) > 0 {
		panic(fmt.Sprintf("shale: file cache: closed with files still referenced and no iterator open (a reference was not released): %v", held))
	}
}

// numOpen returns how many files the cache holds and how many evicted ones
// stay open for their users.
func (c *fileCache) numOpen() (cached, lingering int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, len(c.lingering)
}

// close closes every file, those still in use too (DB.Close requires that
// iterators be closed first; one that is not fails with ErrClosed), and
// detaches the read counts from Options.Statistics. A mapped file still in
// use is the exception: a Get or MultiGet racing Close may be copying from
// its mapping, which an unmap would turn into a fault, so the last
// reference closes it instead (as it closes an evicted file).
func (c *fileCache) close() error {
	c.mu.Lock()
	var files []*cachedFile
	for k := range c.index {
		files = append(files, c.cachedLocked(fileKind(k))...)
		for i := range c.index[k] {
			c.index[k][i].Store(nil)
		}
	}
	// The first cached entries still hold the cache's reference.
	cached := len(files)
	for f := range c.lingering {
		files = append(files, f)
	}
	clear(c.lingering)
	c.n, c.hand, c.closed = 0, nil, true
	c.mu.Unlock()
	if invariants.Enabled && c.d.openIters.Load() == 0 {
		c.checkReleased(files, cached)
	}
	var err error
	for i, f := range files {
		if f.mapped() {
			// The cache's reference, for a cached entry; a lingering one
			// is its users' alone.
			if i < cached && f.refs.Add(-1) == 0 {
				err = errors.Join(err, f.closeReader())
			}
			continue
		}
		err = errors.Join(err, f.closeReader())
	}
	if st := c.d.opts.Statistics; st != nil {
		st.detach(c.counts)
	}
	return err
}

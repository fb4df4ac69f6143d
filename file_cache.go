package shale

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
)

// tableCache keeps one open reader per live table. Readers are opened on
// first use and closed when the table becomes obsolete: a version pins its
// tables, so no reader is closed while an iterator or Get may use it.
type tableCache struct {
	d  *DB
	mu sync.RWMutex
	m  map[base.FileNum]*cachedTable
	// stats counts the file reads of every reader (Metrics().IO). With
	// Options.Statistics set, the Statistics reads it while the DB is open
	// and keeps its counts at close (attach/detach): readers count once, and
	// a Statistics shared by several DBs does not mix their Metrics.
	stats *sstable.ReadStats
}

// compactionReadaheadSize is the explicit readahead of compaction input
// iterators (RocksDB's compaction_readahead_size default): compactions read
// whole tables front to back.
const compactionReadaheadSize = 2 << 20

// cachedTable is an open table with its range tombstones ready for lookups.
type cachedTable struct {
	once sync.Once
	// ready is set once the table is open without error.
	ready     atomic.Bool
	err       error
	reader    *sstable.Reader
	rangeDels *rangedel.List // nil when the table has none
}

func newTableCache(d *DB) *tableCache {
	tc := &tableCache{d: d, m: make(map[base.FileNum]*cachedTable), stats: new(sstable.ReadStats)}
	if st := d.opts.Statistics; st != nil {
		st.attach(tc.stats)
	}
	return tc
}

// get returns the open table num, opening it if needed.
func (tc *tableCache) get(num base.FileNum) (*cachedTable, error) {
	tc.mu.RLock()
	t := tc.m[num]
	tc.mu.RUnlock()
	if t == nil {
		tc.mu.Lock()
		if t = tc.m[num]; t == nil {
			t = &cachedTable{}
			tc.m[num] = t
		}
		tc.mu.Unlock()
	}
	t.once.Do(func() {
		t.err = tc.open(num, t)
		t.ready.Store(t.err == nil)
	})
	if t.err != nil {
		// Forget the failure so a later call (after repair) may retry.
		tc.mu.Lock()
		if tc.m[num] == t {
			delete(tc.m, num)
		}
		tc.mu.Unlock()
		return nil, t.err
	}
	return t, nil
}

// tableOpenOptions open tables for random access (advise_random_on_open):
// the OS must not read ahead, since iterators do their own readahead.
var tableOpenOptions = []vfs.OpenOption{vfs.RandomAccess}

func (tc *tableCache) open(num base.FileNum, t *cachedTable) error {
	d := tc.d
	name := d.tablePath(num)
	flags := tableOpenOptions
	if d.opts.UseDirectReads {
		flags = []vfs.OpenOption{vfs.RandomAccess, vfs.DirectIO}
	}
	f, err := d.fs.Open(name, flags...)
	if err != nil {
		return err
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{
		Comparer:             d.cmp,
		Cache:                d.blockCache,
		FileName:             name,
		MaxAutoReadaheadSize: d.opts.MaxAutoReadaheadSize,
		AsyncReader:          d.ioReader,
		Stats:                tc.stats,
	})
	if err != nil {
		return err // NewReader has closed f
	}
	t.reader = r
	if spans := r.RangeTombstones(); len(spans) > 0 {
		t.rangeDels = rangedel.NewList(d.cmp.Compare, spans)
	}
	return nil
}

// getIfOpen returns table num when it is open, without opening it.
func (tc *tableCache) getIfOpen(num base.FileNum) (*cachedTable, bool) {
	tc.mu.RLock()
	t := tc.m[num]
	tc.mu.RUnlock()
	if t == nil || !t.ready.Load() {
		return nil, false
	}
	return t, true
}

// maxParallelOpens bounds the goroutines of openAll: opening a table is a
// few reads, and more in flight than this gains little on one device.
const maxParallelOpens = 8

// openAll opens the tables nums concurrently (get on each, at most
// maxParallelOpens at a time) and returns each one's error, nil when it is
// open. A MultiGet needing several unopened tables pays about one open's
// latency instead of one per table.
func (tc *tableCache) openAll(nums []base.FileNum) []error {
	errs := make([]error, len(nums))
	if len(nums) == 1 {
		_, errs[0] = tc.get(nums[0])
		return errs
	}
	sem := make(chan struct{}, maxParallelOpens)
	var wg sync.WaitGroup
	for i, num := range nums {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = tc.get(num)
			<-sem
		}()
	}
	wg.Wait()
	return errs
}

// evict closes the reader of an obsolete table and drops its cached blocks.
func (tc *tableCache) evict(num base.FileNum) {
	tc.mu.Lock()
	t := tc.m[num]
	delete(tc.m, num)
	tc.mu.Unlock()
	if t != nil && t.reader != nil {
		tc.d.blockCache.EvictID(t.reader.CacheID())
		t.reader.Close()
	}
}

func (tc *tableCache) close() error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var err error
	for num, t := range tc.m {
		if t.reader != nil {
			err = errors.Join(err, t.reader.Close())
		}
		delete(tc.m, num)
	}
	if st := tc.d.opts.Statistics; st != nil {
		st.detach(tc.stats)
	}
	return err
}

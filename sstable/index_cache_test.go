package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// cachedIndexTable writes a random table with a filter (and no range
// tombstones), and returns its bytes and entries with a reference Reader
// (no cache) over them.
func cachedIndexTable(t *testing.T, rng *rand.Rand, nKeys int) ([]byte, []kv, *Reader) {
	t.Helper()
	entries := randomEntries(rng, nKeys)
	path := filepath.Join(testdir.New(t), "t.sst")
	writeTable(t, path, WriterOptions{BlockSize: 256 + rng.IntN(1024), Compression: []Compression{NoCompression, SnappyCompression}[rng.IntN(2)]}, entries, nil)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewReader(&bytesFile{raw}, ReaderOptions{FileName: "ref.sst"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	return raw, entries, ref
}

// indexCacheRoom is a cache capacity whose shards each hold ref's index and
// filter with room to spare, so that both get cached and data blocks churn
// around them.
func indexCacheRoom(ref *Reader) int64 {
	return cacheShards() * 4 * (ref.ix.size + int64(len(ref.filter)) + 4<<10)
}

// cacheShards is the number of shards cache.New makes on this machine (its
// rule: 16, doubled until at least 4 per P), which divide its capacity.
func cacheShards() int64 {
	n := int64(16)
	for n < 4*int64(runtime.GOMAXPROCS(0)) {
		n *= 2
	}
	return n
}

// TestCachedIndexAndFilterEvicted runs Gets, bloom probes, iterators and
// MultiGet batches against a Reader whose index and filter live in a small
// block cache, evicting them (EvictID) between operations, and checks every
// answer against a Reader that holds them. The index and filter must be in
// the cache, not in the Reader, and must come back after each eviction.
func TestCachedIndexAndFilterEvicted(t *testing.T) {
	rng, seed := newRand(t)
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	for iter := range 6 {
		raw, entries, ref := cachedIndexTable(t, rng, 100+rng.IntN(500))
		c := cache.New(indexCacheRoom(ref))
		var stats ReadStats
		r, err := NewReader(&bytesFile{raw}, ReaderOptions{Cache: c, FileName: "t.sst", CacheIndexAndFilterBlocks: true, AsyncReader: ar, Stats: &stats})
		if err != nil {
			t.Fatal(err)
		}
		if r.ix != nil || r.filter != nil || !r.filterInCache {
			t.Fatalf("seed %d: the Reader holds its index (%v) or filter (%v) with CacheIndexAndFilterBlocks", seed, r.ix != nil, r.filter != nil)
		}
		evictions, refills := 0, 0
		for op := range 300 {
			if rng.IntN(8) == 0 {
				c.EvictID(r.CacheID())
				evictions++
			}
			_, wasCached := r.bf.CachedValue(r.indexH)
			key := entries[rng.IntN(len(entries))].key.UserKey
			if rng.IntN(4) == 0 {
				key = []byte(fmt.Sprintf("absent%d", rng.IntN(1000)))
			}
			snap := base.SeqNum(rng.IntN(1100))
			ctx := fmt.Sprintf("seed %d iter %d op %d", seed, iter, op)
			switch rng.IntN(4) {
			case 0:
				v, kind, seq, found, err := r.Get(key, snap, rng.IntN(2) == 0)
				wv, wkind, wseq, wfound, werr := ref.Get(key, snap, false)
				if err != nil || werr != nil || found != wfound || found && (kind != wkind || seq != wseq || !bytes.Equal(v, wv)) {
					t.Fatalf("%s: Get(%q, %d) = %v %v %d %q %v, want %v %v %d %q %v", ctx, key, snap, found, kind, seq, v, err, wfound, wkind, wseq, wv, werr)
				}
			case 1:
				if got, want := r.MayContain(key), ref.MayContain(key); got != want {
					t.Fatalf("%s: MayContain(%q) = %v, the held filter says %v", ctx, key, got, want)
				}
			case 2:
				o := IterOptions{FillCache: rng.IntN(2) == 0, Async: rng.IntN(2) == 0}
				if rng.IntN(2) == 0 {
					o.Lower = key
				}
				// The cache may lose the index in the middle of a scan.
				var got []kv
				it := r.NewIter(o)
				evictAt := rng.IntN(len(entries) + 1)
				for ok := it.First(); ok; ok = it.Next() {
					if len(got) == evictAt {
						c.EvictID(r.CacheID())
					}
					got = append(got, kv{it.Key().Clone(), bytes.Clone(it.Value())})
				}
				if err := it.Close(); err != nil {
					t.Fatalf("%s: %v", ctx, err)
				}
				want := readAll(t, ref.NewIter(IterOptions{Lower: o.Lower}))
				if len(got) != len(want) {
					t.Fatalf("%s: iterator from %q: %d entries, want %d", ctx, o.Lower, len(got), len(want))
				}
				for j := range got {
					if !equalKV(got[j], want[j]) {
						t.Fatalf("%s: entry %d: %s, want %s", ctx, j, got[j].key, want[j].key)
					}
				}
			case 3:
				var b MultiGetBatch
				var keys [][]byte
				var ids []int
				for range 1 + rng.IntN(20) {
					k := entries[rng.IntN(len(entries))].key.UserKey
					keys = append(keys, k)
					ids = append(ids, b.Add(r, k, snap, rng.IntN(2) == 0))
				}
				runBatch(t, &b, ar, len(ref.ix.items)+1)
				for j, id := range ids {
					v, kind, seq, found, _, err := b.Result(id)
					wv, wkind, wseq, wfound, _ := ref.Get(keys[j], snap, false)
					if err != nil || found != wfound || found && (kind != wkind || seq != wseq || !bytes.Equal(v, wv)) {
						t.Fatalf("%s: MultiGet(%q, %d) = %v %v %d %q %v, want %v %v %d %q", ctx, keys[j], snap, found, kind, seq, v, err, wfound, wkind, wseq, wv)
					}
				}
			}
			if _, ok := r.bf.CachedValue(r.indexH); !wasCached && ok {
				refills++
			}
		}
		if evictions == 0 || refills == 0 {
			t.Fatalf("seed %d: %d evictions, %d times the index came back: the test did not exercise eviction", seed, evictions, refills)
		}
		r.Close()
		if n := stats.ReadersMem.Load(); n != 0 {
			t.Fatalf("seed %d: ReadersMem %d after Close", seed, n)
		}
	}
}

// TestCachedIndexEvictedByDataBlocks reads two tables through a cache whose
// shards each hold about one index: data blocks of the second table push
// the first one's index and filter out (no hand-made eviction), and the
// first table still answers every Get.
func TestCachedIndexEvictedByDataBlocks(t *testing.T) {
	rng, seed := newRand(t)
	raw, entries, ref := cachedIndexTable(t, rng, 300)
	raw2, entries2, _ := cachedIndexTable(t, rng, 3000)
	// A shard fits the index or the filter (and their entry overhead) with
	// 256 bytes to spare: a data block landing beside one evicts it.
	c := cache.New(cacheShards() * (max(ref.ix.size, int64(len(ref.filter))) + 128 + 256))
	o := ReaderOptions{Cache: c, FileName: "t.sst", CacheIndexAndFilterBlocks: true}
	r, err := NewReader(&bytesFile{raw}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r2, err := NewReader(&bytesFile{raw2}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	evicted := 0
	for round := range 50 {
		for range 200 {
			if _, _, _, _, err := r2.Get(entries2[rng.IntN(len(entries2))].key.UserKey, base.SeqNumMax, true); err != nil {
				t.Fatal(err)
			}
		}
		_, ixOK := r.bf.CachedValue(r.indexH)
		_, fOK := r.bf.CachedValue(r.filterH)
		if !ixOK || !fOK {
			evicted++
		}
		for range 20 {
			key := entries[rng.IntN(len(entries))].key.UserKey
			v, kind, seq, found, err := r.Get(key, base.SeqNumMax, true)
			wv, wkind, wseq, wfound, _ := ref.Get(key, base.SeqNumMax, false)
			if err != nil || found != wfound || found && (kind != wkind || seq != wseq || !bytes.Equal(v, wv)) {
				t.Fatalf("seed %d round %d: Get(%q) = %v %v %d %v, want %v %v %d", seed, round, key, found, kind, seq, err, wfound, wkind, wseq)
			}
		}
	}
	if evicted == 0 {
		t.Fatalf("seed %d: the index and filter were never evicted by the other table's data blocks", seed)
	}
}

// TestTableReadersMem checks ReadStats.ReadersMem: an open Reader counts its
// index and filter there by default, almost nothing beyond its properties
// with CacheIndexAndFilterBlocks (the cache holds them), the index and
// filter again when the cache has no room (capacity 0), and nothing once
// closed.
func TestTableReadersMem(t *testing.T) {
	rng, _ := newRand(t)
	raw, _, ref := cachedIndexTable(t, rng, 2000)
	held := ref.ix.size + int64(len(ref.filter))
	open := func(o ReaderOptions) (*Reader, int64) {
		var stats ReadStats
		o.Stats, o.FileName = &stats, "t.sst"
		r, err := NewReader(&bytesFile{raw}, o)
		if err != nil {
			t.Fatal(err)
		}
		n := stats.ReadersMem.Load()
		r.Close()
		r.Close() // a second Close takes nothing back twice
		if after := stats.ReadersMem.Load(); after != 0 {
			t.Fatalf("ReadersMem %d after Close", after)
		}
		return r, n
	}
	_, plain := open(ReaderOptions{Cache: cache.New(1 << 20)})
	if plain < held {
		t.Fatalf("ReadersMem %d without the option, less than the index and filter (%d)", plain, held)
	}
	r, cached := open(ReaderOptions{Cache: cache.New(indexCacheRoom(ref)), CacheIndexAndFilterBlocks: true})
	if cached > plain-held || cached*10 > plain {
		t.Fatalf("ReadersMem %d with the index and filter in the cache, %d without (index and filter %d)", cached, plain, held)
	}
	if m := r.bf.Cache().Metrics(); m.Size < held {
		t.Fatalf("cache holds %d bytes, less than the index and filter (%d)", m.Size, held)
	}
	_, noRoom := open(ReaderOptions{Cache: cache.New(0), CacheIndexAndFilterBlocks: true})
	if noRoom != plain {
		t.Fatalf("ReadersMem %d with a cache of no capacity, %d without the option", noRoom, plain)
	}
	_, pinned := open(ReaderOptions{Cache: cache.New(indexCacheRoom(ref)), CacheIndexAndFilterBlocks: true, PinIndexAndFilterBlocks: true})
	if pinned != cached {
		t.Fatalf("ReadersMem %d pinned, %d cached: pinned blocks are charged to the cache", pinned, cached)
	}
}

// TestPinnedIndexAndFilter: with PinIndexAndFilterBlocks the index and filter
// survive any flood of the cache and evictions of their neighbours, count
// in PinnedSize, are held by the Reader, and become evictable at Close.
func TestPinnedIndexAndFilter(t *testing.T) {
	rng, seed := newRand(t)
	raw, entries, ref := cachedIndexTable(t, rng, 1000)
	c := cache.New(indexCacheRoom(ref))
	r, err := NewReader(&bytesFile{raw}, ReaderOptions{Cache: c, FileName: "t.sst", CacheIndexAndFilterBlocks: true, PinIndexAndFilterBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	held := ref.ix.size + int64(len(ref.filter))
	if m := c.Metrics(); m.PinnedSize < held {
		t.Fatalf("seed %d: PinnedSize %d, index and filter %d", seed, m.PinnedSize, held)
	}
	if r.ix == nil || r.filter == nil {
		t.Fatal("a pinned Reader does not hold its index and filter")
	}
	flood := c.NewID()
	for j := range 20000 {
		c.Set(flood, uint64(j)<<12, make([]byte, 1+rng.IntN(3000)))
	}
	for _, h := range []struct {
		name string
		ok   bool
	}{{"index", cachedOK(r, r.indexH)}, {"filter", cachedOK(r, r.filterH)}} {
		if !h.ok {
			t.Fatalf("seed %d: the pinned %s left the cache in a flood", seed, h.name)
		}
	}
	for range 100 {
		key := entries[rng.IntN(len(entries))].key.UserKey
		if _, _, _, found, err := r.Get(key, base.SeqNumMax, true); err != nil || !found {
			t.Fatalf("seed %d: Get(%q) = %v, %v", seed, key, found, err)
		}
	}
	r.Close()
	if m := c.Metrics(); m.PinnedSize != 0 {
		t.Fatalf("PinnedSize %d after Close", m.PinnedSize)
	}
}

func cachedOK(r *Reader, h block.Handle) bool {
	_, ok := r.bf.CachedValue(h)
	return ok
}

// TestCachedIndexReopen: a Reader opened again under the CacheID of one it
// replaced takes the index and filter from the cache instead of decoding
// the blocks again, pinned or not.
func TestCachedIndexReopen(t *testing.T) {
	rng, _ := newRand(t)
	raw, entries, ref := cachedIndexTable(t, rng, 1000)
	for _, pin := range []bool{false, true} {
		c := cache.New(indexCacheRoom(ref))
		id := c.NewID()
		reads := func() (*Reader, uint64) {
			var stats ReadStats
			r, err := NewReader(&bytesFile{raw}, ReaderOptions{Cache: c, CacheID: id, FileName: "t.sst", Stats: &stats,
				CacheIndexAndFilterBlocks: true, PinIndexAndFilterBlocks: pin})
			if err != nil {
				t.Fatal(err)
			}
			return r, stats.BlockReads.Load()
		}
		r1, first := reads()
		r1.Close()
		r2, second := reads()
		if second != first-2 {
			t.Fatalf("pin %v: reopening read %d blocks, the first open %d (want two fewer: index and filter)", pin, second, first)
		}
		if pin && c.Metrics().PinnedSize < ref.ix.size {
			t.Fatalf("a reopened pinned Reader did not pin the cached index: %+v", c.Metrics())
		}
		key := entries[0].key.UserKey
		if _, _, _, found, err := r2.Get(key, base.SeqNumMax, false); err != nil || !found {
			t.Fatalf("pin %v: Get(%q) after reopening = %v, %v", pin, key, found, err)
		}
		r2.Close()
		if m := c.Metrics(); m.PinnedSize != 0 {
			t.Fatalf("pin %v: PinnedSize %d after Close", pin, m.PinnedSize)
		}
		// An open that fails after taking the cached blocks (here: another
		// comparer) gives its pins back.
		other := &base.Comparer{Name: "test.other", Compare: bytes.Compare,
			Separator: base.DefaultComparer.Separator, Successor: base.DefaultComparer.Successor}
		if _, err := NewReader(&bytesFile{raw}, ReaderOptions{Cache: c, CacheID: id, Comparer: other, FileName: "t.sst",
			CacheIndexAndFilterBlocks: true, PinIndexAndFilterBlocks: pin}); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("pin %v: open with another comparer: %v", pin, err)
		}
		if m := c.Metrics(); m.PinnedSize != 0 {
			t.Fatalf("pin %v: PinnedSize %d after a failed open", pin, m.PinnedSize)
		}
	}
}

// TestCachedIndexDamagedAfterEviction: an index block damaged after open,
// read again once the cache evicted it, fails Get, iterators and MultiGet
// with a corruption error naming the file; a damaged filter block costs
// only its use (the data blocks still answer).
func TestCachedIndexDamagedAfterEviction(t *testing.T) {
	rng, _ := newRand(t)
	raw, entries, _ := cachedIndexTable(t, rng, 500)
	c := cache.New(1 << 20)
	f := &bytesFile{bytes.Clone(raw)}
	r, err := NewReader(f, ReaderOptions{Cache: c, FileName: "t.sst", CacheIndexAndFilterBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	key := entries[0].key.UserKey
	f.b[r.filterH.Offset+1] ^= 0xff
	c.EvictID(r.CacheID())
	if !r.MayContain(key) {
		t.Fatal("a damaged filter ruled a key out")
	}
	if _, _, _, found, err := r.Get(key, base.SeqNumMax, false); err != nil || !found {
		t.Fatalf("Get with a damaged filter = %v, %v", found, err)
	}
	f.b[r.indexH.Offset+1] ^= 0xff
	c.EvictID(r.CacheID())
	isCorrupt := func(what string, err error) {
		t.Helper()
		var ce *base.CorruptionError
		if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.File != "t.sst" {
			t.Fatalf("%s with a damaged index: %v", what, err)
		}
	}
	_, _, _, _, err = r.Get(key, base.SeqNumMax, false)
	isCorrupt("Get", err)
	it := r.NewIter(IterOptions{})
	if it.First() {
		t.Fatal("an iterator over a damaged index found an entry")
	}
	isCorrupt("iterator", it.Close())
	var b MultiGetBatch
	id := b.Add(r, key, base.SeqNumMax, false)
	_, _, _, _, done, err := b.Result(id)
	if !done {
		t.Fatal("a MultiGet lookup in a table whose index cannot be read is pending")
	}
	isCorrupt("MultiGet", err)
}

// TestCachedIndexGetDoesNotAllocate: a Get whose index, filter and data
// block are all in the cache allocates nothing, as with a held index.
func TestCachedIndexGetDoesNotAllocate(t *testing.T) {
	rng, _ := newRand(t)
	raw, entries, ref := cachedIndexTable(t, rng, 300)
	r, err := NewReader(&bytesFile{raw}, ReaderOptions{Cache: cache.New(indexCacheRoom(ref) + 8<<20), FileName: "t.sst", CacheIndexAndFilterBlocks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	key := entries[len(entries)/2].key.UserKey
	for range 3 { // cache the block and build its search structure
		if _, _, _, found, err := r.Get(key, base.SeqNumMax, true); err != nil || !found {
			t.Fatalf("Get(%q) = %v, %v", key, found, err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { r.Get(key, base.SeqNumMax, true) }); n != 0 {
		t.Fatalf("Get through the cached index allocates %.1f times", n)
	}
}

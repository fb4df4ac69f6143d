package sstable

import (
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
)

// benchTable writes n keys "key%08d" with 100-byte values and opens the table
// with a cache that holds all of it, warmed; o, when given, is the
// writer's options.
func benchTable(tb testing.TB, n int, o ...WriterOptions) (*Reader, [][]byte) {
	path := filepath.Join(testdir.New(tb), "bench.sst")
	keys := make([][]byte, n)
	entries := make([]kv, n)
	val := make([]byte, 100)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%08d", i))
		for j := range val {
			val[j] = byte(i*7 + j%13)
		}
		entries[i] = kv{base.MakeInternalKey(keys[i], base.SeqNum(i+1), base.KindSet), append([]byte(nil), val...)}
	}
	var wo WriterOptions
	if len(o) > 0 {
		wo = o[0]
	}
	writeTable(tb, path, wo, entries, nil)
	r := openTable(tb, path, cache.New(256<<20))
	it := r.NewIter(IterOptions{FillCache: true})
	for ok := it.First(); ok; ok = it.Next() {
	}
	it.Close()
	// A block gets its search structure when it is sought in while cached:
	// one Get per key brings every block to that steady state.
	for _, k := range keys {
		if _, _, _, ok, err := r.Get(k, base.SeqNumMax, true); !ok || err != nil {
			tb.Fatalf("warm-up Get(%q) = %v, %v", k, ok, err)
		}
	}
	return r, keys
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	for _, o := range []WriterOptions{{}, {IndexType: TwoLevelIndexSearch, PartitionFilters: true, MetadataBlockSize: 256}} {
		t.Run(o.IndexType.String(), func(t *testing.T) { testHotPathsDoNotAllocate(t, o) })
	}
}

func testHotPathsDoNotAllocate(t *testing.T, o WriterOptions) {
	r, keys := benchTable(t, 5000, o)
	defer r.Close()
	i := 0
	if n := testing.AllocsPerRun(200, func() {
		_, _, _, ok, err := r.Get(keys[i%len(keys)], base.SeqNumMax, true)
		if !ok || err != nil {
			t.Fatalf("Get(%q) = %v, %v", keys[i%len(keys)], ok, err)
		}
		i += 997
	}); n != 0 {
		t.Fatalf("Get on a cache hit allocates %v times", n)
	}
	it := r.NewIter(IterOptions{FillCache: true})
	defer it.Close()
	if n := testing.AllocsPerRun(200, func() {
		k := keys[i%len(keys)]
		if !it.SeekGE(k) || !it.Next() || !it.Prev() || !it.Prev() {
			t.Fatalf("positioning near %q failed: %v", k, it.Error())
		}
		i += 997
	}); n != 0 {
		t.Fatalf("iterator positioning on cached blocks allocates %v times", n)
	}
	if n := testing.AllocsPerRun(200, func() { r.MayContain(keys[0]) }); n != 0 {
		t.Fatalf("MayContain allocates %v times", n)
	}
}

// partitionedBenchOptions are the partitioned index and filters at
// RocksDB's default partition size.
var partitionedBenchOptions = WriterOptions{IndexType: TwoLevelIndexSearch, PartitionFilters: true}

func BenchmarkGet(b *testing.B) {
	b.Run("index=binary", func(b *testing.B) { benchmarkGet(b) })
	b.Run("index=partitioned", func(b *testing.B) { benchmarkGet(b, partitionedBenchOptions) })
}

func benchmarkGet(b *testing.B, o ...WriterOptions) {
	r, keys := benchTable(b, 100000, o...)
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[(i*7919)%len(keys)]
		if _, _, _, ok, _ := r.Get(k, base.SeqNumMax, true); !ok {
			b.Fatalf("%q not found", k)
		}
	}
}

func BenchmarkIterSeekGE(b *testing.B) {
	b.Run("index=binary", func(b *testing.B) { benchmarkIterSeekGE(b) })
	b.Run("index=partitioned", func(b *testing.B) { benchmarkIterSeekGE(b, partitionedBenchOptions) })
}

func benchmarkIterSeekGE(b *testing.B, o ...WriterOptions) {
	r, keys := benchTable(b, 100000, o...)
	defer r.Close()
	it := r.NewIter(IterOptions{FillCache: true})
	defer it.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.SeekGE(keys[(i*7919)%len(keys)]) {
			b.Fatal("seek failed")
		}
	}
}

func BenchmarkIterNext(b *testing.B) {
	r, _ := benchTable(b, 100000)
	defer r.Close()
	it := r.NewIter(IterOptions{FillCache: true})
	defer it.Close()
	b.ReportAllocs()
	b.ResetTimer()
	ok := it.First()
	for i := 0; i < b.N; i++ {
		if !ok {
			ok = it.First()
		}
		ok = it.Next()
	}
}

func TestConcurrentReaders(t *testing.T) {
	r, keys := benchTable(t, 3000)
	defer r.Close()
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			it := r.NewIter(IterOptions{FillCache: g%2 == 0})
			defer it.Close()
			for i := 0; i < 500; i++ {
				k := keys[(i*31+g*17)%len(keys)]
				v, _, _, ok, err := r.Get(k, base.SeqNumMax, g%2 == 1)
				if !ok || err != nil || len(v) != 100 {
					done <- fmt.Errorf("Get(%q) = %v, %v", k, ok, err)
					return
				}
				if !it.SeekGE(k) || string(it.Key().UserKey) != string(k) {
					done <- fmt.Errorf("SeekGE(%q) landed on %s", k, it.Key())
					return
				}
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestFillCacheFalse(t *testing.T) {
	path := filepath.Join(testdir.New(t), "nc.sst")
	writeTable(t, path, WriterOptions{}, []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("v")}}, nil)
	c := cache.New(1 << 20)
	r := openTable(t, path, c)
	defer r.Close()
	if m := c.Metrics(); m.Count != 0 {
		t.Fatalf("open cached %d blocks; index, filter and properties stay in the Reader", m.Count)
	}
	r.Get([]byte("a"), 5, false)
	if m := c.Metrics(); m.Count != 0 || m.Misses != 1 {
		t.Fatalf("Get without fillCache: %+v", m)
	}
	r.Get([]byte("a"), 5, true)
	r.Get([]byte("a"), 5, true)
	if m := c.Metrics(); m.Count != 1 || m.Hits != 1 {
		t.Fatalf("Get with fillCache: %+v", m)
	}
	c.EvictID(r.CacheID())
	if m := c.Metrics(); m.Count != 0 {
		t.Fatalf("EvictID(CacheID) left %d blocks", m.Count)
	}
}

// BenchmarkSeekThreeTables mirrors the root package's seekrandom-with-reuse
// workload without the DB: 1M 16-digit keys dealt at random over three
// tables that share one warm 256 MiB cache, and each seek positions an
// iterator in every table, as a merging iterator over three L0 files does.
func BenchmarkSeekThreeTables(b *testing.B) {
	const n, tables = 1000000, 3
	rng := rand.New(rand.NewPCG(5, 6))
	perm := rng.Perm(n)
	c := cache.New(256 << 20)
	val := make([]byte, 100)
	var iters []base.InternalIterator
	for t := 0; t < tables; t++ {
		var ids []int
		for j := t; j < n; j += tables {
			ids = append(ids, perm[j])
		}
		slices.Sort(ids)
		entries := make([]kv, len(ids))
		for j, id := range ids {
			entries[j] = kv{base.MakeInternalKey(appendKey16(nil, id), base.SeqNum(j+1), base.KindSet), val}
		}
		path := filepath.Join(testdir.New(b), fmt.Sprintf("%d.sst", t))
		writeTable(b, path, WriterOptions{}, entries, nil)
		r := openTable(b, path, c)
		defer r.Close()
		it := r.NewIter(IterOptions{FillCache: true})
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
		}
		iters = append(iters, it)
	}
	var key []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key = appendKey16(key[:0], rng.IntN(n))
		for _, it := range iters {
			it.SeekGE(key)
		}
	}
}

// appendKey16 appends i as 16 zero-padded decimal digits, without the
// allocation of fmt's boxing.
func appendKey16(dst []byte, i int) []byte {
	var d [16]byte
	for j := 15; j >= 0; j-- {
		d[j] = byte('0' + i%10)
		i /= 10
	}
	return append(dst, d[:]...)
}

// BenchmarkGetSmallCache is BenchmarkGet with a block cache of 1 MiB for a
// table of about 12 MiB: most lookups miss the cache for their data block
// and, in a partitioned table, often for their index and filter partitions
// too (which are then read and decoded again), as in a database much
// larger than its cache.
func BenchmarkGetSmallCache(b *testing.B) {
	b.Run("index=binary", func(b *testing.B) { benchmarkGetSmallCache(b, WriterOptions{}) })
	b.Run("index=partitioned", func(b *testing.B) { benchmarkGetSmallCache(b, partitionedBenchOptions) })
}

func benchmarkGetSmallCache(b *testing.B, o WriterOptions) {
	path := filepath.Join(testdir.New(b), "bench.sst")
	const n = 100000
	keys := make([][]byte, n)
	entries := make([]kv, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%08d", i))
		entries[i] = kv{base.MakeInternalKey(keys[i], base.SeqNum(i+1), base.KindSet), make([]byte, 100)}
	}
	o.Compression = NoCompression
	writeTable(b, path, o, entries, nil)
	r := openTable(b, path, cache.New(1<<20))
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[rng.IntN(n)]
		if _, _, _, ok, _ := r.Get(k, base.SeqNumMax, true); !ok {
			b.Fatalf("%q not found", k)
		}
	}
}

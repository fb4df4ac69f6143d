package sstable

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
)

// benchTable writes n keys "key%08d" with 100-byte values and opens the table
// with a cache that holds all of it, warmed.
func benchTable(tb testing.TB, n int) (*Reader, [][]byte) {
	path := filepath.Join(tb.TempDir(), "bench.sst")
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
	writeTable(tb, path, WriterOptions{}, entries, nil)
	r := openTable(tb, path, cache.New(256<<20))
	it := r.NewIter(IterOptions{FillCache: true})
	for ok := it.First(); ok; ok = it.Next() {
	}
	it.Close()
	return r, keys
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	r, keys := benchTable(t, 5000)
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

func BenchmarkGet(b *testing.B) {
	r, keys := benchTable(b, 100000)
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
	r, keys := benchTable(b, 100000)
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
	path := filepath.Join(t.TempDir(), "nc.sst")
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

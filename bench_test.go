package shale

import (
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

func benchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(testdir.New(b), &Options{CreateIfMissing: true, FS: vfs.Default})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func benchKey(buf []byte, i int) []byte {
	return fmt.Appendf(buf[:0], "%016d", i)
}

// BenchmarkPutSequential is db_bench's fillseq: 16-byte keys, 100-byte values.
func BenchmarkPutSequential(b *testing.B) {
	db := benchDB(b)
	value := make([]byte, 100)
	var key []byte
	b.SetBytes(116)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key = benchKey(key, i)
		if err := db.Put(key, value, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRandomReads fills a DB with 100k keys (benchKey(0..n-1)) and
// 100-byte values, flushes it, and then runs read once per iteration on a
// random one of those keys (same sequence every run).
func benchRandomReads(b *testing.B, read func(db *DB, key []byte)) {
	db := benchDB(b)
	const n = 100000
	value := make([]byte, 100)
	var key []byte
	for i := 0; i < n; i++ {
		key = benchKey(key, i)
		if err := db.Put(key, value, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		key = benchKey(key, rng.IntN(n))
		read(db, key)
	}
}

// BenchmarkGetRandom is db_bench's readrandom on a flushed DB of 100k keys.
func BenchmarkGetRandom(b *testing.B) {
	benchRandomReads(b, func(db *DB, key []byte) {
		if _, err := db.Get(key, nil); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSeekRandom is db_bench's seekrandom with no Next.
func BenchmarkSeekRandom(b *testing.B) {
	benchRandomReads(b, func(db *DB, key []byte) {
		it := db.NewIterator(nil)
		if !it.Seek(key) {
			b.Fatal("seek failed")
		}
		it.Close()
	})
}

// BenchmarkPutRandom is db_bench's fillrandom: random 16-byte keys.
func BenchmarkPutRandom(b *testing.B) {
	db := benchDB(b)
	value := make([]byte, 100)
	var key []byte
	rng := rand.New(rand.NewPCG(3, 4))
	b.SetBytes(116)
	b.ReportAllocs()
	for b.Loop() {
		key = benchKey(key, rng.IntN(1<<30))
		if err := db.Put(key, value, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.Log(db.Metrics())
}

// BenchmarkSeekRandomReuse seeks one iterator repeatedly over 1M keys written
// in random order (the shape bench/compare's seekrandom measures).
func BenchmarkSeekRandomReuse(b *testing.B) {
	db, err := Open(testdir.New(b), &Options{CreateIfMissing: true, BlockCacheSize: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n = 1000000
	value := make([]byte, 100)
	var key []byte
	rng := rand.New(rand.NewPCG(5, 6))
	for _, i := range rng.Perm(n) {
		key = benchKey(key, i)
		if err := db.Put(key, value, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.Log(db.Metrics())
	it := db.NewIterator(nil)
	defer it.Close()
	for i := 0; i < n; i += 7 { // warm the cache
		it.Seek(benchKey(key, i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		key = benchKey(key, rng.IntN(n))
		if !it.Seek(key) {
			b.Fatal("seek failed")
		}
	}
}

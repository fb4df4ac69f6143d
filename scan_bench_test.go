package shale

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// scanBenchKeys is the number of keys of scanBenchDB; each benchmark op
// reads them all.
const scanBenchKeys = 20000

var scanBench struct {
	once sync.Once
	db   *DB
	err  error
}

// scanBenchDB returns a DB (shared by the scan benchmarks, never closed)
// of scanBenchKeys keys with 100-byte values, compacted into one level,
// every block in the block cache: the benchmarks measure the loop, not
// IO.
func scanBenchDB(b *testing.B) *DB {
	b.Helper()
	scanBench.once.Do(func() {
		d, err := Open("db", &Options{CreateIfMissing: true, FS: vfs.NewMem(), BlockCacheSize: 64 << 20})
		if err != nil {
			scanBench.err = err
			return
		}
		value := make([]byte, 100)
		for i := range scanBenchKeys {
			if err := d.Put(fmt.Appendf(nil, "key%08d", i), value, nil); err != nil {
				scanBench.err = err
				return
			}
		}
		if err := d.CompactRange(nil, nil); err != nil {
			scanBench.err = err
			return
		}
		scanBench.db = d
	})
	if scanBench.err != nil {
		b.Fatal(scanBench.err)
	}
	// Warm the cache.
	if n := scanIteratorLoop(b, scanBench.db, false); n != scanBenchKeys {
		b.Fatalf("scanned %d keys, want %d", n, scanBenchKeys)
	}
	return scanBench.db
}

// scanIteratorLoop is the loop DB.Scan replaces: NewIterator, First (or
// Last), Next (or Prev), Err, Close. It returns the number of keys.
func scanIteratorLoop(b *testing.B, d *DB, reverse bool) int {
	it := d.NewIterator(nil)
	n, size := 0, 0
	ok := it.First()
	if reverse {
		ok = it.Last()
	}
	for ok {
		size += len(it.Key()) + len(it.Value())
		n++
		if reverse {
			ok = it.Prev()
		} else {
			ok = it.Next()
		}
	}
	if err := it.Err(); err != nil {
		b.Fatal(err)
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	scanBenchSink = size
	return n
}

var scanBenchSink int

// BenchmarkScan ranges over DB.Scan (dir=forward) and DB.ScanReverse
// (dir=reverse) of every key of a cached DB; BenchmarkIteratorLoop does the
// same with the Iterator loop. Compare them with
// benchstat -col .name -row /dir. Each loop ranges over the call itself, as
// a program does: the compiler then inlines Scan and keeps the loop body
// off the heap.
func BenchmarkScan(b *testing.B) {
	d := scanBenchDB(b)
	b.Run("dir=forward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, size := 0, 0
			for kv, err := range d.Scan(nil, nil, nil) {
				if err != nil {
					b.Fatal(err)
				}
				size += len(kv.Key) + len(kv.Value)
				n++
			}
			scanBenchCheck(b, n, size)
		}
	})
	b.Run("dir=reverse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, size := 0, 0
			for kv, err := range d.ScanReverse(nil, nil, nil) {
				if err != nil {
					b.Fatal(err)
				}
				size += len(kv.Key) + len(kv.Value)
				n++
			}
			scanBenchCheck(b, n, size)
		}
	})
}

func scanBenchCheck(b *testing.B, n, size int) {
	if n != scanBenchKeys {
		b.Fatalf("scanned %d keys, want %d", n, scanBenchKeys)
	}
	scanBenchSink = size
}

// BenchmarkIteratorLoop is BenchmarkScan's baseline: the Iterator loop.
func BenchmarkIteratorLoop(b *testing.B) {
	d := scanBenchDB(b)
	for _, reverse := range []bool{false, true} {
		b.Run("dir="+scanBenchDir(reverse), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n := scanIteratorLoop(b, d, reverse); n != scanBenchKeys {
					b.Fatalf("scanned %d keys", n)
				}
			}
		})
	}
}

func scanBenchDir(reverse bool) string {
	if reverse {
		return "reverse"
	}
	return "forward"
}

package shale

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// BenchmarkShortScanBytes reports what short scans read from the files
// without a block cache, AsyncIO off and on: bytes read and readahead
// bytes wasted per scan (a Seek to a random key, then n Nexts, then
// Close), on one table of incompressible values. The counts, not the
// times, are the point: they show the readahead policy's cost for scans
// too short to use it. Run:
//
//	go test -run XXX -bench ShortScanBytes -benchtime 200x
func BenchmarkShortScanBytes(b *testing.B) {
	o := readaheadOptions(vfs.NewMem())
	o.BlockCacheSize = -1
	o.BlockSize = 4 << 10
	o.TargetFileSizeBase = 8 << 20
	db, err := Open("/db", o)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const nKeys = 40000
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < nKeys; i++ {
		v := make([]byte, 100+rng.IntN(100))
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		if err := db.Put([]byte(fmt.Sprintf("key%07d", i)), v, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{5, 20, 50, 200, 2000} {
		for _, async := range []bool{false, true} {
			b.Run(fmt.Sprintf("nexts=%d/async=%v", n, async), func(b *testing.B) {
				var pc PerfContext
				r := rand.New(rand.NewPCG(7, 7))
				for i := 0; i < b.N; i++ {
					it := db.NewIterator(&ReadOptions{AsyncIO: async, PerfContext: &pc})
					ok := it.Seek([]byte(fmt.Sprintf("key%07d", r.IntN(nKeys))))
					for j := 0; ok && j < n; j++ {
						ok = it.Next()
					}
					if err := it.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(pc.BlockReadBytes)/float64(b.N), "bytes/scan")
				b.ReportMetric(float64(pc.PrefetchWastedBytes)/float64(b.N), "wasted/scan")
				b.ReportMetric(float64(pc.BlockReads)/float64(b.N), "blocks/scan")
			})
		}
	}
}

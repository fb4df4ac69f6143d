package shale

import (
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// BenchmarkMultiGetCachedLarge is BenchmarkMultiGetCached with batches of
// 1000 keys from one goroutine: the per-key CPU cost of large batches,
// where work per round that grows with the batch would show.
func BenchmarkMultiGetCachedLarge(b *testing.B) {
	d := openCachedMGBench(b, false)
	defer d.Close()
	const batch = 1000
	keys := make([][]byte, batch)
	for i := range keys {
		keys[i] = make([]byte, 32)
	}
	run := func(b *testing.B, ro *ReadOptions) {
		rng := rand.New(rand.NewPCG(1, 9))
		b.ReportAllocs()
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			for i := range keys {
				mgBenchKey(keys[i], rng.IntN(mgBenchKeys))
			}
			if ro == nil {
				for _, k := range keys {
					if _, err := d.Get(k, nil); err != nil {
						b.Fatal(err)
					}
				}
				continue
			}
			d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
				if err != nil {
					b.Fatal(err)
				}
			})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
	}
	b.Run("looped-get", func(b *testing.B) { run(b, nil) })
	for _, mode := range multiGetModes {
		b.Run(mode.name, func(b *testing.B) {
			run(b, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO})
		})
	}
}

// BenchmarkMultiGetManyTables looks up batches of 4000 keys, every block
// cached, in a DB of a few hundred small tables: one round per table in
// single-file mode, so work per round that grows with the batch shows.
func BenchmarkMultiGetManyTables(b *testing.B) {
	opts := testOptions(vfs.NewMem())
	opts.DisableDynamicLevelBytes = true
	opts.BlockCacheSize = 64 << 20
	opts.TargetFileSizeBase = 4 << 10
	d, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	const nKeys = 40000
	value := make([]byte, 100)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(nKeys) {
		if err := d.Put(testKey(i), value, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		b.Fatal(err)
	}
	all := make([][]byte, 0, nKeys)
	for i := 0; i < nKeys; i++ {
		all = append(all, testKey(i))
	}
	d.MultiGet(all, nil) // open and cache everything
	b.Logf("files per level %v", (&mgDB{d: d}).shape())
	keys := make([][]byte, 4000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range keys {
		keys[i] = testKey(rng.IntN(nKeys))
	}
	b.Run("looped-get", func(b *testing.B) {
		for n := 0; n < b.N; n++ {
			for _, k := range keys {
				if _, err := d.Get(k, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, mode := range multiGetModes {
		ro := &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}
		b.Run(mode.name, func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
					if err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}

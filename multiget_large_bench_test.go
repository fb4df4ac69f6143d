package shale

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMultiGetCachedLarge is BenchmarkMultiGetCached with batches of
// 1000 keys from one goroutine: the per-key CPU cost of large batches,
// where work per round that grows with the batch would show.
func BenchmarkMultiGetCachedLarge(b *testing.B) {
	mem := mgBenchDB(b)
	opts := mgBenchOptions(mem)
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = 256 << 20
	d, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	all := make([][]byte, 0, mgBenchKeys)
	for i := 0; i < mgBenchKeys; i++ {
		all = append(all, mgBenchKey(make([]byte, 32), i))
	}
	d.MultiGet(all, nil) // every table's point-lookup blocks cached
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
			run(b, &ReadOptions{AsyncIO: mode.async, OptimizeMultiGetForIO: mode.optimizeIO})
		})
	}
}

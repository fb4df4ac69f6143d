package shale

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkReadDeadline measures Get and MultiGet (AsyncIO on) of cached
// keys without a deadline and with a far Deadline and IOTimeout that are
// never hit: what the deadline checks cost when they do not fire. The two
// are interleaved in rounds of 64 calls, so that a loaded machine's drift
// hits both alike, and which goes first alternates; each sub-benchmark reports ns/call of each
// (none-ns/call, far-ns/call), and ns/op is the pair.
func BenchmarkReadDeadline(b *testing.B) {
	d := openCachedMGBench(b, true)
	defer d.Close()
	none := &ReadOptions{AsyncIO: true, OptimizeMultiGetForIO: true}
	far := *none
	far.Deadline, far.IOTimeout = time.Now().Add(time.Hour), time.Hour
	const round = 64
	run := func(b *testing.B, call func(rng *rand.Rand, ro *ReadOptions)) {
		rngs := [2]*rand.Rand{rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))}
		var spent [2]time.Duration
		for n := 0; n < b.N; n += round {
			for j := range 2 {
				// Both read the same keys; whichever goes second finds
				// them warmer, so the order alternates by round.
				v := (j + n/round) % 2
				ro := [2]*ReadOptions{none, &far}[v]
				start := time.Now()
				for range min(round, b.N-n) {
					call(rngs[v], ro)
				}
				spent[v] += time.Since(start)
			}
		}
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "none-ns/call")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "far-ns/call")
	}
	b.Run("op=Get", func(b *testing.B) {
		key := make([]byte, 32)
		var buf []byte
		run(b, func(rng *rand.Rand, ro *ReadOptions) {
			var err error
			if buf, err = d.AppendValue(buf[:0], mgBenchKey(key, rng.IntN(mgBenchKeys)), ro); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("op=MultiGet", func(b *testing.B) {
		keys := make([][]byte, mgBenchBatch)
		for i := range keys {
			keys[i] = make([]byte, 32)
		}
		fail := func(i int, _ []byte, err error) {
			if err != nil {
				b.Fatal(err)
			}
		}
		run(b, func(rng *rand.Rand, ro *ReadOptions) {
			for i := range keys {
				keys[i] = mgBenchKey(keys[i], rng.IntN(mgBenchKeys))
			}
			d.MultiGetFunc(keys, ro, fail)
		})
	})
}

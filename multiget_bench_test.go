package shale

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/benchdata"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

const (
	mgBenchKeys  = 40000
	mgBenchValue = 512
	mgBenchBatch = 8
)

var mgBenchFS struct {
	once sync.Once
	mem  *vfs.MemFS
	err  error
}

func mgBenchKey(dst []byte, i int) []byte {
	dst = dst[:32]
	benchdata.FormatKey(dst, int64(i))
	return dst
}

// mgBenchOptions are the options of the benchmark DB: 4 levels, small
// files, bloom filters, a block cache much smaller than the data.
func mgBenchOptions(fs vfs.FS) *Options {
	return &Options{
		CreateIfMissing:                true,
		FS:                             fs,
		WriteBufferSize:                256 << 10,
		TargetFileSizeBase:             512 << 10,
		MaxBytesForLevelBase:           512 << 10,
		DisableDynamicLevelBytes:       true,
		Level0FileNumCompactionTrigger: 4,
		NumLevels:                      4,
		BlockCacheSize:                 1 << 20,
		Compression:                    NoCompression,
	}
}

// mgBenchDB builds, once per process, a DB in memory with data in several
// L0 files and in every level of 4: random overwrites under automatic
// compactions, then flushes with compactions off.
func mgBenchDB(b *testing.B) *vfs.MemFS {
	mgBenchFS.once.Do(func() {
		mem := vfs.NewMem()
		opts := mgBenchOptions(mem)
		d, err := Open("db", opts)
		if err != nil {
			mgBenchFS.err = err
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		key := make([]byte, 32)
		value := make([]byte, mgBenchValue)
		put := func(i int) {
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			if err == nil {
				err = d.Put(mgBenchKey(key, i), value, nil)
			}
		}
		for i := 0; i < mgBenchKeys; i++ {
			put(i)
		}
		for i := 0; i < mgBenchKeys/2; i++ {
			put(rng.IntN(mgBenchKeys))
		}
		if err == nil {
			err = d.Close()
		}
		if err != nil {
			mgBenchFS.err = err
			return
		}
		opts.DisableAutoCompactions = true
		if d, err = Open("db", opts); err != nil {
			mgBenchFS.err = err
			return
		}
		for f := 0; f < 4; f++ {
			for i := 0; i < 400; i++ {
				put(rng.IntN(mgBenchKeys))
			}
			if err == nil {
				err = d.Flush()
			}
		}
		rs := d.loadReadState()
		var shape []int
		for _, files := range rs.version.Levels {
			shape = append(shape, len(files))
		}
		rs.unref()
		fmt.Printf("MultiGet benchmark DB: %d keys of 32 bytes, %d-byte values, files per level %v\n", mgBenchKeys, mgBenchValue, shape)
		if err == nil {
			err = d.Close()
		}
		mgBenchFS.mem, mgBenchFS.err = mem, err
	})
	if mgBenchFS.err != nil {
		b.Fatal(mgBenchFS.err)
	}
	return mgBenchFS.mem
}

// BenchmarkMultiGetModes runs MultiGets of 8 random keys, from 4
// goroutines, on a DB whose reads take 500µs (latencyfs.New standing in
// for remote flash), in the three modes; it reports MultiGet calls per
// second and the P99 latency.
func BenchmarkMultiGetModes(b *testing.B) {
	mem := mgBenchDB(b)
	lfs := latencyfs.New(mem, latencyfs.Options{ReadLatency: 500 * time.Microsecond})
	opts := mgBenchOptions(lfs)
	opts.DisableAutoCompactions = true
	d, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	// Open every table first, so opens are not measured.
	all := make([][]byte, 0, mgBenchKeys)
	for i := 0; i < mgBenchKeys; i += 97 {
		all = append(all, mgBenchKey(make([]byte, 32), i))
	}
	d.MultiGet(all, nil)
	b.Run("looped-get", func(b *testing.B) { benchMultiGet(b, d, nil) })
	for _, mode := range multiGetModes {
		b.Run(mode.name, func(b *testing.B) {
			benchMultiGet(b, d, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO})
		})
	}
}

// BenchmarkMultiGetCached is BenchmarkMultiGetModes with every block in
// the block cache and no latency: the CPU cost of the async modes.
func BenchmarkMultiGetCached(b *testing.B) {
	d := openCachedMGBench(b, true)
	defer d.Close()
	b.Run("looped-get", func(b *testing.B) { benchMultiGet(b, d, nil) })
	for _, mode := range multiGetModes {
		b.Run(mode.name, func(b *testing.B) {
			benchMultiGet(b, d, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO})
		})
	}
	// Without a copy of each value: AppendValue into a reused buffer
	// against MultiGetNoCopy.
	b.Run("looped-appendvalue", func(b *testing.B) { benchMultiGetCopy(b, d, nil, false) })
	for _, mode := range multiGetModes {
		b.Run(mode.name+"-nocopy", func(b *testing.B) {
			benchMultiGetCopy(b, d, &ReadOptions{AsyncIO: mode.async, MultiGetOneLevelAtATime: !mode.optimizeIO}, false)
		})
	}
}

// openCachedMGBench opens the benchmark DB with a block cache larger than
// it and every table's point-lookup blocks cached (and, with scan, every
// data block, through a full scan first).
func openCachedMGBench(b *testing.B, scan bool) *DB {
	opts := mgBenchOptions(mgBenchDB(b))
	opts.DisableAutoCompactions = true
	opts.BlockCacheSize = 256 << 20
	d, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	if scan {
		it := d.NewIterator(&ReadOptions{FillCache: true})
		for it.First(); it.Valid(); it.Next() {
		}
		it.Close()
	}
	all := make([][]byte, 0, mgBenchKeys)
	for i := 0; i < mgBenchKeys; i++ {
		all = append(all, mgBenchKey(make([]byte, 32), i))
	}
	d.MultiGet(all, nil)
	return d
}

// benchMultiGet runs MultiGets of mgBenchBatch random keys with ro from 4
// goroutines; a nil ro runs looped Gets instead.
func benchMultiGet(b *testing.B, d *DB, ro *ReadOptions) { benchMultiGetCopy(b, d, ro, true) }

// benchMultiGetCopy is benchMultiGet; without copyValues, MultiGetNoCopy
// against looped AppendValue calls into one reused buffer (neither
// allocates a copy of each value).
func benchMultiGetCopy(b *testing.B, d *DB, ro *ReadOptions, copyValues bool) {
	var mu sync.Mutex
	var lat []time.Duration
	var seed uint64
	b.SetParallelism(2) // 4 goroutines on 2 cores, as RocksDB's 4 threads
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		seed++
		rng := rand.New(rand.NewPCG(seed, 9))
		mu.Unlock()
		keys := make([][]byte, mgBenchBatch)
		for i := range keys {
			keys[i] = make([]byte, 32)
		}
		var mine []time.Duration
		var buf []byte
		for pb.Next() {
			for i := range keys {
				mgBenchKey(keys[i], rng.IntN(mgBenchKeys))
			}
			start := time.Now()
			var err error
			switch {
			case ro == nil && !copyValues:
				for _, k := range keys {
					if buf, err = d.AppendValue(buf[:0], k, nil); err != nil {
						b.Error(err)
					}
				}
			case ro == nil: // the baseline: one Get after another
				for _, k := range keys {
					if _, err := d.Get(k, nil); err != nil {
						b.Error(err)
					}
				}
			case !copyValues:
				d.MultiGetNoCopy(keys, ro, func(i int, v []byte, err error) {
					if err != nil {
						b.Error(err)
					}
				})
			default:
				d.MultiGetFunc(keys, ro, func(i int, v []byte, err error) {
					if err != nil {
						b.Error(err)
					}
				})
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "multigets/s")
}

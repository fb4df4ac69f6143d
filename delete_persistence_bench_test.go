package shale

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// BenchmarkDeletePersistenceWriteAmp measures what a delete persistence
// threshold costs in write amplification: on the OS file system, it writes
// SHALE_FADE_NUM (default 1,000,000) operations in random key order, 30% of
// them deletes of keys written before (scattered), then lets the DB idle for
// the threshold and a second (both runs), and reports Metrics().WriteAmp, the bytes
// flushes and compactions wrote, and how many deleted values are still in a
// file (compression is off, so every value's marker is visible). It runs
// with the threshold off and at SHALE_FADE_THRESHOLD (default 10s), over the
// default LSM shape and over a deep one (4 MiB memtables and tables, a
// 16 MiB base level). Run it once:
//
//	go test -run '^$' -bench DeletePersistenceWriteAmp -benchtime 1x .
func BenchmarkDeletePersistenceWriteAmp(b *testing.B) {
	num := 1_000_000
	if s := os.Getenv("SHALE_FADE_NUM"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		num = n
	}
	threshold := 10 * time.Second
	if s := os.Getenv("SHALE_FADE_THRESHOLD"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatal(err)
		}
		threshold = d
	}
	shapes := []struct {
		name string
		set  func(*Options)
	}{
		{"default-shape", func(*Options) {}},
		{"deep-shape", func(o *Options) {
			o.WriteBufferSize = 4 << 20
			o.TargetFileSizeBase = 4 << 20
			o.MaxBytesForLevelBase = 16 << 20
		}},
	}
	for _, shape := range shapes {
		for _, d := range []time.Duration{0, threshold} {
			b.Run(fmt.Sprintf("%s/threshold=%v", shape.name, d), func(b *testing.B) {
				for range b.N {
					runDeletePersistenceWriteAmp(b, num, d, threshold+time.Second, shape.set)
				}
			})
		}
	}
}

func runDeletePersistenceWriteAmp(b *testing.B, num int, threshold, idle time.Duration, set func(*Options)) {
	dir := testdir.New(b)
	opts := &Options{
		CreateIfMissing:            true,
		FS:                         vfs.Default,
		Compression:                NoCompression,
		DeletePersistenceThreshold: threshold,
	}
	set(opts)
	db, err := Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%012d", i)) }
	// versions[k] are the writes (op numbers) of key k since its last
	// delete; live lists the keys that have some, pos their index in it.
	versions := map[int][]int{}
	var live []int
	pos := map[int]int{}
	var deleted []int // writes a delete removed
	start := time.Now()
	for op := range num {
		if rng.IntN(10) < 3 && len(live) > 0 {
			k := live[rng.IntN(len(live))]
			if err := db.Delete(key(k), nil); err != nil {
				b.Fatal(err)
			}
			deleted = append(deleted, versions[k]...)
			delete(versions, k)
			i := pos[k]
			last := live[len(live)-1]
			live[i], pos[last] = last, i
			live = live[:len(live)-1]
			delete(pos, k)
			continue
		}
		k := rng.IntN(num)
		if err := db.Put(key(k), markerValue(op, 100), nil); err != nil {
			b.Fatal(err)
		}
		if _, ok := versions[k]; !ok {
			pos[k] = len(live)
			live = append(live, k)
		}
		versions[k] = append(versions[k], op)
	}
	writing := time.Since(start)
	time.Sleep(idle)
	m := db.Metrics()
	b.ReportMetric(m.WriteAmp, "write-amp")
	b.ReportMetric(float64(m.Flush.BytesWritten)/(1<<20), "flush-MiB")
	b.ReportMetric(float64(m.Compact.BytesWritten)/(1<<20), "compact-MiB")
	b.ReportMetric(float64(m.Flush.Count), "flushes")
	b.ReportMetric(float64(m.Compact.Count), "compactions")
	b.ReportMetric(writing.Seconds(), "write-s")
	found := markersIn(b, vfs.Default, dir)
	left := 0
	for _, id := range deleted {
		if _, ok := found[id]; ok {
			left++
		}
	}
	b.ReportMetric(float64(left), "deleted-on-disk")
	b.ReportMetric(float64(len(deleted)), "deleted")
	b.Logf("threshold %v: %d ops in %v, then %v idle\n%s", threshold, num, writing, idle, m)
}

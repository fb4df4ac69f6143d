package shale

import (
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// BenchmarkScanReadahead scans a database of about 32 MiB on the OS file
// system (SHALE_BENCH_DIR, else a temporary directory) with buffered reads
// and with direct reads under no, automatic and explicit (32 blocks)
// readahead. Buffered scans are served by the page cache after the first;
// direct scans always reach the device. Skipped where direct IO is refused.
func BenchmarkScanReadahead(b *testing.B) {
	dir := os.Getenv("SHALE_BENCH_DIR")
	if dir == "" {
		dir = testdir.New(b)
	}
	o := &Options{CreateIfMissing: true, BlockCacheSize: 1 << 20, DisableAutoCompactions: true}
	db, err := Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	if m := db.Metrics(); len(m.Levels) == 0 || m.Levels[0].NumFiles+m.Levels[len(m.Levels)-1].NumFiles == 0 {
		val := make([]byte, 200)
		for i := 0; i < 32<<20/220; i++ {
			for j := range val {
				val[j] = byte(i*7 + j)
			}
			if err := db.Put([]byte(fmt.Sprintf("key%010d", i)), val, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		direct    bool
		maxAuto   int64
		readahead int64
	}{
		{"buffered", false, 0, 0},
		{"direct/off", true, -1, 0},
		{"direct/auto", true, 0, 0},
		{"direct/explicit-128KiB", true, 0, 128 << 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := &Options{BlockCacheSize: 1 << 20, DisableAutoCompactions: true,
				UseDirectReads: c.direct, MaxAutoReadaheadSize: c.maxAuto}
			db, err := Open(dir, o)
			if errors.Is(err, vfs.ErrDirectIOUnsupported) {
				b.Skip(err)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			before := db.Metrics().IO
			var bytes int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := db.NewIterator(&ReadOptions{SkipFillCache: true, ReadaheadSize: c.readahead})
				for ok := it.First(); ok; ok = it.Next() {
					bytes += int64(len(it.Key()) + len(it.Value()))
				}
				if err := it.Close(); err != nil {
					if errors.Is(err, vfs.ErrDirectIOUnsupported) {
						b.Skip(err)
					}
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := db.Metrics().IO
			b.SetBytes(bytes / int64(b.N))
			b.ReportMetric(float64(after.TableReads-before.TableReads)/float64(b.N), "reads/op")
			if issued := after.ReadaheadBytesIssued - before.ReadaheadBytesIssued; issued > 0 {
				used := after.ReadaheadBytesUsed - before.ReadaheadBytesUsed
				b.ReportMetric(100*float64(issued-used)/float64(issued), "%waste")
			}
		})
	}
}

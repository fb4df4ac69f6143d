package shale

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// BenchmarkBulkLoad loads 200,000 sorted keys (16 bytes) with 100-byte
// values into a fresh database on the OS file system: "put" with DB.Put
// (WAL on, no sync), "ingest" through SSTFileWriter and IngestExternalFile
// (MoveFiles). Each op is one whole load; keys/s is the figure to compare.
func BenchmarkBulkLoad(b *testing.B) {
	const n = 200_000
	key := func(dst []byte, i int) []byte { return fmt.Appendf(dst[:0], "%016d", i) }
	value := make([]byte, 100)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	open := func(b *testing.B) (*DB, string) {
		dir := testdir.New(b)
		o := &Options{CreateIfMissing: true, FS: vfs.Default, Logger: discardLogger()}
		d, err := Open(filepath.Join(dir, "db"), o)
		if err != nil {
			b.Fatal(err)
		}
		return d, dir
	}
	b.Run("put", func(b *testing.B) {
		var k []byte
		for range b.N {
			b.StopTimer()
			d, _ := open(b)
			b.StartTimer()
			for i := range n {
				k = key(k, i)
				if err := d.Put(k, value, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			must(b, d.Close())
			b.StartTimer()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("ingest", func(b *testing.B) {
		var k []byte
		for range b.N {
			b.StopTimer()
			d, dir := open(b)
			b.StartTimer()
			path := filepath.Join(dir, "bulk.sst")
			w := NewSSTFileWriter(&Options{FS: vfs.Default})
			must(b, w.Open(path))
			for i := range n {
				k = key(k, i)
				if err := w.Put(k, value); err != nil {
					b.Fatal(err)
				}
			}
			must(b, w.Finish())
			must(b, d.IngestExternalFile([]string{path}, &IngestExternalFileOptions{MoveFiles: true}))
			b.StopTimer()
			must(b, d.Close())
			b.StartTimer()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "keys/s")
	})
}

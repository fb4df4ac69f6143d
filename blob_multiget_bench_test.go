package shale

import (
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// BenchmarkMultiGetBlobValues runs MultiGets of 8 random keys whose 8 KiB
// values are in blob files, on a file system whose reads take 500µs
// (latencyfs), from 4 goroutines: one Get after another, MultiGet without
// AsyncIO (the synchronous path) and with it, where the blob values of a
// batch are read as one batch of reads across blob files. The tables'
// blocks are all in the block cache and the blob cache is tiny, so what
// is measured is the blob reads. Run briefly:
//
//	go test -run XXX -bench MultiGetBlobValues -benchtime 200x
func BenchmarkMultiGetBlobValues(b *testing.B) {
	mem := vfs.NewMem()
	opts := &Options{CreateIfMissing: true, FS: mem, EnableBlobFiles: true, MinBlobSize: 1024,
		BlobFileSize: 4 << 20, WriteBufferSize: 4 << 20, BlockCacheSize: 64 << 20,
		BlobCacheSize: 64 << 10, Compression: NoCompression, DisableAutoCompactions: true}
	d, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 8<<10)
	for i := range mgBenchKeys {
		for j := range value {
			value[j] = byte(i + j)
		}
		if err := d.Put(mgBenchKey(make([]byte, 32), i), value, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		b.Fatal(err)
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	opts.FS = latencyfs.New(mem, latencyfs.Options{ReadLatency: 500 * time.Microsecond})
	if d, err = Open("db", opts); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	// Every table and blob file open, every table block cached, first.
	all := make([][]byte, 0, mgBenchKeys)
	for i := range mgBenchKeys {
		all = append(all, mgBenchKey(make([]byte, 32), i))
	}
	d.MultiGet(all, &ReadOptions{AsyncIO: true})
	m := d.Metrics()
	b.Logf("%d blob files, %d tables", m.Blob.Files, m.Levels[len(m.Levels)-1].NumFiles)
	b.Run("looped-get", func(b *testing.B) { benchMultiGet(b, d, nil) })
	b.Run("multiget-sync", func(b *testing.B) { benchMultiGet(b, d, &ReadOptions{}) })
	b.Run("multiget-async", func(b *testing.B) { benchMultiGet(b, d, &ReadOptions{AsyncIO: true}) })
}

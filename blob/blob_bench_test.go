package blob

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shaledb/shale/cache"
)

// BenchmarkWriterAdd adds 8 KiB values (db_bench's blob runs) with each
// compression.
func BenchmarkWriterAdd(b *testing.B) {
	value := bytes.Repeat([]byte("0123456789abcdef"), 512)
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		b.Run(c.String(), func(b *testing.B) {
			w := NewWriter(&discardFile{}, WriterOptions{Compression: c})
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := w.Add([]byte("key0000000000000"), value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet reads 8 KiB values by index, from the file and from the
// cache.
func BenchmarkGet(b *testing.B) {
	var recs []record
	for i := 0; i < 256; i++ {
		recs = append(recs, record{[]byte(fmt.Sprintf("key%013d", i)), bytes.Repeat([]byte{byte(i)}, 8<<10)})
	}
	data, xs, _ := writeBlob(b, WriterOptions{Compression: SnappyCompression}, recs)
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			o := ReaderOptions{}
			if cached {
				o.Cache = cache.New(64 << 20)
			}
			r, err := openBytes(data, o)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(8 << 10)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				j := i % len(xs)
				if _, err := r.Get(xs[j], recs[j].key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package sstable

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
)

// BenchmarkWriterAdd writes tables of 100,000 entries with 100-byte values,
// without tombstones and with every fourth entry a Delete: the cost per
// entry of the writer's path, including its count of tombstone-dense
// blocks.
func BenchmarkWriterAdd(b *testing.B) {
	for _, every := range []int{0, 4} {
		b.Run(fmt.Sprintf("deletes=1in%d", every), func(b *testing.B) {
			const n = 100_000
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key%08d", i))
			}
			val := make([]byte, 100)
			path := filepath.Join(testdir.New(b), "w.sst")
			b.SetBytes(n * (11 + 8 + 100))
			b.ResetTimer()
			for range b.N {
				f, err := vfsCreate(path)
				if err != nil {
					b.Fatal(err)
				}
				w := NewWriter(f, path, WriterOptions{})
				for i, k := range keys {
					kind, v := base.KindSet, val
					if every > 0 && i%every == 0 {
						kind, v = base.KindDelete, nil
					}
					if err := w.Add(base.MakeInternalKey(k, base.SeqNum(i+1), kind), v); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

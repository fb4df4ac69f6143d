package shale

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// BenchmarkCounterUpdate compares two ways of adding to counters of 10k
// random keys: Merge under UInt64AddOperator (db_bench's mergerandom) and
// the read-modify-write loop it replaces (Get, add, Put).
func BenchmarkCounterUpdate(b *testing.B) {
	const keys = 10000
	for _, mode := range []string{"merge", "get-put"} {
		b.Run(mode, func(b *testing.B) {
			opts := testOptions(vfs.NewMem())
			opts.WriteBufferSize = 4 << 20
			opts.TargetFileSizeBase = 2 << 20
			opts.MaxBytesForLevelBase = 8 << 20
			opts.MergeOperator = UInt64AddOperator
			d, err := Open("db", opts)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			one := binary.LittleEndian.AppendUint64(nil, 1)
			var key, buf []byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				key = fmt.Appendf(key[:0], "counter%06d", uint64(i)*2654435761%keys)
				if mode == "merge" {
					if err := d.Merge(key, one, nil); err != nil {
						b.Fatal(err)
					}
					continue
				}
				var n uint64
				buf, err = d.AppendValue(buf[:0], key, nil)
				if err == nil {
					n = binary.LittleEndian.Uint64(buf)
				} else if err != ErrNotFound {
					b.Fatal(err)
				}
				if err := d.Put(key, binary.LittleEndian.AppendUint64(buf[:0], n+1), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

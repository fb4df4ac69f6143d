package shale

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// BenchmarkSecondaryInstanceCatchUp measures, on the OS file system, a
// catch-up that finds nothing new (per op), and the replay of a primary's
// WAL by a catch-up (per record: b.N puts of 100-byte values, then one
// catch-up, timed alone).
func BenchmarkSecondaryInstanceCatchUp(b *testing.B) {
	open := func(b *testing.B) (*DB, *DB) {
		root := testdir.New(b)
		dir := vfs.Default.PathJoin(root, "db")
		p, err := Open(dir, &Options{CreateIfMissing: true, WriteBufferSize: 256 << 20})
		if err != nil {
			b.Fatal(err)
		}
		s, err := OpenAsSecondary(dir, vfs.Default.PathJoin(root, "sec"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close(); p.Close() })
		return p, s
	}
	b.Run("nothing-new", func(b *testing.B) {
		p, s := open(b)
		for i := range 1000 {
			if err := p.Put([]byte(fmt.Sprintf("key%08d", i)), make([]byte, 100), nil); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if err := s.TryCatchUpWithPrimary(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wal-record", func(b *testing.B) {
		p, s := open(b)
		val := make([]byte, 100)
		b.StopTimer()
		for i := range b.N {
			if err := p.Put([]byte(fmt.Sprintf("key%08d", i)), val, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := s.TryCatchUpWithPrimary(); err != nil {
			b.Fatal(err)
		}
	})
}

package raftstore

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkStoreLogs compares StoreLogs of the shale Store with raft-boltdb
// v2's BoltStore, both syncing every call, on the OS file system in a
// temporary directory: batches of 1, 16 and 64 entries of 256 bytes. One
// op is one StoreLogs call; entries/s and the p50/p99 call latency are
// reported too. Run in one go so that both see the same machine:
//
//	go test -run '^$' -bench BenchmarkStoreLogs -benchtime 2s .
func BenchmarkStoreLogs(b *testing.B) {
	type logStore interface {
		raft.LogStore
		Close() error
	}
	stores := []struct {
		name string
		open func(dir string) (logStore, error)
	}{
		{"shale", func(dir string) (logStore, error) { return Open(filepath.Join(dir, "shale"), nil) }},
		{"boltdb", func(dir string) (logStore, error) {
			return raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
		}},
	}
	data := make([]byte, 256)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, batch := range []int{1, 16, 64} {
		for _, st := range stores {
			b.Run(fmt.Sprintf("batch=%d/%s", batch, st.name), func(b *testing.B) {
				s, err := st.open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				logs := make([]*raft.Log, batch)
				for i := range logs {
					logs[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
				}
				lat := make([]time.Duration, 0, b.N)
				next := uint64(1)
				b.SetBytes(int64(batch * len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for _, l := range logs {
						l.Index = next
						next++
					}
					start := time.Now()
					if err := s.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}

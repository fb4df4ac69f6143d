package kvserver

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkClusterPut measures puts through the leader of a 3-node loopback
// cluster (raft over TCP, stores on the OS file system, synced), with the
// shale log store and with raft-boltdb v2 in the same run; 32 goroutines
// put 256-byte values so that raft batches entries. One op is one put.
//
//	go test -run '^$' -bench BenchmarkClusterPut -benchtime 3s ./kvserver/
func BenchmarkClusterPut(b *testing.B) {
	for _, st := range []struct {
		name string
		open func(dir string) (LogStore, error)
	}{
		{"shale", nil},
		{"boltdb", func(dir string) (LogStore, error) {
			return raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
		}},
	} {
		b.Run(st.name, func(b *testing.B) {
			c := startTestCluster(&testCluster{t: b, onOS: true, logStore: st.open}, 3)
			leader := c.waitLeader(10 * time.Second)
			value := make([]byte, 256)
			var seq atomic.Uint64
			b.SetParallelism(16) // 16 × GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := fmt.Sprintf("key%08d", seq.Add(1))
					if err := leader.node.Put([]byte(k), value); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
		})
	}
}

package shale

import (
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/memtable"
)

// BenchmarkApplyBatch is the memtable half of a commit: a batch of 16
// random 16-byte keys with 100-byte values applied to a memtable (applyBatch),
// the batch's decoding included. The memtable is replaced when full.
func BenchmarkApplyBatch(b *testing.B) {
	const perBatch = 16
	rng := rand.New(rand.NewPCG(7, 8))
	value := make([]byte, 100)
	batches := make([]*Batch, 64)
	var key []byte
	for i := range batches {
		batches[i] = newBatch()
		for range perBatch {
			key = benchKey(key, rng.IntN(1<<30))
			batches[i].Put(key, value)
		}
	}
	m := memtable.New(base.DefaultComparer, 64<<20)
	seq := base.SeqNum(1)
	b.SetBytes(perBatch * 116)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		bt := batches[i%len(batches)]
		bt.setSeqNum(seq)
		if _, err := applyBatch(m, bt.data); err != nil {
			b.StopTimer()
			m = memtable.New(base.DefaultComparer, 64<<20)
			b.StartTimer()
			continue
		}
		seq += perBatch
	}
}

// BenchmarkPutParallel is the commit pipeline under concurrent writers:
// db_bench's fillrandom from GOMAXPROCS goroutines (RunParallel), each Put a
// commit, with the default durability (the WAL record handed to the OS
// before Put returns). The groups the commits formed are reported
// (batches/group).
func BenchmarkPutParallel(b *testing.B) {
	db := benchDB(b)
	value := make([]byte, 100)
	before := db.Metrics()
	b.SetBytes(116)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 4))
		var key []byte
		for pb.Next() {
			key = benchKey(key, rng.IntN(1<<30))
			if err := db.Put(key, value, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	m := db.Metrics()
	if g := m.Commit.Groups - before.Commit.Groups; g > 0 {
		b.ReportMetric(float64(m.Commit.Batches-before.Commit.Batches)/float64(g), "batches/group")
	}
}

package shale

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// BenchmarkTransactionReadModifyWrite measures 1-key read-modify-writes
// (read a counter, write it back plus one) over 10,000 keys from 2 and 4
// goroutines: as a plain Get and one-entry batch (no isolation), as an
// optimistic transaction (GetForUpdate, Put, Commit; retried on ErrBusy)
// and as a pessimistic one (row lock). The OS file system, no syncs.
func BenchmarkTransactionReadModifyWrite(b *testing.B) {
	const keys = 10000
	for _, kind := range []string{"batch", "optimistic", "pessimistic"} {
		for _, workers := range []int{2, 4} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", kind, workers), func(b *testing.B) {
				opts := &Options{CreateIfMissing: true, Logger: discardLogger()}
				tdb, err := OpenTransactionDB(b.TempDir(), opts, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer tdb.Close()
				db := tdb.DB
				key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
				zero := make([]byte, 8)
				for i := range keys {
					if err := db.Put(key(i), zero, nil); err != nil {
						b.Fatal(err)
					}
				}
				bump := func(v []byte) []byte {
					out := make([]byte, 8)
					if len(v) == 8 {
						binary.LittleEndian.PutUint64(out, binary.LittleEndian.Uint64(v)+1)
					}
					return out
				}
				var retries sync.Map
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range workers {
					n := b.N / workers
					if w < b.N%workers {
						n++
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(w), 1))
						batch := db.NewBatch()
						retried := 0
						for range n {
							k := key(rng.IntN(keys))
							for {
								var err error
								switch kind {
								case "batch":
									var v []byte
									if v, err = db.Get(k, nil); err == nil {
										batch.Reset()
										batch.Put(k, bump(v))
										err = db.Write(batch, nil)
									}
								default:
									var txn *Transaction
									if kind == "optimistic" {
										txn = db.BeginOptimisticTransaction(nil, nil)
									} else {
										txn = tdb.BeginTransaction(nil, nil)
									}
									var v []byte
									if v, err = txn.GetForUpdate(nil, k); err == nil {
										if err = txn.Put(k, bump(v)); err == nil {
											err = txn.Commit()
										}
									}
									if err != nil {
										txn.Rollback()
									}
								}
								if err != nil && retryable(err) {
									retried++
									continue
								}
								if err != nil {
									b.Error(err)
									return
								}
								break
							}
						}
						retries.Store(w, retried)
					}()
				}
				wg.Wait()
				b.StopTimer()
				total := 0
				retries.Range(func(_, v any) bool { total += v.(int); return true })
				b.ReportMetric(float64(total)/float64(b.N), "retries/op")
			})
		}
	}
}

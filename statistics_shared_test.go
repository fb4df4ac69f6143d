package shale

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestStatisticsSharedMetricsPerDB: two DBs (and a reopened one) sharing a
// Statistics each report only their own table reads in Metrics().IO, while
// the Statistics counts the reads of all of them, closed ones included.
func TestStatisticsSharedMetricsPerDB(t *testing.T) {
	s := NewStatistics()
	fss := []vfs.FS{vfs.NewMem(), vfs.NewMem()}
	open := func(i int) *DB {
		o := testOptions(fss[i])
		o.Statistics = s
		o.BlockCacheSize = -1
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	var dbs [2]*DB
	for i := range dbs {
		dbs[i] = open(i)
		for k := range 50 {
			if err := dbs[i].Put(fmt.Appendf(nil, "k%03d", k), []byte{byte(i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := dbs[i].Flush(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	before0, before1 := dbs[0].Metrics().IO, dbs[1].Metrics().IO
	total := s.TickerCount(TickerBlockReads)
	for range 5 {
		if _, err := dbs[0].Get([]byte("k007"), nil); err != nil {
			t.Fatal(err)
		}
	}
	after0, after1 := dbs[0].Metrics().IO, dbs[1].Metrics().IO
	if after1.BlockReads != before1.BlockReads || after1.TableReads != before1.TableReads {
		t.Fatalf("Gets on DB 0 changed DB 1's Metrics().IO: block reads %d -> %d, table reads %d -> %d",
			before1.BlockReads, after1.BlockReads, before1.TableReads, after1.TableReads)
	}
	added := after0.BlockReads - before0.BlockReads
	if added < 5 {
		t.Fatalf("5 uncached Gets on DB 0 added %d block reads to its Metrics", added)
	}
	if got := s.TickerCount(TickerBlockReads) - total; got != added {
		t.Fatalf("Statistics counted %d block reads, DB 0's Metrics %d", got, added)
	}
	if sum := after0.BlockReads + after1.BlockReads; s.TickerCount(TickerBlockReads) != sum {
		t.Fatalf("Statistics %d block reads, the two DBs' Metrics %d", s.TickerCount(TickerBlockReads), sum)
	}
	// A closed DB's reads stay in the Statistics; a reopened DB starts its
	// Metrics from zero.
	total = s.TickerCount(TickerBlockReads)
	if err := dbs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.TickerCount(TickerBlockReads); got != total {
		t.Fatalf("closing DB 0 changed the Statistics' block reads %d -> %d", total, got)
	}
	dbs[0] = open(0)
	if m := dbs[0].Metrics().IO; m.BlockReads != 0 || m.TableReads != 0 {
		t.Fatalf("reopened DB's Metrics().IO starts at %d block reads, %d table reads; want 0", m.BlockReads, m.TableReads)
	}
	if _, err := dbs[0].Get([]byte("k008"), nil); err != nil {
		t.Fatal(err)
	}
	if s.TickerCount(TickerBlockReads) <= total {
		t.Fatal("the reopened DB's reads are not in the Statistics")
	}
}

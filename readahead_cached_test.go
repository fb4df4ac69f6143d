package shale

import (
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestReadaheadCachedScanNoIO: once a scan has filled the block cache, a
// second scan of the same range reads nothing from the tables, whatever the
// readahead (automatic, explicit, async): blocks found in the cache never
// cause IO, and readahead issues nothing for them.
func TestReadaheadCachedScanNoIO(t *testing.T) {
	fs := vfs.NewMem()
	o := readaheadOptions(fs)
	o.BlockCacheSize = 64 << 20
	o.DisableAutoCompactions = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := fillReadaheadDB(t, db, rand.New(rand.NewPCG(3, 4)), 12000)
	for i, ro := range []ReadOptions{
		{},
		{ReadaheadSize: 64 << 10},
		{AsyncIO: true},
		{AsyncIO: true, ReadaheadSize: 64 << 10},
	} {
		cold := db.Metrics().IO
		if err := checkScan(t, db, m, &ro); err != nil { // fills the cache
			t.Fatal(err)
		}
		before := db.Metrics().IO
		if i == 0 && before.TableReads == cold.TableReads {
			t.Fatal("the first scan read no table: the test cannot see IO")
		}
		for range 2 {
			if err := checkScan(t, db, m, &ro); err != nil {
				t.Fatal(err)
			}
		}
		after := db.Metrics().IO
		if d := after.TableReads - before.TableReads; d != 0 {
			t.Errorf("%+v: cached scans made %d table reads", ro, d)
		}
		if d := after.ReadaheadBytesIssued - before.ReadaheadBytesIssued; d != 0 {
			t.Errorf("%+v: cached scans issued %d bytes of readahead", ro, d)
		}
	}
}

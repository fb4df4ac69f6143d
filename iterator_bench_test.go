package shale

import (
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// manyTablesRun is one run of buildManyTablesDB: the share of the key space
// written into level, in 1/manyTablesShares of the keys.
type manyTablesRun struct{ level, share int }

// manyTablesRuns spread about 5,000 tables over L1-L6, roughly tenfold per
// level as a leveled LSM is, with two L0 files on top.
var manyTablesRuns = []manyTablesRun{
	{6, 2600}, {5, 1300}, {4, 650}, {3, 270}, {2, 110}, {1, 60}, {0, 5}, {0, 5},
}

const manyTablesShares = 5000

// buildManyTablesDB builds, in memory, a database of about 5,000 tables of
// about 4 KiB each, with range deletions in L0-L5, every table open and
// every block cached. Its runs are written bottom-up, as db_bench's
// fillseqdeterministic does: each owns a share of the key space of
// [0, nKeys), written in key order with a range deletion of 20 keys every
// 2,000 keys (above L6), flushed, and compacted into its level with
// ChangeLevel, so that every level spans the whole key space and newer data
// sits above older.
func buildManyTablesDB(b *testing.B) (db *DB, nKeys int) {
	b.Helper()
	const keysPerShare = 36 // about one 4 KiB table with 100-byte values
	nKeys = manyTablesShares * keysPerShare
	opts := &Options{
		CreateIfMissing:          true,
		FS:                       vfs.NewMem(),
		DisableAutoCompactions:   true,
		DisableDynamicLevelBytes: true,
		TargetFileSizeBase:       4 << 10,
		MaxBytesForLevelBase:     1 << 40, // no level is over its target
		Compression:              NoCompression,
		BlockCacheSize:           256 << 20,
		NumLevels:                7,
		// Every table stays open: the benchmark measures what an iterator
		// costs per file, not reopening tables past the file cache's bound.
		MaxOpenFiles: -1,
	}
	db, err := Open("db", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	owner := make([]int, manyTablesShares)
	for i, s := 0, 0; i < len(manyTablesRuns); i++ {
		for j := 0; j < manyTablesRuns[i].share; j++ {
			owner[s] = i
			s++
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	rng.Shuffle(len(owner), func(i, j int) { owner[i], owner[j] = owner[j], owner[i] })
	value := make([]byte, 100)
	var key, end []byte
	wo := &WriteOptions{DisableWAL: true}
	batch := db.NewBatch()
	write := func() {
		if err := db.Write(batch, wo); err != nil {
			b.Fatal(err)
		}
		batch.Reset()
	}
	for ri, run := range manyTablesRuns {
		// A run below L0 goes in as two overlapping L0 files (even keys,
		// then odd ones), so that it is rewritten into 4 KiB tables on its
		// way down instead of moved as one file.
		halves := 1
		if run.level > 0 {
			halves = 2
		}
		for h := 0; h < halves; h++ {
			for k := h; k < nKeys; k += halves {
				if owner[k/keysPerShare] != ri {
					continue
				}
				for i := range value {
					value[i] = byte(rng.Uint32())
				}
				batch.Put(benchKey(key, k), value)
				if batch.Len() >= 1000 {
					write()
				}
			}
			if h == halves-1 && run.level < 6 {
				for k := 1000 * (ri + 1); k+20 < nKeys; k += 2000 {
					key, end = benchKey(key, k), benchKey(end, k+20)
					batch.DeleteRange(key, end)
				}
			}
			write()
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		if run.level > 0 {
			if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: run.level}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Open every table and cache every block.
	it := db.NewIterator(nil)
	for it.First(); it.Valid(); it.Next() {
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	var files, rangeDels int
	var shape []int
	rs := db.loadReadState()
	for _, level := range rs.version.Levels {
		shape = append(shape, len(level))
		files += len(level)
		for _, f := range level {
			rangeDels += int(f.NumRangeDeletions)
		}
	}
	rs.unref()
	b.Logf("%d tables (per level %v), %d range deletions, %d keys", files, shape, rangeDels, nKeys)
	return db, nKeys
}

// BenchmarkNewIteratorSeek measures what a short read through an iterator
// costs on a database of about 5,000 tables: NewIterator, one SeekGE to a
// random key, Close. Every table is open and every block cached, so what
// grows with the number of tables shows. "tables-next1000" also reads 1,000
// entries after the seek, for the cost of range tombstones per entry; in
// "memtable-rangedel" the memtable also holds a range deletion.
func BenchmarkNewIteratorSeek(b *testing.B) {
	db, nKeys := buildManyTablesDB(b)
	run := func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		var key []byte
		b.ReportAllocs()
		for b.Loop() {
			key = benchKey(key, rng.IntN(nKeys))
			it := db.NewIterator(nil)
			it.Seek(key)
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("tables", run)
	b.Run("tables-next1000", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		var key []byte
		b.ReportAllocs()
		for b.Loop() {
			key = benchKey(key, rng.IntN(nKeys))
			it := db.NewIterator(nil)
			for ok, n := it.Seek(key), 0; ok && n < 1000; ok, n = it.Next(), n+1 {
			}
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err := db.DeleteRange(benchKey(nil, 10), benchKey(nil, 15), nil); err != nil {
		b.Fatal(err)
	}
	b.Run("memtable-rangedel", run)
}

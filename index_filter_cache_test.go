package shale

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// indexFilterDB opens a MemFS database of large tables (about 250 data
// blocks each, so index and filter outweigh the rest of a reader): two
// flushes compacted to the last level, then two flushes left in L0. Every
// key is read once, so every table is open. It returns the DB and the
// keys' value function.
func indexFilterDB(t *testing.T, set func(*Options)) (*DB, func(i int) []byte) {
	t.Helper()
	o := testOptions(vfs.NewMem())
	o.WriteBufferSize = 512 << 10
	o.TargetFileSizeBase = 256 << 10
	o.MaxBytesForLevelBase = 4 << 20
	o.DisableAutoCompactions = true
	o.BlockCacheSize = 8 << 20
	o.Compression = NoCompression
	set(o)
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	const perFlush = 3000
	value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 60+i%40) }
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%07d", i)) }
	for flush := range 4 {
		for i := flush; i < 4*perFlush; i += 4 {
			if err := db.Put(key(i), value(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if flush == 1 {
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := db.Metrics()
	if m.Levels[0].NumFiles < 2 || m.Levels[len(m.Levels)-1].NumFiles < 1 {
		t.Fatalf("want tables in L0 and in the last level:\n%s", m)
	}
	for i := range 4 * perFlush {
		v, err := db.Get(key(i), nil)
		if err != nil || !bytes.Equal(v, value(i)) {
			t.Fatalf("Get(%s) = %q, %v", key(i), v, err)
		}
	}
	return db, value
}

// TestTableReadersMemDropsWithCacheIndexAndFilterBlocks: with every table
// open, Metrics().TableReadersMem counts the readers' index and filter
// blocks by default; with CacheIndexAndFilterBlocks they are charged to the
// block cache instead and TableReadersMem drops to a small fraction.
func TestTableReadersMemDropsWithCacheIndexAndFilterBlocks(t *testing.T) {
	plainDB, _ := indexFilterDB(t, func(o *Options) {})
	plain := plainDB.Metrics()
	plainDB.Close()
	cachedDB, _ := indexFilterDB(t, func(o *Options) { o.CacheIndexAndFilterBlocks = true })
	cached := cachedDB.Metrics()
	if plain.TableReadersMem < 64<<10 {
		t.Fatalf("TableReadersMem %d with %d tables open: the readers' index and filter blocks are not counted", plain.TableReadersMem, tables(plain))
	}
	if cached.TableReadersMem*10 > plain.TableReadersMem {
		t.Fatalf("TableReadersMem %d with CacheIndexAndFilterBlocks, %d without: the readers still hold their index and filter", cached.TableReadersMem, plain.TableReadersMem)
	}
	moved := int64(plain.TableReadersMem - cached.TableReadersMem)
	if cached.BlockCache.Size-plain.BlockCache.Size < moved/2 {
		t.Fatalf("block cache holds %d bytes with CacheIndexAndFilterBlocks, %d without: the %d bytes the readers gave up are not charged to it",
			cached.BlockCache.Size, plain.BlockCache.Size, moved)
	}
	if cached.BlockCache.PinnedSize != 0 {
		t.Fatalf("PinnedSize %d without PinL0FilterAndIndexBlocksInCache", cached.BlockCache.PinnedSize)
	}
	if err := cachedDB.Close(); err != nil {
		t.Fatal(err)
	}
}

func tables(m *Metrics) int {
	n := 0
	for _, l := range m.Levels {
		n += l.NumFiles
	}
	return n
}

// TestPinL0FilterAndIndexBlocksInCache: with pinning, the index and filter
// blocks of the L0 tables stay in the block cache through reads that churn
// it (PinnedSize does not move and the readers hold nothing beyond their
// properties), those of the last level's tables are not pinned, and once a
// compaction takes the L0 tables away their pins are gone.
func TestPinL0FilterAndIndexBlocksInCache(t *testing.T) {
	db, value := indexFilterDB(t, func(o *Options) {
		o.CacheIndexAndFilterBlocks = true
		o.PinL0FilterAndIndexBlocksInCache = true
	})
	defer db.Close()
	m := db.Metrics()
	if m.BlockCache.PinnedSize == 0 {
		t.Fatalf("nothing pinned with %d L0 tables open:\n%s", m.Levels[0].NumFiles, m)
	}
	if m.BlockCache.PinnedSize >= m.BlockCache.Size-m.BlockCache.PinnedSize {
		t.Fatalf("pinned %d of %d cached bytes: more than the L0 tables' index and filter", m.BlockCache.PinnedSize, m.BlockCache.Size)
	}
	pinned := m.BlockCache.PinnedSize
	// Scan everything twice with a cache fill: data blocks churn around the
	// pinned blocks.
	for range 2 {
		it := db.NewIterator(nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if !bytes.Equal(it.Value(), value(n)) {
				t.Fatalf("entry %d: %q", n, it.Value())
			}
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if m2 := db.Metrics(); m2.BlockCache.PinnedSize != pinned || m2.TableReadersMem > m.TableReadersMem {
		t.Fatalf("after scans: pinned %d (was %d), readers hold %d (was %d)", m2.BlockCache.PinnedSize, pinned, m2.TableReadersMem, m.TableReadersMem)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	// The compaction's outputs are in the last level: opened, they pin
	// nothing, and the obsolete L0 tables' pins go with them (their files
	// are deleted in the background).
	if _, err := db.Get([]byte(fmt.Sprintf("key%07d", 5)), nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m3 := db.Metrics()
		if m3.Levels[0].NumFiles == 0 && m3.BlockCache.PinnedSize == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after compacting L0 away: %d L0 files, %d bytes still pinned", m3.Levels[0].NumFiles, m3.BlockCache.PinnedSize)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCacheIndexAndFilterBlocksRecordedInOptionsFile: both options are
// written to the OPTIONS file and parsed back.
func TestCacheIndexAndFilterBlocksRecordedInOptionsFile(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.CacheIndexAndFilterBlocks = true
	o.PinL0FilterAndIndexBlocksInCache = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	parsed, err := ParseOptionsFile(readFile(t, fs, "/db/"+findFile(t, fs, "/db", base.FileTypeOptions)))
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.CacheIndexAndFilterBlocks || !parsed.PinL0FilterAndIndexBlocksInCache {
		t.Fatalf("OPTIONS file records CacheIndexAndFilterBlocks %v, PinL0FilterAndIndexBlocksInCache %v",
			parsed.CacheIndexAndFilterBlocks, parsed.PinL0FilterAndIndexBlocksInCache)
	}
	defaults, err := ParseOptionsFile(testOptions(nil).EnsureDefaults().encodeOptionsFile())
	if err != nil {
		t.Fatal(err)
	}
	if defaults.CacheIndexAndFilterBlocks || defaults.PinL0FilterAndIndexBlocksInCache {
		t.Fatal("the options are on by default")
	}
}

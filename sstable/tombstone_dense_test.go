package sstable

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
)

// TestTombstoneDenseBlocks checks the count of tombstone-dense data blocks
// in the properties (read back from the file): by the number of point
// tombstones in a block, by their share of the block's bytes, and with each
// test turned off.
func TestTombstoneDenseBlocks(t *testing.T) {
	dir := testdir.New(t)
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	// run builds a table of n entries whose kind and value entry(i) picks,
	// and returns its data block and dense block counts.
	run := func(t *testing.T, name string, o WriterOptions, n int, entry func(i int) (base.Kind, []byte)) (blocks, dense uint64) {
		t.Helper()
		var entries []kv
		for i := range n {
			kind, v := entry(i)
			entries = append(entries, kv{base.MakeInternalKey(key(i), base.SeqNum(i+1), kind), v})
		}
		path := filepath.Join(dir, name+".sst")
		meta := writeTable(t, path, o, entries, nil)
		r := openTable(t, path, nil)
		defer r.Close()
		p := r.Properties()
		if p.NumTombstoneDenseBlocks != meta.Props.NumTombstoneDenseBlocks {
			t.Fatalf("read back %d dense blocks, the writer counted %d", p.NumTombstoneDenseBlocks, meta.Props.NumTombstoneDenseBlocks)
		}
		return p.NumDataBlocks, p.NumTombstoneDenseBlocks
	}
	big := bytes.Repeat([]byte("v"), 500)

	t.Run("only tombstones", func(t *testing.T) {
		// Every block is all tombstones: dense by both tests.
		blocks, dense := run(t, "dels", WriterOptions{}, 2000, func(int) (base.Kind, []byte) { return base.KindDelete, nil })
		if blocks < 2 || dense != blocks {
			t.Fatalf("%d of %d blocks dense, want all", dense, blocks)
		}
	})
	t.Run("no tombstones", func(t *testing.T) {
		blocks, dense := run(t, "sets", WriterOptions{}, 2000, func(int) (base.Kind, []byte) { return base.KindSet, big })
		if blocks < 2 || dense != 0 {
			t.Fatalf("%d of %d blocks dense, want none", dense, blocks)
		}
	})
	t.Run("half tombstones among large values", func(t *testing.T) {
		// Small tombstones between 500-byte values: few per block and a
		// small share of its bytes, so no block is dense.
		blocks, dense := run(t, "mixed", WriterOptions{}, 2000, func(i int) (base.Kind, []byte) {
			if i%2 == 0 {
				return base.KindSingleDelete, nil
			}
			return base.KindSet, big
		})
		if blocks < 2 || dense != 0 {
			t.Fatalf("%d of %d blocks dense, want none", dense, blocks)
		}
	})
	t.Run("a run of tombstones", func(t *testing.T) {
		// Tombstones for the first 1000 keys, then 1000 large values: the
		// blocks of the run are dense, the others not.
		entry := func(i int) (base.Kind, []byte) {
			if i < 1000 {
				return base.KindDelete, nil
			}
			return base.KindSet, big
		}
		blocks, dense := run(t, "run", WriterOptions{}, 2000, entry)
		if dense == 0 || dense >= blocks/2 {
			t.Fatalf("%d of %d blocks dense, want the few blocks of the tombstone run", dense, blocks)
		}
		// With both tests off, nothing is dense.
		_, off := run(t, "run-off", WriterOptions{NumDeletionsThreshold: -1, DeletionSizeRatioThreshold: -1}, 2000, entry)
		if off != 0 {
			t.Fatalf("%d dense blocks with both tests off", off)
		}
	})
	t.Run("count test alone", func(t *testing.T) {
		// Tombstones carrying values (as a SingleDelete may) take a small
		// share of each block, so only the count can make it dense.
		val := bytes.Repeat([]byte("s"), 30)
		entry := func(i int) (base.Kind, []byte) {
			if i%3 == 0 {
				return base.KindSet, bytes.Repeat([]byte("x"), 400)
			}
			return base.KindSingleDelete, val[:1]
		}
		o := WriterOptions{BlockSize: 64 << 10, DeletionSizeRatioThreshold: -1, NumDeletionsThreshold: 50}
		blocks, dense := run(t, "count", o, 600, entry)
		if blocks == 0 || dense != blocks {
			t.Fatalf("%d of %d blocks dense by a count of 50 (about 400 tombstones per block)", dense, blocks)
		}
		o.NumDeletionsThreshold = 10000
		if _, dense := run(t, "count-high", o, 600, entry); dense != 0 {
			t.Fatalf("%d blocks dense with a count threshold above any block's tombstones", dense)
		}
	})
	t.Run("size test alone", func(t *testing.T) {
		// Tombstones with large values: few per block, most of its bytes.
		val := bytes.Repeat([]byte("d"), 300)
		entry := func(i int) (base.Kind, []byte) {
			if i%4 == 0 {
				return base.KindSet, []byte("v")
			}
			return base.KindSingleDelete, val
		}
		o := WriterOptions{NumDeletionsThreshold: -1}
		blocks, dense := run(t, "size", o, 400, entry)
		if blocks < 2 || dense < blocks-1 {
			t.Fatalf("%d of %d blocks dense by size", dense, blocks)
		}
		o.DeletionSizeRatioThreshold = 0.99
		if _, dense := run(t, "size-high", o, 400, entry); dense != 0 {
			t.Fatalf("%d blocks dense with a size ratio of 0.99", dense)
		}
	})
}

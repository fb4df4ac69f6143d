package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"path/filepath"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// TestMultiGetBatchManyTables checks one batch over several tables sharing
// a small cache, with lookups added while others are pending (as the DB's
// MultiGet does between rounds), some tables failing the reads of a range
// of their data blocks: every lookup answers as Reader.Get on the same file
// without a cache, errors included.
func TestMultiGetBatchManyTables(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	for iter := 0; iter < 10; iter++ {
		c := cache.New(int64(rng.IntN(32 << 10)))
		type table struct {
			r, ref  *Reader
			entries []kv
		}
		var tables []table
		for n := 2 + rng.IntN(3); n > 0; n-- {
			entries := randomEntries(rng, 50+rng.IntN(300))
			path := filepath.Join(testdir.New(t), "t.sst")
			writeTable(t, path, WriterOptions{BlockSize: 128 + rng.IntN(512), Compression: []Compression{NoCompression, SnappyCompression}[rng.IntN(2)], BlockRestartInterval: 1 + rng.IntN(8)}, entries, nil)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			file := func() vfs.File { return &bytesFile{raw} }
			arm := func(vfs.File) {}
			switch rng.IntN(3) {
			case 0:
				file = func() vfs.File { return &alignedFile{bytesFile: bytesFile{raw}, align: 512, noRecord: true} }
			case 1:
				probe, err := NewReader(&bytesFile{raw}, ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// Fail the reads of a few data blocks.
				i := rng.IntN(len(probe.ix.items))
				lo := int64(probe.ix.items[i].handle.Offset)
				hi := lo + 1 + int64(rng.IntN(int(probe.metaStart)-int(lo)))/4
				probe.Close()
				// Armed after the open: NewReader reads the whole tail.
				file = func() vfs.File { return &failingFile{bytesFile{raw}, -1, -1} }
				arm = func(f vfs.File) { f.(*failingFile).failOff, f.(*failingFile).failEnd = lo, hi }
			}
			f, fref := file(), file()
			r, err := NewReader(f, ReaderOptions{Cache: c, FileName: fmt.Sprintf("t%d.sst", n)})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := NewReader(fref, ReaderOptions{FileName: "ref.sst"})
			if err != nil {
				t.Fatal(err)
			}
			arm(f)
			arm(fref)
			tables = append(tables, table{r, ref, entries})
		}
		var b MultiGetBatch
		for round := 0; round < 10; round++ {
			b.Reset()
			type q struct {
				t    table
				key  []byte
				snap base.SeqNum
				id   int
			}
			var qs []q
			add := func() {
				for n := rng.IntN(30); n >= 0; n-- {
					tb := tables[rng.IntN(len(tables))]
					var key []byte
					if rng.IntN(5) == 0 {
						key = []byte(fmt.Sprintf("absent%d", rng.IntN(100)))
					} else {
						key = append([]byte(nil), tb.entries[rng.IntN(len(tb.entries))].key.UserKey...)
					}
					if !tb.r.MayContain(key) {
						continue // callers probe the filter first, as Get does
					}
					snap := base.SeqNum(rng.IntN(1100))
					qs = append(qs, q{tb, key, snap, b.Add(tb.r, key, snap, rng.IntN(3) > 0)})
				}
			}
			add()
			for rounds := 0; b.Pending() > 0; rounds++ {
				if rounds > 1000 {
					t.Fatal("lookups never end")
				}
				var useAR vfs.AsyncReader = ar
				if rng.IntN(4) == 0 {
					useAR = nil
				}
				b.Read(useAR, nil)
				if rng.IntN(3) == 0 {
					add()
				}
			}
			for _, q := range qs {
				v, kind, seq, found, done, err := b.Result(q.id)
				wv, wkind, wseq, wfound, werr := q.t.ref.Get(q.key, q.snap, false)
				if !done || (err != nil) != (werr != nil) || err != nil && !errors.Is(err, errTestRead) && err.Error() != werr.Error() {
					t.Fatalf("key %q at %d: done %v err %v, Get err %v", q.key, q.snap, done, err, werr)
				}
				if found != wfound || (found && (kind != wkind || seq != wseq || !bytes.Equal(v, wv))) {
					t.Fatalf("key %q at %d: got (%v %v %d %q), want (%v %v %d %q)", q.key, q.snap, found, kind, seq, v, wfound, wkind, wseq, wv)
				}
			}
		}
		for _, tb := range tables {
			tb.r.Close()
			tb.ref.Close()
		}
	}
}

// TestMultiGetBatchNextBlockInRun: a lookup whose answer may start the next
// block, when that block came in by the same coalesced read (another lookup
// wanted it), searches it from that read: one read and one round, with or
// without a cache, where it used to wait for a second read of a block
// already at hand.
func TestMultiGetBatchNextBlockInRun(t *testing.T) {
	for _, withCache := range []bool{false, true} {
		var c *cache.Cache
		if withCache {
			c = cache.New(1 << 20)
		}
		// Keys 20 apart: the index separators are shortened into the gaps.
		var entries []kv
		for i := 0; i < 200; i++ {
			entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%05d", i*20)), base.SeqNum(i+1), base.KindSet), bytes.Repeat([]byte{byte(i)}, 100)})
		}
		path := filepath.Join(testdir.New(t), "t.sst")
		writeTable(t, path, WriterOptions{BlockSize: 1024, Compression: NoCompression}, entries, nil)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(&bytesFile{raw}, ReaderOptions{Cache: c, FileName: "t.sst"})
		if err != nil {
			t.Fatal(err)
		}
		// A key in a gap that the index sends to block blk while its answer
		// (none) may start block blk+1; and a key of block blk+1.
		var between, next []byte
		blk := -1
		for i := 0; i < 199 && between == nil; i++ {
			k := []byte(fmt.Sprintf("k%05d", i*20+1))
			var probe MultiGetBatch
			probe.Add(r, k, base.SeqNumMax, false)
			if rounds := runBatch(t, &probe, nil, 4); rounds == 2 {
				between, blk = k, r.ix.seek(base.MakeSearchKey(k), r.cmp)
				next = []byte(fmt.Sprintf("k%05d", (i+1)*20))
			}
		}
		if between == nil {
			t.Fatal("no key between two blocks")
		}
		if got := r.ix.seek(base.MakeSearchKey(next), r.cmp); got != blk+1 {
			t.Fatalf("%q is in block %d, want %d", next, got, blk+1)
		}
		var b MultiGetBatch
		var mine ReadStats
		b.Stats = &mine
		idA := b.Add(r, between, base.SeqNumMax, true)
		idB := b.Add(r, next, base.SeqNumMax, true)
		rounds := runBatch(t, &b, nil, 4)
		if _, _, _, found, done, err := b.Result(idA); !done || found || err != nil {
			t.Fatalf("cache %v: %q: found %v done %v err %v", withCache, between, found, done, err)
		}
		if _, _, _, found, done, err := b.Result(idB); !done || !found || err != nil {
			t.Fatalf("cache %v: %q: found %v done %v err %v", withCache, next, found, done, err)
		}
		if reads := mine.FileReads.Load(); rounds != 1 || reads != 1 {
			t.Fatalf("cache %v: blocks %d and %d: %d rounds, %d reads; want 1 and 1", withCache, blk, blk+1, rounds, reads)
		}
		r.Close()
	}
}

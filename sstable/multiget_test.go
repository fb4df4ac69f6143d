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

// runBatch reads rounds until no lookup of b is pending, failing the test
// if that takes more rounds than r has blocks (a lookup that never ends),
// or if Read's callback does not report each lookup that got done exactly
// once.
func runBatch(t *testing.T, b *MultiGetBatch, ar vfs.AsyncReader, maxRounds int) int {
	t.Helper()
	rounds := 0
	reported := map[int]int{}
	for b.Pending() > 0 {
		if rounds > maxRounds {
			t.Fatalf("lookups still pending after %d rounds", rounds)
		}
		var pending []int
		for id := range b.lookups {
			if !b.lookups[id].done {
				pending = append(pending, id)
			}
		}
		clear(reported)
		b.Read(ar, func(id int) {
			if _, _, _, _, done, _ := b.Result(id); !done {
				t.Errorf("lookup %d reported before it is done", id)
			}
			reported[id]++
		})
		for _, id := range pending {
			_, _, _, _, done, _ := b.Result(id)
			if want := map[bool]int{true: 1}[done]; reported[id] != want {
				t.Fatalf("lookup %d (done %v) reported %d times", id, done, reported[id])
			}
		}
		rounds++
	}
	return rounds
}

// failingFile fails every read that touches [failOff, failEnd).
type failingFile struct {
	bytesFile
	failOff, failEnd int64
}

var errTestRead = errors.New("injected read error")

func (f *failingFile) ReadAt(p []byte, off int64) (int, error) {
	if off < f.failEnd && off+int64(len(p)) > f.failOff {
		return 0, errTestRead
	}
	return f.bytesFile.ReadAt(p, off)
}

// TestMultiGetBatchModel checks that batched lookups, with and without a
// cache, an async reader and direct IO, answer exactly as Reader.Get does.
func TestMultiGetBatchModel(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	for iter := 0; iter < 12; iter++ {
		entries := randomEntries(rng, 50+rng.IntN(400))
		comp := []Compression{NoCompression, SnappyCompression, ZstdCompression}[rng.IntN(3)]
		path := filepath.Join(testdir.New(t), "t.sst")
		writeTable(t, path, WriterOptions{BlockSize: 128 + rng.IntN(1024), Compression: comp, BlockRestartInterval: 1 + rng.IntN(8)}, entries, nil)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var c *cache.Cache
		if rng.IntN(2) == 0 {
			c = cache.New(int64(rng.IntN(64 << 10)))
		}
		var f vfs.File = &bytesFile{raw}
		if rng.IntN(2) == 0 {
			f = &alignedFile{bytesFile: bytesFile{raw}, align: 512, noRecord: true}
		}
		r, err := NewReader(f, ReaderOptions{Cache: c, FileName: "t.sst"})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := NewReader(&bytesFile{raw}, ReaderOptions{FileName: "ref.sst"})
		if err != nil {
			t.Fatal(err)
		}
		useAR := ar
		if rng.IntN(3) == 0 {
			useAR = nil
		}
		t.Logf("iter %d: %d entries, %v, cache %v, align %d, async %v", iter, len(entries), comp, c != nil, r.bf.Source().Align, useAR != nil)
		var b MultiGetBatch
		var mine ReadStats
		b.Stats = &mine
		for round := 0; round < 20; round++ {
			b.Reset()
			type q struct {
				key  []byte
				snap base.SeqNum
				id   int
			}
			var qs []q
			for n := rng.IntN(40); n >= 0; n-- {
				var key []byte
				if rng.IntN(4) == 0 {
					key = []byte(fmt.Sprintf("absent%d", rng.IntN(100)))
				} else {
					key = append([]byte(nil), entries[rng.IntN(len(entries))].key.UserKey...)
				}
				snap := base.SeqNum(rng.IntN(1100))
				if rng.IntN(4) == 0 {
					snap = base.SeqNumMax
				}
				qs = append(qs, q{key, snap, b.Add(r, key, snap, rng.IntN(2) == 0)})
			}
			runBatch(t, &b, useAR, len(r.ix.items)+1)
			for _, q := range qs {
				v, kind, seq, found, done, err := b.Result(q.id)
				if !done || err != nil {
					t.Fatalf("key %q: done %v err %v", q.key, done, err)
				}
				wv, wkind, wseq, wfound, werr := ref.Get(q.key, q.snap, false)
				if werr != nil {
					t.Fatal(werr)
				}
				if found != wfound || (found && (kind != wkind || seq != wseq || !bytes.Equal(v, wv))) {
					t.Fatalf("key %q at %d: got (%v %v %d %q), want (%v %v %d %q)", q.key, q.snap, found, kind, seq, v, wfound, wkind, wseq, wv)
				}
			}
		}
		if useAR != nil && mine.AsyncReads.Load() != mine.FileReads.Load() || useAR == nil && mine.AsyncReads.Load() != 0 {
			t.Fatalf("async %v: %d file reads, %d async", useAR != nil, mine.FileReads.Load(), mine.AsyncReads.Load())
		}
		r.Close()
		ref.Close()
	}
}

// multigetTable writes a table of n keys "k%05d" with values of vlen bytes,
// uncompressed, in blocks of about 1 KiB, and opens it.
func multigetTable(t *testing.T, n, vlen int, f func(raw []byte) vfs.File, o ReaderOptions) (*Reader, []byte) {
	t.Helper()
	var entries []kv
	for i := 0; i < n; i++ {
		entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%05d", i)), base.SeqNum(i+1), base.KindSet), bytes.Repeat([]byte{byte(i)}, vlen)})
	}
	path := filepath.Join(testdir.New(t), "t.sst")
	writeTable(t, path, WriterOptions{BlockSize: 1024, Compression: NoCompression}, entries, nil)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o.FileName = "t.sst"
	r, err := NewReader(f(raw), o)
	if err != nil {
		t.Fatal(err)
	}
	return r, raw
}

// TestMultiGetBatchCoalesce checks the read plan: keys of one block share
// one block read, adjacent blocks share one request, and a cached block is
// not read again.
func TestMultiGetBatchCoalesce(t *testing.T) {
	var stats ReadStats
	c := cache.New(1 << 20)
	r, _ := multigetTable(t, 200, 100, func(raw []byte) vfs.File { return &bytesFile{raw} }, ReaderOptions{Stats: &stats, Cache: c})
	defer r.Close()
	if len(r.ix.items) < 10 {
		t.Fatalf("want many blocks, got %d", len(r.ix.items))
	}
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	blockOf := func(key string) int { return r.ix.seek(base.MakeSearchKey([]byte(key)), r.cmp) }
	// Keys of blocks 1, 2, 3 (adjacent), twice each block, and of block 6.
	var keys []string
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%05d", i)
		switch blockOf(k) {
		case 1, 2, 3, 6:
			keys = append(keys, k)
		}
	}
	var b MultiGetBatch
	var mine ReadStats
	b.Stats = &mine
	before := ar.Stats()
	for _, k := range keys {
		b.Add(r, []byte(k), base.SeqNumMax, true)
	}
	if rounds := runBatch(t, &b, ar, 3); rounds != 1 {
		t.Fatalf("%d rounds, want 1", rounds)
	}
	for i, k := range keys {
		v, _, _, found, _, err := b.Result(i)
		if err != nil || !found || len(v) != 100 {
			t.Fatalf("key %s: found %v err %v", k, found, err)
		}
	}
	after := ar.Stats()
	if got := after.Batches - before.Batches; got != 1 {
		t.Fatalf("%d batches, want 1", got)
	}
	for _, s := range []*ReadStats{&stats, &mine} {
		if got := s.AsyncReads.Load(); got != 2 {
			t.Fatalf("AsyncReads %d, want 2 (blocks 1-3, block 6)", got)
		}
		if got := s.ReadsCoalesced.Load(); got != 2 {
			t.Fatalf("ReadsCoalesced %d, want 2", got)
		}
		if got := s.BlockReads.Load(); s == &mine && got != 4 { // stats also has the reads of open
			t.Fatalf("BlockReads %d, want 4", got)
		}
	}
	// Now every block is cached: no read at all.
	b.Reset()
	for _, k := range keys {
		b.Add(r, []byte(k), base.SeqNumMax, true)
	}
	if b.Pending() != 0 {
		t.Fatalf("%d lookups pending with every block cached", b.Pending())
	}
	if got := mine.CacheHits.Load(); got != uint64(len(keys)) {
		t.Fatalf("CacheHits %d, want %d", got, len(keys))
	}
	bkeys := make([][]byte, 8)
	for i := range bkeys {
		bkeys[i] = []byte(keys[i])
	}
	if testing.AllocsPerRun(20, func() {
		b.Reset()
		for _, k := range bkeys {
			b.Add(r, k, base.SeqNumMax, true)
		}
	}) > 0 {
		t.Fatal("lookups of cached blocks allocate")
	}
}

// TestMultiGetBatchDirect reads through a direct-IO file: every request is
// aligned (alignedFile fails those that are not) and the answers are right.
func TestMultiGetBatchDirect(t *testing.T) {
	useAlignedFiles(t)
	var af *alignedFile
	r, _ := multigetTable(t, 300, 70, func(raw []byte) vfs.File {
		af = &alignedFile{bytesFile: bytesFile{raw}, align: 512}
		return af
	}, ReaderOptions{})
	defer r.Close()
	af.takeReads()
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	var b MultiGetBatch
	for i := 0; i < 300; i += 7 {
		b.Add(r, []byte(fmt.Sprintf("k%05d", i)), base.SeqNumMax, false)
	}
	runBatch(t, &b, ar, 3)
	for i := 0; i < 300/7; i++ {
		v, _, _, found, _, err := b.Result(i)
		if err != nil || !found || !bytes.Equal(v, bytes.Repeat([]byte{byte(i * 7)}, 70)) {
			t.Fatalf("key %d: found %v err %v", i*7, found, err)
		}
	}
	if reads := af.takeReads(); len(reads) == 0 {
		t.Fatal("no reads recorded")
	}
}

// TestMultiGetBatchReadError fails the reads of one part of the file: only
// the lookups whose blocks lie there fail, the others answer right.
func TestMultiGetBatchReadError(t *testing.T) {
	var ff *failingFile
	r, _ := multigetTable(t, 400, 100, func(raw []byte) vfs.File {
		ff = &failingFile{bytesFile: bytesFile{raw}, failOff: -1, failEnd: -1}
		return ff
	}, ReaderOptions{})
	defer r.Close()
	bad := r.ix.items[5].handle
	ff.failOff, ff.failEnd = int64(bad.Offset), int64(bad.Offset+1)
	for _, ar := range []vfs.AsyncReader{nil, vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})} {
		var b MultiGetBatch
		for i := 0; i < 400; i++ {
			b.Add(r, []byte(fmt.Sprintf("k%05d", i)), base.SeqNumMax, false)
		}
		runBatch(t, &b, ar, 3)
		failed := 0
		for i := 0; i < 400; i++ {
			key := []byte(fmt.Sprintf("k%05d", i))
			blk := r.ix.seek(base.MakeSearchKey(key), r.cmp)
			v, _, _, found, _, err := b.Result(i)
			// Adjacent blocks share a read, but a failed shared read is
			// retried block by block: only block 5 fails.
			if err != nil {
				if !errors.Is(err, errTestRead) {
					t.Fatalf("key %s: error %v, want the injected one", key, err)
				}
				failed++
				continue
			}
			if blk == 5 {
				t.Fatalf("key %s of the failing block: no error", key)
			}
			if !found || !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, 100)) {
				t.Fatalf("key %s: wrong answer (found %v)", key, found)
			}
		}
		if failed == 0 {
			t.Fatal("no key failed")
		}
		if ar != nil {
			ar.Close()
		}
	}
}

// countingFile counts its reads.
type countingFile struct {
	bytesFile
	reads int
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	return f.bytesFile.ReadAt(p, off)
}

// TestNewReaderRoundTrips checks that opening a table reads the footer with
// the end of the file in one read, and fetches what that misses after it: a
// small table costs one read, a table whose filter lies before the tail one
// more.
func TestNewReaderRoundTrips(t *testing.T) {
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	for _, n := range []int{100, 60000} {
		var entries []kv
		for i := 0; i < n; i++ {
			entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%07d", i)), base.SeqNum(i+1), base.KindSet), []byte("v")})
		}
		path := filepath.Join(testdir.New(t), "t.sst")
		writeTable(t, path, WriterOptions{BloomBitsPerKey: 10}, entries, []tombstone{{"k0000001", "k0000005", 7}})
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, async := range []vfs.AsyncReader{nil, ar} {
			f := &countingFile{bytesFile: bytesFile{raw}}
			var stats ReadStats
			before := ar.Stats().Batches
			r, err := NewReader(f, ReaderOptions{FileName: "t.sst", AsyncReader: async, Stats: &stats})
			if err != nil {
				t.Fatal(err)
			}
			batches := ar.Stats().Batches - before
			big := int64(len(raw)) > tailReadSize+int64(r.props.FilterSize)
			switch {
			case !big && (f.reads != 1 || batches != 0):
				t.Fatalf("%d-byte table: %d reads, %d batches; want 1 read", len(raw), f.reads, batches)
			case big && (f.reads < 2 || f.reads > 3 || batches > 1):
				// The tail, then the filter (and the index, in one batch
				// when there is an AsyncReader).
				t.Fatalf("%d-byte table: %d reads, %d batches", len(raw), f.reads, batches)
			}
			// The table reads right.
			for _, i := range []int{0, n / 2, n - 1} {
				k := []byte(fmt.Sprintf("k%07d", i))
				v, _, _, found, err := r.Get(k, base.SeqNumMax, false)
				if err != nil || !found || string(v) != "v" {
					t.Fatalf("Get(%s): %q %v %v", k, v, found, err)
				}
			}
			if len(r.RangeTombstones()) != 1 {
				t.Fatalf("range tombstones %v", r.RangeTombstones())
			}
			r.Close()
		}
	}
}

// TestNewReaderMetaBatch shrinks the tail read so that the index and filter
// lie before it: with an AsyncReader they are fetched in one batch, and the
// table reads right, with direct IO too.
func TestNewReaderMetaBatch(t *testing.T) {
	useAlignedFiles(t)
	old := tailReadSize
	tailReadSize = 1024
	defer func() { tailReadSize = old }()
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	var entries []kv
	for i := 0; i < 20000; i++ {
		entries = append(entries, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%07d", i)), base.SeqNum(i+1), base.KindSet), []byte("v")})
	}
	path := filepath.Join(testdir.New(t), "t.sst")
	writeTable(t, path, WriterOptions{BloomBitsPerKey: 10}, entries, nil)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, direct := range []bool{false, true} {
		var f vfs.File = &bytesFile{raw}
		if direct {
			f = &alignedFile{bytesFile: bytesFile{raw}, align: 512}
		}
		var stats ReadStats
		before := ar.Stats().Batches
		r, err := NewReader(f, ReaderOptions{FileName: "t.sst", AsyncReader: ar, Stats: &stats})
		if err != nil {
			t.Fatal(err)
		}
		if got := ar.Stats().Batches - before; got != 1 || stats.AsyncReads.Load() < 2 {
			t.Fatalf("direct %v: %d batches, %d async reads; want 1 batch of the index and filter", direct, got, stats.AsyncReads.Load())
		}
		for _, i := range []int{0, 7777, 19999} {
			k := []byte(fmt.Sprintf("k%07d", i))
			if v, _, _, found, err := r.Get(k, base.SeqNumMax, false); err != nil || !found || string(v) != "v" {
				t.Fatalf("Get(%s): %q %v %v", k, v, found, err)
			}
		}
		r.Close()
	}
}

// TestMultiGetBatchDamaged damages tables at random (with checksums
// repaired half the time, so damaged blocks reach the decoders): batched
// lookups never panic or hang, and each answers as Get does, or fails with a
// corruption error exactly when Get does.
func TestMultiGetBatchDamaged(t *testing.T) {
	rng, _ := newRand(t)
	ar := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer ar.Close()
	entries := randomEntries(rng, 300)
	path := filepath.Join(testdir.New(t), "t.sst")
	writeTable(t, path, WriterOptions{BlockSize: 256, Compression: NoCompression, BlockRestartInterval: 4}, entries, nil)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for iter := 0; iter < 400; iter++ {
		raw := bytes.Clone(orig)
		for n := 1 + rng.IntN(4); n > 0; n-- {
			raw[rng.IntN(len(raw))] ^= byte(1 + rng.IntN(255))
		}
		if rng.IntN(2) == 0 {
			repairChecksums(raw)
		}
		r, err := NewReader(&bytesFile{raw}, ReaderOptions{FileName: "t.sst"})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) && !errors.Is(err, base.ErrInvalidArgument) {
				t.Fatalf("open: %v", err)
			}
			continue
		}
		opened++
		var b MultiGetBatch
		var ids []int
		var keys [][]byte
		for _, e := range entries {
			if rng.IntN(3) == 0 && r.ProbeBloom(e.key.UserKey, nil, nil) { // as Get does first
				keys = append(keys, e.key.UserKey)
				ids = append(ids, b.Add(r, e.key.UserKey, base.SeqNumMax, false))
			}
		}
		if rng.IntN(2) == 0 {
			runBatch(t, &b, ar, len(r.ix.items)+2)
		} else {
			runBatch(t, &b, nil, len(r.ix.items)+2)
		}
		for j, id := range ids {
			v, kind, seq, found, _, err := b.Result(id)
			wv, wkind, wseq, wfound, werr := r.Get(keys[j], base.SeqNumMax, false)
			if (err != nil) != (werr != nil) {
				t.Fatalf("iter %d key %q: batch error %v, Get error %v", iter, keys[j], err, werr)
			}
			if err != nil {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("iter %d: error %v is not a corruption error", iter, err)
				}
				continue
			}
			if found != wfound || found && (kind != wkind || seq != wseq || !bytes.Equal(v, wv)) {
				t.Fatalf("iter %d key %q: batch (%v %v %d %q), Get (%v %v %d %q)", iter, keys[j], found, kind, seq, v, wfound, wkind, wseq, wv)
			}
		}
		r.Close()
	}
	t.Logf("%d of 400 damaged tables opened", opened)
}

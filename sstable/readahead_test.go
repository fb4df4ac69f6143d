package sstable

import (
	"bytes"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/invariants"
	"github.com/shaledb/shale/vfs"
)

// alignedFile stands in for a file opened with direct IO: it reports an
// alignment (through the fileAlignment hook), fails every read that is not
// aligned in offset, length and address, and records its reads.
type alignedFile struct {
	bytesFile
	align int

	mu       sync.Mutex
	reads    []readRec
	noRecord bool
}

type readRec struct {
	off int64
	n   int
}

func (f *alignedFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	if !f.noRecord {
		f.reads = append(f.reads, readRec{off, len(p)})
	}
	f.mu.Unlock()
	if !vfs.IsAligned(p, off, f.align) {
		return 0, fmt.Errorf("unaligned direct read: offset %d, length %d", off, len(p))
	}
	return f.bytesFile.ReadAt(p, off)
}

func (f *alignedFile) takeReads() []readRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reads
	f.reads = nil
	return r
}

// useAlignedFiles makes Readers see alignedFile's alignment for the test.
func useAlignedFiles(t *testing.T) {
	old := fileAlignment
	fileAlignment = func(f vfs.File) int {
		if a, ok := f.(*alignedFile); ok {
			return a.align
		}
		return old(f)
	}
	t.Cleanup(func() { fileAlignment = old })
}

// readaheadTable writes a table of random entries with small blocks and
// returns its bytes and entries.
func readaheadTable(t *testing.T, rng *rand.Rand, comp Compression) ([]byte, []kv) {
	t.Helper()
	entries := randomEntries(rng, 1500+rng.IntN(1500))
	path := filepath.Join(testdir.New(t), "t.sst")
	writeTable(t, path, WriterOptions{BlockSize: 512 << rng.IntN(4), Compression: comp}, entries, nil)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, entries
}

// upperLimit is the end of the last block an iterator with this upper bound
// may need: the first block whose separator is >= upper (found by a linear
// walk, not the reader's search).
func upperLimit(r *Reader, upper []byte) int64 {
	for _, ix := range r.ix.items {
		if r.cmp(ix.sep.UserKey, upper) >= 0 {
			return int64(ix.handle.Offset + ix.handle.Length + block.TrailerLen)
		}
	}
	return int64(r.ix.dataEnd)
}

// TestIterReadaheadMatches scans whole tables and random ranges, forward
// and with some backward steps, with readahead off, automatic (various
// caps) and explicit, buffered and direct, with and without a cache and a
// concurrent reader, and compares with the entries written. It checks that
// direct reads are aligned (the fake fails the others), that no read of a
// bounded scan passes the end of the last block its upper bound needs,
// and the counters.
func TestIterReadaheadMatches(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	async := vfs.NewAsyncReader(vfs.AsyncOptions{DisableIOUring: true})
	defer async.Close()
	for trial := 0; trial < 12; trial++ {
		comp := []Compression{NoCompression, SnappyCompression}[trial%2]
		data, entries := readaheadTable(t, rng, comp)
		for cfg := 0; cfg < 6; cfg++ {
			align := []int{1, 512, 4096}[rng.IntN(3)]
			f := &alignedFile{bytesFile: bytesFile{data}, align: align}
			var stats ReadStats
			ro := ReaderOptions{Stats: &stats, FileName: "t.sst",
				MaxAutoReadaheadSize: []int64{0, -1, 8 << 10, 64 << 10, 1 << 20}[rng.IntN(5)]}
			if rng.IntN(2) == 0 {
				ro.AsyncReader = async
			}
			if rng.IntN(3) == 0 {
				ro.Cache = cache.New(int64(rng.IntN(len(data))))
			}
			r, err := NewReader(f, ro)
			if err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
			io := IterOptions{FillCache: rng.IntN(2) == 0,
				ReadaheadSize: []int64{0, 0, -1, 4 << 10, 300 << 10, 3 << 20}[rng.IntN(6)]}
			desc := fmt.Sprintf("trial %d (%s, align %d, maxAuto %d, size %d, cache %v, async %v)",
				trial, comp, align, ro.MaxAutoReadaheadSize, io.ReadaheadSize, ro.Cache != nil, ro.AsyncReader != nil)

			it := r.NewIter(io)
			got := readAll(t, it)
			if err := it.Close(); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			if len(got) != len(entries) {
				t.Fatalf("%s: full scan returned %d entries, want %d", desc, len(got), len(entries))
			}
			for i := range got {
				if !equalKV(got[i], entries[i]) {
					t.Fatalf("%s: entry %d is %s, want %s", desc, i, got[i].key, entries[i].key)
				}
			}
			f.takeReads()

			for q := 0; q < 8; q++ {
				lo, hi := rng.IntN(len(entries)), rng.IntN(len(entries))
				if lo > hi {
					lo, hi = hi, lo
				}
				o := io
				o.Lower, o.Upper = entries[lo].key.UserKey, entries[hi].key.UserKey
				var want []kv
				for _, e := range entries {
					if bytes.Compare(e.key.UserKey, o.Lower) >= 0 && bytes.Compare(e.key.UserKey, o.Upper) < 0 {
						want = append(want, e)
					}
				}
				it := r.NewIter(o)
				n := 0
				for ok := it.SeekGE(o.Lower); ok; ok = it.Next() {
					if n >= len(want) || !equalKV(kv{it.Key(), it.Value()}, want[n]) {
						t.Fatalf("%s: range [%q, %q) entry %d is %s", desc, o.Lower, o.Upper, n, it.Key())
					}
					n++
					if rng.IntN(50) == 0 { // a step back, then on again
						it.Prev()
						if !it.Next() || !equalKV(kv{it.Key(), it.Value()}, want[n-1]) {
							t.Fatalf("%s: Next after Prev failed: %v", desc, it.Error())
						}
					}
				}
				if err := it.Close(); err != nil || n != len(want) {
					t.Fatalf("%s: range [%q, %q) returned %d entries, want %d (%v)", desc, o.Lower, o.Upper, n, len(want), err)
				}
				limit := upperLimit(r, o.Upper)
				roundedLimit := (limit + int64(align) - 1) &^ int64(align-1)
				for _, rd := range f.takeReads() {
					if rd.off+int64(rd.n) > roundedLimit {
						t.Fatalf("%s: read [%d, %d) passes the limit %d of upper bound %q", desc, rd.off, rd.off+int64(rd.n), limit, o.Upper)
					}
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			issued, used := stats.ReadaheadBytesIssued.Load(), stats.ReadaheadBytesUsed.Load()
			if used > issued {
				t.Fatalf("%s: readahead used %d > issued %d", desc, used, issued)
			}
			off := io.ReadaheadSize < 0 || (io.ReadaheadSize == 0 && ro.MaxAutoReadaheadSize < 0)
			if off && issued != 0 {
				t.Fatalf("%s: readahead is off but issued %d bytes", desc, issued)
			}
			if !off && ro.Cache == nil && len(r.ix.items) > 3 && used == 0 {
				t.Fatalf("%s: a full uncached scan of %d blocks used no readahead", desc, len(r.ix.items))
			}
			if d := stats.DirectReads.Load(); (align > 1) != (d > 0) || (align > 1 && d != stats.FileReads.Load()) {
				t.Fatalf("%s: %d direct reads of %d file reads", desc, d, stats.FileReads.Load())
			}
		}
	}
}

// TestGetNeverReadsAhead checks that point lookups read single blocks.
func TestGetNeverReadsAhead(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	data, entries := readaheadTable(t, rng, SnappyCompression)
	f := &alignedFile{bytesFile: bytesFile{data}, align: 512}
	var stats ReadStats
	r, err := NewReader(f, ReaderOptions{Stats: &stats, MaxAutoReadaheadSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	maxBlock := 0
	for _, ix := range r.ix.items {
		maxBlock = max(maxBlock, int(ix.handle.Length)+block.TrailerLen)
	}
	f.takeReads()
	for _, e := range entries { // in order: as sequential as Gets can be
		v, _, _, ok, err := r.Get(e.key.UserKey, base.SeqNumMax, false)
		if err != nil || !ok {
			t.Fatalf("Get(%q) = %v, %v", e.key.UserKey, ok, err)
		}
		if w, _ := modelGet(entries, e.key.UserKey, base.SeqNumMax); !bytes.Equal(v, w.value) {
			t.Fatalf("Get(%q) returned the wrong value", e.key.UserKey)
		}
	}
	for _, rd := range f.takeReads() {
		if rd.n > maxBlock+2*512 {
			t.Fatalf("Get read %d bytes at %d: more than one block (%d) aligned", rd.n, rd.off, maxBlock)
		}
	}
	if s := stats.ReadaheadBytesIssued.Load(); s != 0 {
		t.Fatalf("Gets issued %d bytes of readahead", s)
	}
}

// TestCachedScanDoesNoIO checks that blocks in the cache never cause a read,
// even with explicit readahead.
func TestCachedScanDoesNoIO(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	data, _ := readaheadTable(t, rng, SnappyCompression)
	f := &alignedFile{bytesFile: bytesFile{data}, align: 4096}
	var stats ReadStats
	r, err := NewReader(f, ReaderOptions{Stats: &stats, Cache: cache.New(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it := r.NewIter(IterOptions{FillCache: true})
	n := len(readAll(t, it))
	it.Close()
	f.takeReads()
	blocks := stats.BlockReads.Load()
	it = r.NewIter(IterOptions{ReadaheadSize: 1 << 20})
	if m := len(readAll(t, it)); m != n {
		t.Fatalf("cached scan returned %d entries, first scan %d", m, n)
	}
	it.Close()
	if rd := f.takeReads(); len(rd) != 0 || stats.BlockReads.Load() != blocks {
		t.Fatalf("a scan of cached blocks read the file: %v", rd)
	}
}

// TestDirectBlockReadAllocs checks that a single-block read of a direct
// file allocates no more than the same read of a buffered file.
func TestDirectBlockReadAllocs(t *testing.T) {
	if invariants.Enabled {
		t.Skip("under -race sync.Pool drops items at random, so allocation counts vary")
	}
	useAlignedFiles(t)
	rng, _ := newRand(t)
	for _, comp := range []Compression{NoCompression, SnappyCompression} {
		data, entries := readaheadTable(t, rng, comp)
		allocs := func(align int) float64 {
			var f vfs.File = &bytesFile{data}
			if align > 1 {
				f = &alignedFile{bytesFile: bytesFile{data}, align: align, noRecord: true}
			}
			r, err := NewReader(f, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			i := 0
			return testing.AllocsPerRun(200, func() {
				k := entries[i%len(entries)].key.UserKey
				if _, _, _, ok, err := r.Get(k, base.SeqNumMax, false); !ok || err != nil {
					t.Fatalf("Get(%q) = %v, %v", k, ok, err)
				}
				i += 7
			})
		}
		buffered, direct := allocs(1), allocs(512)
		if direct > buffered {
			t.Fatalf("%s: an uncached Get allocates %v times on a direct file, %v on a buffered one", comp, direct, buffered)
		}
	}
}

// TestIterFromOtherFile checks IterOptions.File: an iterator given another
// handle of the table (here a direct-IO one) reads every data block from it,
// aligned, and returns the same entries; the Reader's own handle serves
// only what the Reader read at open.
func TestIterFromOtherFile(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	for trial := 0; trial < 4; trial++ {
		data, entries := readaheadTable(t, rng, []Compression{NoCompression, SnappyCompression}[trial%2])
		own := &alignedFile{bytesFile: bytesFile{data}, align: 1}
		r, err := NewReader(own, ReaderOptions{FileName: "t.sst"})
		if err != nil {
			t.Fatal(err)
		}
		own.takeReads()
		other := &alignedFile{bytesFile: bytesFile{data}, align: 4096}
		it := r.NewIter(IterOptions{File: other, ReadaheadSize: []int64{-1, 64 << 10}[trial%2]})
		got := readAll(t, it)
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(entries) {
			t.Fatalf("trial %d: %d entries, want %d", trial, len(got), len(entries))
		}
		for i := range got {
			if !equalKV(got[i], entries[i]) {
				t.Fatalf("trial %d: entry %d is %s, want %s", trial, i, got[i].key, entries[i].key)
			}
		}
		if reads := own.takeReads(); len(reads) != 0 {
			t.Fatalf("trial %d: the Reader's own handle was read %d times by an iterator given another", trial, len(reads))
		}
		if reads := other.takeReads(); len(reads) == 0 {
			t.Fatalf("trial %d: the iterator's handle was never read", trial)
		}
		r.Close()
	}
}

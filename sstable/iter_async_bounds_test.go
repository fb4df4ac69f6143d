package sstable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
)

// TestAsyncIterUpperBoundLimitsReads scans random bounded ranges with
// IterOptions.Async (two-phase seek, double-buffered prefetch), buffered
// and direct, and checks the entries and that no read, prefetches
// included, passes the end of the last block the upper bound needs
// (rounded up to the alignment).
func TestAsyncIterUpperBoundLimitsReads(t *testing.T) {
	useAlignedFiles(t)
	rng, _ := newRand(t)
	async := portableReader(t)
	for trial := 0; trial < 12; trial++ {
		comp := []Compression{NoCompression, SnappyCompression}[trial%2]
		data, entries := readaheadTable(t, rng, comp)
		align := []int{1, 512, 4096}[rng.IntN(3)]
		f := &alignedFile{bytesFile: bytesFile{data}, align: align}
		ro := ReaderOptions{AsyncReader: async, FileName: "t.sst",
			MaxAutoReadaheadSize: []int64{0, 8 << 10, 64 << 10, 1 << 20}[rng.IntN(4)]}
		if rng.IntN(3) == 0 {
			ro.Cache = cache.New(int64(rng.IntN(len(data))))
		}
		r, err := NewReader(f, ro)
		if err != nil {
			t.Fatal(err)
		}
		io := IterOptions{Async: true, FillCache: rng.IntN(2) == 0,
			ReadaheadSize: []int64{0, 0, 4 << 10, 300 << 10}[rng.IntN(4)]}
		desc := fmt.Sprintf("trial %d (%s, align %d, maxAuto %d, size %d, cache %v)",
			trial, comp, align, ro.MaxAutoReadaheadSize, io.ReadaheadSize, ro.Cache != nil)
		f.takeReads()
		for q := 0; q < 10; q++ {
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
			var ok bool
			if rng.IntN(2) == 0 {
				it.(base.SeekPreparer).PrepareFirst()
				ok = it.First()
			} else {
				it.(base.SeekPreparer).PrepareSeekGE(o.Lower)
				ok = it.SeekGE(o.Lower)
			}
			n := 0
			for ; ok; ok = it.Next() {
				if n >= len(want) || !equalKV(kv{it.Key(), it.Value()}, want[n]) {
					t.Fatalf("%s: range [%q, %q) entry %d is %s", desc, o.Lower, o.Upper, n, it.Key())
				}
				n++
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
		r.Close()
	}
}

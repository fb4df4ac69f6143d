package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
)

func TestBlockRoundTrip(t *testing.T) {
	rng, seed := newRand(t)
	entries := randomEntries(rng, 200)
	for _, interval := range []int{1, 2, 16} {
		bw := blockWriter{restartInterval: interval}
		for _, e := range entries {
			bw.add(e.key.AppendEncoded(nil), e.value)
		}
		block := slices.Clone(bw.finish())
		var it blockIter
		if !it.init(block, true) {
			t.Fatalf("interval %d: init failed", interval)
		}
		i := 0
		for ok := it.first(); ok; ok = it.next() {
			if !equalKV(kv{it.ikey, it.val}, entries[i]) {
				t.Fatalf("seed %d interval %d: entry %d = %s, want %s", seed, interval, i, it.ikey, entries[i].key)
			}
			i++
		}
		if i != len(entries) || it.corrupt {
			t.Fatalf("interval %d: forward saw %d of %d entries (corrupt %v)", interval, i, len(entries), it.corrupt)
		}
		i = len(entries) - 1
		for ok := it.last(); ok; ok = it.prev() {
			if !equalKV(kv{it.ikey, it.val}, entries[i]) {
				t.Fatalf("seed %d interval %d: backward entry %d = %s, want %s", seed, interval, i, it.ikey, entries[i].key)
			}
			i--
		}
		if i != -1 || it.corrupt {
			t.Fatalf("interval %d: backward stopped at %d", interval, i)
		}
		for j, e := range entries {
			if !it.seekGE(e.key, bytes.Compare) || !equalKV(kv{it.ikey, it.val}, entries[j]) {
				t.Fatalf("seed %d interval %d: seekGE(%s) landed on %s", seed, interval, e.key, it.ikey)
			}
			// A key just after e (same user key, next lower trailer)
			// lands on entries[j+1].
			if e.key.Trailer == 0 {
				continue // no internal key sorts between e and the next user key
			}
			k := base.InternalKey{UserKey: e.key.UserKey, Trailer: e.key.Trailer - 1}
			ok := it.seekGE(k, bytes.Compare)
			if j+1 < len(entries) {
				if !ok || !equalKV(kv{it.ikey, it.val}, entries[j+1]) {
					t.Fatalf("seed %d interval %d: seekGE(%s) = %v %s, want %s", seed, interval, k, ok, it.ikey, entries[j+1].key)
				}
			} else if ok {
				t.Fatalf("interval %d: seekGE past the end found %s", interval, it.ikey)
			}
		}
	}
}

var allCompressions = []Compression{NoCompression, SnappyCompression, ZstdCompression}

func TestTableRoundTrip(t *testing.T) {
	rng, seed := newRand(t)
	dir := testdir.New(t)
	c := cache.New(8 << 20)
	for _, comp := range allCompressions {
		for _, sum := range []ChecksumType{ChecksumCRC32C, ChecksumXXHash64} {
			entries := randomEntries(rng, 300+rng.IntN(300))
			path := filepath.Join(dir, fmt.Sprintf("%s-%s.sst", comp, sum))
			o := WriterOptions{BlockSize: 512 + rng.IntN(2048), BlockRestartInterval: 1 + rng.IntN(16), Compression: comp, Checksum: sum}
			meta := writeTable(t, path, o, entries, nil)
			r := openTable(t, path, c)
			ctx := fmt.Sprintf("seed %d %s/%s", seed, comp, sum)

			p := r.Properties()
			var dels, rawKey, rawVal uint64
			minSeq, maxSeq := base.SeqNumMax, base.SeqNum(0)
			for _, e := range entries {
				if e.key.Kind().IsTombstone() {
					dels++
				}
				rawKey += uint64(e.key.Size())
				rawVal += uint64(len(e.value))
				minSeq, maxSeq = min(minSeq, e.key.SeqNum()), max(maxSeq, e.key.SeqNum())
			}
			if p.NumEntries != uint64(len(entries)) || p.NumDeletions != dels || p.RawKeySize != rawKey ||
				p.RawValueSize != rawVal || p.SmallestSeq != minSeq || p.LargestSeq != maxSeq ||
				p.NumDataBlocks != uint64(len(r.ix.items)) || p.NumDataBlocks < 2 ||
				p.CompressionName != comp.String() || p.ComparerName != base.DefaultComparer.Name || p.FilterSize == 0 {
				t.Fatalf("%s: properties %+v", ctx, *p)
			}
			if meta.Size == 0 || meta.SmallestSeq != minSeq || meta.LargestSeq != maxSeq ||
				base.InternalCompare(bytes.Compare, meta.Smallest, entries[0].key) != 0 ||
				base.InternalCompare(bytes.Compare, meta.Largest, entries[len(entries)-1].key) != 0 {
				t.Fatalf("%s: metadata %+v", ctx, meta)
			}
			if comp != NoCompression && p.DataSize >= p.RawKeySize+p.RawValueSize {
				t.Fatalf("%s: data size %d not compressed (raw %d)", ctx, p.DataSize, p.RawKeySize+p.RawValueSize)
			}

			// Read twice: once from the file, once from the cache.
			for pass := 0; pass < 2; pass++ {
				it := r.NewIter(IterOptions{FillCache: true})
				got := readAll(t, it)
				if len(got) != len(entries) {
					t.Fatalf("%s: iterated %d entries, want %d", ctx, len(got), len(entries))
				}
				for i := range got {
					if !equalKV(got[i], entries[i]) {
						t.Fatalf("%s: entry %d = %s, want %s", ctx, i, got[i].key, entries[i].key)
					}
				}
				i := len(entries) - 1
				for ok := it.Last(); ok; ok = it.Prev() {
					if !equalKV(kv{it.Key(), it.Value()}, entries[i]) {
						t.Fatalf("%s: backward entry %d = %s, want %s", ctx, i, it.Key(), entries[i].key)
					}
					i--
				}
				if i != -1 {
					t.Fatalf("%s: backward iteration stopped at %d", ctx, i)
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
			}

			// Get at random snapshots, for present and absent keys.
			for n := 0; n < 1000; n++ {
				var key []byte
				if n%4 == 3 {
					key = []byte(fmt.Sprintf("absent%d", n))
				} else {
					key = entries[rng.IntN(len(entries))].key.UserKey
				}
				snap := base.SeqNum(rng.IntN(1100))
				want, wantOK := modelGet(entries, key, snap)
				v, kind, seq, ok, err := r.Get(key, snap, n%2 == 0)
				if err != nil {
					t.Fatal(err)
				}
				if ok != wantOK || (ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value))) {
					t.Fatalf("%s: Get(%q, %d) = %v %s#%d, want %v %s", ctx, key, snap, ok, kind, seq, wantOK, want.key)
				}
			}
			if r.MayContain([]byte("absent-key")) && r.MayContain([]byte("absent-key2")) && r.MayContain([]byte("absent-key3")) {
				t.Fatalf("%s: bloom filter answers yes to three absent keys", ctx)
			}
			// ApproximateOffset grows with the key.
			var last uint64
			for _, e := range entries {
				off := r.ApproximateOffset(e.key.UserKey)
				if off < last {
					t.Fatalf("%s: ApproximateOffset(%q) = %d < %d", ctx, e.key.UserKey, off, last)
				}
				last = off
			}
			if end := r.ApproximateOffset([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")); end != p.DataSize {
				t.Fatalf("%s: ApproximateOffset past the end = %d, want %d", ctx, end, p.DataSize)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m := c.Metrics(); m.Hits == 0 || m.Count == 0 {
		t.Fatalf("cache unused: %+v", m)
	}
}

// TestIterModel runs random positioning ops with random bounds against a
// sorted-slice model.
func TestIterModel(t *testing.T) {
	rng, seed := newRand(t)
	dir := testdir.New(t)
	entries := randomEntries(rng, 400)
	path := filepath.Join(dir, "iter.sst")
	writeTable(t, path, WriterOptions{BlockSize: 256, BlockRestartInterval: 4}, entries, nil)
	for _, c := range []*cache.Cache{nil, cache.New(1 << 20)} {
		r := openTable(t, path, c)
		randKey := func() []byte {
			if rng.IntN(2) == 0 {
				return entries[rng.IntN(len(entries))].key.UserKey
			}
			b := make([]byte, 1+rng.IntN(5))
			for i := range b {
				b[i] = "abcdz\xff"[rng.IntN(6)]
			}
			return b
		}
		for round := 0; round < 200; round++ {
			var lower, upper []byte
			if rng.IntN(3) > 0 {
				lower = randKey()
			}
			if rng.IntN(3) > 0 {
				upper = randKey()
			}
			var model []kv
			for _, e := range entries {
				if (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) && (upper == nil || bytes.Compare(e.key.UserKey, upper) < 0) {
					model = append(model, e)
				}
			}
			n := len(model)
			pos := -1
			it := r.NewIter(IterOptions{Lower: lower, Upper: upper, FillCache: true})
			var trace []string
			for op := 0; op < 60; op++ {
				var ok bool
				var desc string
				o := rng.IntN(6)
				if op == 0 {
					o = rng.IntN(4) // a fresh iterator is unpositioned
				}
				switch o {
				case 0:
					k := randKey()
					desc = fmt.Sprintf("SeekGE(%q)", k)
					ok = it.SeekGE(k)
					pos = firstTrue(n, func(i int) bool { return bytes.Compare(model[i].key.UserKey, k) >= 0 })
				case 1:
					k := randKey()
					desc = fmt.Sprintf("SeekLT(%q)", k)
					ok = it.SeekLT(k)
					pos = firstTrue(n, func(i int) bool { return bytes.Compare(model[i].key.UserKey, k) >= 0 }) - 1
				case 2:
					desc, ok, pos = "First", it.First(), 0
				case 3:
					desc, ok, pos = "Last", it.Last(), n-1
				case 4:
					desc, ok = "Next", it.Next()
					switch {
					case pos == -1:
						pos = 0
					case pos < n:
						pos++
					}
				case 5:
					desc, ok = "Prev", it.Prev()
					switch {
					case pos == n:
						pos = n - 1
					case pos >= 0:
						pos--
					}
				}
				if pos < -1 {
					pos = -1
				}
				trace = append(trace, desc)
				wantOK := pos >= 0 && pos < n
				if ok != wantOK || (ok && !equalKV(kv{it.Key(), it.Value()}, model[pos])) {
					t.Fatalf("seed %d bounds [%q, %q): after %s\nwant ok=%v at %d/%d, got ok=%v key %s",
						seed, lower, upper, strings.Join(trace, " "), wantOK, pos, n, ok, it.Key())
				}
				if it.Error() != nil {
					t.Fatal(it.Error())
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
	}
}

// firstTrue returns the smallest i in [0, n) with f(i), or n.
func firstTrue(n int, f func(int) bool) int {
	for i := 0; i < n; i++ {
		if f(i) {
			return i
		}
	}
	return n
}

func TestRangeTombstonesRoundTrip(t *testing.T) {
	dir := testdir.New(t)
	entries := []kv{
		{base.MakeInternalKey([]byte("b"), 5, base.KindSet), []byte("1")},
		{base.MakeInternalKey([]byte("d"), 6, base.KindDelete), nil},
	}
	tombs := []tombstone{{"a", "c", 9}, {"a", "c", 3}, {"c", "e", 9}, {"g", "k", 2}}
	path := filepath.Join(dir, "rd.sst")
	meta := writeTable(t, path, WriterOptions{}, entries, tombs)
	if want := base.MakeInternalKey([]byte("a"), 9, base.KindRangeDelete); meta.Smallest.String() != want.String() {
		t.Fatalf("Smallest = %s, want %s", meta.Smallest, want)
	}
	if !meta.Largest.IsExclusiveSentinel() || string(meta.Largest.UserKey) != "k" {
		t.Fatalf("Largest = %s, want sentinel at k", meta.Largest)
	}
	if meta.SmallestSeq != 2 || meta.LargestSeq != 9 {
		t.Fatalf("seq range %d..%d", meta.SmallestSeq, meta.LargestSeq)
	}
	r := openTable(t, path, nil)
	defer r.Close()
	got := fmt.Sprint(r.RangeTombstones())
	if want := "[{[97] [99] [9 3]} {[99] [101] [9]} {[103] [107] [2]}]"; got != want {
		t.Fatalf("RangeTombstones = %s, want %s", got, want)
	}
	p := r.Properties()
	if p.NumEntries != 6 || p.NumDeletions != 5 || p.NumRangeDeletions != 4 {
		t.Fatalf("properties %+v", *p)
	}
	// Tombstones are not point entries.
	if got := readAll(t, r.NewIter(IterOptions{})); len(got) != 2 {
		t.Fatalf("iterated %d point entries, want 2", len(got))
	}

	// A point key after the last tombstone end stays Largest.
	path2 := filepath.Join(dir, "rd2.sst")
	meta = writeTable(t, path2, WriterOptions{}, []kv{{base.MakeInternalKey([]byte("k"), 1, base.KindSet), nil}}, []tombstone{{"a", "k", 4}})
	if meta.Largest.IsExclusiveSentinel() || string(meta.Largest.UserKey) != "k" || string(meta.Smallest.UserKey) != "a" {
		t.Fatalf("bounds %s .. %s", meta.Smallest, meta.Largest)
	}
}

func TestWriterRejects(t *testing.T) {
	dir := testdir.New(t)
	newW := func() *Writer {
		f, err := vfsCreate(filepath.Join(dir, "x.sst"))
		if err != nil {
			t.Fatal(err)
		}
		return NewWriter(f, "x.sst", WriterOptions{})
	}
	w := newW()
	if err := w.Add(base.MakeInternalKey([]byte("b"), 5, base.KindSet), nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []base.InternalKey{
		base.MakeInternalKey([]byte("b"), 5, base.KindSet),         // duplicate
		base.MakeInternalKey([]byte("b"), 6, base.KindSet),         // newer after older
		base.MakeInternalKey([]byte("a"), 1, base.KindSet),         // smaller user key
		base.MakeInternalKey([]byte("c"), 1, base.KindRangeDelete), // wrong API
		base.MakeInternalKey([]byte("c"), 1, base.Kind(0x55)),      // not a kind
	} {
		if err := w.Add(k, nil); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("Add(%s) = %v, want invalid argument", k, err)
		}
	}
	if err := w.AddRangeTombstone([]byte("c"), []byte("e"), 3); err != nil {
		t.Fatal(err)
	}
	for _, tb := range []tombstone{
		{"c", "e", 3}, // duplicate
		{"c", "f", 2}, // not fragmented
		{"d", "f", 1}, // overlaps
		{"b", "c", 1}, // out of order
		{"x", "x", 1}, // empty
	} {
		if err := w.AddRangeTombstone([]byte(tb.start), []byte(tb.end), tb.seq); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("AddRangeTombstone(%v) = %v, want invalid argument", tb, err)
		}
	}
	w.Abort()
	if _, err := w.Close(); err == nil {
		t.Fatal("Close after Abort succeeded")
	}
}

type countingCollector struct{ sets, dels int }

func (c *countingCollector) Name() string { return "counting" }
func (c *countingCollector) Add(k base.InternalKey, v []byte) {
	if k.Kind() == base.KindSet {
		c.sets++
	} else {
		c.dels++
	}
}
func (c *countingCollector) Finish(p map[string]string) {
	p["test.sets"] = fmt.Sprint(c.sets)
	p["test.dels"] = fmt.Sprint(c.dels)
}

func TestPropertiesRoundTrip(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "p.sst")
	entries := []kv{
		{base.MakeInternalKey([]byte("a"), 7, base.KindSet), []byte("xyz")},
		{base.MakeInternalKey([]byte("b"), 3, base.KindDelete), nil},
		{base.MakeInternalKey([]byte("c"), 4, base.KindSingleDelete), nil},
	}
	meta := writeTable(t, path, WriterOptions{Compression: ZstdCompression, Collectors: []PropertyCollector{&countingCollector{}}},
		entries, []tombstone{{"d", "f", 9}})
	r := openTable(t, path, nil)
	defer r.Close()
	p := *r.Properties()
	want := meta.Props
	if p.CreationTime == 0 || fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("read properties\n%+v\nwritten\n%+v", p, want)
	}
	if p.User["test.sets"] != "1" || p.User["test.dels"] != "3" || len(p.User) != 2 {
		t.Fatalf("user properties %v", p.User)
	}
	if p.NumEntries != 4 || p.NumDeletions != 3 || p.NumRangeDeletions != 1 || p.RawValueSize != 4 ||
		p.RawKeySize != 4*9 || p.SmallestSeq != 3 || p.LargestSeq != 9 || p.CompressionName != "zstd" || p.NumDataBlocks != 1 {
		t.Fatalf("properties %+v", p)
	}
}

func TestCompressionNames(t *testing.T) {
	for _, c := range allCompressions {
		got, err := ParseCompression(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseCompression(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseCompression("lz4"); !errors.Is(err, base.ErrInvalidArgument) {
		t.Fatalf("ParseCompression(lz4) = %v", err)
	}
}

func TestBloomFalsePositiveRate(t *testing.T) {
	const n = 100000
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = bloomHash([]byte(fmt.Sprintf("present-%d", i)))
	}
	f := buildBloom(hashes, 10)
	for i, h := range hashes {
		if !bloomMayContain(f, h) {
			t.Fatalf("false negative for key %d", i)
		}
	}
	fp := 0
	for i := 0; i < n; i++ {
		if bloomMayContain(f, bloomHash([]byte(fmt.Sprintf("absent-%d", i)))) {
			fp++
		}
	}
	k := float64(bloomK(10))
	theory := math.Pow(1-math.Exp(-k/10), k)
	rate := float64(fp) / n
	t.Logf("false-positive rate %.4f%%, theory %.4f%%", 100*rate, 100*theory)
	if rate > 1.5*theory {
		t.Fatalf("false-positive rate %.4f > 1.5 x theory %.4f", rate, theory)
	}
}

func TestComparerMismatch(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "c.sst")
	writeTable(t, path, WriterOptions{}, []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil}}, nil)
	f, err := vfsOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	other := *base.DefaultComparer
	other.Name = "other"
	if _, err := NewReader(f, ReaderOptions{Comparer: &other, FileName: path}); !errors.Is(err, base.ErrInvalidArgument) {
		t.Fatalf("NewReader with another comparer = %v", err)
	}
}

func TestEmptyTable(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "e.sst")
	meta := writeTable(t, path, WriterOptions{}, nil, nil)
	if meta.Size == 0 || meta.Props.NumEntries != 0 {
		t.Fatalf("meta %+v", meta)
	}
	r := openTable(t, path, nil)
	defer r.Close()
	it := r.NewIter(IterOptions{})
	if it.First() || it.Last() || it.SeekGE([]byte("a")) || it.SeekLT([]byte("a")) || it.Error() != nil {
		t.Fatal("empty table iterator found an entry")
	}
	it.Close()
	if _, _, _, ok, err := r.Get([]byte("a"), base.SeqNumMax, true); ok || err != nil {
		t.Fatalf("Get on empty table = %v, %v", ok, err)
	}
}

func TestNoFilter(t *testing.T) {
	dir := testdir.New(t)
	path := filepath.Join(dir, "nf.sst")
	writeTable(t, path, WriterOptions{BloomBitsPerKey: NoFilter}, []kv{{base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("v")}}, nil)
	r := openTable(t, path, nil)
	defer r.Close()
	if r.filter != nil || r.Properties().FilterSize != 0 || !r.MayContain([]byte("zzz")) {
		t.Fatal("table written with NoFilter has a filter")
	}
	if v, _, _, ok, err := r.Get([]byte("a"), 10, false); !ok || err != nil || string(v) != "v" {
		t.Fatalf("Get = %q %v %v", v, ok, err)
	}
}

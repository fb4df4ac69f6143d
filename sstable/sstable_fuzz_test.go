package sstable

// Fuzz targets for every decoder of the table format: blocks (data, index,
// meta), the footer, the properties block, the bloom filter, the range-del
// block, and whole tables. Each compares what the reader returns with a
// small reference decoder written here from the format description in
// doc.go, so a target fails on wrong answers, not only on panics. Seeds are
// in testdata/fuzz/<Name>; SHALE_WRITE_FUZZ_SEEDS=1 go test -run
// TestWriteFuzzSeeds regenerates them. See docs/fuzzing.md.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/fuzzseed"
	"github.com/shaledb/shale/vfs"
)

// refEntry is one entry decoded by refDecodeBlock.
type refEntry struct {
	off      int
	shared   int
	key, val []byte
}

// refBlock is the reference decoding of a block.
type refBlock struct {
	entries  []refEntry
	restarts []int
	// complete is set when every byte before the restart array decoded
	// into entries (internal keys when asked).
	complete bool
	// wellFormed adds: restart 0 is offset 0, restarts strictly increase,
	// and each lands on an entry with shared = 0.
	wellFormed bool
}

// refDecodeBlock decodes a block the simple way: entries one after another
// from offset 0, each key rebuilt from its predecessor. It returns nil when
// the restart array itself is malformed (blockValid's rule).
func refDecodeBlock(data []byte, internalKeys bool) *refBlock {
	if len(data) < 4 {
		return nil
	}
	n := uint64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if n < 1 || n > uint64(len(data)-4)/4 {
		return nil
	}
	end := len(data) - 4 - 4*int(n)
	rb := &refBlock{}
	for r := 0; r < int(n); r++ {
		rb.restarts = append(rb.restarts, int(binary.LittleEndian.Uint32(data[end+4*r:])))
	}
	var prev []byte
	p := 0
	for p < end {
		var h [3]uint64
		q := p
		ok := true
		for j := range h {
			v, m := binary.Uvarint(data[q:end])
			if m <= 0 {
				ok = false
				break
			}
			h[j], q = v, q+m
		}
		if !ok || h[0] > uint64(len(prev)) || h[1] > uint64(end-q) || h[2] > uint64(end-q)-h[1] {
			return rb
		}
		key := append(append([]byte(nil), prev[:h[0]]...), data[q:q+int(h[1])]...)
		q += int(h[1])
		if internalKeys && len(key) < 8 {
			return rb
		}
		rb.entries = append(rb.entries, refEntry{off: p, shared: int(h[0]), key: key, val: data[q : q+int(h[2])]})
		prev = key
		p = q + int(h[2])
	}
	rb.complete = true
	rb.wellFormed = rb.restarts[0] == 0
	j := 0
	for r, off := range rb.restarts {
		if r > 0 && off <= rb.restarts[r-1] {
			rb.wellFormed = false
		}
		for j < len(rb.entries) && rb.entries[j].off < off {
			j++
		}
		if j == len(rb.entries) || rb.entries[j].off != off || rb.entries[j].shared != 0 {
			rb.wellFormed = false
		}
	}
	return rb
}

// sortedInternal reports whether the entries' keys strictly increase in
// internal key order.
func sortedInternal(es []refEntry) bool {
	for j := 1; j < len(es); j++ {
		a, _ := base.DecodeInternalKey(es[j-1].key)
		b, _ := base.DecodeInternalKey(es[j].key)
		if base.InternalCompare(bytes.Compare, a, b) >= 0 {
			return false
		}
	}
	return true
}

// seekTargets derives search keys from the block's own keys: each key, the
// search key of its user key, and keys just before and after it.
func seekTargets(keys [][]byte, extra []byte) []base.InternalKey {
	out := []base.InternalKey{base.MakeSearchKey(extra), base.MakeSearchKey(nil)}
	for j, k := range keys {
		if j >= 32 {
			break
		}
		ik, ok := base.DecodeInternalKey(k)
		if !ok {
			continue
		}
		uk := ik.UserKey
		out = append(out, ik, base.MakeSearchKey(uk),
			base.MakeInternalKey(append(slices.Clip(uk), 0), 0, base.KindSet),
			base.MakeInternalKey(uk, 0, 0))
		if len(uk) > 0 {
			out = append(out, base.MakeSearchKey(uk[:len(uk)-1]))
		}
	}
	return out
}

// FuzzBlock decodes arbitrary bytes as a data block (internal keys) and as
// a meta block (plain keys). Forward iteration must match the reference
// decoding entry for entry and report corruption exactly where it stops
// early; on a well-formed block, backward iteration is the reverse, and on
// a sorted one every seek (plain, and through the cached search structure)
// lands on the reference answer.
func FuzzBlock(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, extra []byte) {
		for _, internal := range []bool{true, false} {
			checkBlock(t, data, extra, internal)
		}
	})
}

func checkBlock(t *testing.T, data, extra []byte, internal bool) {
	ref := refDecodeBlock(data, internal)
	var it blockIter
	if ok := it.init(data, internal); ok != (ref != nil) {
		t.Fatalf("init = %v, reference restart array valid = %v", ok, ref != nil)
	}
	if ref == nil {
		if it.first() || it.last() || it.seekGE(base.MakeSearchKey(extra), bytes.Compare) {
			t.Fatal("an invalid block yields entries")
		}
		return
	}
	if ref.restarts[0] == 0 {
		j := 0
		for ok := it.first(); ok; ok = it.next() {
			if j >= len(ref.entries) || it.offset != ref.entries[j].off ||
				!bytes.Equal(it.key, ref.entries[j].key) || !bytes.Equal(it.val, ref.entries[j].val) {
				t.Fatalf("internal=%v: entry %d at %d is %q=%q, reference %v", internal, j, it.offset, it.key, it.val, ref.entries[min(j, len(ref.entries)-1):])
			}
			j++
		}
		if j != len(ref.entries) || it.corrupt == ref.complete {
			t.Fatalf("internal=%v: %d entries (corrupt %v), reference %d (complete %v)",
				internal, j, it.corrupt, len(ref.entries), ref.complete)
		}
	} else {
		// Iteration starts at restart 0 wherever it points: only safety.
		for ok, n := it.first(), 0; ok && n <= len(data); ok, n = it.next(), n+1 {
		}
		for ok, n := it.last(), 0; ok && n <= len(data); ok, n = it.prev(), n+1 {
		}
	}
	if !ref.wellFormed {
		it.seekGE(base.MakeSearchKey(extra), bytes.Compare)
		if internal {
			aux := buildBlockSearch(data, true)
			var ci blockIter
			ci.initCached(data, aux, true)
			ci.seekGE(base.MakeSearchKey(extra), bytes.Compare)
		}
		return
	}
	j := len(ref.entries) - 1
	for ok := it.last(); ok; ok = it.prev() {
		if j < 0 || it.offset != ref.entries[j].off || !bytes.Equal(it.key, ref.entries[j].key) {
			t.Fatalf("internal=%v: backward entry %d is %q at %d", internal, j, it.key, it.offset)
		}
		j--
	}
	if j != -1 || it.corrupt {
		t.Fatalf("internal=%v: backward stopped at entry %d (corrupt %v)", internal, j, it.corrupt)
	}
	if !internal || !sortedInternal(ref.entries) {
		return
	}
	keys := make([][]byte, len(ref.entries))
	for j, e := range ref.entries {
		keys[j] = e.key
	}
	aux := buildBlockSearch(data, true)
	for _, target := range seekTargets(keys, extra) {
		want := len(ref.entries)
		for j, e := range ref.entries {
			ik, _ := base.DecodeInternalKey(e.key)
			if base.InternalCompare(bytes.Compare, ik, target) >= 0 {
				want = j
				break
			}
		}
		var plain, cached blockIter
		plain.init(data, true)
		cached.initCached(data, aux, true)
		for _, bi := range []*blockIter{&plain, &cached} {
			ok := bi.seekGE(target, bytes.Compare)
			if bi.corrupt || ok != (want < len(ref.entries)) || (ok && bi.offset != ref.entries[want].off) {
				t.Fatalf("seekGE(%s) (search structure %v): ok %v at %d, want entry %d of %d",
					target, bi.srch != nil, ok, bi.offset, want, len(ref.entries))
			}
			if ok && !bytes.Equal(bi.key, ref.entries[want].key) || ok && !bytes.Equal(bi.val, ref.entries[want].val) {
				t.Fatalf("seekGE(%s) (search structure %v): entry %q=%q, want %q", target, bi.srch != nil, bi.key, bi.val, ref.entries[want].key)
			}
		}
	}
}

// FuzzFooter decodes arbitrary footers: the result is an error matching
// base.ErrCorruption, or a footer that re-encodes to bytes decoding to the
// same footer (and to the input itself when its handles are minimal).
func FuzzFooter(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		b := make([]byte, footerLen)
		copy(b, data)
		ft, err := decodeFooter("f.sst", 7, b)
		if err != nil {
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || ce.File != "f.sst" || ce.Offset != 7 {
				t.Fatalf("error %v is not a corruption error naming the footer", err)
			}
			return
		}
		enc := ft.encode()
		ft2, err := decodeFooter("f.sst", 7, enc)
		if err != nil || ft2 != ft {
			t.Fatalf("re-encoded footer decodes to %+v, %v; want %+v", ft2, err, ft)
		}
		h := ft.index.Append(ft.metaindex.Append(nil))
		if bytes.Equal(h, b[1:1+len(h)]) && !bytes.Equal(enc, b) {
			t.Fatalf("minimal footer %x re-encodes to %x", b, enc)
		}
	})
}

// FuzzProperties decodes arbitrary properties blocks: an error, or
// properties that survive encode and decode unchanged.
func FuzzProperties(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, msg := decodeProperties(data)
		if msg != "" {
			if p != nil {
				t.Fatal("properties returned with an error")
			}
			return
		}
		p2, msg := decodeProperties(p.encode(1 + len(data)%16))
		if msg != "" {
			t.Fatalf("re-encoded properties: %s", msg)
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("round trip changed properties:\n%+v\n%+v", p, p2)
		}
	})
}

// FuzzBloom builds a filter from keys split out of the input: it must say
// "maybe" for each of them. The raw input is also probed as a filter, which
// must not panic.
func FuzzBloom(f *testing.F) {
	f.Fuzz(func(t *testing.T, keyData []byte, bitsPerKey uint8) {
		keys := bytes.Split(keyData, []byte{0})
		hashes := make([]uint64, len(keys))
		for j, k := range keys {
			hashes[j] = bloomHash(k)
		}
		bits := 1 + int(bitsPerKey)%40
		filter := buildBloom(hashes, bits)
		if k := int(filter[len(filter)-1]); k < 1 || k > 30 {
			t.Fatalf("filter with k = %d", k)
		}
		for _, k := range keys {
			if !bloomMayContain(filter, bloomHash(k)) {
				t.Fatalf("filter of %d keys at %d bits/key rules out its key %q", len(keys), bits, k)
			}
		}
		for _, k := range keys {
			bloomMayContain(keyData, bloomHash(k))
		}
	})
}

// FuzzRangeDelBlock decodes arbitrary range-del blocks: an error matching
// base.ErrCorruption, or fragmented spans (sorted, non-overlapping, start <
// end, seqnums strictly descending) that re-encode to the same spans.
func FuzzRangeDelBlock(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r := namedReader("f.sst", bytes.Compare)
		if err := r.decodeRangeDels(block.Handle{Offset: 3}, data); err != nil {
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "f.sst") {
				t.Fatalf("error %v", err)
			}
			return
		}
		spans := r.rangeDels
		bw := blockWriter{restartInterval: 1}
		for j, s := range spans {
			if bytes.Compare(s.Start, s.End) >= 0 || len(s.Seqs) == 0 {
				t.Fatalf("span %d: %v", j, s)
			}
			if j > 0 && bytes.Compare(spans[j-1].End, s.Start) > 0 {
				t.Fatalf("spans %d and %d overlap: %v %v", j-1, j, spans[j-1], s)
			}
			for q, seq := range s.Seqs {
				if q > 0 && seq >= s.Seqs[q-1] {
					t.Fatalf("span %d: seqnums not descending: %v", j, s)
				}
				bw.add(base.MakeInternalKey(s.Start, seq, base.KindRangeDelete).AppendEncoded(nil), s.End)
			}
		}
		r2 := namedReader("f.sst", bytes.Compare)
		if err := r2.decodeRangeDels(block.Handle{}, bw.finish()); err != nil {
			t.Fatalf("re-encoded spans: %v", err)
		}
		if fmt.Sprint(r2.rangeDels) != fmt.Sprint(spans) {
			t.Fatalf("round trip: %v, want %v", r2.rangeDels, spans)
		}
	})
}

// FuzzIndexBlock decodes arbitrary index blocks against data blocks ending
// at metaStart: an error matching base.ErrCorruption, or entries whose
// handles tile [0, dataEnd) and whose separators strictly increase.
func FuzzIndexBlock(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, metaStart uint16) {
		r := namedReader("f.sst", bytes.Compare)
		r.metaStart = uint64(metaStart)
		ix, err := r.decodeIndex(block.Handle{Offset: 9}, data)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v", err)
			}
			return
		}
		r.ix = ix
		var end uint64
		for j, e := range r.ix.items {
			if e.handle.Offset != end {
				t.Fatalf("entry %d: handle %+v after data end %d", j, e.handle, end)
			}
			end += e.handle.Length + block.TrailerLen
			if end > r.metaStart {
				t.Fatalf("entry %d: block ends at %d past metaStart %d", j, end, r.metaStart)
			}
			if j > 0 && base.InternalCompare(bytes.Compare, r.ix.items[j-1].sep, e.sep) >= 0 {
				t.Fatalf("entries %d and %d out of order", j-1, j)
			}
		}
		if r.ix.dataEnd != end {
			t.Fatalf("dataEnd %d, want %d", r.ix.dataEnd, end)
		}
		if r.ix.words.words == nil {
			r.ix.buildWords() // namedReader is not bytewise
		}
		for _, e := range r.ix.items {
			for _, k := range []base.InternalKey{e.sep, base.MakeSearchKey(e.sep.UserKey)} {
				if a, b := r.ix.seekWords(k), r.ix.seekCompare(k, r.cmp); a != b {
					t.Fatalf("seekIndex(%s): words %d, compare %d", k, a, b)
				}
			}
		}
	})
}

// Modes of FuzzTable (bits of its mode argument).
const (
	// tableFuzzRepair recomputes the checksum of every block reachable
	// from the footer, so that mutations reach the block decoders.
	tableFuzzRepair = 1 << iota
	// tableFuzzCache reads through a block cache (seeks then go through
	// the cached search structure).
	tableFuzzCache
)

// repairChecksums rewrites, in place, the trailer checksum of every block
// that b's footer, metaindex and index point at and that lies inside b.
func repairChecksums(b []byte) {
	if len(b) < footerLen {
		return
	}
	ft, err := decodeFooter("", 0, b[len(b)-footerLen:])
	if err != nil {
		return
	}
	fix := func(h block.Handle) []byte {
		if h.Length > uint64(len(b)) || h.Offset > uint64(len(b))-h.Length ||
			uint64(len(b))-h.Offset-h.Length < block.TrailerLen {
			return nil
		}
		n := int(h.Offset + h.Length)
		binary.LittleEndian.PutUint32(b[n+1:], block.Checksum(ft.checksum, b[h.Offset:n+1]))
		if b[n] != block.TypeNone {
			return nil
		}
		return b[h.Offset:n]
	}
	handles := func(data []byte, internal bool) []block.Handle {
		var out []block.Handle
		var it blockIter
		if !it.init(data, internal) {
			return nil
		}
		for ok := it.first(); ok && len(out) < 1024; ok = it.next() {
			if h, n := block.DecodeHandle(it.val); n > 0 {
				out = append(out, h)
			}
		}
		return out
	}
	for _, h := range handles(fix(ft.metaindex), false) {
		fix(h)
	}
	if ib := fix(ft.index); ib != nil {
		for _, h := range handles(ib, true) {
			fix(h)
		}
	}
}

// refTable decodes the data blocks of an open table with refDecodeBlock.
// ok is false when a block does not read, is not well formed, or breaks
// the ordering the reader relies on (keys strictly increasing across the
// table, every key of block i in (sep[i-1], sep[i]]).
func refTable(r *Reader) (entries []kv, ok bool) {
	var all []refEntry
	items := r.ix.items
	if r.twoLevel {
		// The data blocks of every partition, in order.
		items = nil
		for p := range r.ix.items {
			part, err := r.readPartition(r.ix, p, r.bf.Source())
			if err != nil {
				return nil, false
			}
			items = append(items, part.items...)
		}
	}
	for i, ie := range items {
		b, err := r.bf.ReadBlock(ie.handle, r.metaStart, nil, r.bf.Source())
		if err != nil {
			return nil, false
		}
		rb := refDecodeBlock(b, true)
		if rb == nil || !rb.wellFormed {
			return nil, false
		}
		for _, e := range rb.entries {
			ik, _ := base.DecodeInternalKey(e.key)
			if base.InternalCompare(bytes.Compare, ik, ie.sep) > 0 ||
				i > 0 && base.InternalCompare(bytes.Compare, ik, items[i-1].sep) <= 0 {
				return nil, false
			}
			entries = append(entries, kv{ik, e.val})
		}
		all = append(all, rb.entries...)
	}
	return entries, sortedInternal(all)
}

// FuzzTable opens arbitrary bytes as a table, mostly mutations of real
// tables. Open and every read return results or errors matching
// base.ErrCorruption. When the data blocks decode well formed (always, for
// a table whose checksums were not repaired), the iterator must agree with
// the reference decoding forward, backward, within bounds and on seeks,
// and Get with it.
func FuzzTable(f *testing.F) {
	f.Fuzz(fuzzTableBody)
}

func fuzzTableBody(t *testing.T, data []byte, mode uint8) {
	{
		b := bytes.Clone(data)
		if mode&tableFuzzRepair != 0 {
			repairChecksums(b)
		}
		var c *cache.Cache
		if mode&tableFuzzCache != 0 {
			c = cache.New(1 << 20)
		}
		r, err := NewReader(&bytesFile{b}, ReaderOptions{FileName: "f.sst", Cache: c})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) && !errors.Is(err, base.ErrInvalidArgument) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		defer r.Close()
		ref, ok := refTable(r)
		if !ok {
			if mode&tableFuzzRepair == 0 {
				// Checksums hold: this is a table the writer wrote, or
				// a damaged one the reader should have refused.
				if _, err := fuzzScan(r, IterOptions{FillCache: c != nil}, false); err == nil {
					t.Fatal("a table whose blocks do not decode well formed iterates without error")
				}
			}
			fuzzScan(r, IterOptions{FillCache: c != nil}, false)
			fuzzScan(r, IterOptions{FillCache: c != nil}, true)
			it := r.NewIter(IterOptions{FillCache: c != nil})
			it.SeekGE(data[:min(len(data), 9)])
			it.SeekLT(data[:min(len(data), 5)])
			if err := it.Close(); err != nil && !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("seek: %v", err)
			}
			return
		}
		checkTable(t, r, ref, c != nil, mode&tableFuzzRepair == 0)
	}
}

// fuzzScan iterates r forward (or backward) and returns what it saw.
func fuzzScan(r *Reader, o IterOptions, backward bool) ([]kv, error) {
	it := r.NewIter(o)
	var out []kv
	first, step := it.First, it.Next
	if backward {
		first, step = it.Last, it.Prev
	}
	for ok := first(); ok; ok = step() {
		out = append(out, kv{it.Key().Clone(), bytes.Clone(it.Value())})
	}
	err := it.Close()
	if err != nil && !errors.Is(err, base.ErrCorruption) {
		return out, fmt.Errorf("unexpected error kind: %w", err)
	}
	return out, err
}

func checkTable(t *testing.T, r *Reader, ref []kv, fill, intact bool) {
	o := IterOptions{FillCache: fill}
	equal := func(what string, got, want []kv) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
		}
		for j := range got {
			if !equalKV(got[j], want[j]) {
				t.Fatalf("%s: entry %d is %s=%q, want %s=%q", what, j, got[j].key, got[j].value, want[j].key, want[j].value)
			}
		}
	}
	got, err := fuzzScan(r, o, false)
	if err != nil {
		t.Fatalf("forward: %v", err)
	}
	equal("forward", got, ref)
	got, err = fuzzScan(r, o, true)
	if err != nil {
		t.Fatalf("backward: %v", err)
	}
	rev := slices.Clone(ref)
	slices.Reverse(rev)
	equal("backward", got, rev)
	if intact {
		p := r.Properties()
		nDel := 0
		for _, s := range r.RangeTombstones() {
			nDel += len(s.Seqs)
		}
		if p.NumEntries != uint64(len(ref)+nDel) || p.NumDataBlocks != uint64(len(r.ix.items)) {
			t.Fatalf("properties: %d entries in %d blocks; table has %d+%d in %d",
				p.NumEntries, p.NumDataBlocks, len(ref), nDel, len(r.ix.items))
		}
	}
	// Seeks, twice through a cache: the second builds search structures.
	rounds := 1
	if fill {
		rounds = 2
	}
	for round := 0; round < rounds; round++ {
		it := r.NewIter(o)
		for j, e := range ref {
			if j >= 24 {
				break
			}
			uk := e.key.UserKey
			lo, _ := slices.BinarySearchFunc(ref, uk, func(x kv, k []byte) int { return bytes.Compare(x.key.UserKey, k) })
			if !it.SeekGE(uk) || !equalKV(kv{it.Key(), it.Value()}, ref[lo]) {
				t.Fatalf("SeekGE(%q) = %s, want %s (err %v)", uk, it.Key(), ref[lo].key, it.Error())
			}
			if ok := it.SeekLT(uk); ok != (lo > 0) || ok && !equalKV(kv{it.Key(), it.Value()}, ref[lo-1]) {
				t.Fatalf("SeekLT(%q) = %v %s, want entry %d (err %v)", uk, ok, it.Key(), lo-1, it.Error())
			}
			mayContain := r.MayContain(uk)
			if intact && !mayContain {
				t.Fatalf("the filter rules out %q, which the table holds", uk)
			}
			if !mayContain {
				continue
			}
			v, kind, seq, found, err := r.Get(uk, base.SeqNumMax, fill)
			if err != nil || !found || kind != ref[lo].key.Kind() || seq != ref[lo].key.SeqNum() || !bytes.Equal(v, ref[lo].value) {
				t.Fatalf("Get(%q) = %q %s #%d %v %v, want %s", uk, v, kind, seq, found, err, ref[lo].key)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatalf("seeks: %v", err)
		}
	}
	// Bounds from the table's own keys.
	if len(ref) > 0 {
		lower, upper := ref[len(ref)/3].key.UserKey, ref[2*len(ref)/3].key.UserKey
		var want []kv
		for _, e := range ref {
			if bytes.Compare(e.key.UserKey, lower) >= 0 && bytes.Compare(e.key.UserKey, upper) < 0 {
				want = append(want, e)
			}
		}
		bo := IterOptions{Lower: lower, Upper: upper, FillCache: fill}
		got, err := fuzzScan(r, bo, false)
		if err != nil {
			t.Fatalf("bounded forward: %v", err)
		}
		equal("bounded forward", got, want)
		got, err = fuzzScan(r, bo, true)
		if err != nil {
			t.Fatalf("bounded backward: %v", err)
		}
		slices.Reverse(want)
		equal("bounded backward", got, want)
	}
}

// tableSeeds returns real tables written by the Writer under several
// options, small enough for a seed corpus.
func tableSeeds(t testing.TB) [][]byte {
	type cfg struct {
		o       WriterOptions
		n       int
		tombs   []tombstone
		version int
	}
	cfgs := []cfg{
		{o: WriterOptions{BlockSize: 256, BlockRestartInterval: 4, Compression: NoCompression}, n: 24,
			tombs: []tombstone{{"k03", "k05", 50}, {"k05", "k07", 50}, {"k05", "k07", 40}, {"k07", "k09", 40}}},
		{o: WriterOptions{BlockSize: 128, Compression: SnappyCompression, Checksum: ChecksumXXHash64}, n: 16},
		{o: WriterOptions{BlockSize: 512, Compression: ZstdCompression, BloomBitsPerKey: NoFilter}, n: 20},
		{o: WriterOptions{Compression: NoCompression}, n: 1},
		{o: WriterOptions{Compression: NoCompression}, n: 0, tombs: []tombstone{{"a", "b", 3}}},
		// Partitioned index and filters: a partition every data block or
		// two.
		{o: WriterOptions{BlockSize: 128, Compression: NoCompression, IndexType: TwoLevelIndexSearch,
			PartitionFilters: true, MetadataBlockSize: 32}, n: 24, tombs: []tombstone{{"k03", "k05", 50}}},
		{o: WriterOptions{BlockSize: 256, Compression: SnappyCompression, IndexType: TwoLevelIndexSearch,
			MetadataBlockSize: 16}, n: 20},
	}
	fs := vfs.NewMem()
	var out [][]byte
	for ci, c := range cfgs {
		name := fmt.Sprintf("t%d.sst", ci)
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(f, name, c.o)
		for j := 0; j < c.n; j++ {
			k := base.MakeInternalKey([]byte(fmt.Sprintf("k%02d", j/2)), base.SeqNum(100-j%2), []base.Kind{base.KindSet, base.KindDelete, base.KindMerge}[j%3])
			if err := w.Add(k, bytes.Repeat([]byte{byte('a' + j%26)}, j%7)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tb := range c.tombs {
			if err := w.AddRangeTombstone([]byte(tb.start), []byte(tb.end), tb.seq); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		g, err := fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := g.Size()
		b := make([]byte, n)
		if _, err := g.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		g.Close()
		out = append(out, b)
	}
	return out
}

// blockSeeds returns blocks the writer builds: data blocks with and
// without prefix sharing, an index-like block, properties, metaindex.
func blockSeeds() [][]byte {
	var out [][]byte
	for _, ri := range []int{1, 3, 16} {
		bw := blockWriter{restartInterval: ri}
		for j := 0; j < 10; j++ {
			bw.add(base.MakeInternalKey([]byte(fmt.Sprintf("key%03d", j*7)), base.SeqNum(9-j%3), base.KindSet).AppendEncoded(nil), []byte(fmt.Sprint(j)))
		}
		out = append(out, bytes.Clone(bw.finish()))
	}
	bw := blockWriter{restartInterval: 1}
	bw.add([]byte(metaFilterName), block.Handle{Offset: 10, Length: 20}.Append(nil))
	bw.add([]byte(metaPropertiesName), block.Handle{Offset: 35, Length: 200}.Append(nil))
	out = append(out, bytes.Clone(bw.finish()))
	out = append(out, (&blockWriter{restartInterval: 1}).finish(), []byte{1, 0, 0, 0})
	return out
}

func indexSeed() []byte {
	bw := blockWriter{restartInterval: 1}
	var off uint64
	for j := 0; j < 6; j++ {
		sep := base.MakeInternalKey([]byte(fmt.Sprintf("s%02d", j)), base.SeqNumMax, base.KindMax)
		bw.add(sep.AppendEncoded(nil), block.Handle{Offset: off, Length: 30}.Append(nil))
		off += 30 + block.TrailerLen
	}
	return bytes.Clone(bw.finish())
}

func rangeDelSeed() []byte {
	bw := blockWriter{restartInterval: 1}
	for _, s := range []struct {
		start, end string
		seq        base.SeqNum
	}{{"a", "c", 9}, {"a", "c", 4}, {"c", "f", 4}, {"g", "h", 2}} {
		bw.add(base.MakeInternalKey([]byte(s.start), s.seq, base.KindRangeDelete).AppendEncoded(nil), []byte(s.end))
	}
	return bytes.Clone(bw.finish())
}

// TestWriteFuzzSeeds writes the seed corpora of this package's fuzz
// targets into testdata/fuzz when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it
// checks that each target has a committed corpus.
func TestWriteFuzzSeeds(t *testing.T) {
	tables := tableSeeds(t)
	var tableArgs [][]any
	for j, tb := range tables {
		tableArgs = append(tableArgs, []any{tb, uint8(0)}, []any{tb, uint8(tableFuzzRepair | tableFuzzCache)})
		if j == 0 {
			tableArgs = append(tableArgs, []any{tb[:len(tb)-1], uint8(0)}, []any{tb[:len(tb)/2], uint8(1)})
		}
	}
	var blockArgs [][]any
	for _, b := range blockSeeds() {
		blockArgs = append(blockArgs, []any{b, []byte("key021")})
	}
	props := (&Properties{NumEntries: 3, ComparerName: "leveldb.BytewiseComparator", CompressionName: "snappy",
		User: map[string]string{"user.prop": "x"}}).encode(1)
	ft := footer{checksum: ChecksumCRC32C, metaindex: block.Handle{Offset: 1000, Length: 40}, index: block.Handle{Offset: 900, Length: 99}}
	seeds := map[string][][]any{
		"FuzzTable":         tableArgs,
		"FuzzBlock":         blockArgs,
		"FuzzFooter":        {{ft.encode()}, {tables[1][len(tables[1])-footerLen:]}},
		"FuzzProperties":    {{props}},
		"FuzzBloom":         {{[]byte("a\x00b\x00hello\x00\x00zz"), uint8(10)}, {[]byte{}, uint8(0)}},
		"FuzzRangeDelBlock": {{rangeDelSeed()}},
		"FuzzIndexBlock":    {{indexSeed(), uint16(6 * 35)}},
	}
	fuzzseed.Sync(t, seeds)
}

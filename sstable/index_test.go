package sstable

import (
	"bytes"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// randomIndex returns a reader whose index holds sorted separators that
// share a random common prefix, drawn from a small alphabet with 0x00 and
// 0xff so that zero padding and long ties are frequent.
func randomIndex(rng *rand.Rand) *Reader {
	prefix := make([]byte, rng.IntN(12))
	for i := range prefix {
		prefix[i] = "a\x00\xff"[rng.IntN(3)]
	}
	n := 1 + rng.IntN(300)
	var seps []base.InternalKey
	for len(seps) < n {
		u := append([]byte(nil), prefix...)
		if rng.IntN(3) == 0 {
			// Long runs of separators whose words tie.
			u = append(u, "tie\x00word"...)
		}
		for j := rng.IntN(14); j > 0; j-- {
			u = append(u, "\x00\x01ab\xfe\xff"[rng.IntN(6)])
		}
		trailers := []uint64{
			base.MakeTrailer(base.SeqNumMax, base.KindMax),
			base.MakeTrailer(base.SeqNumMax, base.KindRangeDelete),
			base.MakeTrailer(base.SeqNum(rng.IntN(50)), base.KindSet),
			0,
		}
		for v := rng.IntN(3); v >= 0; v-- {
			seps = append(seps, base.InternalKey{UserKey: u, Trailer: trailers[rng.IntN(len(trailers))]})
		}
	}
	slices.SortFunc(seps, func(a, b base.InternalKey) int { return base.InternalCompare(bytes.Compare, a, b) })
	seps = slices.CompactFunc(seps, func(a, b base.InternalKey) bool { return base.InternalCompare(bytes.Compare, a, b) == 0 })
	r := &Reader{cmp: bytes.Compare, ix: &tableIndex{}}
	for _, s := range seps {
		r.ix.items = append(r.ix.items, indexItem{sep: s})
	}
	r.ix.buildWords()
	return r
}

// probeKeys returns search keys around the reader's separators: equal user
// keys with every interesting trailer, their prefixes (also shorter than the
// common prefix), extensions, neighbours and random keys.
func probeKeys(rng *rand.Rand, r *Reader) []base.InternalKey {
	var out []base.InternalKey
	add := func(u []byte) {
		for _, t := range []uint64{
			base.MakeTrailer(base.SeqNumMax, base.KindMax),
			base.MakeTrailer(base.SeqNumMax, base.KindRangeDelete),
			base.MakeTrailer(base.SeqNum(rng.IntN(50)), base.Kind(rng.IntN(2))),
			0,
		} {
			out = append(out, base.InternalKey{UserKey: u, Trailer: t})
		}
	}
	for range 200 {
		s := r.ix.items[rng.IntN(len(r.ix.items))].sep
		u := s.UserKey
		out = append(out, s) // exactly a separator
		add(u)
		add(u[:rng.IntN(len(u)+1)])
		add(append(slices.Clip(u), 0))
		add(append(slices.Clip(u), "\x00\x01a\xff"[rng.IntN(4)], "\x00\xff"[rng.IntN(2)]))
		if len(u) > 0 {
			v := slices.Clone(u)
			j := rng.IntN(len(v))
			v[j] += byte(1 - 2*rng.IntN(2))
			add(v)
		}
		w := make([]byte, rng.IntN(10))
		for j := range w {
			w[j] = byte(rng.IntN(256))
		}
		add(w)
	}
	add(nil)
	return out
}

func TestSeekIndexWordsMatchesPlainSearch(t *testing.T) {
	rng, seed := newRand(t)
	for round := range 300 {
		r := randomIndex(rng)
		for _, k := range probeKeys(rng, r) {
			want := r.ix.seekCompare(k, r.cmp)
			if got := r.ix.seekWords(k); got != want {
				t.Fatalf("seed %d round %d: seekIndex(%s) = %d, plain search %d (prefix %q, %d entries)",
					seed, round, k, got, want, r.ix.words.prefix, len(r.ix.items))
			}
		}
	}
}

// TestSeekIndexWordsWiring checks that a bytewise table gets the side array
// and answers like the plain search, and that another comparer does not.
func TestSeekIndexWordsWiring(t *testing.T) {
	rng, seed := newRand(t)
	entries := randomEntries(rng, 3000)
	path := filepath.Join(testdir.New(t), "w.sst")
	writeTable(t, path, WriterOptions{BlockSize: 256}, entries, nil)
	r := openTable(t, path, nil)
	defer r.Close()
	if r.ix.words.words == nil || len(r.ix.words.words) != len(r.ix.items) || len(r.ix.items) < 10 {
		t.Fatalf("bytewise table: %d words for %d index entries", len(r.ix.words.words), len(r.ix.items))
	}
	for _, k := range probeKeys(rng, r) {
		if got, want := r.ix.seek(k, r.cmp), r.ix.seekCompare(k, r.cmp); got != want {
			t.Fatalf("seed %d: seekIndex(%s) = %d, plain search %d", seed, k, got, want)
		}
	}

	reversed := &base.Comparer{
		Name:      "test.reverse",
		Compare:   func(a, b []byte) int { return bytes.Compare(b, a) },
		Separator: func(dst, a, b []byte) []byte { return append(dst, a...) },
		Successor: func(dst, a []byte) []byte { return append(dst, a...) },
	}
	slices.SortFunc(entries, func(a, b kv) int { return base.InternalCompare(reversed.Compare, a.key, b.key) })
	rpath := filepath.Join(testdir.New(t), "r.sst")
	writeTable(t, rpath, WriterOptions{Comparer: reversed, BlockSize: 256}, entries, nil)
	rr := openTableWith(t, rpath, ReaderOptions{Comparer: reversed})
	defer rr.Close()
	if rr.ix.words.words != nil {
		t.Fatal("a non-bytewise comparer got the bytewise index side array")
	}
	it := rr.NewIter(IterOptions{})
	defer it.Close()
	for i := 0; i < len(entries); i += 97 {
		u := entries[i].key.UserKey
		if !it.SeekGE(u) || !bytes.Equal(it.Key().UserKey, u) {
			t.Fatalf("reverse-ordered table: SeekGE(%q) landed on %s", u, it.Key())
		}
	}
}

func openTableWith(t testing.TB, path string, o ReaderOptions) *Reader {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	o.FileName = path
	r, err := NewReader(f, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// BenchmarkSeekIndex compares the side-array search with the plain binary
// search on the same index, at random keys.
func BenchmarkSeekIndex(b *testing.B) {
	r, keys := benchTable(b, 300000)
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	// Search keys from a small hot array, so that the index is what the
	// benchmark measures.
	search := make([]base.InternalKey, 1024)
	for i := range search {
		search[i] = base.MakeSearchKey(keys[rng.IntN(len(keys))])
	}
	for _, bc := range []struct {
		name string
		seek func(base.InternalKey) int
	}{{"words", r.ix.seekWords}, {"compare", func(k base.InternalKey) int { return r.ix.seekCompare(k, r.cmp) }}} {
		b.Run(bc.name, func(b *testing.B) {
			sum := 0
			for i := 0; i < b.N; i++ {
				sum += bc.seek(search[i%len(search)])
			}
			if sum < 0 {
				b.Fatal(sum)
			}
		})
	}
}

package dbiter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
)

// TestIterPrefixRandom: with SetPrefix, seeks and steps return exactly the
// model's keys of the prefix and stop, invalid, at the first key without
// it, in both directions; confinement set after First or Last applies to
// the moves that follow; ClearPrefix lifts it.
func TestIterPrefixRandom(t *testing.T) {
	tr := base.NewFixedPrefixTransform(3) // "k01" holds k010..k019
	for iter := 0; iter < 300; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 3))
		db := randomDB(rng)
		// Spread the keys over a few prefixes.
		db.nkeys *= 3
		for i := range db.entries {
			var k int
			fmt.Sscanf(string(db.entries[i].Key.UserKey), "k%d", &k)
			db.entries[i].Key.UserKey = itertest.UserKey(3*k + rng.IntN(3))
		}
		itertest.SortEntries(db.entries)
		for j := range db.tombs {
			db.tombs[j].start = itertest.UserKey(3 * atoiKey(db.tombs[j].start))
			db.tombs[j].end = itertest.UserKey(3 * atoiKey(db.tombs[j].end))
		}
		o := Options{Snapshot: randomSnapshot(rng, db.maxSeq), PrefixExtractor: tr, Reseek: rng.IntN(2) == 0}
		if len(db.tombs) > 0 {
			o.RangeDels = db.tombs
		}
		keys, vals := db.model(o.Snapshot, nil, nil, false)
		m, _ := db.mergedIter(rng, 1+rng.IntN(4))
		it := New(m, o)
		ctx := fmt.Sprintf("seed %d", seed)
		// lo and hi delimit the model's keys of the confining prefix;
		// pos is the model's position (lo-1 or hi: invalid).
		var lo, hi, pos int
		confine := func(p []byte) {
			lo = sort.Search(len(keys), func(i int) bool { return bytes.Compare(keys[i], p) >= 0 })
			hi = lo
			for hi < len(keys) && base.HasPrefix(tr, keys[hi], p) {
				hi++
			}
		}
		search := func(k []byte) int {
			return sort.Search(len(keys), func(i int) bool { return bytes.Compare(keys[i], k) >= 0 })
		}
		var trace []string
		for op := 0; op < 200; op++ {
			k := itertest.RandomSeekKey(rng, db.nkeys)
			var desc string
			switch r := rng.IntN(10); {
			case r < 3 && tr.InDomain(k):
				p := tr.Transform(k)
				it.SetPrefix(p)
				confine(p)
				desc = fmt.Sprintf("SeekGE(%s) in %s", k, p)
				it.SeekGE(k)
				pos = max(search(k), lo)
			case r < 4 && tr.InDomain(k):
				p := tr.Transform(k)
				it.SetPrefix(p)
				confine(p)
				desc = fmt.Sprintf("SeekForPrev(%s) in %s", k, p)
				it.SeekForPrev(k)
				pos = search(k)
				if pos < len(keys) && bytes.Equal(keys[pos], k) {
					pos++
				}
				pos = min(pos-1, hi)
			case r < 5:
				// Confinement set once positioned (RocksDB's First and
				// Last with prefix_same_as_start).
				it.ClearPrefix()
				first := rng.IntN(2) == 0
				if first {
					desc = "First, then confined"
					it.First()
					pos = 0
				} else {
					desc = "Last, then confined"
					it.Last()
					pos = len(keys) - 1
				}
				lo, hi = 0, len(keys)
				if it.Valid() && tr.InDomain(it.Key()) {
					p := tr.Transform(it.Key())
					it.SetPrefix(p)
					confine(p)
				}
			default:
				if !it.Valid() {
					continue // undefined after running out, as in RocksDB
				}
				if rng.IntN(2) == 0 {
					desc = "Next"
					it.Next()
					pos++
				} else {
					desc = "Prev"
					it.Prev()
					pos--
				}
			}
			trace = append(trace, desc)
			if err := it.Error(); err != nil {
				t.Fatalf("%s: %s: %v", ctx, desc, err)
			}
			want := pos >= lo && pos < hi
			if it.Valid() != want {
				t.Fatalf("%s: op %d %s: valid %v, want %v (model pos %d in [%d, %d))\nops: %v", ctx, op, desc, it.Valid(), want, pos, lo, hi, trace)
			}
			if want && (!bytes.Equal(it.Key(), keys[pos]) || !bytes.Equal(it.Value(), vals[pos])) {
				t.Fatalf("%s: op %d %s: at %s=%s, want %s=%s\nops: %v", ctx, op, desc, it.Key(), it.Value(), keys[pos], vals[pos], trace)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func atoiKey(k []byte) int {
	var n int
	fmt.Sscanf(string(k), "k%d", &n)
	return n
}

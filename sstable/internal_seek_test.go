package sstable

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
)

// TestSeekGEInternal checks a table iterator's SeekGEInternal against the
// entries: few user keys with long runs of versions over many small
// blocks, so that a key's versions span blocks, random internal-key
// targets (the versions of one key, and the smallest trailer, which lands
// past all of them), random bounds, with and without a cache, then Next
// and Prev from where it landed.
func TestSeekGEInternal(t *testing.T) {
	rng, _ := newRand(t)
	dir := testdir.New(t)
	for iter := 0; iter < 20; iter++ {
		nkeys := 1 + rng.IntN(30)
		var entries []kv
		for k := 0; k < nkeys; k++ {
			for v := 1 + rng.IntN(40); v > 0; v-- {
				kind := base.KindSet
				if rng.IntN(4) == 0 {
					kind = base.KindDelete
				}
				// Seqnums distinct per key, descending in key order.
				seq := base.SeqNum(1000 - 10*v - rng.IntN(10))
				entries = append(entries, kv{base.MakeInternalKey(fmt.Appendf(nil, "k%03d", k), seq, kind), fmt.Appendf(nil, "v%d-%d", k, seq)})
			}
		}
		sort.Slice(entries, func(i, j int) bool { return base.InternalCompare(bytes.Compare, entries[i].key, entries[j].key) < 0 })
		entries = dedupKV(entries)
		path := filepath.Join(dir, fmt.Sprintf("%d.sst", iter))
		writeTable(t, path, WriterOptions{BlockSize: 64 + rng.IntN(512), BlockRestartInterval: 1 + rng.IntN(16)}, entries, nil)
		var c *cache.Cache
		if rng.IntN(2) == 0 {
			c = cache.New(1 << 20)
		}
		r := openTable(t, path, c)
		for op := 0; op < 100; op++ {
			var lower, upper []byte
			if rng.IntN(3) == 0 {
				lower = fmt.Appendf(nil, "k%03d", rng.IntN(nkeys+1))
			}
			if rng.IntN(3) == 0 {
				upper = fmt.Appendf(nil, "k%03d", rng.IntN(nkeys+1))
			}
			inBounds := func(e kv) bool {
				return (lower == nil || bytes.Compare(e.key.UserKey, lower) >= 0) && (upper == nil || bytes.Compare(e.key.UserKey, upper) < 0)
			}
			var ref []kv
			for _, e := range entries {
				if inBounds(e) {
					ref = append(ref, e)
				}
			}
			target := base.MakeInternalKey(fmt.Appendf(nil, "k%03d", rng.IntN(nkeys+1)), base.SeqNum(rng.IntN(1000)), base.KindSet)
			if rng.IntN(5) == 0 {
				target.Trailer = 0
			}
			pos := sort.Search(len(ref), func(i int) bool { return base.InternalCompare(bytes.Compare, ref[i].key, target) >= 0 })
			it := r.NewIter(IterOptions{Lower: lower, Upper: upper, FillCache: true})
			desc := fmt.Sprintf("bounds [%s, %s) SeekGEInternal(%s)", lower, upper, target)
			ok := it.(base.InternalSeeker).SeekGEInternal(target)
			for step := 0; ; step++ {
				if want := pos >= 0 && pos < len(ref); ok != want || (ok && !equalKV(kv{it.Key(), it.Value()}, ref[pos])) {
					t.Fatalf("%s: got %v %s, want %v (ref %d of %d)", desc, ok, it.Key(), want, pos, len(ref))
				}
				if err := it.Error(); err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				if !ok || step == 4 {
					break
				}
				if rng.IntN(3) == 0 {
					desc += ", Prev"
					ok, pos = it.Prev(), pos-1
				} else {
					desc += ", Next"
					ok, pos = it.Next(), pos+1
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// dedupKV drops entries with the same internal key as the one before.
func dedupKV(es []kv) []kv {
	out := es[:0]
	for i, e := range es {
		if i > 0 && base.InternalCompare(bytes.Compare, e.key, es[i-1].key) == 0 {
			continue
		}
		out = append(out, e)
	}
	return out
}

package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// searchTestEntries returns sorted internal keys whose user keys share
// prefixes of many lengths (including longer than a search word), contain
// zero bytes (which tie with zero padding), are prefixes of one another, and
// have several versions with every kind.
func searchTestEntries(rng *rand.Rand, n int) []kv {
	common := []string{"", "p", "prefix/", "prefix/long-shared-part-0123456789/"}[rng.IntN(4)]
	users := map[string]bool{}
	for len(users) < n {
		var b []byte
		b = append(b, common...)
		for j := rng.IntN(12); j > 0; j-- {
			b = append(b, "\x00ab\xffz"[rng.IntN(5)])
		}
		if rng.IntN(4) == 0 && len(users) > 0 {
			// Extend an existing key: one key a prefix of another, or a
			// long shared run beyond the first 8 bytes after the prefix.
			for u := range users {
				b = append([]byte(u), b[len(common):]...)
				break
			}
		}
		users[string(b)] = true
	}
	kinds := []base.Kind{base.KindSet, base.KindDelete, base.KindSingleDelete, base.KindMerge, base.KindBlobIndex, base.KindRangeDelete}
	var out []kv
	for u := range users {
		seqs := map[base.SeqNum]bool{}
		for v := rng.IntN(3); v >= 0; v-- {
			s := base.SeqNum(rng.IntN(50))
			if rng.IntN(10) == 0 {
				s = base.SeqNumMax
			}
			seqs[s] = true
		}
		for s := range seqs {
			val := bytes.Repeat([]byte{byte(s)}, rng.IntN(200))
			out = append(out, kv{base.MakeInternalKey([]byte(u), s, kinds[rng.IntN(len(kinds))]), val})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return base.InternalCompare(bytes.Compare, a.key, b.key) })
	return out
}

// searchProbes returns seek keys around every entry: the entry itself, its
// neighbors in trailer order, user keys just before and after it, and keys
// before the first and after the last entry.
func searchProbes(entries []kv) []base.InternalKey {
	probes := []base.InternalKey{
		base.MakeSearchKey(nil),
		base.MakeSearchKey([]byte{0}),
		base.MakeSearchKey([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")),
	}
	for _, e := range entries {
		u := e.key.UserKey
		probes = append(probes, e.key,
			base.MakeSearchKey(u),
			base.InternalKey{UserKey: u, Trailer: 0},
			base.MakeSearchKey(append(slices.Clone(u), 0)),
			base.MakeSearchKey(append(slices.Clone(u), 0xff)),
			base.MakeSearchKey(append(slices.Clone(u), 0, 0, 0, 0, 0, 0, 0, 0, 0)))
		if e.key.Trailer > 0 {
			probes = append(probes, base.InternalKey{UserKey: u, Trailer: e.key.Trailer - 1})
		}
		if e.key.Trailer < 1<<64-1 {
			probes = append(probes, base.InternalKey{UserKey: u, Trailer: e.key.Trailer + 1})
		}
		if len(u) > 0 {
			probes = append(probes, base.MakeSearchKey(u[:len(u)-1]))
			v := slices.Clone(u)
			v[len(v)-1]--
			probes = append(probes, base.MakeSearchKey(v))
		}
	}
	return probes
}

// sameState reports whether two block iterators stand at the same entry.
func sameState(a, b *blockIter) bool {
	if a.valid != b.valid || a.corrupt != b.corrupt {
		return false
	}
	if !a.valid {
		return true
	}
	return a.offset == b.offset && a.nextOffset == b.nextOffset &&
		bytes.Equal(a.key, b.key) && a.ikey.Trailer == b.ikey.Trailer &&
		bytes.Equal(a.ikey.UserKey, b.ikey.UserKey) && bytes.Equal(a.val, b.val)
}

// TestSeekGESearchMatchesPlain checks that seekGE through the search
// structure of a cached block lands exactly where the plain restart search
// does, and that next and prev continue identically from there.
func TestSeekGESearchMatchesPlain(t *testing.T) {
	rng, seed := newRand(t)
	for round := 0; round < 12; round++ {
		entries := searchTestEntries(rng, 1+rng.IntN(120))
		probes := searchProbes(entries)
		for _, interval := range []int{1, 2, 16, 128} {
			bw := blockWriter{restartInterval: interval}
			for _, e := range entries {
				bw.add(e.key.AppendEncoded(nil), e.value)
			}
			block := slices.Clone(bw.finish())
			aux := buildBlockSearch(block, true)
			var plain, fast blockIter
			plain.init(block, true)
			fast.initCached(block, aux, rng.IntN(2) == 0)
			if binary.LittleEndian.Uint32(aux[4:]) != uint32(len(entries)) {
				t.Fatalf("seed %d: no search structure built for a block of %d entries", seed, len(entries))
			}
			for _, k := range probes {
				okP := plain.seekGE(k, bytes.Compare)
				okF := fast.seekGE(k, bytes.Compare)
				// The reference: the first entry >= k.
				want := firstTrue(len(entries), func(j int) bool {
					return base.InternalCompare(bytes.Compare, entries[j].key, k) >= 0
				})
				if okF != (want < len(entries)) || (okF && !equalKV(kv{fast.ikey, fast.val}, entries[want])) {
					t.Fatalf("seed %d interval %d: search seekGE(%s) = %v %s, want entry %d of %d",
						seed, interval, k, okF, fast.ikey, want, len(entries))
				}
				if okP != okF || !sameState(&plain, &fast) {
					t.Fatalf("seed %d interval %d: seekGE(%s): plain %v %s, search %v %s",
						seed, interval, k, okP, plain.ikey, okF, fast.ikey)
				}
				if !okF {
					continue
				}
				switch rng.IntN(3) {
				case 0:
					for s := 0; s < 3; s++ {
						okP, okF = plain.next(), fast.next()
						if okP != okF || !sameState(&plain, &fast) {
							t.Fatalf("seed %d interval %d: next %d after seekGE(%s) differs", seed, interval, s, k)
						}
					}
				case 1:
					for s := 0; s < 3; s++ {
						okP, okF = plain.prev(), fast.prev()
						if okP != okF || !sameState(&plain, &fast) {
							t.Fatalf("seed %d interval %d: prev %d after seekGE(%s) differs", seed, interval, s, k)
						}
					}
				}
			}
		}
	}
}

// TestCachedBlockWithoutSearch covers the blocks that keep the plain path:
// a non-bytewise comparer, an empty block, and a malformed block whose
// checksum was valid, where seeks must still report corruption.
func TestCachedBlockWithoutSearch(t *testing.T) {
	bw := blockWriter{restartInterval: 4}
	var entries []kv
	for j := 0; j < 40; j++ {
		k := base.MakeInternalKey([]byte(fmt.Sprintf("key%03d", j)), base.SeqNum(j), base.KindSet)
		entries = append(entries, kv{k, []byte(fmt.Sprintf("v%d", j))})
		bw.add(k.AppendEncoded(nil), entries[j].value)
	}
	block := slices.Clone(bw.finish())

	var it blockIter
	aux := buildBlockSearch(block, false)
	it.initCached(block, aux, true)
	if binary.LittleEndian.Uint32(aux[4:]) != 0 {
		t.Fatal("a search structure was built for a non-bytewise comparer")
	}
	if !it.seekGE(entries[17].key, bytes.Compare) || !equalKV(kv{it.ikey, it.val}, entries[17]) {
		t.Fatalf("plain seek in a cached block landed on %s", it.ikey)
	}

	var empty blockWriter
	eb := slices.Clone(empty.finish())
	aux = buildBlockSearch(eb, true)
	it.initCached(eb, aux, true)
	if binary.LittleEndian.Uint32(aux[4:]) != 0 || it.seekGE(entries[0].key, bytes.Compare) || it.first() || it.corrupt {
		t.Fatal("empty cached block: want no structure and no entries, no corruption")
	}

	// Damage the unshared length of entry 10 (not a restart point) so that
	// it runs past the block.
	var scan blockIter
	scan.init(block, true)
	scan.first()
	for j := 0; j < 10; j++ {
		scan.next()
	}
	bad := slices.Clone(block)
	bad[scan.offset+1] = 0x7f
	aux = buildBlockSearch(bad, true)
	it.initCached(bad, aux, false)
	if binary.LittleEndian.Uint32(aux[4:]) != 0 {
		t.Fatal("a search structure was built over a malformed block")
	}
	if it.seekGE(entries[11].key, bytes.Compare) || !it.corrupt {
		t.Fatalf("seek across a malformed entry: valid %v corrupt %v, want corruption", it.valid, it.corrupt)
	}
}

// TestCachedBlockLayout checks the header and arrays of a cached block
// against the entries it was built from.
func TestCachedBlockLayout(t *testing.T) {
	bw := blockWriter{restartInterval: 2}
	keys := []string{"user/a", "user/ab", "user/b\x00", "user/b\x00\x00", "user/c"}
	for j, k := range keys {
		bw.add(base.MakeInternalKey([]byte(k), base.SeqNum(j), base.KindSet).AppendEncoded(nil), []byte("v"))
	}
	block := slices.Clone(bw.finish())
	v := buildBlockSearch(block, true)
	n := int(binary.LittleEndian.Uint32(v[4:]))
	plen := int(binary.LittleEndian.Uint16(v[8:]))
	if got := int(binary.LittleEndian.Uint32(v[0:])); got != 3 {
		t.Fatalf("numRestarts %d, want 3", got)
	}
	arena := v[cachedHeaderLen+12*n+2:]
	if n != len(keys) || plen != len("user/") || len(v) != cap(v) || !bytes.HasPrefix(arena, []byte("user/a")) {
		t.Fatalf("header n=%d plen=%d len=%d cap=%d arena %q", n, plen, len(v), cap(v), arena)
	}
	// "b\x00" and "b\x00\x00" tie in their word; both are below "c".
	w := func(j int) uint64 { return binary.LittleEndian.Uint64(v[cachedHeaderLen+8*j:]) }
	if w(2) != w(3) || !(w(0) < w(1) && w(1) < w(2) && w(3) < w(4)) {
		t.Fatalf("words %x %x %x %x %x", w(0), w(1), w(2), w(3), w(4))
	}
}

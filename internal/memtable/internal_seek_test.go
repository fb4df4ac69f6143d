package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// TestSeekGEInternal checks the memtable iterator's SeekGEInternal against
// the sorted entries, over a few keys with many versions each, for targets
// among a key's versions and with the smallest trailer (past all of them),
// and that Next and Prev go on from there.
func TestSeekGEInternal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	m := New(nil, 1<<20)
	var keys []base.InternalKey
	seq := base.SeqNum(1)
	for range 400 {
		k := fmt.Appendf(nil, "k%02d", rng.IntN(20))
		kind := base.KindSet
		if rng.IntN(4) == 0 {
			kind = base.KindDelete
		}
		if err := m.Add(seq, kind, k, nil); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, base.MakeInternalKey(k, seq, kind))
		seq++
	}
	sort.Slice(keys, func(i, j int) bool { return base.InternalCompare(bytes.Compare, keys[i], keys[j]) < 0 })
	it := m.NewIter()
	s, ok := it.(base.InternalSeeker)
	if !ok {
		t.Fatal("the memtable iterator is not a base.InternalSeeker")
	}
	for range 500 {
		target := base.MakeInternalKey(fmt.Appendf(nil, "k%02d", rng.IntN(21)), base.SeqNum(rng.IntN(int(seq)+1)), base.KindMax)
		if rng.IntN(5) == 0 {
			target.Trailer = 0
		}
		pos := sort.Search(len(keys), func(i int) bool { return base.InternalCompare(bytes.Compare, keys[i], target) >= 0 })
		ok := s.SeekGEInternal(target)
		for step := 0; ; step++ {
			want := pos >= 0 && pos < len(keys)
			if ok != want || (ok && base.InternalCompare(bytes.Compare, it.Key(), keys[pos]) != 0) {
				t.Fatalf("SeekGEInternal(%s) then %d moves: got %v %s, want %v (%d of %d)", target, step, ok, it.Key(), want, pos, len(keys))
			}
			if !ok || step == 3 {
				break
			}
			if rng.IntN(2) == 0 {
				ok, pos = it.Next(), pos+1
			} else {
				ok, pos = it.Prev(), pos-1
			}
		}
	}
}

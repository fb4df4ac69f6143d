package sstable

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/cache"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// TestGlobalSeqNumReadsEveryEntryAtIt: a table of seqnum-0 entries opened
// with ReaderOptions.GlobalSeqNum shows every point entry and range
// tombstone at that seqnum through iterators (uncached blocks and blocks
// with a search structure), SeekGEInternal, Get, Versions and
// MultiGetBatch: a read below the seqnum sees nothing of it.
func TestGlobalSeqNumReadsEveryEntryAtIt(t *testing.T) {
	const g = base.SeqNum(50)
	fs := vfs.NewMem()
	f, err := fs.Create("/t.sst")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, "/t.sst", WriterOptions{BlockSize: 64})
	const n = 200
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	for i := range n {
		kind := base.KindSet
		if i%10 == 3 {
			kind = base.KindDelete
		}
		if err := w.Add(base.MakeInternalKey(key(i), 0, kind), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddRangeTombstone([]byte("k0010"), []byte("k0020"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			rf, err := fs.Open("/t.sst")
			if err != nil {
				t.Fatal(err)
			}
			o := ReaderOptions{FileName: "/t.sst", GlobalSeqNum: g}
			if cached {
				o.Cache = cache.New(1 << 20)
			}
			r, err := NewReader(rf, o)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if spans := r.RangeTombstones(); len(spans) != 1 || len(spans[0].Seqs) != 1 || spans[0].Seqs[0] != g {
				t.Fatalf("range tombstones %v, want one at %d", spans, g)
			}
			// Twice: the second pass meets cached blocks with their search
			// structures when cached.
			for pass := range 2 {
				it := r.NewIter(IterOptions{}).(interface {
					base.InternalIterator
					base.InternalSeeker
				})
				i := 0
				for ok := it.First(); ok; ok = it.Next() {
					if k := it.Key(); string(k.UserKey) != string(key(i)) || k.SeqNum() != g {
						t.Fatalf("pass %d: entry %d is %s, want %s at %d", pass, i, k, key(i), g)
					}
					i++
				}
				if i != n {
					t.Fatalf("pass %d: %d entries, want %d", pass, i, n)
				}
				for _, j := range []int{0, 7, 99, n - 1} {
					// At g the key is found; below it the seek passes it.
					if !it.SeekGEInternal(base.MakeInternalKey(key(j), g, base.KindMax)) || string(it.Key().UserKey) != string(key(j)) {
						t.Fatalf("pass %d: SeekGEInternal(%s@%d) did not find it", pass, key(j), g)
					}
					ok := it.SeekGEInternal(base.MakeInternalKey(key(j), g-1, base.KindMax))
					if j == n-1 {
						if ok {
							t.Fatalf("pass %d: SeekGEInternal(%s@%d) found %s", pass, key(j), g-1, it.Key())
						}
					} else if !ok || string(it.Key().UserKey) != string(key(j+1)) {
						t.Fatalf("pass %d: SeekGEInternal(%s@%d) did not pass to %s", pass, key(j), g-1, key(j+1))
					}
					if !it.SeekGE(key(j)) || it.Key().SeqNum() != g {
						t.Fatalf("pass %d: SeekGE(%s) did not find it at %d", pass, key(j), g)
					}
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				for _, j := range []int{0, 3, 55, n - 1} {
					_, kind, seq, found, err := r.Get(key(j), g, true)
					if err != nil || !found || seq != g || (kind == base.KindDelete) != (j%10 == 3) {
						t.Fatalf("pass %d: Get(%s, %d) = %s %d %v %v", pass, key(j), g, kind, seq, found, err)
					}
					if _, _, _, found, err := r.Get(key(j), g-1, true); found || err != nil {
						t.Fatalf("pass %d: Get(%s, %d) found an entry at %d", pass, key(j), g-1, g)
					}
					any, err := r.Versions(key(j), g-1, true, nil, nil, func([]byte, base.Kind, base.SeqNum) bool { return true })
					if any || err != nil {
						t.Fatalf("pass %d: Versions(%s, %d) = %v, %v", pass, key(j), g-1, any, err)
					}
					var b MultiGetBatch
					hi, lo := b.Add(r, key(j), g, true), b.Add(r, key(j), g-1, true)
					b.Read(nil, nil)
					if _, _, seq, found, _, err := b.Result(hi); !found || seq != g || err != nil {
						t.Fatalf("pass %d: MultiGet(%s, %d) = %d %v %v", pass, key(j), g, seq, found, err)
					}
					if _, _, _, found, _, err := b.Result(lo); found || err != nil {
						t.Fatalf("pass %d: MultiGet(%s, %d) found it", pass, key(j), g-1)
					}
				}
			}
		})
	}
}

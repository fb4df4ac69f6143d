package shale

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestReadStateDuringFlushInstallHoldsEachEntryOnce checks the read state
// a memtable switch publishes while a flush has installed the version
// holding its L0 table and not yet taken its memtable out of the queue:
// the flushed memtable's entries must be read once, from one of the two.
// Read twice, a merge operand is applied twice (the join operator shows
// "m1+m1" for "m1").
func TestReadStateDuringFlushInstallHoldsEachEntryOnce(t *testing.T) {
	opts := testOptions(vfs.NewMem())
	opts.MergeOperator = joinOperator{}
	opts.WriteBufferSize = 4 << 10
	opts.MaxWriteBufferNumber = 4
	opts.DisableAutoCompactions = true
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { testHookFlushInstalled = nil }()
	defer d.Close()
	must(t, d.Put([]byte("a"), []byte("va"), nil))
	must(t, d.Merge([]byte("k"), []byte("m1"), nil))

	want := "a=va k=m1"
	check := func(when string) {
		if v, err := d.Get([]byte("k"), nil); err != nil || string(v) != "m1" {
			t.Errorf("%s: Get(k) = %q, %v; want m1", when, v, err)
		}
		vs, errs := d.MultiGet([][]byte{[]byte("k")}, nil)
		if errs[0] != nil || string(vs[0]) != "m1" {
			t.Errorf("%s: MultiGet(k) = %q, %v; want m1", when, vs[0], errs[0])
		}
		it := d.NewIterator(&ReadOptions{UpperBound: []byte("l")})
		var fwd, rev string
		for ok := it.First(); ok; ok = it.Next() {
			fwd += fmt.Sprintf(" %s=%s", it.Key(), it.Value())
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			rev = fmt.Sprintf(" %s=%s", it.Key(), it.Value()) + rev
		}
		must(t, it.Close())
		if fwd != " "+want || rev != " "+want {
			t.Errorf("%s: forward scan%s, backward scan%s; want %s", when, fwd, rev, want)
		}
	}
	var once sync.Once
	testHookFlushInstalled = func() {
		once.Do(func() {
			// Fill the new mutable memtable, then switch it: the switch
			// publishes a read state (in the flush's window).
			if err := d.Put([]byte("z1"), make([]byte, 5<<10), nil); err != nil {
				t.Error(err)
			}
			if err := d.Put([]byte("z2"), []byte("v"), nil); err != nil {
				t.Error(err)
			}
			check("in the flush's window")
		})
	}
	must(t, d.Flush())
	check("after the flush")
}

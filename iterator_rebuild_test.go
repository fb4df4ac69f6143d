package shale

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestIteratorSetBoundsAndRefresh checks what the model test cannot (it
// writes nothing while an iterator is open): SetBounds keeps the state the
// iterator was made at, Refresh moves to the latest one, SeekLT is strict,
// the counts survive both, and a closed DB refuses them.
func TestIteratorSetBoundsAndRefresh(t *testing.T) {
	d, err := Open("/db", testOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%03d", i)) }
	for i := 0; i < 100; i += 2 {
		if err := d.Put(key(i), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	it := d.NewIterator(&ReadOptions{LowerBound: key(10), UpperBound: key(20)})
	count := func() (n int) {
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return n
	}
	if n := count(); n != 5 {
		t.Fatalf("%d keys in [10, 20), want 5", n)
	}
	if it.SeekLT(key(14)); !it.Valid() || string(it.Key()) != string(key(12)) {
		t.Fatalf("SeekLT(14) at %q", it.Key())
	}
	if it.SeekLT(key(10)) {
		t.Fatalf("SeekLT(lower bound) at %q", it.Key())
	}
	before := it.Stats()
	// Writes after the iterator was made: SetBounds does not see them.
	if err := d.Put(key(31), []byte("new"), nil); err != nil {
		t.Fatal(err)
	}
	if err := it.SetBounds(key(30), key(40)); err != nil {
		t.Fatal(err)
	}
	if it.Valid() {
		t.Fatal("valid after SetBounds: must be unpositioned")
	}
	if n := count(); n != 5 {
		t.Fatalf("%d keys in [30, 40) after SetBounds, want the 5 of the iterator's state", n)
	}
	if err := it.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 6 {
		t.Fatalf("%d keys in [30, 40) after Refresh, want 6 with the new one", n)
	}
	if after := it.Stats(); after.BlockCacheHits+after.BlockReads <= before.BlockCacheHits+before.BlockReads {
		t.Errorf("Stats lost the counts of the replaced stacks: %+v -> %+v", before, after)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if m := d.Metrics(); m.NumIterators != 0 {
		t.Fatalf("%d iterators open after Close", m.NumIterators)
	}
	it = d.NewIterator(nil)
	d.Close()
	if err := it.SetBounds(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SetBounds after DB.Close: %v", err)
	}
	if err := it.Refresh(); !errors.Is(err, ErrClosed) {
		t.Errorf("Refresh after DB.Close: %v", err)
	}
	it.Close()
}

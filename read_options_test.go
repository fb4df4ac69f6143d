package shale

import (
	"errors"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestReadOptionsZeroValueMatchesNewReadOptions checks that a nil
// *ReadOptions, the zero ReadOptions and NewReadOptions() batch a
// MultiGet's reads the same way, with AsyncIO off and on (issue 19, item
// 5): the number of read batches the DB's async reader submits shows the
// concurrency. MultiGetOneLevelAtATime, the one switch, reads one level at
// a time (more batches), and OptimizeMultiGetForIO true overrides it.
func TestReadOptionsZeroValueMatchesNewReadOptions(t *testing.T) {
	m := buildLayeredDB(t, vfs.NewMem(), func(o *Options) { o.BlockCacheSize = -1 })
	d := m.d
	defer d.Close()
	var keys [][]byte
	for i := 0; i < 1500; i += 13 {
		keys = append(keys, testKey(i))
	}
	d.MultiGet(keys, nil) // open every table first
	var want [][]byte
	var wantErrs []error
	batches := func(name string, ro *ReadOptions) uint64 {
		t.Helper()
		before := d.ioReader.Stats().Batches
		vals, errs := d.MultiGet(keys, ro)
		n := d.ioReader.Stats().Batches - before
		if want == nil {
			want, wantErrs = vals, errs
		}
		for i := range keys {
			if string(vals[i]) != string(want[i]) || !errors.Is(errs[i], wantErrs[i]) {
				t.Fatalf("%s: key %s = %q, %v; first answer %q, %v", name, keys[i], vals[i], errs[i], want[i], wantErrs[i])
			}
		}
		t.Logf("%s: %d batches", name, n)
		return n
	}
	newAsync := func() *ReadOptions {
		ro := NewReadOptions()
		ro.AsyncIO = true
		return ro
	}
	oneLevel := func(ro *ReadOptions) *ReadOptions {
		ro.MultiGetOneLevelAtATime = true
		return ro
	}

	sync := map[string]uint64{
		"nil":              batches("nil", nil),
		"zero":             batches("zero", &ReadOptions{}),
		"NewReadOptions()": batches("NewReadOptions()", NewReadOptions()),
	}
	async := map[string]uint64{
		"zero+AsyncIO":             batches("zero+AsyncIO", &ReadOptions{AsyncIO: true}),
		"NewReadOptions()+AsyncIO": batches("NewReadOptions()+AsyncIO", newAsync()),
		"OptimizeMultiGetForIO overrides MultiGetOneLevelAtATime": batches("both",
			oneLevel(&ReadOptions{AsyncIO: true, OptimizeMultiGetForIO: true})),
	}
	level := batches("MultiGetOneLevelAtATime", oneLevel(&ReadOptions{AsyncIO: true}))
	same := func(group map[string]uint64) uint64 {
		var first uint64
		for _, n := range group {
			if first != 0 && n != first {
				t.Fatalf("batches differ: %v", group)
			}
			first = n
		}
		return first
	}
	file, multi := same(sync), same(async)
	if !(multi < level && level < file) {
		t.Fatalf("batches: levels at once %d, one level at a time %d, one file at a time %d: want strictly more in that order", multi, level, file)
	}

	for _, c := range []struct {
		ro   *ReadOptions
		want multiGetMode
	}{
		{nil, multiGetSingleFile},
		{&ReadOptions{}, multiGetSingleFile},
		{NewReadOptions(), multiGetSingleFile},
		{&ReadOptions{AsyncIO: true}, multiGetMultiLevel},
		{newAsync(), multiGetMultiLevel},
		{oneLevel(&ReadOptions{AsyncIO: true}), multiGetSingleLevel},
		{oneLevel(newAsync()), multiGetMultiLevel},
		{oneLevel(&ReadOptions{}), multiGetSingleFile},
	} {
		if got := c.ro.multiGetMode(); got != c.want {
			t.Errorf("%+v: mode %d, want %d", c.ro, got, c.want)
		}
	}
}

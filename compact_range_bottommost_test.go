package shale

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// lastLevelTables returns the file numbers of d's last level.
func lastLevelTables(d *DB) []base.FileNum {
	levels := levelFileNums(d)
	return levels[len(levels)-1]
}

// TestCompactRangeBottommostLevelCompaction checks the three settings:
// Force rewrites last-level tables that need nothing, the default leaves
// them and drops tombstones no snapshot needs, Skip leaves even those, and
// the data reads the same after each.
func TestCompactRangeBottommostLevelCompaction(t *testing.T) {
	d, err := Open("/db", testOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
	for i := range 2000 {
		if err := d.Put(key(i), []byte(fmt.Sprintf("value%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	check := func(what string, deleted int) {
		t.Helper()
		for i := range 2000 {
			v, err := d.Get(key(i), nil)
			if i < deleted {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: deleted %s: %q, %v", what, key(i), v, err)
				}
			} else if err != nil || string(v) != fmt.Sprintf("value%d", i) {
				t.Fatalf("%s: %s: %q, %v", what, key(i), v, err)
			}
		}
	}
	compact := func(b BottommostLevelCompaction) {
		t.Helper()
		if err := d.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{BottommostLevelCompaction: b}); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	before := lastLevelTables(d)
	if len(before) == 0 {
		t.Fatal("nothing in the last level")
	}
	compact(BottommostLevelCompactionIfHaveCompactionFilter)
	if after := lastLevelTables(d); !slices.Equal(after, before) {
		t.Errorf("default rewrote the last level, which needed nothing: %v -> %v", before, after)
	}
	compact(BottommostLevelCompactionForce)
	after := lastLevelTables(d)
	for _, n := range after {
		if slices.Contains(before, n) {
			t.Errorf("Force kept last-level table %d: %v -> %v", n, before, after)
		}
	}
	check("after Force", 0)

	// Tombstones reach the last level under a snapshot, which then goes.
	snap := d.NewSnapshot()
	for i := range 500 {
		if err := d.Delete(key(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if m := d.Metrics(); m.Tombstones == 0 {
		t.Fatal("no tombstones kept under the snapshot")
	}
	compact(BottommostLevelCompactionSkip)
	if m := d.Metrics(); m.Tombstones == 0 {
		t.Error("Skip rewrote the last level: its tombstones are gone")
	}
	check("after Skip", 500)
	compact(BottommostLevelCompactionIfHaveCompactionFilter)
	if m := d.Metrics(); m.Tombstones != 0 {
		t.Errorf("default left %d tombstones no snapshot needs", m.Tombstones)
	}
	check("after the default", 500)

	if err := d.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{BottommostLevelCompaction: 7}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("BottommostLevelCompaction 7: %v", err)
	}
}

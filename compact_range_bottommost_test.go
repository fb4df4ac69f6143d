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

// TestCompactRangeBottommostForceOptimized compacts a range whose middle
// the level above overlaps, with Force and with ForceOptimized (on two
// databases built alike): both leave no last-level table from before the
// call and the same data, but only Force also rewrites the tables the call
// has just written into the last level; ForceOptimized rewrites the older
// tables on either side of them, as two runs, and writes fewer bytes.
func TestCompactRangeBottommostForceOptimized(t *testing.T) {
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
	value := func(i int, gen string) []byte { return []byte(fmt.Sprintf("%s-value%d-%030d", gen, i, i*7919)) }
	type result struct {
		bytesWritten uint64
		// rewrittenFresh counts the last-level tables the call wrote
		// and then rewrote in place; inPlace the in-place compactions.
		rewrittenFresh, inPlace int
	}
	run := func(b BottommostLevelCompaction) result {
		t.Helper()
		mem := vfs.NewMem()
		opts := testOptions(mem)
		opts.Logger = discardLogger()
		opts.DisableDynamicLevelBytes = true
		opts.DisableAutoCompactions = true
		lis := &recordingListener{}
		opts.EventListener = lis
		d, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3000 {
			if err := d.Put(key(i), value(i, "v1"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.CompactRange(nil, nil); err != nil {
			t.Fatal(err)
		}
		for i := 1000; i < 2000; i++ {
			if err := d.Put(key(i), value(i, "v2"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		before := lastLevelTables(d)
		if len(before) < 6 {
			t.Fatalf("%s: setup: %d last-level tables", b, len(before))
		}
		written := d.Metrics().Compact.BytesWritten
		if err := d.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{BottommostLevelCompaction: b}); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		res := result{bytesWritten: d.Metrics().Compact.BytesWritten - written}
		for _, n := range lastLevelTables(d) {
			if slices.Contains(before, n) {
				t.Errorf("%s: last-level table %s from before the call is still there", b, n)
			}
		}
		for i := range 3000 {
			want := value(i, "v1")
			if i >= 1000 && i < 2000 {
				want = value(i, "v2")
			}
			if v, err := d.Get(key(i), nil); err != nil || string(v) != string(want) {
				t.Fatalf("%s: %s: %q, %v", b, key(i), v, err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		last := opts.NumLevels - 1
		// The setup's compactions wrote the tables of before, and none in
		// place; their events may come after the call began.
		var fresh []uint64 // written into the last level by this call
		for _, c := range ofKind[CompactionInfo](lis, "CompactionCompleted") {
			if c.OutputLevel != last || c.InputLevel != last && len(c.Outputs) > 0 && slices.Contains(before, base.FileNum(c.Outputs[0])) {
				continue
			}
			if c.InputLevel == last {
				res.inPlace++
				for _, lf := range c.Inputs {
					for _, n := range lf.Files {
						if slices.Contains(fresh, n) {
							res.rewrittenFresh++
						}
					}
				}
			}
			fresh = append(fresh, c.Outputs...)
		}
		return res
	}
	force := run(BottommostLevelCompactionForce)
	optimized := run(BottommostLevelCompactionForceOptimized)
	if force.rewrittenFresh == 0 {
		t.Errorf("Force rewrote none of the tables the call wrote into the last level: %+v", force)
	}
	if optimized.rewrittenFresh != 0 || optimized.inPlace != 2 {
		t.Errorf("ForceOptimized rewrote %d tables the call wrote, in %d in-place compactions; want 0 in 2 (one run each side)", optimized.rewrittenFresh, optimized.inPlace)
	}
	if optimized.bytesWritten >= force.bytesWritten {
		t.Errorf("ForceOptimized wrote %d bytes, Force %d", optimized.bytesWritten, force.bytesWritten)
	}
	if got := BottommostLevelCompactionForceOptimized.String(); got != "kForceOptimized" {
		t.Errorf("String() = %q", got)
	}
	t.Logf("Force: %+v; ForceOptimized: %+v", force, optimized)
}

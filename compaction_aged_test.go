package shale

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// TestTTLAndPeriodicCompactions checks, on a fake clock, that Options.TTL
// moves data older than it down to the last level, that
// PeriodicCompactionSeconds rewrites last-level tables written longer ago,
// that the tables' times survive a reopen, and that the data reads the same.
func TestTTLAndPeriodicCompactions(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.DisableDynamicLevelBytes = true
	clock := newFakeClock(0)
	opts.Clock = clock
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
	for i := range 2000 {
		if err := d.Put(key(i), []byte(fmt.Sprintf("value%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 2}); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		for i := range 2000 {
			if v, err := d.Get(key(i), nil); err != nil || string(v) != fmt.Sprintf("value%d", i) {
				t.Fatalf("%s: %s: %q, %v", what, key(i), v, err)
			}
		}
	}
	levels := levelFileNums(d)
	last := len(levels) - 1
	if len(levels[2]) == 0 || len(levels[last]) != 0 {
		t.Fatalf("setup: levels %v", levels)
	}
	// Not yet due: nothing moves.
	if err := d.SetOptions(map[string]string{"ttl": "3600"}); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	if got := levelFileNums(d); !slices.Equal(got[2], levels[2]) {
		t.Fatalf("TTL compacted before the data was an hour old: %v -> %v", levels, got)
	}
	clock.Advance(2 * time.Hour)
	if err := d.SetOptions(map[string]string{"ttl": "3600"}); err != nil { // a pick now
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	levels = levelFileNums(d)
	for l := 0; l < last; l++ {
		if len(levels[l]) != 0 {
			t.Fatalf("after TTL: data older than the TTL in L%d: %v", l, levels)
		}
	}
	if len(levels[last]) == 0 {
		t.Fatalf("after TTL: nothing in the last level: %v", levels)
	}
	check("after TTL")

	// Periodic: the last-level tables are rewritten once older than the
	// period, and not again right after.
	if err := d.SetOptions(map[string]string{"ttl": "0", "periodic_compaction_seconds": "3600"}); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	before := levelFileNums(d)[last]
	clock.Advance(2 * time.Hour)
	if err := d.SetOptions(map[string]string{"periodic_compaction_seconds": "3600"}); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	after := levelFileNums(d)[last]
	for _, n := range after {
		if slices.Contains(before, n) {
			t.Fatalf("periodic compaction kept table %s written two hours ago: %v -> %v", n, before, after)
		}
	}
	check("after periodic")
	v := d.versions.Current()
	created := v.Levels[last][0].FileCreationTime
	ancester := v.Levels[last][0].OldestAncesterTime
	v.Unref()
	if want := unixSeconds(clock.Now()); created != want || ancester == 0 || ancester >= created {
		t.Fatalf("rewritten table: created %d (want %d), oldest data %d", created, want, ancester)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v = d.versions.Current()
	defer v.Unref()
	if f := v.Levels[last][0]; f.FileCreationTime != created || f.OldestAncesterTime != ancester {
		t.Fatalf("after reopen: created %d, oldest data %d; want %d, %d", f.FileCreationTime, f.OldestAncesterTime, created, ancester)
	}
}

// TestModelAgedCompactions is TestModel with TTL and periodic compactions
// firing as the operations run (setAgedCompactionTestOptions), alone and
// over tiny tables in a deeper tree, and with periodic compactions only;
// the model checks every answer, and the listener that the variant's kind
// of aged compaction ran (with both set, TTL's shorter age often rewrites
// files before any is due for its period).
func TestModelAgedCompactions(t *testing.T) {
	ops := bySize(3000, 1000, 20000)
	variants := []struct {
		name string
		set  func(*Options)
		want string
	}{
		{"base", func(o *Options) {}, "ttl"},
		{"tiny-tables-static-levels", func(o *Options) {
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
			o.MaxBytesForLevelBase = 16 << 10
			o.DisableDynamicLevelBytes = true
		}, "ttl"},
		{"periodic-only", func(o *Options) { o.TTL, o.PeriodicCompactionSeconds = 0, 2 }, "periodic"},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 5), func(t *testing.T, seed uint64) {
				lis := &recordingListener{}
				runModel(t, seed, ops, setAgedCompactionTestOptions, v.set, func(o *Options) { o.EventListener = lis })
				// runModel closed the DB: every event is in.
				reasons := map[string]int{}
				for _, c := range ofKind[CompactionInfo](lis, "CompactionCompleted") {
					if c.Err == nil {
						reasons[c.Reason]++
					}
				}
				if reasons[v.want] == 0 {
					t.Fatalf("no %s compaction ran: %v", v.want, reasons)
				}
				t.Logf("compactions by reason: %v", reasons)
			})
		})
	}
}

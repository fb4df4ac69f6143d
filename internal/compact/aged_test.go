package compact

import (
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// TestPickAged checks TTL and periodic picking on a small static tree: the
// deepest due file first, TTL before periodic, never a last-level file for
// TTL, periodic rewrites of the last level in place, and nothing when the
// options are off or the times unknown.
func TestPickAged(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	table := func(n base.FileNum, lo, hi string, ancester, created int64) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: n, Size: 10, SmallestSeq: base.SeqNum(n), LargestSeq: base.SeqNum(n),
			Smallest:           base.MakeInternalKey([]byte(lo), base.SeqNum(n), base.KindSet),
			Largest:            base.MakeInternalKey([]byte(hi), base.SeqNum(n), base.KindSet),
			OldestAncesterTime: uint64(ancester), FileCreationTime: uint64(created)}
	}
	const hour = 3600
	build := func() *manifest.Version {
		v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, 7)}
		v.Levels[1] = []*manifest.FileMetadata{table(1, "a", "c", 1_000_000-3*hour, 1_000_000-3*hour)}
		v.Levels[2] = []*manifest.FileMetadata{table(2, "d", "f", 1_000_000-2*hour, 1_000_000-hour/2)}
		v.Levels[6] = []*manifest.FileMetadata{table(6, "a", "z", 1_000_000-10*hour, 1_000_000-10*hour), table(7, "za", "zz", 0, 0)}
		return v
	}
	pick := func(ttl, periodic time.Duration, v *manifest.Version) *Compaction {
		o := Options{NumLevels: 7, MaxBytesForLevelBase: 1 << 30, TTL: ttl, Periodic: periodic, Now: func() time.Time { return now }}
		o.EnsureDefaults()
		return NewPicker(o).PickAuto(v, PickEnv{})
	}
	if c := pick(0, 0, build()); c != nil {
		t.Fatalf("off: picked %s", describeCompaction(c))
	}
	// TTL of an hour: L1 and L2 are due, L2 (deeper) first, into L3; the
	// older last-level file is never a TTL input.
	c := pick(time.Hour, 0, build())
	if c == nil || c.Reason != ReasonTTL || c.Level != 2 || c.OutputLevel != 3 || c.Inputs[0][0].FileNum != 2 {
		t.Fatalf("TTL 1h: %s", describeCompaction(c))
	}
	// TTL of 2.5 hours: only L1 is due.
	if c := pick(150*time.Minute, 0, build()); c == nil || c.Reason != ReasonTTL || c.Inputs[0][0].FileNum != 1 || c.OutputLevel != 2 {
		t.Fatalf("TTL 2.5h: %s", describeCompaction(c))
	}
	// Periodic of 5 hours: the last-level file 6, in place; file 7's time
	// is unknown and never due.
	c = pick(0, 5*time.Hour, build())
	if c == nil || c.Reason != ReasonPeriodic || c.Level != 6 || c.OutputLevel != 6 || c.Inputs[0][0].FileNum != 6 || c.IsTrivialMove() {
		t.Fatalf("periodic 5h: %s", describeCompaction(c))
	}
	// Both: TTL goes first.
	if c := pick(150*time.Minute, 5*time.Hour, build()); c == nil || c.Reason != ReasonTTL {
		t.Fatalf("TTL and periodic: %s", describeCompaction(c))
	}
	// A due file that is compacting is passed over.
	v := build()
	v.Levels[6][0].Compacting = true
	if c := pick(0, 5*time.Hour, v); c != nil {
		t.Fatalf("periodic with the due file compacting: %s", describeCompaction(c))
	}
	// Without a clock nothing is due.
	o := Options{NumLevels: 7, TTL: time.Hour, Periodic: time.Hour}
	o.EnsureDefaults()
	if c := NewPicker(o).PickAuto(build(), PickEnv{}); c != nil {
		t.Fatalf("no clock: %s", describeCompaction(c))
	}
}

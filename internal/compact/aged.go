package compact

import (
	"time"

	"github.com/shaledb/shale/internal/manifest"
)

// The reasons of TTL and periodic compactions.
const (
	// ReasonTTL: a table above the last level whose oldest data is older
	// than Options.TTL, compacted into the next level.
	ReasonTTL = "ttl"
	// ReasonPeriodic: a table written longer ago than Options.Periodic,
	// compacted into the next level or, in the last level, in place; never
	// a trivial move, which would rewrite nothing.
	ReasonPeriodic = "periodic"
)

// pickAged returns a TTL compaction or, when none is due, a periodic one
// (RocksDB's order), or nil: the oldest due file of the deepest level
// first, whose compaction conflicts with none running. A time of 0 (a
// table recorded before shale kept it) is never due.
func (p *Picker) pickAged(v *manifest.Version, baseLevel int) *Compaction {
	o := &p.opts
	if o.Now == nil || (o.TTL <= 0 && o.Periodic <= 0) {
		return nil
	}
	now := o.Now()
	if c := p.pickAgedBy(v, baseLevel, o.TTL, now, ReasonTTL, o.NumLevels-2,
		func(f *manifest.FileMetadata) uint64 { return f.OldestAncesterTime }); c != nil {
		return c
	}
	return p.pickAgedBy(v, baseLevel, o.Periodic, now, ReasonPeriodic, o.NumLevels-1,
		func(f *manifest.FileMetadata) uint64 { return f.FileCreationTime })
}

// pickAgedBy picks, in levels deepest (at most maxLevel) first, the file
// whose time (unix seconds) is furthest past age before now.
func (p *Picker) pickAgedBy(v *manifest.Version, baseLevel int, age time.Duration, now time.Time, reason string, maxLevel int, timeOf func(*manifest.FileMetadata) uint64) *Compaction {
	if age <= 0 {
		return nil
	}
	cutoff := now.Add(-age).Unix()
	if cutoff <= 0 {
		return nil
	}
	for level := maxLevel; level >= 0; level-- {
		var due *manifest.FileMetadata
		for _, f := range levelFiles(v, level) {
			t := timeOf(f)
			if f.Compacting || t == 0 || t >= uint64(cutoff) {
				continue
			}
			if due == nil || t < timeOf(due) {
				due = f
			}
		}
		if due == nil {
			continue
		}
		if c := p.pickFile(v, level, p.opts.NumLevels-1, baseLevel, due, reason); c != nil {
			return c
		}
	}
	return nil
}

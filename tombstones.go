package shale

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
)

// olderKeys answers, for a flush or compaction, whether an older version
// of a user key may exist in the tables below its output: the tables of
// levels from..last of a version, by their key ranges. It decides which
// tombstones are dropped early (compact.RunOptions.ElideTombstone).
type olderKeys struct {
	cmp  base.Compare
	from int
	// spans are, per level from `from` on, sorted disjoint key ranges that
	// cover the level's tables: the tables themselves below L0, the union
	// of the overlapping tables in L0.
	spans [][]keySpan
}

// keySpan is an inclusive key range; with endExclusive, end is excluded
// (it came from a range-deletion sentinel).
type keySpan struct {
	start, end   []byte
	endExclusive bool
}

func newOlderKeys(cmp base.Compare, v *manifest.Version, from int) *olderKeys {
	k := &olderKeys{cmp: cmp, from: from}
	for level := from; level < len(v.Levels); level++ {
		files := v.Levels[level]
		spans := make([]keySpan, 0, len(files))
		for _, f := range files {
			spans = append(spans, keySpan{f.Smallest.UserKey, f.Largest.UserKey, f.Largest.IsExclusiveSentinel()})
		}
		if level == 0 {
			spans = k.union(spans)
		}
		k.spans = append(k.spans, spans)
	}
	return k
}

// union sorts overlapping spans and merges them into disjoint ones.
func (k *olderKeys) union(spans []keySpan) []keySpan {
	sort.Slice(spans, func(i, j int) bool { return k.cmp(spans[i].start, spans[j].start) < 0 })
	var out []keySpan
	for _, s := range spans {
		if n := len(out); n > 0 {
			last := &out[n-1]
			c := k.cmp(s.start, last.end)
			if c < 0 || (c == 0 && !last.endExclusive) {
				if e := k.cmp(s.end, last.end); e > 0 || (e == 0 && !s.endExclusive) {
					last.end, last.endExclusive = s.end, s.endExclusive
				}
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// mayHold reports whether some table below may hold key.
func (k *olderKeys) mayHold(key []byte) bool {
	for _, spans := range k.spans {
		// The first span that does not end before key.
		i := sort.Search(len(spans), func(i int) bool {
			c := k.cmp(spans[i].end, key)
			return c > 0 || (c == 0 && !spans[i].endExclusive)
		})
		if i < len(spans) && k.cmp(spans[i].start, key) <= 0 {
			return true
		}
	}
	return false
}

// mayOverlap reports whether some table below, of v, overlaps [start, end].
func (k *olderKeys) mayOverlap(v *manifest.Version, start, end []byte) bool {
	for level := k.from; level < len(v.Levels); level++ {
		if len(v.Overlaps(k.cmp, level, start, end)) > 0 {
			return true
		}
	}
	return false
}

// rangeDeletionsBytes estimates the bytes of the tables of v older than a
// new table of level that its range tombstones (disjoint [start, end)
// ranges, by start) delete: tables entirely inside a range count whole,
// tables partly inside count the data between the range's ends as their
// index places them. For a flush (level 0) every table of v is older; for
// a compaction the tables of the levels below its output.
func (d *DB) rangeDeletionsBytes(v *manifest.Version, level int, ranges [][2][]byte) uint64 {
	if v == nil {
		return 0
	}
	cmp := d.cmp.Compare
	// Adjacent fragments make one range, so that a table spanning both
	// counts whole.
	merged := make([][2][]byte, 0, len(ranges))
	for _, r := range ranges {
		if n := len(merged); n > 0 && cmp(merged[n-1][1], r[0]) >= 0 {
			if cmp(r[1], merged[n-1][1]) > 0 {
				merged[n-1][1] = r[1]
			}
			continue
		}
		merged = append(merged, r)
	}
	from := level + 1
	if level == 0 {
		from = 0
	}
	var total uint64
	for l := from; l < len(v.Levels); l++ {
		for _, r := range merged {
			for _, f := range v.Overlaps(cmp, l, r[0], r[1]) {
				total += d.bytesInRange(f, r[0], r[1])
			}
		}
	}
	return total
}

// bytesInRange estimates the bytes of table f holding keys in [start, end)
// (nil end: no upper bound).
func (d *DB) bytesInRange(f *manifest.FileMetadata, start, end []byte) uint64 {
	cmp := d.cmp.Compare
	startsIn := cmp(f.Smallest.UserKey, start) >= 0
	endsIn := end == nil || cmp(f.Largest.UserKey, end) < 0 || (f.Largest.IsExclusiveSentinel() && bytes.Equal(f.Largest.UserKey, end))
	if startsIn && endsIn {
		return f.Size
	}
	if end != nil && cmp(f.Smallest.UserKey, end) >= 0 {
		return 0 // f only touches end, which the range excludes
	}
	t, err := d.fileCache.findTable(f.FileNum)
	if err != nil {
		return 0 // an estimate: a table that cannot be read counts nothing
	}
	defer t.release()
	// A range to the end of the file takes its tail too: the last data
	// block and what follows the data (index, filter, properties).
	lo, hi := uint64(0), f.Size
	if !startsIn {
		lo = t.reader.ApproximateOffset(start)
	}
	if !endsIn {
		hi = t.reader.ApproximateOffset(end)
	}
	if hi <= lo {
		return 0
	}
	return hi - lo
}

// recordDrops counts in Statistics what a flush or compaction into level
// dropped. Tombstones dropped above the last level are those dropped early,
// because nothing older than them could lie below.
func (d *DB) recordDrops(s compact.Stats, level int) {
	d.stats.secondaryDropped.Add(uint64(s.DroppedBySecondary))
	d.stats.secondaryToDelete.Add(uint64(s.SecondaryToDelete))
	st := d.opts.Statistics
	if st == nil {
		return
	}
	st.add(TickerCompactionKeyDropNewerEntry, uint64(s.DroppedShadowed))
	st.add(TickerCompactionKeyDropRangeDel, uint64(s.DroppedByRangeDel))
	st.add(TickerCompactionKeyDropObsolete, uint64(s.DroppedTombstones))
	if level < d.opts.NumLevels-1 {
		st.add(TickerCompactionOptimizedDelDropObsolete, uint64(s.DroppedTombstones))
	}
}

func countMarked(metas []*manifest.FileMetadata) (n int) {
	for _, m := range metas {
		if m.MarkedForCompaction {
			n++
		}
	}
	return n
}

// WaitForCompactOptions change what WaitForCompact does (RocksDB's
// WaitForCompactOptions).
type WaitForCompactOptions struct {
	// Flush flushes the memtables first (flush), so that their data takes
	// part in the compactions waited for. Default false.
	Flush bool
	// Timeout bounds the wait (timeout); 0 waits as long as it takes. A
	// wait that times out returns an error matching
	// context.DeadlineExceeded.
	Timeout time.Duration
}

// WaitForCompact waits until no flush or compaction runs or waits to run:
// every compaction the picker would start has run, including those that
// the ones waited for made necessary (RocksDB's WaitForCompact), and the
// files they made obsolete are deleted, except those an open iterator or
// a running read still holds, or a checkpoint being made holds back. With
// Options.DisableAutoCompactions it waits only for the running ones. It
// returns the background error if one stops the DB, and ErrClosed when the
// DB is closed meanwhile. o may be nil.
func (d *DB) WaitForCompact(o *WaitForCompactOptions) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.readOnly {
		return nil // a read-only DB runs no background work
	}
	var opts WaitForCompactOptions
	if o != nil {
		opts = *o
	}
	if opts.Flush {
		if err := d.Flush(); err != nil {
			return err
		}
	}
	var deadline time.Time
	if opts.Timeout > 0 {
		deadline = time.Now().Add(opts.Timeout)
		t := time.AfterFunc(opts.Timeout, func() {
			d.mu.Lock()
			d.mu.compact.cond.Broadcast()
			d.mu.Unlock()
		})
		defer t.Stop()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		switch {
		case d.mu.closing:
			return ErrClosed
		case d.mu.bgErr != nil:
			return fmt.Errorf("%w: %w", ErrReadOnly, d.mu.bgErr)
		}
		c := &d.mu.compact
		if !c.flushing && len(d.mu.mem.queue) == 0 && c.running == 0 && c.manual == 0 {
			// Idle: start whatever the picker finds; done if it finds
			// nothing.
			d.maybeScheduleLocked()
			if c.running == 0 && !c.flushing {
				// The files the work made obsolete go before the return,
				// not when the deleting goroutine next runs.
				d.mu.Unlock()
				d.deleteObsoleteFiles(false)
				d.mu.Lock()
				return nil
			}
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return fmt.Errorf("shale: WaitForCompact: %w after %v", context.DeadlineExceeded, opts.Timeout)
		}
		c.cond.Wait()
	}
}

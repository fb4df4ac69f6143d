package shale

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/sstable"
)

// DeleteBySecondaryRange deletes every entry written before the call whose
// secondary attribute (Options.SecondaryDeleteKey) is in [lo, hi): it takes
// a seqnum S through the commit pipeline and is equivalent to deleting, at
// S and atomically, every key whose newest version below S is a Set with
// such an attribute (older versions never resurface). Snapshots taken
// before the call still see the entries; reads after it do not. It is
// always a synced write, whatever wo says: when it returns, the tombstone
// is in the MANIFEST and every write before it in a synced WAL or a table
// (writes made with DisableWAL excepted). lo == hi is an empty range:
// nothing is deleted. It fails with ErrInvalidArgument when
// SecondaryDeleteKey is nil or lo > hi.
func (d *DB) DeleteBySecondaryRange(lo, hi uint64, wo *WriteOptions) error {
	if d.opts.SecondaryDeleteKey == nil {
		if err := d.checkOpen(); err != nil {
			return err
		}
		return base.InvalidArgumentf("shale: DeleteBySecondaryRange needs Options.SecondaryDeleteKey to be set")
	}
	switch {
	case lo == hi:
		// Nothing to delete, but a synced write all the same.
		_, err := d.commit(&writer{syncOnly: true})
		return err
	case lo > hi:
		return base.InvalidArgumentf("shale: DeleteBySecondaryRange lo %d must not be above hi %d", lo, hi)
	}
	_ = wo
	w, err := d.commit(&writer{secondary: &manifest.SecondaryTombstone{Lo: lo, Hi: hi}})
	if err != nil || w.rotated == nil {
		return err
	}
	// The memtable holds entries older than the tombstone: it is switched
	// (and flushed in the background, applying the tombstone), so that the
	// tombstone can retire once compactions have applied it to the tables,
	// instead of waiting for the memtable to fill. The delete is done
	// whatever happens to the switch (a failure stops later writes).
	if _, err := d.commit(&writer{rotateOnly: w.rotated, flushReason: FlushReasonSecondaryDelete}); err != nil {
		d.logger.Warn("switching the memtable after a secondary delete failed", "err", err)
	}
	return nil
}

// commitSecondaryLocked commits the secondary tombstone of w, the leader:
// it takes the next seqnum, records the tombstone in the MANIFEST, and
// publishes it to readers before the seqnum becomes visible (see
// loadReadStateAt). d.mu is held on entry and exit but released for the
// IO; leadership keeps other writers out meanwhile, so every entry below
// the seqnum is in a memtable or a table already.
func (d *DB) commitSecondaryLocked(w *writer) error {
	seq := d.mu.lastSeq + 1
	d.mu.lastSeq = seq
	t := *w.secondary
	t.Seq = seq
	if mem := d.mu.mem.mutable; !mem.Empty() {
		w.rotated = mem // for DeleteBySecondaryRange, which switches it
	}
	// The WAL is synced first: once the tombstone is durable, so is every
	// write before it (older WALs were synced when they were closed), and a
	// crash leaves a prefix of the writes, never the tombstone without the
	// entries it was meant to follow.
	if err := d.syncWALLocked("secondary tombstone " + t.String()); err != nil {
		return err
	}
	d.mu.Unlock()
	edit := &manifest.VersionEdit{AddedSecondaryTombstones: []manifest.SecondaryTombstone{t}}
	err := d.logAndApply(edit, seq)
	d.mu.Lock()
	if err != nil {
		// The edit may be durable: stop writes until Resume, so that what
		// readers see now cannot differ from what a reopen shows.
		d.setBackgroundErrorLocked(BackgroundErrorManifestWrite, fmt.Errorf("shale: recording secondary tombstone %s: %w", t, err))
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	d.mu.secondaryLast = seq
	d.publishReadStateLocked()
	d.secondarySeq.Store(uint64(seq))
	d.visibleSeq.Store(uint64(seq))
	// The tables the tombstone covers are compacted first.
	d.maybeScheduleLocked()
	return nil
}

// syncWALLocked syncs the current WAL, so that every write committed before
// is durable, for what (named in the error). d.mu is held on entry and exit
// but released for the IO; the caller leads the commit queue. A failure
// stops writes (walFailedLocked) and returns ErrReadOnly.
func (d *DB) syncWALLocked(what string) error {
	logw := d.mu.log.w
	mem := d.mu.mem.mutable
	d.mu.Unlock()
	err := syncMemBlobs(mem)
	if err == nil {
		err = logw.Flush(true)
	}
	d.mu.Lock()
	if err != nil {
		d.walFailedLocked(logw, fmt.Errorf("shale: syncing the WAL before %s: %w", what, err))
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return nil
}

// loadReadStateAt returns the current read state with a reference (nil
// once closed) and the seqnum a read with ro sees, read in that order. A
// read state published before a secondary tombstone that the seqnum sees
// is replaced: the tombstone is published before its seqnum is visible,
// so the retry finds it. hook, when set (by tests), runs between the two.
func (d *DB) loadReadStateAt(ro *ReadOptions, hook func()) (*readState, base.SeqNum) {
	if d.follower != nil {
		return d.loadFollowerReadState(ro)
	}
	for {
		rs := d.loadReadState()
		if rs == nil {
			return nil, 0
		}
		if hook != nil {
			hook()
		}
		seq := d.readSeq(ro)
		if base.SeqNum(d.secondarySeq.Load()) <= rs.secondaryUpTo {
			return rs, seq
		}
		rs.unref()
	}
}

// secondaryFilter applies the live secondary tombstones a read at snap
// sees to the newest visible version of a key. A nil filter deletes
// nothing: the case of every read while no tombstone is live.
type secondaryFilter struct {
	tombs []manifest.SecondaryTombstone
	attr  func(key, value []byte) (uint64, bool)
	// limit is snap+1: a tombstone at snap is seen.
	limit base.SeqNum
}

// newSecondaryFilter returns the filter of a read of rs at snap, nil when
// no tombstone it sees is live.
func (d *DB) newSecondaryFilter(rs *readState, snap base.SeqNum) *secondaryFilter {
	tombs := rs.secondary
	n := 0
	for n < len(tombs) && tombs[n].Seq <= snap {
		n++
	}
	if n == 0 {
		return nil
	}
	return &secondaryFilter{tombs: tombs[:n], attr: d.opts.SecondaryDeleteKey, limit: snap + 1}
}

// Deletes reports whether a tombstone deletes the Set (key, value) at seq,
// the newest version of key the read sees.
func (f *secondaryFilter) Deletes(key, value []byte, seq base.SeqNum) bool {
	if f == nil || seq >= f.tombs[len(f.tombs)-1].Seq {
		return false
	}
	attr, ok := f.attr(key, value)
	if !ok {
		return false
	}
	for _, t := range f.tombs {
		if t.Deletes(attr, seq, f.limit) {
			return true
		}
	}
	return false
}

// deletes is Deletes for an entry of any kind: only Sets have attributes.
func (f *secondaryFilter) deletes(key, value []byte, kind base.Kind, seq base.SeqNum) bool {
	return f != nil && kind == base.KindSet && f.Deletes(key, value, seq)
}

// secondaryCollector records the range of secondary attributes of a
// table's Sets, for its FileMetadata and its properties.
type secondaryCollector struct {
	attr func(key, value []byte) (uint64, bool)
	r    manifest.SecondaryRange
}

// The table properties holding a table's secondary attribute range (only
// written when some entry has an attribute).
const (
	propSecondaryMin   = "shale.secondary.min"
	propSecondaryMax   = "shale.secondary.max"
	propSecondaryCount = "shale.secondary.count"
)

func (c *secondaryCollector) Name() string { return "shale.SecondaryDeleteKey" }

func (c *secondaryCollector) Add(key base.InternalKey, value []byte) {
	if key.Kind() != base.KindSet {
		return
	}
	a, ok := c.attr(key.UserKey, value)
	if !ok {
		return
	}
	if c.r.Count == 0 || a < c.r.Min {
		c.r.Min = a
	}
	if c.r.Count == 0 || a > c.r.Max {
		c.r.Max = a
	}
	c.r.Count++
}

func (c *secondaryCollector) Finish(props map[string]string) {
	if c.r.Count == 0 {
		return
	}
	props[propSecondaryMin] = strconv.FormatUint(c.r.Min, 10)
	props[propSecondaryMax] = strconv.FormatUint(c.r.Max, 10)
	props[propSecondaryCount] = strconv.FormatUint(c.r.Count, 10)
}

// checkSecondaryDeleteKey refuses a database holding live secondary
// tombstones when Options.SecondaryDeleteKey is nil: reads could not apply
// them, and deleted entries would show again.
func (d *DB) checkSecondaryDeleteKey() error {
	v := d.versions.Current()
	defer v.Unref()
	tombs := v.SecondaryTombstones
	if len(tombs) == 0 {
		return nil
	}
	if d.opts.SecondaryDeleteKey == nil {
		return base.InvalidArgumentf("shale: the database holds %d secondary tombstones (DeleteBySecondaryRange); Options.SecondaryDeleteKey must be set to open it", len(tombs))
	}
	return nil
}

// setSecondary gives a flush or compaction the live secondary tombstones
// and returns the seqnum its outputs have applied in full
// (FileMetadata.SecondaryApplied): that of the newest tombstone no
// snapshot separates from the data below it (Run deletes an entry only in
// the tombstone's stripe), 0 when none.
func (d *DB) setSecondary(ro *compact.RunOptions, tombs []manifest.SecondaryTombstone) base.SeqNum {
	if len(tombs) == 0 || d.opts.SecondaryDeleteKey == nil {
		return 0
	}
	ro.SecondaryTombstones, ro.SecondaryDeleteKey = tombs, d.opts.SecondaryDeleteKey
	var applied base.SeqNum
	for _, t := range tombs {
		if len(ro.Snapshots) > 0 && ro.Snapshots[0] < t.Seq {
			break
		}
		applied = t.Seq
	}
	return applied
}

// stripeOf returns the index of the smallest snapshot >= seq (compact.Run's
// stripes).
func stripeOf(snaps []base.SeqNum, seq base.SeqNum) int {
	return sort.Search(len(snaps), func(i int) bool { return snaps[i] >= seq })
}

// secondaryDroppedInputs returns the inputs of a compaction that a live
// secondary tombstone deletes whole, so that the compaction drops them
// without reading them: every entry is a Set with an attribute in the
// tombstone's range, older than the tombstone and in its snapshot stripe;
// the file has no range tombstones; and no older version of its keys can
// lie below the output level or in an input that is not dropped too (which
// would show again).
func (d *DB) secondaryDroppedInputs(inputs []*manifest.FileMetadata, v *manifest.Version, snaps []base.SeqNum, older *olderKeys) map[*manifest.FileMetadata]bool {
	tombs := v.SecondaryTombstones
	if len(tombs) == 0 || d.opts.SecondaryDeleteKey == nil {
		return nil
	}
	var dropped map[*manifest.FileMetadata]bool
	for _, f := range inputs {
		if f.NumRangeDeletions > 0 || f.Secondary.Count == 0 || f.Secondary.Count != f.NumEntries {
			continue
		}
		for _, t := range tombs {
			if f.Secondary.Within(t.Lo, t.Hi) && f.LargestSeq < t.Seq &&
				stripeOf(snaps, f.SmallestSeq) == stripeOf(snaps, t.Seq) &&
				!older.mayOverlap(v, f.Smallest.UserKey, f.Largest.UserKey) {
				if dropped == nil {
					dropped = make(map[*manifest.FileMetadata]bool)
				}
				dropped[f] = true
				break
			}
		}
	}
	cmp := d.cmp.Compare
	for changed := len(dropped) > 0; changed; {
		changed = false
		for f := range dropped {
			for _, g := range inputs {
				if dropped[g] || g.SmallestSeq > f.LargestSeq ||
					cmp(g.Smallest.UserKey, f.Largest.UserKey) > 0 || cmp(g.Largest.UserKey, f.Smallest.UserKey) < 0 {
					continue
				}
				delete(dropped, f)
				changed = true
				break
			}
		}
	}
	return dropped
}

// retirableSecondaryLocked returns the live secondary tombstones that no
// table of the current version and no memtable may hold an entry of. d.mu
// is held.
func (d *DB) retirableSecondaryLocked() []base.SeqNum {
	v := d.readState.val.version
	var out []base.SeqNum
	mems := append([]*memTable{d.mu.mem.mutable}, d.mu.mem.queue...)
tombs:
	for _, t := range v.SecondaryTombstones {
		for _, m := range mems {
			if m.firstSeq < t.Seq && !m.Empty() {
				continue tombs
			}
		}
		for _, files := range v.Levels {
			for _, f := range files {
				if f.MayHoldDeletedBy(t) {
					continue tombs
				}
			}
		}
		out = append(out, t.Seq)
	}
	return out
}

// retireSecondaryTombstones removes from the version the secondary
// tombstones that nothing needs any more (after a flush or compaction
// installed its tables). One call at a time records retirements; a call
// while another records returns at once, and that one looks again.
func (d *DB) retireSecondaryTombstones() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.readOnly || d.mu.secondaryRetiring {
		return
	}
	d.mu.secondaryRetiring = true
	defer func() { d.mu.secondaryRetiring = false }()
	for !d.mu.closing && d.mu.bgErr == nil && d.readState.val != nil {
		retire := d.retirableSecondaryLocked()
		if len(retire) == 0 {
			return
		}
		d.mu.Unlock()
		err := d.versions.LogAndApply(&manifest.VersionEdit{RetiredSecondaryTombstones: retire})
		d.mu.Lock()
		if err != nil {
			d.setBackgroundErrorLocked(BackgroundErrorManifestWrite, fmt.Errorf("shale: retiring secondary tombstones: %w", err))
			return
		}
		d.publishReadStateLocked()
		d.logger.Info("retired secondary tombstones", "seqnums", retire)
	}
}

// secondarySkipBlock returns the SkipBlock of compaction input f (nil when
// no secondary tombstone is live): a data block is skipped unread when
// every entry is a Set with an attribute inside a live tombstone's range,
// older than it and in its snapshot stripe, no key of the block has
// versions in the next block (BlockProps.Continues), and no older
// version of its keys can lie below the output level or in another input
// not dropped (secondaryDroppedInputs' rules, for the block's key range).
func (d *DB) secondarySkipBlock(f *manifest.FileMetadata, inputs []*manifest.FileMetadata, dropped map[*manifest.FileMetadata]bool,
	v *manifest.Version, snaps []base.SeqNum, older *olderKeys) func(*sstable.BlockProps, base.InternalKey, bool, base.InternalKey) bool {
	tombs := v.SecondaryTombstones
	if len(tombs) == 0 || d.opts.SecondaryDeleteKey == nil {
		return nil
	}
	cmp := d.cmp.Compare
	return func(p *sstable.BlockProps, lower base.InternalKey, hasLower bool, sep base.InternalKey) bool {
		if p.Entries == 0 || p.Attributed != p.Entries || p.Continues {
			return false
		}
		covered := false
		for _, t := range tombs {
			if p.AttrMin >= t.Lo && p.AttrMax < t.Hi && p.MaxSeq < t.Seq &&
				stripeOf(snaps, p.MinSeq) == stripeOf(snaps, t.Seq) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
		// The block's user keys lie in [start, end].
		start, end := f.Smallest.UserKey, sep.UserKey
		if hasLower {
			start = lower.UserKey
		}
		if older.mayOverlap(v, start, end) {
			return false
		}
		for _, g := range inputs {
			if g == f || dropped[g] || g.SmallestSeq > p.MaxSeq ||
				cmp(g.Smallest.UserKey, end) > 0 || cmp(g.Largest.UserKey, start) < 0 {
				continue
			}
			return false
		}
		return true
	}
}

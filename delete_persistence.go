package shale

import (
	"math"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
)

// Delete persistence (Options.DeletePersistenceThreshold, Lethe's FADE).
//
// Tombstones are dated when they are committed (memTable.oldestTombstone),
// a flush gives the memtable's date to its tables, and a compaction gives
// its outputs the oldest date of its inputs (FileMetadata.OldestTombstoneTime,
// kept in the MANIFEST). compact.ComputeDeadlines splits the threshold over
// the levels a tombstone passes; the picker takes files past their level's
// deadline first. A deleted key written again keeps its tombstone behind the
// new version until the tombstone reaches the data it deletes
// (compact.RunOptions.KeepShadowedTombstones): dropping it as hidden, as a
// compaction does without the bound, would leave that data below with
// nothing to push it out. What this file adds is the clock: one timer, armed for the
// earliest deadline no pick has taken yet, so that expiry is noticed while no
// writes arrive, without polling.
//
// The timer is re-armed after every scheduling pass (maybeScheduleLocked,
// which every flush, compaction, memtable switch and snapshot release runs)
// and when a memtable gets its first tombstone. It is armed for
//   - the mutable memtable's deadline, even if past: its call rotates the
//     memtable through the commit queue, and the flush that follows removes
//     the WAL holding it (immutable memtables are being flushed already);
//   - the earliest future deadline of a table not being compacted. Tables
//     already past their deadline that the picker could not take wait for
//     the event that frees them: a compaction ending (it conflicted with a
//     running one, or the job budget was used) or a snapshot's release (a
//     bottom-level file a snapshot still needs).
//   - the earliest future deadline of a blob file (below). Blob files past
//     theirs wait, as tables do, for a compaction's end.
// It is not armed while the DB is closed, read-only or in the background
// error state (Resume schedules again).
//
// Blob files. A compaction that drops a value's blob index leaves the value
// in its blob file, as garbage, until the file is deleted. So every
// compaction dates the garbage it records (blobGarbageDate: no later than
// now, nor than any tombstone that may delete what it dropped), a blob file
// is dated by its oldest garbage (manifest.BlobFileMetadata.
// OldestGarbageTime), and once that date is compact.Deadlines.Blob old the
// picker compacts the tables referencing the file (compact.
// ReasonBlobExpired), each compaction relocating the file's values it reads
// (expiredBlobFiles, blob_gc.go) until none references it and the edit
// deletes it. With values in blob files the levels share the threshold less
// a tenth, which is left for those compactions.

// deadlineState is the timer's state, under d.mu.
type deadlineState struct {
	timer ClockTimer // nil when none is armed
	at    int64      // when timer fires, unix nanoseconds
	gen   uint64     // counts the timers armed; a call clears only its own
	// flushRequested is the memtable a deadline call is rotating; its
	// deadline does not arm the timer again meanwhile.
	flushRequested *memTable
}

// deadlines returns the delete persistence deadlines of the current
// version. d.mu is held.
func (d *DB) deadlinesLocked() compact.Deadlines {
	v := d.versions.Current()
	defer v.Unref()
	co := d.compactOptions()
	return compact.ComputeDeadlines(v, &co)
}

// armDeadlineTimerLocked arms the timer for the next deadline (see above),
// replacing an armed timer for another time. d.mu is held.
func (d *DB) armDeadlineTimerLocked() {
	o := d.mutableOptions()
	if o.DeletePersistenceThreshold <= 0 || d.readOnly || d.closed.Load() || d.mu.closing || d.mu.bgErr != nil {
		return
	}
	v := d.versions.Current()
	co := d.compactOptions()
	dl := compact.ComputeDeadlines(v, &co)
	now := d.clock.Now().UnixNano()
	next := int64(math.MaxInt64)
	if m := d.mu.mem.mutable; m.oldestTombstone != 0 && d.mu.deadline.flushRequested != m {
		next = m.oldestTombstone + int64(dl.Memtable)
	}
	if !o.DisableAutoCompactions {
		for level, files := range v.Levels {
			for _, f := range files {
				if at, ok := dl.ExpiresAt(f, level); ok && !f.Compacting && at > now && at < next {
					next = at
				}
			}
		}
		for _, b := range v.BlobFiles {
			if at, ok := dl.BlobExpiresAt(b); ok && at > now && at < next {
				next = at
			}
		}
	}
	v.Unref()
	st := &d.mu.deadline
	if st.timer != nil && st.at == next {
		return
	}
	d.stopDeadlineTimerLocked()
	if next == math.MaxInt64 {
		return
	}
	st.gen++
	gen := st.gen
	st.at = next
	d.deadlineCalls.Add(1)
	st.timer = d.clock.AfterFunc(time.Duration(max(next-now, 0)), func() { d.deadlineReached(gen) })
}

// stopDeadlineTimerLocked stops the armed timer, if any. d.mu is held.
func (d *DB) stopDeadlineTimerLocked() {
	st := &d.mu.deadline
	if st.timer == nil {
		return
	}
	if st.timer.Stop() {
		d.deadlineCalls.Done() // its call will not run
	}
	st.timer = nil
}

// deadlineReached is the timer's call: it flushes the mutable memtable when
// its deadline has come and schedules compactions, which take the expired
// tables and arm the timer again.
func (d *DB) deadlineReached(gen uint64) {
	defer d.deadlineCalls.Done()
	d.mu.Lock()
	st := &d.mu.deadline
	if st.gen == gen {
		st.timer = nil
	}
	if d.mu.closing {
		d.mu.Unlock()
		return
	}
	m := d.mu.mem.mutable
	due := m.oldestTombstone != 0 && st.flushRequested != m &&
		d.clock.Now().UnixNano() >= m.oldestTombstone+int64(d.deadlinesLocked().Memtable)
	if due {
		st.flushRequested = m
	}
	d.maybeScheduleLocked()
	d.mu.Unlock()
	if !due {
		return
	}
	// Through the commit queue, as Flush, but without waiting for the
	// flush: rotation is all that only the commit leader may do.
	_, err := d.commit(&writer{rotateOnly: m, flushReason: FlushReasonDeletePersistence})
	d.mu.Lock()
	if st.flushRequested == m {
		st.flushRequested = nil
	}
	if err != nil && !d.closed.Load() {
		d.logger.Warn("flushing a memtable at its delete persistence deadline failed", "err", err)
	}
	d.maybeScheduleLocked()
	d.mu.Unlock()
}

// expiredBlobFiles returns the blob files of v past their delete
// persistence deadline under o (nil when there are none): every compaction
// relocates their values.
func (d *DB) expiredBlobFiles(v *manifest.Version, o *Options) map[base.FileNum]bool {
	if o.DeletePersistenceThreshold <= 0 || len(v.BlobFiles) == 0 {
		return nil
	}
	co := d.compactOptionsOf(o)
	dl := compact.ComputeDeadlines(v, &co)
	now := d.clock.Now().UnixNano()
	var expired map[base.FileNum]bool
	for _, b := range v.BlobFiles {
		if at, ok := dl.BlobExpiresAt(b); ok && now >= at {
			if expired == nil {
				expired = map[base.FileNum]bool{}
			}
			expired[b.FileNum] = true
		}
	}
	return expired
}

// blobGarbageDate returns the date (unix nanoseconds, at least 1) of the
// blob garbage compaction c records: the oldest of now and of the
// tombstone dates of the memtables and of the tables of the output level
// and above that overlap c's keys (a table whose date is unknown counts
// as due: 1). A value c drops is deleted, if ever, by a tombstone newer
// than what shadows it; that tombstone is among c's inputs, above them, in
// a memtable, or not yet written, so the date is no later than the
// tombstone's, and the file's deadline no later than the tombstone's
// bound. This covers the versions a key had before its delete, dropped as
// overwritten before the tombstone came near them. Under d.mu the
// memtables, then the version: a flush installs its tables before it
// removes its memtable, so its tombstones are in one or the other.
func (d *DB) blobGarbageDate(c *compact.Compaction) uint64 {
	d.mu.Lock()
	date := d.clock.Now().UnixNano()
	note := func(t int64) {
		if t != 0 && t < date {
			date = t
		}
	}
	note(d.mu.mem.mutable.oldestTombstone)
	for _, m := range d.mu.mem.queue {
		note(m.oldestTombstone)
	}
	v := d.versions.Current()
	d.mu.Unlock()
	defer v.Unref()
	for level := 0; level <= c.OutputLevel && level < len(v.Levels); level++ {
		for _, f := range v.Overlaps(d.cmp.Compare, level, c.Smallest, c.Largest) {
			if compact.HasTombstones(f) {
				note(max(int64(min(f.OldestTombstoneTime, math.MaxInt64)), 1))
			}
		}
	}
	return uint64(max(date, 1))
}

// DeletePersistenceMetrics says how far tombstones are from their
// deadlines (Options.DeletePersistenceThreshold).
type DeletePersistenceMetrics struct {
	// Threshold is Options.DeletePersistenceThreshold (0: off).
	Threshold time.Duration
	// OldestTombstoneAge is the age, by Options.Clock, of the oldest
	// tombstone in a table or a memtable (whose WAL holds it too), or, with
	// the threshold set, of the oldest garbage of a blob file (dated as
	// delete_persistence.go says: no later than the tombstone that deleted
	// it); 0 when there is none. Tables whose tombstones' date is unknown
	// (written by a shale that did not record it) are left out here and
	// count in FilesPastTTL.
	OldestTombstoneAge time.Duration
	// FilesPastTTL counts the tables whose oldest tombstone is older than
	// their level's deadline and the blob files whose oldest garbage is
	// older than BlobTTL, MemtablesPastTTL the memtables older than
	// theirs. Both are 0 with the threshold off. A file stays past its
	// deadline while its compaction waits (for a background slot, for a
	// running compaction of an overlapping file, or for the release of a
	// snapshot that still sees what a table's tombstones delete).
	FilesPastTTL, MemtablesPastTTL int
	// MemtableTTL is the memtable's share of the threshold, LevelTTLs the
	// age of its oldest tombstone at which a table of each level is past
	// its deadline (the running sum of the levels' shares: the whole
	// threshold at the bottom level, or nine tenths of it when values may
	// be in blob files), and BlobTTL the age of its oldest garbage at
	// which a blob file is (that of the bottom level). Zero and nil with
	// the threshold off.
	MemtableTTL time.Duration
	LevelTTLs   []time.Duration
	BlobTTL     time.Duration
}

// deletePersistenceMetrics fills m.DeletePersistence for rs.
func (d *DB) deletePersistenceMetrics(rs *readState) DeletePersistenceMetrics {
	o := d.mutableOptions() // once: the threshold and the deadlines agree
	pm := DeletePersistenceMetrics{Threshold: o.DeletePersistenceThreshold}
	co := d.compactOptionsOf(o)
	dl := compact.ComputeDeadlines(rs.version, &co)
	now := d.clock.Now().UnixNano()
	oldest := int64(0)
	note := func(t int64) {
		if t != 0 && (oldest == 0 || t < oldest) {
			oldest = t
		}
	}
	for level, files := range rs.version.Levels {
		for _, f := range files {
			if !compact.HasTombstones(f) {
				continue
			}
			note(int64(f.OldestTombstoneTime))
			if at, ok := dl.ExpiresAt(f, level); ok && now >= at {
				pm.FilesPastTTL++
			}
		}
	}
	for _, b := range rs.version.BlobFiles {
		if at, ok := dl.BlobExpiresAt(b); ok {
			note(int64(min(b.OldestGarbageTime, math.MaxInt64)))
			if now >= at {
				pm.FilesPastTTL++
			}
		}
	}
	d.mu.Lock()
	mems := append([]*memTable{d.mu.mem.mutable}, d.mu.mem.queue...)
	ts := make([]int64, len(mems))
	for i, m := range mems {
		ts[i] = m.oldestTombstone
	}
	d.mu.Unlock()
	for _, t := range ts {
		note(t)
		if t != 0 && dl.Threshold > 0 && now >= t+int64(dl.Memtable) {
			pm.MemtablesPastTTL++
		}
	}
	if oldest != 0 {
		pm.OldestTombstoneAge = time.Duration(max(now-oldest, 0))
	}
	if dl.Threshold > 0 {
		pm.MemtableTTL = dl.Memtable
		pm.LevelTTLs = dl.Levels
		pm.BlobTTL = dl.Blob
	}
	return pm
}

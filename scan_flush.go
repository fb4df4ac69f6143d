package shale

// Flushes asked for by iterators (Options.MemtableOpScanFlushTrigger).
//
// A run of tombstones or overwritten versions in the mutable memtable is
// walked again by every scan that meets it, until the memtable fills and
// flushes — which, for a memtable that received a burst of deletes and
// then only reads, may be never. An iterator whose single move stepped over
// more than the trigger's count of memtable entries asks for the memtable
// to be flushed; delete-aware compaction then drops the tombstones and what
// they delete. The request rotates the memtable through the commit queue
// in the background, as a delete persistence deadline does
// (delete_persistence.go), and never blocks the iterator.

// memSteps is what the DB's iterator reads of its mutable memtable's
// iterator: the counter of its steps (memtable.iterator.StepCounter).
type memSteps interface{ StepCounter() *uint64 }

// requestScanFlush flushes m, the memtable an iterator found costly to
// scan, unless it was asked already, is no longer mutable, or the DB is
// closing or read-only.
func (d *DB) requestScanFlush(m *memTable) {
	if !m.scanFlushRequested.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	if d.readOnly || d.mu.closing || d.mu.bgErr != nil || d.mu.mem.mutable != m {
		d.mu.Unlock()
		return
	}
	d.scanFlushCalls.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.scanFlushCalls.Done()
		d.stats.scanFlushes.Add(1)
		_, err := d.commit(&writer{rotateOnly: m, flushReason: FlushReasonMemtableScan})
		d.mu.Lock()
		if err != nil && !d.mu.closing {
			d.logger.Warn("flushing a memtable an iterator found costly to scan failed", "err", err)
		}
		d.maybeScheduleLocked()
		d.mu.Unlock()
	}()
}

// noteScan checks, after a move of i, how many entries of the mutable
// memtable the move stepped over, and asks for its flush past the trigger.
// It returns ok, the move's result.
// It runs after every move, so it is kept small enough to inline: a
// pointer load and a comparison, no call unless the trigger fires.
func (i *Iterator) noteScan(ok bool) bool {
	if p := i.memSteps; p != nil {
		n := *p
		if n > i.memStepsDue {
			i.requestScanFlush()
		}
		i.memStepsDue = n + i.memStepsLimit
	}
	return ok
}

// requestScanFlush asks for the flush of the memtable i stepped over too
// much of, once per iterator.
func (i *Iterator) requestScanFlush() {
	i.db.requestScanFlush(i.rs.mem)
	i.memSteps = nil
}

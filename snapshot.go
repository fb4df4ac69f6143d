package shale

import (
	"slices"
	"time"

	"github.com/shaledb/shale/internal/base"
)

// Snapshot is a consistent, read-only view of the DB at one moment. Reads
// through ReadOptions.Snapshot see exactly the writes committed before it.
// Release it when done: compactions keep the versions it can see.
type Snapshot struct {
	db       *DB
	seq      base.SeqNum
	released bool
	// created is when NewSnapshot took it (by Options.Clock), behind
	// rocksdb.oldest-snapshot-time.
	created time.Time
	// rs, on a secondary instance, is the read state the snapshot reads:
	// its primary compacts away versions the snapshot needs without
	// knowing of it, so the snapshot keeps the tables and memtables of its
	// moment (released by Release).
	rs *readState
}

// NewSnapshot returns a snapshot of the current state.
func (d *DB) NewSnapshot() *Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &Snapshot{db: d, seq: base.SeqNum(d.visibleSeq.Load()), created: d.clock.Now()}
	if d.follower != nil {
		// Catch-ups publish under d.mu: this is the newest read state.
		if s.rs = d.loadReadState(); s.rs != nil {
			s.seq = s.rs.seq
		}
	}
	d.mu.snapshots.list = append(d.mu.snapshots.list, s)
	return s
}

// Release lets compactions drop the versions only the snapshot could see.
func (s *Snapshot) Release() {
	if s == nil || s.released {
		return
	}
	d := s.db
	d.mu.Lock()
	s.released = true
	rs := s.rs
	s.rs = nil
	if i := slices.Index(d.mu.snapshots.list, s); i >= 0 {
		d.mu.snapshots.list = slices.Delete(d.mu.snapshots.list, i, i+1)
		if i == 0 && !d.readOnly {
			// The oldest snapshot went: tombstones it kept in the last
			// level may now be droppable (compact.PickEnv), and bottom-level
			// files past their delete persistence deadline rewritable.
			d.maybeScheduleLocked()
		}
	}
	d.mu.Unlock()
	if rs != nil {
		rs.unref()
	}
}

// SeqNum returns the sequence number the snapshot reads at.
func (s *Snapshot) SeqNum() uint64 { return uint64(s.seq) }

// snapshotList holds live snapshots in creation order, so seqnums ascend.
type snapshotList struct {
	list []*Snapshot
}

// seqs returns the distinct live snapshot seqnums, ascending.
func (l *snapshotList) seqs() []base.SeqNum {
	out := make([]base.SeqNum, 0, len(l.list))
	for _, s := range l.list {
		if n := len(out); n == 0 || out[n-1] != s.seq {
			out = append(out, s.seq)
		}
	}
	return out
}

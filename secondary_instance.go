package shale

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/vfs"
)

// OpenAsSecondary opens the database in dir as a secondary instance
// (RocksDB's DB::OpenAsSecondary): a read-only follower of a database that
// another process, or another DB of this one, keeps writing. Like
// OpenForReadOnly it takes no lock and never writes a byte into dir; what
// it writes (its LOG, unless Options.Logger is set) goes to secondaryDir,
// which it creates. It sees the database as of its open;
// TryCatchUpWithPrimary brings it up to date. Every write method returns an
// error matching ErrReadOnly. Options.CreateIfMissing and ErrorIfExists
// are ignored; dir must hold a database.
func OpenAsSecondary(dir, secondaryDir string, opts *Options) (*DB, error) {
	if secondaryDir == "" {
		return nil, base.InvalidArgumentf("shale: OpenAsSecondary needs a secondary directory for the instance's own files")
	}
	if sameDir(dir, secondaryDir) {
		return nil, base.InvalidArgumentf("shale: the secondary directory %s must not be the primary's directory: a secondary never writes there", secondaryDir)
	}
	return open(dir, opts, true, secondaryDir)
}

// TryCatchUpWithPrimary brings a secondary instance up to date with its
// primary (RocksDB's TryCatchUpWithPrimary): it applies the MANIFEST
// edits the primary appended since the last catch-up (following a new
// MANIFEST through CURRENT), opens the tables and blob files they add,
// drops the memtables of WALs the primary has flushed, and replays the
// primary's WALs from where it stopped into its own memtables. Every write
// the primary acknowledged before the call (and wrote to its WAL, or
// flushed) is visible afterwards; reads see a prefix of the primary's
// writes. A record being appended is left for the next call. When a file
// the MANIFEST names was removed before it could be opened, it reads the
// MANIFEST again, a few times, and otherwise returns the error: a later
// call succeeds. On any error the instance keeps the state it had. Catch-ups
// are serialized; reads go on meanwhile. On a DB not opened with
// OpenAsSecondary it returns an error matching ErrInvalidArgument.
func (d *DB) TryCatchUpWithPrimary() error {
	s := d.follower
	if s == nil {
		if err := d.checkOpen(); err != nil {
			return err
		}
		return base.InvalidArgumentf("shale: TryCatchUpWithPrimary needs a DB opened with OpenAsSecondary")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	return d.catchUp()
}

// follower is the state of a secondary instance: where it stands in the
// primary's WALs, and its memtables. Catch-ups hold mu.
type follower struct {
	dir string // the secondary directory
	mu  sync.Mutex
	// wals are the primary's WALs at or above the MANIFEST's log number,
	// held open (a WAL the primary removes stays readable), ascending.
	wals []*followedWAL
	// mems are the memtables replayed from wals, oldest first; the last
	// takes the next records. Each holds records of one WAL (logNum).
	mems []*memTable
	// catchUps counts catch-ups that succeeded, retries the reads of the
	// MANIFEST started over because a file it named had been removed.
	catchUps, retries int64
}

// followedWAL is one WAL of the primary being followed.
type followedWAL struct {
	num base.FileNum
	f   vfs.File
	// off is where the records replayed so far end.
	off int64
}

// close closes the WALs held.
func (s *follower) close() error {
	var err error
	for _, w := range s.wals {
		err = errors.Join(err, w.f.Close())
	}
	s.wals = nil
	return err
}

// followAttempts bounds how often a catch-up starts over when a file the
// MANIFEST names was removed before it was opened.
const followAttempts = 8

// loadSecondary is Open's part of OpenAsSecondary: the version set, read
// only, then a first catch-up.
func (d *DB) loadSecondary() error {
	current := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeCurrent, 0))
	if _, err := d.fs.Stat(current); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shale: %s holds no database (no CURRENT file): %w", d.dirname, err)
	}
	var err error
	for range followAttempts {
		// A MANIFEST that vanished was replaced after CURRENT was read.
		if d.versions, err = manifest.Load(d.manifestOptions()); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	if err := d.checkSecondaryDeleteKey(); err != nil {
		return err
	}
	if err := d.checkMergeOperator(); err != nil {
		return err
	}
	s := d.follower
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.catchUp()
}

// catchUp runs catchUpOnce, starting over when a file vanished under it.
// s.mu is held.
func (d *DB) catchUp() error {
	s := d.follower
	var err error
	delay := time.Millisecond
	for attempt := range followAttempts {
		if attempt > 0 {
			s.retries++
			d.logger.Info("catch-up reads the MANIFEST again: a file it named was removed", "err", err)
			if attempt > 2 {
				time.Sleep(delay)
				delay *= 2
			}
		}
		if err = d.catchUpOnce(); err == nil || !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("shale: catching up with the primary in %s: %w", d.dirname, err)
	}
	s.catchUps++
	return nil
}

// catchUpOnce brings the instance up to date, or leaves what readers see
// unchanged and returns an error.
//
// Why the state it publishes is a prefix of the primary's writes: the
// primary edits the MANIFEST before it removes a file (a table a
// compaction replaced; a WAL whose memtable is flushed, once the log
// number has passed it). So the MANIFEST is read (log number L1), every
// WAL at or above L1 is opened, and the MANIFEST is read again (L). A WAL
// at or above L that existed when the directory was listed was not
// removed before the second read, and was opened; one made after the
// listing is newer than every WAL opened. The WALs held from L on are then
// all the WALs up to the newest held, and the current version's tables
// hold every write of the WALs below L. Each live table and blob file is
// opened (and stays open while a version holds it); one removed since the
// second read means a newer edit, so the whole catch-up starts over.
func (d *DB) catchUpOnce() error {
	s := d.follower
	if _, err := d.versions.CatchUp(); err != nil {
		return err
	}
	if err := s.openWALs(d, d.versions.LogNumber()); err != nil {
		return err
	}
	if _, err := d.versions.CatchUp(); err != nil {
		return err
	}
	logNum := d.versions.LogNumber()
	// Tables the primary ingested read at their global seqnums, which the
	// MANIFEST records (ingest.go): known before any of them opens.
	d.noteGlobalSeqNums()
	if followerOpenHook != nil {
		followerOpenHook(d)
	}
	if err := d.openLiveTables(); err != nil {
		return err
	}
	// Nothing fails from here on: what readers see changes only at the
	// publication below.
	var dropped []*memTable
	s.mems = slices.DeleteFunc(s.mems, func(m *memTable) bool {
		if m.logNum < logNum {
			dropped = append(dropped, m)
			return true
		}
		return false
	})
	var closeErr error
	s.wals = slices.DeleteFunc(s.wals, func(w *followedWAL) bool {
		if w.num < logNum {
			closeErr = errors.Join(closeErr, w.f.Close())
			return true
		}
		return false
	})
	if closeErr != nil {
		d.logger.Warn("closing a WAL the primary flushed failed", "err", closeErr)
	}
	lastSeq, replayErr := d.replayFollowedWALs()
	v := d.versions.Current()
	for _, level := range v.Levels {
		for _, f := range level {
			lastSeq = max(lastSeq, f.LargestSeq)
		}
	}
	for _, t := range v.SecondaryTombstones {
		lastSeq = max(lastSeq, t.Seq)
	}
	v.Unref()
	if len(s.mems) == 0 {
		s.mems = append(s.mems, d.newMemTable(logNum, 0))
	}
	d.mu.Lock()
	seq := max(base.SeqNum(d.visibleSeq.Load()), lastSeq)
	d.mu.lastSeq = seq
	d.versions.SetLastSeq(seq)
	d.visibleSeq.Store(uint64(seq))
	mutable, queue := s.mems[len(s.mems)-1], s.mems[:len(s.mems)-1]
	if d.readStateChangesLocked(mutable, queue, seq) {
		d.mu.mem.mutable = mutable
		d.mu.mem.queue = append(d.mu.mem.queue[:0:0], queue...)
		d.publishReadStateLocked()
	}
	d.mu.Unlock()
	for _, m := range dropped {
		d.releaseMemTable(m) // the list's hold; read states keep theirs
	}
	// Tables and blob files no version holds any more are closed; the
	// primary removes them (a secondary never does).
	for _, f := range d.versions.TakeObsoleteTables() {
		d.fileCache.evictObsolete(fileKindTable, f.FileNum)
	}
	for _, b := range d.versions.TakeObsoleteBlobFiles() {
		d.fileCache.evictObsolete(fileKindBlob, b.FileNum)
	}
	// A WAL record that would not replay (damage) is reported after what
	// came before it is published; the next catch-up tries it again.
	return replayErr
}

// followerOpenHook, when set (by tests), runs in a catch-up between its
// last MANIFEST read and the opening of the tables: where a primary's
// compaction removes tables the secondary is about to open.
var followerOpenHook func(*DB)

// readStateChangesLocked reports whether a read state of these memtables,
// the current version and seq would differ from the published one: a
// catch-up that found nothing new publishes nothing. d.mu is held.
func (d *DB) readStateChangesLocked(mutable *memTable, queue []*memTable, seq base.SeqNum) bool {
	d.readState.RLock()
	rs := d.readState.val
	d.readState.RUnlock()
	if rs == nil || rs.seq != seq || rs.mem != mutable || !slices.Equal(rs.imms, queue) {
		return true
	}
	v := d.versions.Current()
	defer v.Unref()
	return rs.version != v
}

// openWALs opens the WALs of the primary's directory numbered logNum or
// above that are not held yet. A WAL removed before it could be opened
// is below the log number the next MANIFEST read sees.
func (s *follower) openWALs(d *DB, logNum base.FileNum) error {
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return fmt.Errorf("shale: listing %s: %w", d.dirname, err)
	}
	held := func(num base.FileNum) bool {
		return slices.ContainsFunc(s.wals, func(w *followedWAL) bool { return w.num == num })
	}
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok || t != base.FileTypeLog || num < logNum || held(num) {
			continue
		}
		f, err := d.fs.Open(d.fs.PathJoin(d.dirname, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("shale: opening WAL %s: %w", name, err)
		}
		s.wals = append(s.wals, &followedWAL{num: num, f: f})
	}
	slices.SortFunc(s.wals, func(a, b *followedWAL) int { return int(a.num) - int(b.num) })
	return nil
}

// replayFollowedWALs replays the held WALs from where each stopped into
// the memtables, oldest first, and returns the last seqnum replayed (0 for
// none). A WAL is replayed past only when the next one holds data (the
// primary writes to a new WAL only once the previous one is complete) and
// its replay ended cleanly: otherwise later WALs wait for the next
// catch-up, so that what is replayed stays a prefix of the writes.
func (d *DB) replayFollowedWALs() (base.SeqNum, error) {
	s := d.follower
	mode := d.opts.WALRecoveryMode
	if mode == AbsoluteConsistency {
		// A torn tail is a record being appended: read it next time.
		mode = TolerateCorruptedTailRecords
	}
	var lastSeq base.SeqNum
	// Values the primary separated at write are replayed inline
	// (blob_write.go).
	blobs := newWALBlobResolver(d.fs, d.dirname)
	defer blobs.close()
	for i, w := range s.wals {
		nextStarted := i+1 < len(s.wals) && walHasData(s.wals[i+1].f)
		mem := d.followerMemTable(w.num, 0)
		name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeLog, w.num))
		applyFailed := false
		apply := func(rec []byte, off int64) error {
			r, err := walBatch(name, off, rec)
			if err != nil || r.count == 0 {
				applyFailed = err != nil
				return err
			}
			resolved, _, err := blobs.resolve(name, off, rec)
			if errors.Is(err, errBlobValueLost) || errors.Is(err, os.ErrNotExist) {
				// The primary flushed the memtable and removed its file
				// since the MANIFEST was read: the next catch-up finds the
				// values in tables.
				return errStopReplay
			}
			if err != nil {
				applyFailed = true
				return err
			}
			rec = resolved
			need := len(rec) + int(r.count)*memtableEntryOverhead
			if mem.ApproximateMemoryUsage()+need > mem.capacity {
				mem = d.followerMemTable(w.num, need)
			}
			if _, err := applyBatch(mem.Memtable, rec); err != nil {
				applyFailed = true
				if errors.Is(err, ErrCorruption) {
					return base.CorruptionErrorf(name, off, "malformed batch at seqnum %d", r.seq)
				}
				return err
			}
			lastSeq = max(lastSeq, r.seq+base.SeqNum(r.count)-1)
			return nil
		}
		var res wal.ReplayResult
		var err error
		for attempt := 0; ; attempt++ {
			res, err = wal.ReplayFrom(w.f, name, w.off, mode, apply)
			if res.Records > 0 || res.SkippedBytes > 0 {
				w.off = res.LastOffset
			}
			if err == errStopReplay {
				err, res.Damaged = nil, true
			}
			// A WAL the primary may still be writing (the next one holds
			// nothing yet) can look damaged for a moment when it is written
			// through a shared mapping (WALs with Options.AllowMmapWrites):
			// the file is already as long as the mapping, and the copy of
			// a record can overtake a read that began before it. Damage
			// that is still there after a few re-reads is reported.
			if err == nil || nextStarted || applyFailed || !errors.Is(err, ErrCorruption) || attempt == walDamageRereads {
				break
			}
			time.Sleep(time.Duration(1<<attempt) * time.Millisecond)
		}
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				err = fmt.Errorf("shale: replaying WAL %s: %w", name, err)
			}
			return lastSeq, err
		}
		if res.Damaged || !nextStarted {
			break
		}
	}
	return lastSeq, nil
}

// walDamageRereads bounds the re-reads of damage met in a WAL the primary
// may still be writing (see replayFollowedWALs), 1 ms apart, doubling.
const walDamageRereads = 4

// followerMemTable returns the memtable to take the records of WAL num:
// the newest one when it holds that WAL's records (or nothing) and has
// room for need more bytes, else a new one.
func (d *DB) followerMemTable(num base.FileNum, need int) *memTable {
	s := d.follower
	if n := len(s.mems); n > 0 {
		m := s.mems[n-1]
		fits := need == 0 || m.ApproximateMemoryUsage()+need <= m.capacity
		if m.logNum == num && fits {
			return m
		}
		if m.Empty() {
			// Published read states may hold it: a new one takes its place.
			s.mems = s.mems[:n-1]
			defer d.releaseMemTable(m)
		}
	}
	m := d.newMemTable(num, need)
	s.mems = append(s.mems, m)
	return m
}

// walHasData reports whether the WAL f holds a byte of data: a first
// record header that is not zeros (a preallocated WAL reads as zeros).
func walHasData(f vfs.File) bool {
	var hdr [7]byte
	n, _ := f.ReadAt(hdr[:], 0)
	for _, b := range hdr[:n] {
		if b != 0 {
			return true
		}
	}
	return false
}

// loadFollowerReadState is loadReadStateAt of a secondary instance: a
// snapshot reads the read state it pinned, other reads the current one, at
// the seqnum that read state was published with.
func (d *DB) loadFollowerReadState(ro *ReadOptions) (*readState, base.SeqNum) {
	if ro != nil && ro.Snapshot != nil && ro.Snapshot.rs != nil {
		rs := ro.Snapshot.rs
		rs.refs.Add(1)
		return rs, ro.Snapshot.seq
	}
	rs := d.loadReadState()
	if rs == nil {
		return nil, 0
	}
	seq := rs.seq
	if ro != nil && ro.Snapshot != nil {
		seq = min(seq, ro.Snapshot.seq)
	}
	return rs, seq
}

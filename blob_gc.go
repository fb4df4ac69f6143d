package shale

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// Blob garbage collection (Options.EnableBlobGarbageCollection), inside
// compaction as RocksDB's integrated BlobDB does it.
//
// A compaction that collects garbage relocates every value it keeps whose
// blob index points into an old blob file: one numbered below the cutoff
// of the version it compacts (compact.BlobGCCutoff: the oldest
// BlobGarbageCollectionAgeCutoff fraction of the blob files). The value is
// read (through a ValueReader per old file, with
// BlobCompactionReadaheadSize of readahead: a compaction meets a file's
// values in key order, which is the order its job wrote them in) and
// written again as a Set value would be: into the job's blob file, or
// inline when the job does not separate values. The old index is counted
// as read and not written, so the old file gains it as garbage, and once
// no table references the file it is deleted with the edit
// (logAndApplyDeletingBlobs). A file's values move together, whichever
// compactions reach its tables, so files grow old and go as a whole: the
// live data they hold moves once, to a young file.
//
// Which compactions collect: all those of a DB with GC on, except
//   - automatic ones outside BlobGarbageCollectionOffPeakWindow (when set),
//     unless forced: a compaction picked because an old file's garbage
//     ratio reached BlobGarbageCollectionForceThreshold
//     (compact.ReasonBlobGC) always collects, or it would change nothing;
//   - trivial moves, which read nothing: a move is refused (the file is
//     rewritten) when it references an old blob file holding garbage.
// Manual compactions (CompactRange) always collect: the operator asked for
// the work now. A full CompactRange with GC on also rewrites last-level
// tables referencing an old file that holds garbage, so with an age cutoff
// of 1 it leaves no blob file holding garbage.
//
// How much one automatic compaction relocates is bounded
// (BlobGarbageCollectionMaxRelocationBytes, default BlobFileSize): the old
// files stay on disk until the compaction installs its copy, so an
// unbounded compaction that reads every table (a small database's L0
// compaction) holds a second copy of a quarter of the data at once. Of the
// old files its inputs reference it relocates those with the most garbage
// first, while their estimated shares fit (compact.BlobGCSelection); the
// DB owes the others a compaction (noteBlobGCOwed), which the picker
// schedules as it does forced GC, after the forced ones
// (compact.ReasonBlobGCContinued, relocating only owed files, so the debt
// only shrinks). The relocation then goes in installments, each deleting
// its old files when installed. Manual compactions are not bounded.
//
// Delete persistence (Options.DeletePersistenceThreshold) adds the blob
// files past their deadline (compact.Deadlines.Blob) to the files every
// compaction relocates, whatever the GC options and the time of day: the
// picker compacts their tables (compact.ReasonBlobExpired) until none
// references them, and they are deleted with the values of deleted keys
// they still held (delete_persistence.go).

// blobGC is the garbage collection side of one compaction.
type blobGC struct {
	d *DB
	// cutoff: blob files numbered below it are relocated, and so are those
	// in expired, past their delete persistence deadline
	// (expiredBlobFiles).
	cutoff  base.FileNum
	expired map[base.FileNum]bool
	// only, when not nil, limits the files below cutoff that relocate to
	// those it holds: the selection that keeps one compaction's relocation
	// within BlobGarbageCollectionMaxRelocationBytes
	// (compact.BlobGCSelection).
	only map[base.FileNum]bool
	// owed are the files below cutoff the inputs reference that the bound
	// left out: once the compaction is installed the DB owes them a
	// compaction (blobGCOwed).
	owed []base.FileNum
	// readahead is the readahead of the value readers
	// (BlobCompactionReadaheadSize); direct opens the files with direct IO
	// for them (UseDirectIOForFlushAndCompaction).
	readahead int64
	direct    bool
	readers   map[base.FileNum]*gcReader
	// relocated counts the values moved and their old record bytes, and
	// relocatedFrom the values moved per old file.
	relocated     blobRefCount
	relocatedFrom map[base.FileNum]uint64
}

// gcReader reads the values of one old blob file in file order.
type gcReader struct {
	f      *cachedFile
	values *blob.ValueReader
	file   vfs.File // the direct-IO handle, or nil
	// opts are the values reader's options; next is where the record
	// read last ends.
	opts blob.IterOptions
	next uint64
}

// relocates reports whether the values of blob file num move (g may be
// nil: no garbage collection).
func (g *blobGC) relocates(num base.FileNum) bool {
	return g != nil && (num < g.cutoff && (g.only == nil || g.only[num]) || g.expired[num])
}

// read returns the value x of key locates, which is read and not cached
// (relocation reads each value once). The value is valid until the next
// read.
func (g *blobGC) read(x blob.Index, key []byte) ([]byte, error) {
	r := g.readers[x.FileNum]
	if r == nil {
		f, err := g.d.fileCache.findBlob(x.FileNum)
		if err != nil {
			return nil, err
		}
		r = &gcReader{f: f}
		o := blob.IterOptions{ReadaheadSize: g.readahead}
		defer func() { r.opts = o }()
		if g.direct {
			name := g.d.blobPath(x.FileNum)
			if r.file, err = g.d.fs.Open(name, vfs.DirectIO, vfs.SequentialAccess); err != nil {
				f.release()
				return nil, fmt.Errorf("shale: opening %s for garbage collection with direct IO: %w", name, err)
			}
			o.File = r.file
		}
		r.values = f.blobReader.NewValueReaderWith(o)
		g.readers[x.FileNum] = r
	}
	if x.Offset < r.next && r.opts.ReadaheadSize > 0 {
		// Values out of file order: a file written as values were
		// committed (EnableBlobWriteSeparation) holds them in write
		// order, not key order, and a fixed window per value would read
		// it many times over. Automatic readahead serves the sequential
		// runs there are.
		r.values.Close()
		r.opts.ReadaheadSize = 0
		r.values = r.f.blobReader.NewValueReaderWith(r.opts)
	}
	r.next = x.Offset + x.Size
	v, err := r.values.Get(x, key, false)
	if err == nil {
		g.relocated.count++
		g.relocated.bytes += blobRecordBytes(x)
		g.relocatedFrom[x.FileNum]++
	}
	return v, err
}

// relocatedCounts returns the number of values relocated per old blob file
// (nil for nil g).
func (g *blobGC) relocatedCounts() map[base.FileNum]uint64 {
	if g == nil {
		return nil
	}
	return g.relocatedFrom
}

// relocatedCount returns the number of values relocated (0 for nil g).
func (g *blobGC) relocatedCount() uint64 {
	if g == nil {
		return 0
	}
	return g.relocated.count
}

// close releases the readers; it returns the first error closing a
// direct-IO handle.
func (g *blobGC) close() error {
	if g == nil {
		return nil
	}
	var err error
	for _, r := range g.readers {
		r.values.Close()
		if r.file != nil {
			err = errors.Join(err, r.file.Close())
		}
		r.f.release()
	}
	g.readers = nil
	return err
}

// blobGCFor returns the garbage collection of compaction c of version v
// under options o: nil when c collects none (see the comment at the top).
// Whatever the GC options, every compaction relocates the values of the
// blob files past their delete persistence deadline.
func (d *DB) blobGCFor(c *compact.Compaction, v *manifest.Version, o *Options) *blobGC {
	if len(v.BlobFiles) == 0 {
		return nil
	}
	expired := d.expiredBlobFiles(v, o)
	cutoff := base.FileNum(0)
	if o.EnableBlobGarbageCollection && d.blobGCWindowAllows(c, o) {
		cutoff = compact.BlobGCCutoff(v, o.BlobGarbageCollectionAgeCutoff)
	}
	var only map[base.FileNum]bool
	var owed []base.FileNum
	if cutoff != 0 && c.Reason != compact.ReasonManual {
		var inputs []*manifest.FileMetadata
		for _, files := range c.Inputs {
			inputs = append(inputs, files...)
		}
		var among map[base.FileNum]struct{}
		if c.Reason == compact.ReasonBlobGCContinued {
			// Only what is owed moves, so the debt only shrinks: it holds
			// every file left out since (noteBlobGCOwed).
			among = d.blobGCOwedCopy()
		}
		only, owed = compact.BlobGCSelection(v, inputs, cutoff, blobGCMaxRelocation(o), o.BlobGarbageCollectionForceThreshold, among)
	}
	if cutoff == 0 && len(expired) == 0 {
		return nil
	}
	return &blobGC{d: d, cutoff: cutoff, expired: expired, only: only, owed: owed, readahead: o.BlobCompactionReadaheadSize,
		direct:  d.opts.UseDirectIOForFlushAndCompaction && !d.opts.UseDirectReads,
		readers: map[base.FileNum]*gcReader{}, relocatedFrom: map[base.FileNum]uint64{}}
}

// blobGCMaxRelocation returns the bound on the live blob bytes one
// automatic compaction relocates under o (0: none):
// BlobGarbageCollectionMaxRelocationBytes, whose zero value means
// BlobFileSize.
func blobGCMaxRelocation(o *Options) int64 {
	switch n := o.BlobGarbageCollectionMaxRelocationBytes; {
	case n < 0:
		return 0
	case n == 0:
		return o.BlobFileSize
	default:
		return n
	}
}

// noteBlobGCOwed records, once a compaction's edit is installed, the blob
// files its bounded relocation left out (g.owed), for the picker to go on
// with (compact.ReasonBlobGCContinued), and forgets those no longer in the
// current version.
func (d *DB) noteBlobGCOwed(g *blobGC) {
	if g == nil {
		return
	}
	v := d.versions.Current()
	defer v.Unref()
	d.mu.Lock()
	defer d.mu.Unlock()
	owed := d.mu.compact.blobGCOwed
	if len(g.owed) == 0 && len(owed) == 0 {
		return
	}
	if owed == nil {
		owed = map[base.FileNum]struct{}{}
		d.mu.compact.blobGCOwed = owed
	}
	for _, n := range g.owed {
		owed[n] = struct{}{}
	}
	for n := range owed {
		if v.BlobFile(n) == nil {
			delete(owed, n)
		}
	}
}

// blobGCOwedCopy returns a copy of the set of blob files the DB owes a
// compaction (never nil).
func (d *DB) blobGCOwedCopy() map[base.FileNum]struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[base.FileNum]struct{}, len(d.mu.compact.blobGCOwed))
	for n := range d.mu.compact.blobGCOwed {
		out[n] = struct{}{}
	}
	return out
}

// blobGCOwedLocked returns, ascending, the blob files the DB owes a
// compaction (noteBlobGCOwed) when GC may relocate now: none outside the
// off-peak window. d.mu is held.
func (d *DB) blobGCOwedLocked() []base.FileNum {
	owed := d.mu.compact.blobGCOwed
	if len(owed) == 0 {
		return nil
	}
	o := d.mutableOptions()
	if !o.EnableBlobGarbageCollection {
		return nil
	}
	if w, err := parseOffPeakWindow(o.BlobGarbageCollectionOffPeakWindow); err == nil && !w.contains(d.clock.Now()) {
		return nil
	}
	out := make([]base.FileNum, 0, len(owed))
	for n := range owed {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// blobGCWindowAllows reports whether compaction c may collect garbage now:
// it is manual or forced, or no off-peak window excludes the time.
func (d *DB) blobGCWindowAllows(c *compact.Compaction, o *Options) bool {
	if c.Reason == compact.ReasonManual || c.Reason == compact.ReasonBlobGC {
		return true
	}
	w, err := parseOffPeakWindow(o.BlobGarbageCollectionOffPeakWindow)
	return err != nil || w.contains(d.clock.Now())
}

// collectsFrom reports whether g would reclaim space by rewriting table f
// of v: f references an old blob file holding garbage, or one past its
// delete persistence deadline. A trivial move of such a file is refused,
// and CompactRange rewrites such last-level files.
func (g *blobGC) collectsFrom(v *manifest.Version, f *manifest.FileMetadata) bool {
	if g == nil {
		return false
	}
	for _, n := range f.BlobFiles {
		if g.expired[n] {
			return true
		}
		if !g.relocates(n) {
			continue
		}
		if b := v.BlobFile(n); b != nil && b.GarbageBytes > 0 {
			return true
		}
	}
	return false
}

// offPeakWindow is a daily window of UTC minutes, both ends included; one
// whose start is after its end spans midnight. The zero value (set false)
// is no window: every time is inside.
type offPeakWindow struct {
	set        bool
	start, end int
}

// parseOffPeakWindow parses "HH:MM-HH:MM" (UTC; "" is no window), as
// RocksDB's daily_offpeak_time_utc: "23:30-04:00" spans midnight and
// "00:00-23:59" is the whole day.
func parseOffPeakWindow(s string) (offPeakWindow, error) {
	if s == "" {
		return offPeakWindow{}, nil
	}
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return offPeakWindow{}, fmt.Errorf("%q is not HH:MM-HH:MM", s)
	}
	start, err := parseMinuteOfDay(from)
	if err != nil {
		return offPeakWindow{}, fmt.Errorf("%q: %w", s, err)
	}
	end, err := parseMinuteOfDay(to)
	if err != nil {
		return offPeakWindow{}, fmt.Errorf("%q: %w", s, err)
	}
	return offPeakWindow{set: true, start: start, end: end}, nil
}

// parseMinuteOfDay parses "HH:MM" (00:00 to 23:59) into minutes.
func parseMinuteOfDay(s string) (int, error) {
	hh, mm, ok := strings.Cut(s, ":")
	if !ok || len(hh) == 0 || len(hh) > 2 || len(mm) != 2 {
		return 0, fmt.Errorf("time %q is not HH:MM", s)
	}
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, fmt.Errorf("time %q is not between 00:00 and 23:59", s)
	}
	return h*60 + m, nil
}

// contains reports whether t falls inside w.
func (w offPeakWindow) contains(t time.Time) bool {
	if !w.set {
		return true
	}
	u := t.UTC()
	m := u.Hour()*60 + u.Minute()
	if w.start <= w.end {
		return w.start <= m && m <= w.end
	}
	return m >= w.start || m <= w.end
}

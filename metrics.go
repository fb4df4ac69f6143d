package shale

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shaledb/shale/internal/compact"
)

// dbStats are the running counters behind Metrics.
type dbStats struct {
	userBytesWritten    atomic.Uint64
	walBytes            atomic.Uint64
	walSyncs            atomic.Uint64
	walFileSyncs        atomic.Uint64 // counted by the WAL writers
	commitGroups        atomic.Uint64
	commitBatches       atomic.Uint64
	flushes             atomic.Uint64
	flushBytes          atomic.Uint64
	compactions         atomic.Uint64
	trivialMoves        atomic.Uint64
	scanFlushes         atomic.Uint64
	compactBytesRead    atomic.Uint64
	compactBytesWritten atomic.Uint64
	slowdowns           atomic.Uint64
	stops               atomic.Uint64
	stallNanos          atomic.Int64
	// secondary counts what flushes and compactions did for secondary
	// tombstones (Metrics.SecondaryDelete).
	secondaryDroppedFiles, secondarySkippedBlocks, secondaryDropped, secondaryToDelete atomic.Uint64
	// blobRelocated and blobBytesRelocated count the values blob garbage
	// collection moved and their old record bytes.
	blobRelocated, blobBytesRelocated atomic.Uint64
	// backgroundErrors counts the background errors that stopped the DB.
	backgroundErrors atomic.Uint64
}

func (s *dbStats) recordStall(d time.Duration, stop bool) {
	if stop {
		s.stops.Add(1)
	} else {
		s.slowdowns.Add(1)
	}
	s.stallNanos.Add(int64(d))
}

// LevelMetrics describes one level of the LSM tree.
type LevelMetrics struct {
	NumFiles int
	Size     uint64
	// Score is the compaction score: >= 1 means the level needs compaction.
	Score float64
	// NumEntries, NumDeletions and NumRangeDeletions sum the level's tables.
	NumEntries, NumDeletions, NumRangeDeletions uint64
}

// Metrics is a snapshot of the DB's shape and counters.
type Metrics struct {
	Levels []LevelMetrics
	// MemtableSize is the bytes used by the mutable and immutable memtables;
	// MemtableCount counts them.
	MemtableSize  uint64
	MemtableCount int
	Flush         struct{ Count, BytesWritten uint64 }
	// ScanFlushes counts the memtable flushes iterators asked for
	// (Options.MemtableOpScanFlushTrigger); Flush.Count includes them.
	ScanFlushes uint64
	Compact     struct{ Count, TrivialMoves, BytesRead, BytesWritten uint64 }
	// WAL: Syncs counts the commit groups that synced the WAL, FileSyncs the
	// WAL file syncs made for them (and at WAL switches): one file sync
	// covers every group that wrote while the sync before it ran.
	WAL struct{ BytesWritten, Syncs, FileSyncs uint64 }
	// Commit counts the commit groups (Groups: one WAL write each, and one
	// sync when any of its writes asked for one) and the batches they carried
	// (Batches; every Put, Delete or Write is one): Batches/Groups is the
	// mean group size.
	Commit struct{ Groups, Batches uint64 }
	// UserBytesWritten counts the bytes of batches committed.
	UserBytesWritten uint64
	// WriteAmp is (flush + compaction bytes written) / user bytes written.
	WriteAmp float64
	Stall    struct {
		Slowdowns, Stops uint64
		Duration         time.Duration
	}
	BlockCache struct {
		Hits, Misses uint64
		Size         int64
		Capacity     int64
		// PinnedSize is the part of Size that cannot be evicted: the index
		// and filter blocks of L0 tables under
		// Options.PinL0FilterAndIndexBlocksInCache.
		PinnedSize int64
	}
	// TableReadersMem is the memory the open table readers hold outside
	// the block cache (RocksDB's estimate-table-readers-mem): their index
	// and filter blocks unless Options.CacheIndexAndFilterBlocks puts them
	// in the cache, properties, range tombstones and the readers
	// themselves.
	TableReadersMem uint64
	// FileCache describes the open table files (Options.MaxOpenFiles):
	// Open counts those open now (those the cache holds, and those it
	// evicted while a reader still reads them), Capacity is the bound (0
	// for none), Opens counts the files opened since Open and Evictions
	// those closed to keep the bound. Opens well above the number of
	// tables says the bound is too small for the working set.
	FileCache struct {
		Open, Capacity   int
		Opens, Evictions uint64
	}

	NumSnapshots int
	// NumIterators counts iterators not yet closed.
	NumIterators int
	// Tombstones counts point and range tombstones stored in tables.
	Tombstones uint64
	// BackgroundError is the error that made the DB read-only, if any.
	BackgroundError error
	// Blob describes the live blob files (Options.EnableBlobFiles): their
	// number, Size on disk, TotalBytes (their records' bytes) and
	// GarbageBytes (records no table references any more, as compactions
	// recorded them), the reads of blob values from their files (Reads,
	// BytesRead; not in IO's table counts) and the values found in the blob
	// cache instead (CacheHits). Flush and Compact BytesWritten include the
	// blob files written, so WriteAmp counts them.
	// Relocated and BytesRelocated count the values garbage collection
	// moved to new blob files (or back inline) and their bytes in the old
	// files.
	Blob struct {
		Files                          int
		Size, TotalBytes, GarbageBytes uint64
		Reads, BytesRead, CacheHits    uint64
		Relocated, BytesRelocated      uint64
	}
	// IO counts the reads of the read path.
	IO IOMetrics
	// Recovery says what Open's WAL replay dropped.
	Recovery RecoveryMetrics
	// SecondaryDelete describes DeleteBySecondaryRange's work: the live
	// secondary tombstones, the compaction inputs and the data blocks of
	// inputs dropped whole without being read, and the Sets flushes and
	// compactions dropped or turned into point Deletes for them.
	SecondaryDelete struct {
		LiveTombstones                                        int
		DroppedFiles, SkippedBlocks, DroppedEntries, ToDelete uint64
	}
	// DeletePersistence says how old the tombstones are, against
	// Options.DeletePersistenceThreshold.
	DeletePersistence DeletePersistenceMetrics
	// DroppedEvents counts the events Options.EventListener lost by falling
	// too far behind (EventListener.OnEventsDropped).
	DroppedEvents uint64
}

// RecoveryMetrics describes the WAL records Open dropped: a torn or damaged
// tail, or records skipped under the WAL recovery mode.
type RecoveryMetrics struct {
	// DroppedRecords and DroppedBytes total the losses.
	DroppedRecords, DroppedBytes int64
	// Losses lists them, one per WAL file that lost records.
	Losses []WALLoss
}

// WALLoss is what Open dropped from one WAL file.
type WALLoss struct {
	// File is the WAL's path; Offset where the first dropped byte was.
	File   string
	Offset int64
	// Records counts the records not replayed (a damaged stretch counts as
	// one), Bytes the bytes.
	Records, Bytes int64
	// Reason says why, e.g. "torn tail" or "damaged record skipped".
	Reason string
}

// IOMetrics counts what the DB asked of its file layer.
type IOMetrics struct {
	// AsyncReader names the batched-read mechanism: "io_uring" or "portable".
	AsyncReader string
	// ReadsSubmitted counts read requests sent through the async reader, and
	// BytesRead the bytes they returned.
	ReadsSubmitted, BytesRead uint64
	// IOUringEnters counts io_uring_enter calls that submitted reads, and
	// IOUringSQEs the submission queue entries they carried.
	IOUringEnters, IOUringSQEs uint64
	// ReadaheadBytesIssued counts bytes read ahead; ReadaheadBytesUsed those
	// of them a reader then used. The difference is wasted readahead.
	ReadaheadBytesIssued, ReadaheadBytesUsed uint64
	// DirectReads counts reads of files opened with direct IO.
	DirectReads uint64
	// BlockReads counts table blocks read from files rather than found in
	// the block cache (from a readahead window or by a read of their own).
	BlockReads uint64
	// TableReads counts read calls made to table files (single blocks,
	// readahead windows and their parts), and TableBytesRead the bytes they
	// returned.
	TableReads, TableBytesRead uint64
}

// Metrics returns the current metrics.
func (d *DB) Metrics() *Metrics {
	m := &Metrics{}
	if d.checkOpen() != nil {
		return m
	}
	rs := d.loadReadState()
	if rs == nil {
		return m
	}
	defer rs.unref()
	v := rs.version
	co := d.compactOptions()
	d.mu.Lock()
	scores := compact.Scores(v, &co)
	m.NumSnapshots = len(d.mu.snapshots.list)
	m.NumIterators = int(d.openIters.Load())
	m.BackgroundError = d.mu.bgErr
	d.mu.Unlock()
	if d.events != nil {
		m.DroppedEvents = d.events.totalDropped.Load()
	}
	m.Recovery = d.recovery // set by Open, never changed after
	m.Recovery.Losses = slices.Clone(d.recovery.Losses)
	for level, files := range v.Levels {
		lm := LevelMetrics{NumFiles: len(files)}
		if level < len(scores) {
			lm.Score = scores[level]
		}
		for _, f := range files {
			lm.Size += f.Size
			lm.NumEntries += f.NumEntries
			lm.NumDeletions += f.NumDeletions
			lm.NumRangeDeletions += f.NumRangeDeletions
		}
		m.Tombstones += lm.NumDeletions
		m.Levels = append(m.Levels, lm)
	}
	for _, mt := range append([]*memTable{rs.mem}, rs.imms...) {
		m.MemtableSize += uint64(mt.ApproximateMemoryUsage())
		m.MemtableCount++
	}
	m.DeletePersistence = d.deletePersistenceMetrics(rs)
	s := &d.stats
	m.SecondaryDelete.LiveTombstones = len(rs.secondary)
	m.SecondaryDelete.DroppedFiles = s.secondaryDroppedFiles.Load()
	m.SecondaryDelete.SkippedBlocks = s.secondarySkippedBlocks.Load()
	m.SecondaryDelete.DroppedEntries, m.SecondaryDelete.ToDelete = s.secondaryDropped.Load(), s.secondaryToDelete.Load()
	m.Flush.Count, m.Flush.BytesWritten = s.flushes.Load(), s.flushBytes.Load()
	m.ScanFlushes = s.scanFlushes.Load()
	m.Compact.Count, m.Compact.TrivialMoves = s.compactions.Load(), s.trivialMoves.Load()
	m.Compact.BytesRead, m.Compact.BytesWritten = s.compactBytesRead.Load(), s.compactBytesWritten.Load()
	m.WAL.BytesWritten, m.WAL.Syncs = s.walBytes.Load(), s.walSyncs.Load()
	m.Commit.Groups, m.Commit.Batches = s.commitGroups.Load(), s.commitBatches.Load()
	m.WAL.FileSyncs = s.walFileSyncs.Load()
	m.UserBytesWritten = s.userBytesWritten.Load()
	if m.UserBytesWritten > 0 {
		m.WriteAmp = float64(m.Flush.BytesWritten+m.Compact.BytesWritten) / float64(m.UserBytesWritten)
	}
	m.Stall.Slowdowns, m.Stall.Stops = s.slowdowns.Load(), s.stops.Load()
	m.Stall.Duration = time.Duration(s.stallNanos.Load())
	cm := d.blockCache.Metrics()
	m.BlockCache.Hits, m.BlockCache.Misses = cm.Hits, cm.Misses
	m.BlockCache.Size, m.BlockCache.Capacity = cm.Size, cm.Capacity
	m.BlockCache.PinnedSize = cm.PinnedSize
	as := d.ioReader.Stats()
	m.IO.AsyncReader = d.ioReader.Kind()
	m.IO.ReadsSubmitted, m.IO.BytesRead = as.Reads, as.BytesRead
	m.IO.IOUringEnters, m.IO.IOUringSQEs = as.Enters, as.SQEs
	ts := d.fileCache.stats
	m.IO.ReadaheadBytesIssued, m.IO.ReadaheadBytesUsed = ts.ReadaheadBytesIssued.Load(), ts.ReadaheadBytesUsed.Load()
	m.IO.DirectReads, m.IO.BlockReads = ts.DirectReads.Load(), ts.BlockReads.Load()
	m.IO.TableReads, m.IO.TableBytesRead = ts.FileReads.Load(), ts.BytesRead.Load()
	m.TableReadersMem = uint64(max(ts.ReadersMem.Load(), 0))
	cached, lingering := d.fileCache.numOpen()
	m.FileCache.Open, m.FileCache.Capacity = cached+lingering, d.fileCache.capacity
	m.FileCache.Opens, m.FileCache.Evictions = d.fileCache.opens.Load(), d.fileCache.evictions.Load()
	m.Blob.Files, m.Blob.TotalBytes, m.Blob.GarbageBytes = v.BlobStats()
	for _, b := range v.BlobFiles {
		m.Blob.Size += b.Size
	}
	bs := d.fileCache.blobStats
	m.Blob.Reads, m.Blob.BytesRead, m.Blob.CacheHits = bs.FileReads.Load(), bs.BytesRead.Load(), bs.CacheHits.Load()
	m.Blob.Relocated, m.Blob.BytesRelocated = d.stats.blobRelocated.Load(), d.stats.blobBytesRelocated.Load()
	return m
}

// String renders the metrics as a table, one row per level.
func (m *Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level  files        size   score     entries   tombstones\n")
	var files int
	var size uint64
	for i, l := range m.Levels {
		fmt.Fprintf(&b, "L%-5d %5d %11s %7.2f %11d %12d\n", i, l.NumFiles, humanBytes(l.Size), l.Score, l.NumEntries, l.NumDeletions)
		files += l.NumFiles
		size += l.Size
	}
	fmt.Fprintf(&b, "total  %5d %11s\n", files, humanBytes(size))
	fmt.Fprintf(&b, "memtables: %d, %s\n", m.MemtableCount, humanBytes(m.MemtableSize))
	fmt.Fprintf(&b, "flushes: %d (%s); compactions: %d (%d trivial moves), read %s, wrote %s\n",
		m.Flush.Count, humanBytes(m.Flush.BytesWritten), m.Compact.Count, m.Compact.TrivialMoves,
		humanBytes(m.Compact.BytesRead), humanBytes(m.Compact.BytesWritten))
	fmt.Fprintf(&b, "user writes: %s, WAL: %s in %d syncs, write amp: %.2f\n",
		humanBytes(m.UserBytesWritten), humanBytes(m.WAL.BytesWritten), m.WAL.Syncs, m.WriteAmp)
	fmt.Fprintf(&b, "stalls: %d slowdowns, %d stops, %s\n", m.Stall.Slowdowns, m.Stall.Stops, m.Stall.Duration)
	hitRate := 0.0
	if t := m.BlockCache.Hits + m.BlockCache.Misses; t > 0 {
		hitRate = 100 * float64(m.BlockCache.Hits) / float64(t)
	}
	fmt.Fprintf(&b, "block cache: %s of %s (%s pinned), hit rate %.1f%% (%d hits, %d misses); table readers: %s\n",
		humanBytes(uint64(m.BlockCache.Size)), humanBytes(uint64(m.BlockCache.Capacity)), humanBytes(uint64(m.BlockCache.PinnedSize)),
		hitRate, m.BlockCache.Hits, m.BlockCache.Misses, humanBytes(m.TableReadersMem))
	capacity := "no bound"
	if m.FileCache.Capacity > 0 {
		capacity = fmt.Sprintf("bound %d", m.FileCache.Capacity)
	}
	fmt.Fprintf(&b, "open tables: %d (%s), %d opens, %d evictions\n", m.FileCache.Open, capacity, m.FileCache.Opens, m.FileCache.Evictions)
	fmt.Fprintf(&b, "snapshots: %d, open iterators: %d, tombstones in tables: %d\n", m.NumSnapshots, m.NumIterators, m.Tombstones)
	if m.Blob.Files > 0 || m.Blob.Reads > 0 {
		fmt.Fprintf(&b, "blob files: %d (%s), garbage %s of %s; blob reads: %d (%s), %d cache hits; relocated by GC: %d (%s)\n", m.Blob.Files, humanBytes(m.Blob.Size),
			humanBytes(m.Blob.GarbageBytes), humanBytes(m.Blob.TotalBytes), m.Blob.Reads, humanBytes(m.Blob.BytesRead), m.Blob.CacheHits,
			m.Blob.Relocated, humanBytes(m.Blob.BytesRelocated))
	}
	fmt.Fprintf(&b, "table reads: %d (%s, %d direct), blocks read: %d, readahead: %s issued, %s used\n",
		m.IO.TableReads, humanBytes(m.IO.TableBytesRead), m.IO.DirectReads, m.IO.BlockReads,
		humanBytes(m.IO.ReadaheadBytesIssued), humanBytes(m.IO.ReadaheadBytesUsed))
	if p := &m.DeletePersistence; p.Threshold > 0 || p.OldestTombstoneAge > 0 {
		fmt.Fprintf(&b, "oldest tombstone: %s old", p.OldestTombstoneAge.Round(time.Millisecond))
		if p.Threshold > 0 {
			fmt.Fprintf(&b, "; delete persistence threshold %s: %d files and %d memtables past their deadline",
				p.Threshold, p.FilesPastTTL, p.MemtablesPastTTL)
		}
		b.WriteString("\n")
	}
	if sd := &m.SecondaryDelete; sd.LiveTombstones > 0 || sd.DroppedFiles+sd.SkippedBlocks+sd.DroppedEntries+sd.ToDelete > 0 {
		fmt.Fprintf(&b, "secondary deletes: %d live tombstones; %d input tables and %d blocks dropped unread, %d entries dropped, %d turned into deletes\n",
			sd.LiveTombstones, sd.DroppedFiles, sd.SkippedBlocks, sd.DroppedEntries, sd.ToDelete)
	}
	if m.BackgroundError != nil {
		fmt.Fprintf(&b, "background error: %v\n", m.BackgroundError)
	}
	return b.String()
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// versionString draws the current LSM shape (for tests and debugging).
func (d *DB) versionString() string {
	v := d.versions.Current()
	defer v.Unref()
	return v.String()
}

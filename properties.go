package shale

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shaledb/shale/internal/compact"
)

// DB properties by RocksDB's names (DB::GetProperty). Each reads the DB's
// state at the call; numeric ones are also served by GetIntProperty.
//
//	rocksdb.stats                             Metrics().String()
//	rocksdb.levelstats                        files and size (MB) per level
//	rocksdb.num-files-at-level<N>             tables in level N
//	rocksdb.estimate-num-keys                 entries less twice the tables' deletions, memtables included
//	rocksdb.total-sst-files-size              tables of every version still in use
//	rocksdb.live-sst-files-size               tables of the current version
//	rocksdb.estimate-pending-compaction-bytes compact.EstimatePendingCompactionBytes
//	rocksdb.num-running-compactions           compactions running
//	rocksdb.num-running-flushes               flushes running (0 or 1)
//	rocksdb.compaction-pending                1 when the picker would start a compaction (were automatic ones on)
//	rocksdb.mem-table-flush-pending           1 when an immutable memtable waits for its flush
//	rocksdb.num-immutable-mem-table           immutable memtables
//	rocksdb.cur-size-all-mem-tables           bytes of all memtables
//	rocksdb.num-entries-active-mem-table      entries of the mutable memtable
//	rocksdb.block-cache-usage                 bytes in the block cache
//	rocksdb.block-cache-capacity              the block cache's capacity
//	rocksdb.block-cache-pinned-usage          bytes pinned in it
//	rocksdb.estimate-table-readers-mem        Metrics().TableReadersMem
//	rocksdb.num-snapshots                     snapshots not released
//	rocksdb.oldest-snapshot-time              unix seconds of the oldest (0 without one)
//	rocksdb.background-errors                 background errors that stopped the DB
//	rocksdb.is-write-stopped                  1 while a background error stops writes
//	rocksdb.num-blob-files                    blob files of the current version
//	rocksdb.total-blob-file-size              blob files of every version still in use
//	rocksdb.live-blob-file-size               blob files of the current version
//	rocksdb.live-blob-file-garbage-size       their garbage bytes, as recorded
//	rocksdb.blob-stats                        those three, with the blob space amplification
const propertyPrefix = "rocksdb."

// numFilesAtLevel is the prefix of the per-level file count property.
const numFilesAtLevel = propertyPrefix + "num-files-at-level"

// GetProperty returns the value of the DB property name (RocksDB's names,
// listed above) and true, or "" and false for a name it does not know or a
// closed DB.
func (d *DB) GetProperty(name string) (string, bool) {
	if d.checkOpen() != nil {
		return "", false
	}
	switch name {
	case propertyPrefix + "stats":
		return d.Metrics().String(), true
	case propertyPrefix + "levelstats":
		return levelStats(d.Metrics()), true
	case propertyPrefix + "blob-stats":
		m := d.Metrics()
		amp := 0.0
		if live := m.Blob.TotalBytes - min(m.Blob.GarbageBytes, m.Blob.TotalBytes); live > 0 {
			amp = float64(m.Blob.TotalBytes) / float64(live)
		}
		return fmt.Sprintf("Number of blob files: %d\nTotal size of blob files: %d\nTotal size of garbage in blob files: %d\nBlob file space amplification: %.2f\n",
			m.Blob.Files, m.Blob.Size, m.Blob.GarbageBytes, amp), true
	}
	v, ok := d.GetIntProperty(name)
	if !ok {
		return "", false
	}
	return strconv.FormatUint(v, 10), true
}

// GetIntProperty returns the value of a numeric DB property (see
// GetProperty) and true, or 0 and false for a name that is not one or a
// closed DB.
func (d *DB) GetIntProperty(name string) (uint64, bool) {
	if d.checkOpen() != nil {
		return 0, false
	}
	if n, ok := strings.CutPrefix(name, numFilesAtLevel); ok {
		l, err := strconv.Atoi(n)
		m := d.Metrics()
		if err != nil || l < 0 || l >= len(m.Levels) || n != strconv.Itoa(l) {
			return 0, false
		}
		return uint64(m.Levels[l].NumFiles), true
	}
	switch strings.TrimPrefix(name, propertyPrefix) {
	case "estimate-num-keys":
		return d.estimateNumKeys(), true
	case "total-sst-files-size":
		tables, _ := d.versions.LiveFileSizes()
		return tables, true
	case "live-sst-files-size":
		var n uint64
		for _, l := range d.Metrics().Levels {
			n += l.Size
		}
		return n, true
	case "estimate-pending-compaction-bytes":
		v := d.versions.Current()
		defer v.Unref()
		co := d.compactOptions()
		return compact.EstimatePendingCompactionBytes(v, &co), true
	case "num-running-compactions":
		d.mu.Lock()
		defer d.mu.Unlock()
		return uint64(d.mu.compact.running), true
	case "num-running-flushes":
		d.mu.Lock()
		defer d.mu.Unlock()
		return boolProperty(d.mu.compact.flushing), true
	case "compaction-pending":
		d.mu.Lock()
		defer d.mu.Unlock()
		v := d.versions.Current()
		defer v.Unref()
		return boolProperty(d.picker.NeedsCompaction(v, d.pickEnvLocked())), true
	case "mem-table-flush-pending":
		d.mu.Lock()
		defer d.mu.Unlock()
		return boolProperty(len(d.mu.mem.queue) > 0), true
	case "num-immutable-mem-table":
		d.mu.Lock()
		defer d.mu.Unlock()
		return uint64(len(d.mu.mem.queue)), true
	case "cur-size-all-mem-tables":
		return d.Metrics().MemtableSize, true
	case "num-entries-active-mem-table":
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.mu.mem.mutable == nil {
			return 0, true
		}
		return uint64(d.mu.mem.mutable.Count()), true
	case "block-cache-usage":
		return uint64(max(d.Metrics().BlockCache.Size, 0)), true
	case "block-cache-capacity":
		return uint64(max(d.Metrics().BlockCache.Capacity, 0)), true
	case "block-cache-pinned-usage":
		return uint64(max(d.Metrics().BlockCache.PinnedSize, 0)), true
	case "estimate-table-readers-mem":
		return d.Metrics().TableReadersMem, true
	case "num-snapshots":
		d.mu.Lock()
		defer d.mu.Unlock()
		return uint64(len(d.mu.snapshots.list)), true
	case "oldest-snapshot-time":
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.mu.snapshots.list) == 0 {
			return 0, true
		}
		oldest := d.mu.snapshots.list[0].created
		for _, s := range d.mu.snapshots.list[1:] {
			if s.created.Before(oldest) {
				oldest = s.created
			}
		}
		return uint64(max(oldest.Unix(), 0)), true
	case "background-errors":
		return d.stats.backgroundErrors.Load(), true
	case "is-write-stopped":
		d.mu.Lock()
		defer d.mu.Unlock()
		return boolProperty(d.mu.bgErr != nil), true
	case "num-blob-files":
		return uint64(d.Metrics().Blob.Files), true
	case "total-blob-file-size":
		_, blobs := d.versions.LiveFileSizes()
		return blobs, true
	case "live-blob-file-size":
		return d.Metrics().Blob.Size, true
	case "live-blob-file-garbage-size":
		return d.Metrics().Blob.GarbageBytes, true
	}
	return 0, false
}

// estimateNumKeys is RocksDB's estimate of the live keys: the entries of
// the memtables and tables less twice the tables' deletions (a deletion
// removes itself and a key; memtables do not count theirs), never below
// zero.
func (d *DB) estimateNumKeys() uint64 {
	rs := d.loadReadState()
	if rs == nil {
		return 0
	}
	defer rs.unref()
	var entries, dels uint64
	for _, m := range append([]*memTable{rs.mem}, rs.imms...) {
		entries += uint64(m.Count())
	}
	for _, files := range rs.version.Levels {
		for _, f := range files {
			entries += f.NumEntries
			dels += f.NumDeletions
		}
	}
	if 2*dels >= entries {
		return 0
	}
	return entries - 2*dels
}

// levelStats formats the files and size of each level as RocksDB's
// rocksdb.levelstats does.
func levelStats(m *Metrics) string {
	var b strings.Builder
	b.WriteString("Level Files Size(MB)\n--------------------\n")
	for l, lm := range m.Levels {
		fmt.Fprintf(&b, "%3d %8d %8.0f\n", l, lm.NumFiles, float64(lm.Size)/(1<<20))
	}
	return b.String()
}

func boolProperty(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

package manifest

import (
	"sync/atomic"

	"github.com/shaledb/shale/internal/base"
)

// NumLevelsMax bounds Options.NumLevels.
const NumLevelsMax = 16

// FileMetadata describes one SST of a version. Everything but the fields
// under "runtime" is recorded in the MANIFEST.
type FileMetadata struct {
	FileNum base.FileNum
	Size    uint64
	// Smallest and Largest bound every point entry and range tombstone of
	// the file. Largest may be a range-delete sentinel
	// (base.MakeRangeDeleteSentinel), whose user key is excluded.
	Smallest, Largest        base.InternalKey
	SmallestSeq, LargestSeq  base.SeqNum
	NumEntries, NumDeletions uint64
	NumRangeDeletions        uint64
	// OldestTombstoneTime is the unix time in nanoseconds at which the
	// oldest tombstone of the file was written (by the DB's clock), 0 when it
	// has none or, for a file with tombstones, when the time is unknown (a
	// range-tombstone-only file recorded before shale kept the time).
	// Delete persistence deadlines (Options.DeletePersistenceThreshold)
	// count from it.
	OldestTombstoneTime uint64
	// MarkedForCompaction is set when a table property collector asked
	// for the file to be compacted (its NeedCompact); the picker compacts
	// such files first.
	MarkedForCompaction bool
	// RawKeySize and RawValueSize are the table's properties of the same
	// names (uncompressed bytes of the encoded internal keys and of the
	// values); compaction picking estimates from them what a tombstone
	// deletes.
	RawKeySize, RawValueSize uint64
	// NumDataBlocks and NumTombstoneDenseBlocks are the table's counts of
	// data blocks and of those dense in point tombstones
	// (sstable.Properties), behind the tombstone-density compactions.
	NumDataBlocks, NumTombstoneDenseBlocks uint64
	// RangeDeletionsBytesEstimate estimates the bytes of older files that
	// the file's range tombstones delete, as seen when it was written.
	RangeDeletionsBytesEstimate uint64
	// Secondary is the range of the secondary attributes of the file's
	// Sets (Options.SecondaryDeleteKey); zero when none has one or the
	// file predates the field.
	Secondary SecondaryRange
	// SecondaryApplied is the highest secondary tombstone seqnum that the
	// flush or compaction writing the file applied in full (with every
	// lower one): the file holds nothing a tombstone at or below it deletes.
	SecondaryApplied base.SeqNum
	// OldestAncesterTime is when the oldest data of the table was written
	// (unix seconds by the DB's clock; RocksDB's oldest_ancester_time): a
	// flush's memtable creation, the oldest of a compaction's inputs. TTL
	// compactions (Options.TTL) count from it. 0: unknown (written before
	// shale kept it).
	OldestAncesterTime uint64
	// FileCreationTime is when the table was written (unix seconds by the
	// DB's clock); periodic compactions (Options.PeriodicCompactionSeconds)
	// count from it. 0: unknown.
	FileCreationTime uint64
	// FileChecksum is the checksum of the whole table file, as the
	// generator named FileChecksumFuncName made it while the file was
	// written (RocksDB's file_checksum and file_checksum_func_name). Both
	// are empty when none was recorded (no generator, or a MANIFEST
	// written before shale recorded them).
	FileChecksum         []byte
	FileChecksumFuncName string
	// BlobFiles are the blob files the table's blob index entries point
	// into, ascending and without duplicates; nil when it has none. Every
	// version holding the table holds these blob files.
	BlobFiles []base.FileNum
	// GlobalSeqNum, when not zero, is the seqnum of every entry of an
	// ingested table, which stores them all at seqnum 0 (RocksDB keeps it
	// in the file; shale records it here and the table reader applies it).
	// SmallestSeq and LargestSeq then equal it. 0 for every table a flush
	// or compaction wrote, and for an ingested table placed below all data
	// it overlaps.
	GlobalSeqNum base.SeqNum

	// runtime

	// refs counts the versions that hold this file; when it drops to zero
	// the file may be deleted (if no newer version holds it).
	refs atomic.Int32
	// Compacting is true while a compaction has this file as an input; it is
	// only read and written with the DB mutex held.
	Compacting bool
}

// Version is an immutable set of live files by level. L0 files are ordered
// newest first (by LargestSeq descending); in L1 and below files are ordered
// by Smallest and do not overlap in user keys.
type Version struct {
	Levels [][]*FileMetadata
	// SecondaryTombstones are the live secondary-attribute range deletes,
	// by Seq ascending; nil when none (the read path's fast case).
	SecondaryTombstones []SecondaryTombstone
	// BlobFiles are the live blob files, by FileNum ascending; nil when
	// none. A blob file stays from the edit that adds it to the edit that
	// deletes it (see UnreferencedBlobFiles).
	BlobFiles []*BlobFileMetadata
	// MergeOperatorName is the merge operator the database's merge
	// operands were written under: set by the first edit naming one, kept
	// by every later version; empty when no merge was ever written.
	MergeOperatorName string
	refs              atomic.Int32

	// tracker receives this version's file references; nil for a version
	// that belongs to no VersionSet (file refs are then counted only in
	// FileMetadata). Versions made by Apply share their base's tracker.
	tracker *fileTracker
	// released is set when refs drops to zero; a released version holds no
	// file references and must never be referenced again.
	released atomic.Bool
}

// NewFileEntry is a file added to a level by a version edit.
type NewFileEntry struct {
	Level int
	Meta  *FileMetadata
}

// DeletedFileEntry names a file removed from a level by a version edit.
type DeletedFileEntry struct {
	Level   int
	FileNum base.FileNum
}

// VersionEdit is a delta between two versions; the MANIFEST is a log of them.
// A zero field (and a false Has* flag) means "unchanged".
type VersionEdit struct {
	// ManifestFormat is the MANIFEST format version, written in the first
	// record of each MANIFEST; 0 means absent.
	ManifestFormat uint64
	ComparerName   string
	// MergeOperatorName, when not empty, records the merge operator the
	// database's merge operands are written under (Version.MergeOperatorName).
	MergeOperatorName string
	HasLogNumber      bool
	LogNumber         base.FileNum // WALs numbered below this are obsolete
	HasNextFileNumber bool
	NextFileNumber    base.FileNum
	HasLastSeq        bool
	LastSeq           base.SeqNum
	DeletedFiles      map[DeletedFileEntry]bool
	NewFiles          []NewFileEntry
	// AddedSecondaryTombstones are secondary range deletes that become
	// live; RetiredSecondaryTombstones names (by Seq) live ones that no
	// data needs any more. Retirements apply before additions.
	AddedSecondaryTombstones   []SecondaryTombstone
	RetiredSecondaryTombstones []base.SeqNum
	// NewBlobFiles are blob files that become live (with no garbage),
	// BlobGarbage adds garbage to live ones, and DeletedBlobFiles removes
	// blob files that no table of the resulting version references. They
	// apply after the table changes, in that order.
	NewBlobFiles     []*BlobFileMetadata
	BlobGarbage      []BlobGarbage
	DeletedBlobFiles []base.FileNum
}

// Package manifest owns the description of which tables make up the
// database: FileMetadata, immutable Versions (files by level) with their
// reference counts, VersionEdits (deltas between versions) and their
// encoding, and the VersionSet, which owns the MANIFEST and CURRENT files,
// the current version, and the file-number, log-number and seqnum counters.
//
// It never reads or writes tables, never deletes them (tables that no
// referenced version holds are handed to the DB by TakeObsoleteTables), and
// never picks compactions. All IO goes through vfs.
//
// # Files
//
// CURRENT holds the name of the live MANIFEST and a newline
// ("MANIFEST-000007\n"). It is replaced atomically: write NNNNNN.dbtmp, sync
// it, rename it over CURRENT, sync the directory.
//
// A MANIFEST is a file of internal/record records (32 KiB blocks, CRC32C per
// fragment), one encoded VersionEdit per record. The first record of every
// MANIFEST is a snapshot: format version, comparer name, log number, next
// file number, last seqnum and every file of the version; later records are
// deltas. Replay applies them in order; it is the one reader of a MANIFEST,
// used by Load and by the root package's Check. A torn tail (a crash
// mid-append) is dropped; damage followed by intact records, and a damaged
// last record (internal/record's rule), are corruption. After Load, and
// when a MANIFEST grows past Options.MaxManifestFileSize, and after a failed
// write or sync, the next state goes to a new MANIFEST starting with a
// snapshot, so a possibly partial record is never appended to.
//
// # VersionEdit encoding
//
// An edit is a sequence of fields, each a uvarint tag followed by its
// payload. Numbers are uvarints; strings and keys are a uvarint length and
// the bytes; internal keys are encoded as in internal/base (user key, 8-byte
// little-endian trailer). Tag values follow RocksDB's where the field is the
// same, but the format is shale's own.
//
//	tag    field             payload
//	20     manifest format   format version (1)
//	1      comparer name     len | bytes
//	2      log number        filenum
//	3      next file number  filenum
//	4      last seqnum       seqnum (< 2^56)
//	6      deleted file      level | filenum
//	103    new file          level | filenum | size |
//	                         len | smallest ikey | len | largest ikey |
//	                         smallest seqnum | largest seqnum |
//	                         custom field* | 1 (terminator)
//	140    secondary tombstone lo | hi | seqnum (lo < hi)
//	141    retired secondary   seqnum (of a live secondary tombstone)
//	t|8192 unknown, ignored  len | bytes
//
// A new-file record ends with custom fields, so fields can be added without
// a new tag; each is a uvarint tag, a uvarint length and the value:
//
//	tag    field                   value
//	2      num entries             uvarint
//	3      num deletions           uvarint
//	4      num range deletions     uvarint
//	5      oldest tombstone time   uvarint (unix seconds)
//	6      marked for compaction   one byte, 0 or 1
//	71     raw key size            uvarint (table property)
//	72     raw value size          uvarint (table property)
//	73     num data blocks         uvarint (table property)
//	74     num tombstone-dense     uvarint (table property,
//	       data blocks             see sstable.WriterOptions)
//	75     range deletions bytes   uvarint: bytes of older files the
//	       estimate                range tombstones delete, estimated
//	                               when the file was written
//	84     oldest tombstone time   uvarint (unix nanoseconds; 64|20)
//	85     secondary attribute min uvarint (64|21)
//	86     secondary attribute max uvarint (64|22)
//	87     secondary attribute     uvarint: Sets with an attribute; present
//	       count                   (even 0) when the range is known
//	88     secondary applied       seqnum: newest secondary tombstone the
//	                               writing job applied in full
//	t|64   unknown, ignored        any
//
// Field 84 is field 5 to the nanosecond: both are written, a reader takes 84
// when present and the seconds of 5 otherwise (a MANIFEST written before 84
// existed), and one that does not know 84 skips it and keeps the seconds.
// Absent custom fields read as zero, and zero ones are not written. An
// unknown top-level tag without the 1<<13 bit, or an unknown custom tag
// without the 1<<6 bit, is corruption: it carries meaning this reader would
// lose. Fields 71 to 75 only guide compaction picking, so they carry the
// 1<<6 bit (71 = 64|7 …): a MANIFEST that holds them opens with a reader
// that predates them, which is why adding them left the format version at
// 1; a MANIFEST that predates them reads them as zero. Secondary tombstones
// (140, 141) are live deletes: they lack the 1<<13 bit, so an older reader
// refuses a MANIFEST holding them rather than show deleted data. Fields 85
// to 88 only decide when a secondary tombstone retires and which tables are
// compacted for one, so they carry the 1<<6 bit; a table without 87 (written
// before it, or without Options.SecondaryDeleteKey) may hold any attribute.
//
// # References
//
// A Version holds a reference on each of its files while it has references
// itself. Files are counted by file number, so a file that an edit moves
// between levels stays live throughout. When a file's count drops to zero it
// goes on the VersionSet's obsolete list. The VersionSet holds a reference
// on the current version; readers take their own with Current.
//
// # Decisions
//
//   - LogAndApply takes ownership of the edit's FileMetadata, which become
//     part of the new version: do not modify them afterwards.
//   - File numbers allocated but not yet recorded by an edit may be handed
//     out again after a crash; the DB removes unreferenced files found at
//     open (or marks their numbers used) before writing new ones.
//   - Close does not release the current version: its files stay live.
package manifest

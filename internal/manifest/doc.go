// Package manifest owns the description of which tables and blob files
// make up the database: FileMetadata and BlobFileMetadata, immutable
// Versions (tables by level, and blob files) with their reference counts,
// VersionEdits (deltas between versions) and their encoding, and the
// VersionSet, which owns the MANIFEST and CURRENT files, the current
// version, and the file-number, log-number and seqnum counters.
//
// It never reads or writes tables or blob files, never deletes them (files
// that no referenced version holds are handed to the DB by
// TakeObsoleteTables and TakeObsoleteBlobFiles), and never picks
// compactions. All IO goes through vfs.
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
// file number, last seqnum, every table and every blob file of the version
// (a blob file's garbage in a 401 record after its 400); later records are
// deltas. Replay applies them in order; it is the one reader of a MANIFEST,
// used by Load and by the root package's Check. A torn tail (a crash
// mid-append) is dropped; damage followed by intact records, and a damaged
// last record (internal/record's rule), are corruption. After Load, and
// when a MANIFEST grows past Options.MaxManifestFileSize, and after a failed
// write or sync, the next state goes to a new MANIFEST starting with a
// snapshot, so a possibly partial record is never appended to.
//
// A version set loaded with Options.ReadOnly can follow a MANIFEST that a
// writer in another process keeps appending to (CatchUp, for secondary
// instances): it applies the records after the end of the last one it
// read (internal/record's NewReaderAt), leaves a torn last record for the
// next call, and when CURRENT names a new MANIFEST replays that one from
// its snapshot. It writes nothing.
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
//	400    blob file addition  blobnum | total blobs | total bytes |
//	                           file size | len | checksum method |
//	                           len | checksum value |
//	                           custom field* | 1 (terminator)
//	401    blob file garbage   blobnum | garbage blobs | garbage bytes |
//	                           custom field* | 1 (terminator)
//	402    deleted blob file   blobnum
//	t|8192 unknown, ignored  len | bytes
//
// A blob number is a file number other than 0. The checksum is the whole
// file's: the method's name ("" when there is none, and then no value) and
// its value. Since whole-file checksums (issue 16) the method is the name
// of the generator that hashed every byte of the file, footer included, as
// a table's fields 96 and 97 are; before, it was "crc32c" or "xxhash64",
// the blob format's checksum of the bytes before the footer, which the
// footer holds too. The root package keeps those two names for that older
// meaning. Garbage (401) adds to the garbage recorded so far for the file;
// the totals of 400 bound the sum. The custom fields of 400 and 401 follow
// the rule of a new-file record's (below), in a namespace of their own:
//
//	tag    record  field          value
//	65     401     garbage time   uvarint (unix nanoseconds; 64|1): the
//	                              date of the garbage the record adds
//
// A blob file's garbage date is the oldest of its 401 records' (absent: no
// date). Delete persistence rewrites a dated blob file by a deadline
// counted from it; the field carries the 1<<6 bit, as the tombstone dates
// of field 84 do, since a reader that skips it loses only that deadline.
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
//	7      blob references         blobnum | (uvarint difference to the
//	                               next, at least 1)*: the blob files the
//	                               table points into, ascending
//	30     global seqnum           seqnum: every entry of the (ingested)
//	                               table reads at it, not at the 0 stored
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
//	89     oldest ancester time    uvarint (unix seconds; 64|25)
//	90     file creation time      uvarint (unix seconds; 64|26)
//	96     file checksum           the raw bytes of the whole file's
//	                               checksum (64|32; RocksDB's file_checksum)
//	97     file checksum function  its generator's name, not empty (64|33;
//	                               file_checksum_func_name)
//	t|64   unknown, ignored        any
//
// Fields 96 and 97 are written together or not at all (one without the
// other is corruption); a table recorded without them (no generator, or a
// MANIFEST written before them) has no whole-file checksum, and tools say
// it is unchecked. They carry the 1<<6 bit: a reader that skips them loses
// only the whole-file check, since every block has its own checksum.
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
// Field 30 (an ingested table's global seqnum) lacks the 1<<6 bit: a
// reader that skipped it would read the table's entries at seqnum 0, under
// the data they overwrite. Blob files (400, 401, 402, and field 7) lack both bits: a reader that
// skipped them would take tables to hold values they only point to, or
// remove blob files still in use, so an older shale refuses a MANIFEST
// holding them, while a MANIFEST without them reads as before (format
// version 1 throughout).
//
// # References
//
// A Version holds a reference on each of its files while it has references
// itself. Files are counted by file number, so a file that an edit moves
// between levels stays live throughout. When a file's count drops to zero it
// goes on the VersionSet's obsolete list. Blob files are counted the same
// way, by number (versions hold copies of a BlobFileMetadata that differ in
// garbage), on a list of their own. The VersionSet holds a reference on the
// current version; readers take their own with Current.
//
// # Blob files
//
// A blob file is in every version from the edit that adds it (with the
// flush or compaction that wrote it and the tables pointing into it) to the
// edit that deletes it. The rule, RocksDB's made exact: an edit deletes
// the blob files of the version it applies to that no table references
// once its own table changes are made, other than the blob files it adds
// itself (the ones just written); Version.UnreferencedBlobFiles computes
// them. Apply refuses to delete a blob file a table of the result
// references, and every blob file a table references must be in the
// version. Once deleted, the file is removed when every version from
// before the deletion is released (TakeObsoleteBlobFiles), as tables are.
//
// Each table records every blob file it references (field 7), not only the
// oldest, as RocksDB does. With the oldest only, a blob file that no table
// references any more but that is newer than some table's oldest reference
// stays until its garbage reaches its total, and a forced GC can only
// target the tables whose oldest reference is the file, missing the others
// that point into it. The exact set makes "unreferenced" exact, and lets
// GC find every table pointing into a file (Version.TablesReferencingBlob).
// It costs a byte or two per reference: a table written by a flush
// references one blob file, a compaction output those its inputs'
// values are in. OldestBlobFile gives RocksDB's number.
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

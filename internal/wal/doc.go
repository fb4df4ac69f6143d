// Package wal owns the write-ahead log: appending serialized batches to a
// NNNNNN.log file in the record format (see internal/record), writing them
// with one write per group commit before the commit returns (or, with
// WriterOptions.BackgroundWrites, soon after) and syncing on request through
// a background flusher, and replaying a log
// at recovery under one of RocksDB's WAL recovery modes.
//
// It never interprets a record (batch encoding belongs to the root package),
// never assigns sequence numbers, and never coordinates concurrent writers:
// the DB's commit leader gathers a group and calls the Writer alone.
//
// On-disk layout: exactly the record format, one record per committed batch
// (a commit group's records are written together), with no file header of
// its own:
//
//	+---------+---------+---------+-----
//	| block 0 | block 1 | block 2 | ...    32 KiB blocks of record fragments
//	+---------+---------+---------+-----
//
// Recovery modes decide what damage is acceptable (see RecoveryMode). Zeros
// after the last record (preallocated space) are a clean end in every mode.
//
// # Torn tail or damage
//
// Replay tells two kinds of bad end of the log apart, with the rule of
// internal/record (Reader.TailDamage), which the MANIFEST shares:
//
//   - A torn tail is what a crash in the middle of an append leaves: the
//     record runs past the end of the file (its size reached the disk, or
//     the write was cut short, before all of it), or some of its 512-byte
//     sectors read as zeros (they never reached the disk; drives write a
//     sector whole or not at all but do not order the sectors of one write,
//     and a log file is only appended to, so an unwritten sector has nothing
//     but zeros to show). A torn record was never synced — Commit(true)
//     returns after the sync, and a synced sector is on the disk — so
//     dropping it loses no write acknowledged with sync.
//   - Damage is everything else with a bad checksum or header: a record
//     whose every byte is present, with no zeroed sector, that fails its
//     checksum; a header the writer never writes (unknown type, a length
//     past its block); a length field whose checksum matches the record at
//     another length. A crash never changes bytes that reached the disk, so
//     this is data damaged after it was written whole (bit rot, a bad
//     controller, a stray write), and the record was most likely
//     acknowledged: a write that completed returned, and one with sync was
//     synced.
//
// So under TolerateCorruptedTailRecords a damaged tail fails Replay with an
// error matching base.ErrCorruption that names the WAL and the offset of the
// record, as RocksDB's mode of that name fails on a checksum mismatch;
// PointInTimeRecovery and SkipAnyCorruptedRecords drop it and say so in
// ReplayResult (TailCorrupt, DroppedRecords, DroppedOffset), and
// AbsoluteConsistency fails on both kinds. The rule errs towards "torn" only
// where the two cannot be told apart: a damaged record whose own bytes hold
// a zeroed sector (a value with 512 or more zero bytes in a row). It assumes
// that unwritten space reads as zeros after a crash; a file system that can
// show stale bytes there (ext4 with data=writeback) makes a torn tail look
// damaged, and PointInTimeRecovery is the mode for it.
package wal

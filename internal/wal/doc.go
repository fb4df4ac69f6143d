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
package wal

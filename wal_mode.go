package shale

import "github.com/shaledb/shale/internal/wal"

// WALRecoveryMode chooses how Open treats damage in the WAL (RocksDB's
// wal_recovery_mode).
type WALRecoveryMode = wal.RecoveryMode

// The WAL recovery modes.
const (
	// TolerateCorruptedTailRecords: a torn tail (a crash mid-write) is
	// dropped; damage is reported as corruption: damage followed by intact
	// records, and a last record written whole that fails its checksum
	// (see docs/durability.md, "Torn tail or damage").
	TolerateCorruptedTailRecords = wal.TolerateCorruptedTailRecords
	// AbsoluteConsistency: any damage, even a torn tail, fails Open.
	AbsoluteConsistency = wal.AbsoluteConsistency
	// PointInTimeRecovery: replay stops at the first damage, torn or not,
	// and Open reports what it dropped.
	PointInTimeRecovery = wal.PointInTimeRecovery
	// SkipAnyCorruptedRecords: damaged records are skipped, and Open
	// reports them.
	SkipAnyCorruptedRecords = wal.SkipAnyCorruptedRecords
)

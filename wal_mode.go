package shale

import "github.com/shaledb/shale/internal/wal"

// WALRecoveryMode chooses how Open treats damage in the WAL (RocksDB's
// wal_recovery_mode).
type WALRecoveryMode = wal.RecoveryMode

// The WAL recovery modes.
const (
	// TolerateCorruptedTailRecords: a torn tail (a crash mid-write) is
	// dropped; damage followed by intact records is reported as corruption.
	TolerateCorruptedTailRecords = wal.TolerateCorruptedTailRecords
	// AbsoluteConsistency: any damage, even a torn tail, fails Open.
	AbsoluteConsistency = wal.AbsoluteConsistency
	// PointInTimeRecovery: replay stops silently at the first damage.
	PointInTimeRecovery = wal.PointInTimeRecovery
	// SkipAnyCorruptedRecords: damaged records are skipped.
	SkipAnyCorruptedRecords = wal.SkipAnyCorruptedRecords
)

package wal

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// RecoveryMode says which damage Replay accepts. The names and values are
// those of RocksDB's WALRecoveryMode.
type RecoveryMode int

const (
	// TolerateCorruptedTailRecords, the default, accepts a torn tail (the
	// normal result of a crash) and fails on damage followed by intact
	// records.
	TolerateCorruptedTailRecords RecoveryMode = iota
	// AbsoluteConsistency fails on any damage, a torn tail included.
	AbsoluteConsistency
	// PointInTimeRecovery stops silently at the first damage, replaying a
	// consistent prefix of the log.
	PointInTimeRecovery
	// SkipAnyCorruptedRecords skips damaged records and replays every intact
	// one; it may lose writes from the middle of the log.
	SkipAnyCorruptedRecords
)

var modeNames = [...]string{
	TolerateCorruptedTailRecords: "TolerateCorruptedTailRecords",
	AbsoluteConsistency:          "AbsoluteConsistency",
	PointInTimeRecovery:          "PointInTimeRecovery",
	SkipAnyCorruptedRecords:      "SkipAnyCorruptedRecords",
}

// String returns the mode's RocksDB name.
func (m RecoveryMode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("RecoveryMode(%d)", int(m))
}

// ReplayResult summarizes a Replay.
type ReplayResult struct {
	// Records is the number of records passed to fn.
	Records int
	// LastOffset is the file offset just past the last intact record
	// replayed; 0 when there was none.
	LastOffset int64
	// TornTailBytes counts the bytes dropped at the end of the log (trailing
	// zeros not included); with PointInTimeRecovery, everything from the
	// first damage on.
	TornTailBytes int64
	// SkippedBytes counts the damaged bytes skipped in the middle of the log
	// under SkipAnyCorruptedRecords.
	SkippedBytes int64
	// Damaged is set when replay ended before the end of the log's data: a
	// torn tail, or the first damage under PointInTimeRecovery.
	Damaged bool
}

// Replay reads the WAL at path and calls fn with each intact record in order;
// rec is only valid during the call. Damage is handled as mode says; what it
// does not accept is returned as an error matching base.ErrCorruption that
// names the file and offset. An error from fn stops the replay and is
// returned as is.
func Replay(fs vfs.FS, path string, mode RecoveryMode, fn func(rec []byte) error) (ReplayResult, error) {
	var res ReplayResult
	if mode < TolerateCorruptedTailRecords || mode > SkipAnyCorruptedRecords {
		return res, base.InvalidArgumentf("shale: unknown WAL recovery mode %d", int(mode))
	}
	f, err := fs.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	rr := record.NewReader(io.NewSectionReader(f, 0, math.MaxInt64), path)
	for {
		rec, err := rr.Next()
		if err == nil {
			if err := fn(rec); err != nil {
				return res, err
			}
			res.Records++
			res.LastOffset = rr.EndOffset()
			continue
		}
		res.SkippedBytes = rr.SkippedBytes()
		off, dropped := rr.TornTail()
		switch {
		case err == io.EOF:
			res.TornTailBytes = dropped
			res.Damaged = dropped > 0
			if mode == AbsoluteConsistency && dropped > 0 {
				return res, base.CorruptionErrorf(path, off,
					"torn tail of %d bytes (WAL recovery mode %s accepts none)", dropped, mode)
			}
			return res, nil
		case !errors.Is(err, base.ErrCorruption):
			return res, fmt.Errorf("shale: reading WAL %s: %w", path, err)
		case mode == PointInTimeRecovery:
			res.TornTailBytes = dropped
			res.Damaged = true
			return res, nil
		case mode == SkipAnyCorruptedRecords:
			continue
		default:
			return res, err
		}
	}
}

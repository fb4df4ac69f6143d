package wal

import (
	"errors"
	"fmt"
	"io"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// RecoveryMode says which damage Replay accepts. The names and values are
// those of RocksDB's WALRecoveryMode. Whether a damaged end of the log is a
// torn tail (what a crash in the middle of an append leaves) or damage of
// records written whole is the rule of the package documentation.
type RecoveryMode int

const (
	// TolerateCorruptedTailRecords, the default, accepts a torn tail (the
	// normal result of a crash) and fails on damage: damage followed by
	// intact records, and a damaged tail (a last record whose bytes are all
	// there but fail their checksum).
	TolerateCorruptedTailRecords RecoveryMode = iota
	// AbsoluteConsistency fails on any damage, a torn tail included.
	AbsoluteConsistency
	// PointInTimeRecovery stops at the first damage, torn or not,
	// replaying a consistent prefix of the log; ReplayResult says what it
	// dropped.
	PointInTimeRecovery
	// SkipAnyCorruptedRecords skips damaged records and replays every intact
	// one; it may lose writes from the middle of the log, and ReplayResult
	// says which.
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

// ReplayResult summarizes a Replay. When Replay fails on damage it still
// describes the replay up to the damage: for a damaged or (under
// AbsoluteConsistency) torn tail, TornTailBytes, TailCorrupt and the Dropped
// fields describe that tail; for damage followed by intact records,
// DroppedRecords is 1 and DroppedOffset where the damage begins.
type ReplayResult struct {
	// Records is the number of records passed to fn.
	Records int
	// LastOffset is the file offset just past the last intact record
	// replayed; 0 when there was none.
	LastOffset int64
	// TornTailBytes counts the bytes dropped at the end of the log (trailing
	// zeros not included), torn or damaged; with PointInTimeRecovery,
	// everything from the first damage on.
	TornTailBytes int64
	// SkippedBytes counts the damaged bytes skipped in the middle of the log
	// under SkipAnyCorruptedRecords.
	SkippedBytes int64
	// Damaged is set when replay ended before the end of the log's data: a
	// torn or damaged tail, or the first damage under PointInTimeRecovery.
	Damaged bool

	// DroppedRecords counts the records in the log that were not replayed:
	// each damaged stretch skipped in the middle counts one, a dropped tail
	// (torn or damaged) one, and under PointInTimeRecovery every intact
	// record after the first damage one more each (a stretch holds at
	// least one record; how many the reader cannot tell). 0 when every
	// byte of the log (trailing zeros aside) was replayed.
	DroppedRecords int
	// DroppedOffset is the file offset of the first byte not replayed: the
	// start of the first skipped stretch or of the dropped tail. Meaningful
	// only when DroppedRecords > 0.
	DroppedOffset int64
	// TailCorrupt is set when the dropped end of the log (TornTailBytes) is
	// damage a crash cannot explain rather than a torn tail: a record written
	// whole that fails its checksum, or, under PointInTimeRecovery, damage
	// followed by intact records. Stretches skipped in the middle are always
	// damage and show in SkippedBytes.
	TailCorrupt bool
}

// Replay reads the WAL at path and calls fn with each intact record in order
// and the file offset at which it starts; rec is only valid during the call.
// Damage is handled as mode says; what it does not accept is returned as an
// error matching base.ErrCorruption that names the file and offset. An error
// from fn stops the replay and is returned as is. Open's recovery and the
// root package's Check both read WALs through Replay, so they tell torn
// tails from damage alike.
func Replay(fs vfs.FS, path string, mode RecoveryMode, fn func(rec []byte, off int64) error) (ReplayResult, error) {
	var res ReplayResult
	if mode < TolerateCorruptedTailRecords || mode > SkipAnyCorruptedRecords {
		return res, base.InvalidArgumentf("shale: unknown WAL recovery mode %d", int(mode))
	}
	f, err := fs.Open(path)
	if err != nil {
		return res, fmt.Errorf("shale: opening WAL %s: %w", path, err)
	}
	defer f.Close()
	return ReplayFrom(f, path, 0, mode, fn)
}

// ReplayFrom is Replay of the open WAL f (named path) from offset off on,
// which must be 0 or where an earlier replay's intact records ended (its
// LastOffset): a secondary instance follows a WAL the primary appends to
// this way, each look replaying what was appended since. LastOffset is
// off when no record was replayed.
func ReplayFrom(f io.ReaderAt, path string, off int64, mode RecoveryMode, fn func(rec []byte, off int64) error) (ReplayResult, error) {
	res := ReplayResult{LastOffset: off}
	if mode < TolerateCorruptedTailRecords || mode > SkipAnyCorruptedRecords {
		return res, base.InvalidArgumentf("shale: unknown WAL recovery mode %d", int(mode))
	}
	rr := record.NewReaderAt(f, path, off)
	// A WAL grown ahead of its records — through a mapping
	// (WriterOptions.Mmap, windows of mapWindow) or with zeros
	// (WriterOptions.ZeroFill, to multiples of its step, which like
	// mapWindow is a multiple of zeroFillUnit) — can end in a copy cut at any byte inside that space: by
	// a crash of the process, or by a power loss after the page was
	// written back in the middle of the copy.
	rr.SetMappedWriteUnit(zeroFillUnit)
	// stopped is set once PointInTimeRecovery met damage: the rest of the
	// log, already in the reader's memory, is only counted.
	stopped := false
	drop := func(off int64) {
		if res.DroppedRecords == 0 {
			res.DroppedOffset = off
		}
		res.DroppedRecords++
	}
	for {
		rec, err := rr.Next()
		if err == nil {
			if stopped {
				res.DroppedRecords++
				continue
			}
			if err := fn(rec, rr.Offset()); err != nil {
				return res, err
			}
			res.Records++
			res.LastOffset = rr.EndOffset()
			continue
		}
		off, dropped := rr.TornTail()
		switch {
		case err == io.EOF:
			if stopped {
				if dropped > 0 {
					res.DroppedRecords++
				}
				return res, nil
			}
			res.SkippedBytes = rr.SkippedBytes()
			if dropped == 0 {
				return res, nil
			}
			drop(off)
			damage := rr.TailDamage()
			res.TornTailBytes = dropped
			res.Damaged = true
			res.TailCorrupt = damage != nil
			switch {
			case damage != nil && (mode == TolerateCorruptedTailRecords || mode == AbsoluteConsistency):
				// A record written whole was most likely acknowledged:
				// dropping it silently would lose a write.
				return res, fmt.Errorf("%w (WAL recovery mode %s does not drop a damaged record; %s or %s opens without it, losing its writes)",
					damage, mode, PointInTimeRecovery, SkipAnyCorruptedRecords)
			case mode == AbsoluteConsistency:
				return res, base.CorruptionErrorf(path, off,
					"torn tail of %d bytes (WAL recovery mode %s accepts none)", dropped, mode)
			}
			return res, nil
		case !errors.Is(err, base.ErrCorruption):
			return res, fmt.Errorf("shale: reading WAL %s: %w", path, err)
		case stopped:
			res.DroppedRecords++
		case mode == PointInTimeRecovery:
			drop(off)
			res.SkippedBytes = rr.SkippedBytes()
			res.TornTailBytes = dropped
			res.Damaged = true
			res.TailCorrupt = true
			stopped = true
		case mode == SkipAnyCorruptedRecords:
			drop(off)
		default:
			drop(off)
			return res, err
		}
	}
}

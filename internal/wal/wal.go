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

// Writer appends records to one WAL file. It is used by one goroutine at a
// time (the DB's commit leader does group commit above it).
type Writer struct {
	f        vfs.File
	fileName string
	rw       *record.Writer
	synced   int64 // Size() at the last successful Sync
	// err is sticky: after a failed write or sync the file's durable state is
	// unknown, and retrying an fsync can falsely report success, so every
	// later call fails with the first error.
	err    error
	closed bool
}

// NewWriter returns a Writer appending to f, a newly created empty file;
// fileName is used in errors.
func NewWriter(f vfs.File, fileName string) *Writer {
	return &Writer{f: f, fileName: fileName, rw: record.NewWriter(f)}
}

func (w *Writer) check() error {
	if w.closed {
		return fmt.Errorf("shale: WAL %s: %w", w.fileName, base.ErrClosed)
	}
	return w.err
}

// AddRecord appends p as one record to the buffer; nothing is written until
// Flush.
func (w *Writer) AddRecord(p []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if _, err := w.rw.WriteRecord(p); err != nil {
		w.err = fmt.Errorf("shale: WAL %s: %w", w.fileName, err)
		return w.err
	}
	return nil
}

// Flush writes every buffered record with one write, then syncs the file if
// sync is set and anything is unsynced.
func (w *Writer) Flush(sync bool) error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.rw.Flush(); err != nil {
		w.err = fmt.Errorf("shale: writing WAL %s: %w", w.fileName, err)
		return w.err
	}
	if sync && w.synced < w.rw.Size() {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("shale: syncing WAL %s: %w", w.fileName, err)
			return w.err
		}
		w.synced = w.rw.Size()
	}
	return nil
}

// Size returns the size the file will have once everything buffered is
// flushed.
func (w *Writer) Size() int64 { return w.rw.Size() }

// Close flushes and syncs what is buffered, and closes the file. The file is
// closed even when the flush fails; that error is returned.
func (w *Writer) Close() error {
	if w.closed {
		return fmt.Errorf("shale: WAL %s: %w", w.fileName, base.ErrClosed)
	}
	err := w.Flush(true)
	w.closed = true
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("shale: closing WAL %s: %w", w.fileName, cerr)
	}
	return err
}

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
			if mode == AbsoluteConsistency && dropped > 0 {
				return res, base.CorruptionErrorf(path, off,
					"torn tail of %d bytes (WAL recovery mode %s accepts none)", dropped, mode)
			}
			return res, nil
		case !errors.Is(err, base.ErrCorruption):
			return res, fmt.Errorf("shale: reading WAL %s: %w", path, err)
		case mode == PointInTimeRecovery:
			res.TornTailBytes = dropped
			return res, nil
		case mode == SkipAnyCorruptedRecords:
			continue
		default:
			return res, err
		}
	}
}

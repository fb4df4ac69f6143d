package wal

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/fuzzseed"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// replayAll replays data as a WAL under mode and returns the records.
func replayAll(t *testing.T, data []byte, mode RecoveryMode) ([]string, ReplayResult, error) {
	fs := vfs.NewMem()
	f, err := fs.Create("000007.log")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var recs []string
	next := int64(0) // no record starts before the end of the one before
	res, err := Replay(fs, "000007.log", mode, func(rec []byte, off int64) error {
		if off < next || off+record.HeaderSize+int64(len(rec)) > int64(len(data)) {
			t.Fatalf("%s: a %d-byte record at offset %d, after one ending at %d, in a %d-byte file", mode, len(rec), off, next, len(data))
		}
		next = off + record.HeaderSize + int64(len(rec))
		recs = append(recs, string(rec))
		return nil
	})
	if err != nil {
		var ce *base.CorruptionError
		if !errors.As(err, &ce) || ce.File != "000007.log" || ce.Offset < 0 || ce.Offset > int64(len(data)) {
			t.Fatalf("%s: error %v is not a corruption error naming the WAL and an offset in it", mode, err)
		}
	}
	if res.Records != len(recs) || res.LastOffset > int64(len(data)) || res.TornTailBytes < 0 ||
		res.SkippedBytes < 0 || res.TornTailBytes+res.SkippedBytes > int64(len(data)) {
		t.Fatalf("%s: result %+v for %d records of a %d-byte file", mode, res, len(recs), len(data))
	}
	return recs, res, err
}

// FuzzReplay replays arbitrary files as a WAL under every recovery mode
// and checks the modes against each other: they see the same records up to
// the first damage; PointInTimeRecovery and SkipAnyCorruptedRecords never
// fail, and the latter replays a superset that extends the former's;
// AbsoluteConsistency succeeds only when nothing was dropped, with the
// default mode's records.
func FuzzReplay(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		tol, tolRes, tolErr := replayAll(t, data, TolerateCorruptedTailRecords)
		abs, absRes, absErr := replayAll(t, data, AbsoluteConsistency)
		pit, pitRes, pitErr := replayAll(t, data, PointInTimeRecovery)
		skip, skipRes, skipErr := replayAll(t, data, SkipAnyCorruptedRecords)
		if pitErr != nil || skipErr != nil {
			t.Fatalf("PointInTimeRecovery: %v; SkipAnyCorruptedRecords: %v", pitErr, skipErr)
		}
		if !slices.Equal(pit, tol) {
			t.Fatalf("PointInTimeRecovery replayed %d records, the default mode %d", len(pit), len(tol))
		}
		if len(skip) < len(pit) || !slices.Equal(skip[:len(pit)], pit) {
			t.Fatalf("SkipAnyCorruptedRecords replayed %d records, not an extension of PointInTimeRecovery's %d", len(skip), len(pit))
		}
		if tolErr == nil {
			// Only a torn tail was dropped: every mode agrees.
			if !slices.Equal(skip, tol) || skipRes.SkippedBytes != 0 || pitRes != tolRes {
				t.Fatalf("no damage in the middle, yet results differ: %+v %+v %+v", tolRes, pitRes, skipRes)
			}
		} else if !pitRes.Damaged {
			t.Fatalf("the default mode failed (%v) but PointInTimeRecovery saw no damage", tolErr)
		}
		if absErr == nil {
			if tolErr != nil || tolRes.TornTailBytes != 0 || !slices.Equal(abs, tol) || absRes != tolRes {
				t.Fatalf("AbsoluteConsistency accepted what the default mode saw as %+v, %v", tolRes, tolErr)
			}
		} else if tolErr == nil && tolRes.TornTailBytes == 0 {
			t.Fatalf("AbsoluteConsistency failed (%v) on a log with nothing dropped", absErr)
		}
	})
}

// walSeeds returns small logs written by the record writer: intact, torn,
// damaged in the middle, and with a zero tail.
func walSeeds(t *testing.T) [][]byte {
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	for i := range 4 {
		if _, err := w.WriteRecord([]byte(fmt.Sprintf("batch-%d-%s", i, strings.Repeat("v", i*9)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	intact := buf.Bytes()
	damaged := bytes.Clone(intact)
	damaged[record.HeaderSize+2] ^= 1
	return [][]byte{intact, intact[:len(intact)-4], damaged, append(bytes.Clone(intact), make([]byte, 64)...), {}}
}

// TestWriteFuzzSeeds writes the FuzzReplay seed corpus into testdata/fuzz
// when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it checks that it exists.
func TestWriteFuzzSeeds(t *testing.T) {
	var seeds [][]any
	if fuzzseed.Writing() {
		for _, s := range walSeeds(t) {
			seeds = append(seeds, []any{s})
		}
	}
	fuzzseed.Sync(t, map[string][][]any{"FuzzReplay": seeds})
}

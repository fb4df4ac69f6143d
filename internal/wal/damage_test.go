package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// These tests check the rule of the package documentation: what a crash in
// the middle of an append leaves (a cut, sectors that never reached the
// disk) is a torn tail, which every mode but AbsoluteConsistency drops;
// a damaged byte in a record written whole is reported — an error under
// TolerateCorruptedTailRecords and AbsoluteConsistency, a loss counted in
// ReplayResult under PointInTimeRecovery and SkipAnyCorruptedRecords — and
// never dropped silently.

const damageLog = "/000009.log"

var allModes = []RecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords}

// walPayload returns n bytes with no zero byte, so that no record holds a
// zeroed sector of its own (the one case the rule takes for torn).
func walPayload(seed, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((seed*131+i*7)%255 + 1)
	}
	return p
}

// damageWAL is a WAL written by the Writer on a MemFS: recs, of which the
// first synced were committed with sync and the rest without, and where
// each record starts and ends in the file.
type damageWAL struct {
	fs           *vfs.MemFS
	recs         [][]byte
	synced       int
	data         []byte // the whole file (the unsynced records included)
	starts, ends []int64
}

// writeDamageWAL commits recs one by one, the first synced with sync, and
// leaves the writer open (the file is not trimmed or closed, as at a
// crash).
func writeDamageWAL(t *testing.T, recs [][]byte, synced int) *damageWAL {
	t.Helper()
	fs, f := createWAL(t, damageLog)
	w := NewWriter(f, damageLog)
	dw := &damageWAL{fs: fs, recs: recs, synced: synced}
	for i, r := range recs {
		start := w.Size()
		if rem := record.BlockSize - start%record.BlockSize; rem < record.HeaderSize {
			start += rem // the record starts after the block's padding
		}
		if err := w.AddRecord(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(i < synced); err != nil {
			t.Fatal(err)
		}
		dw.starts = append(dw.starts, start)
		dw.ends = append(dw.ends, w.Size())
	}
	dw.data = readMemFile(t, fs, damageLog)
	if int64(len(dw.data)) != dw.ends[len(recs)-1] {
		t.Fatalf("file is %d bytes, records end at %d", len(dw.data), dw.ends[len(recs)-1])
	}
	t.Cleanup(func() { w.Close() })
	return dw
}

func readMemFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); n != len(b) {
		t.Fatalf("reading %s: %d of %d bytes: %v", name, n, len(b), err)
	}
	return b
}

// replayBytes replays data as the WAL under mode and returns the indexes
// (into want) of the records replayed, which must be a subsequence of want
// in order.
func replayBytes(t *testing.T, data []byte, mode RecoveryMode, want [][]byte) ([]int, ReplayResult, error) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create(damageLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var got []int
	res, err := Replay(fs, damageLog, mode, func(rec []byte, _ int64) error {
		j := 0
		if len(got) > 0 {
			j = got[len(got)-1] + 1
		}
		for ; j < len(want) && !bytes.Equal(rec, want[j]); j++ {
		}
		if j == len(want) {
			return fmt.Errorf("replayed a record that was not written (%d bytes), or out of order", len(rec))
		}
		got = append(got, j)
		return nil
	})
	if err != nil && strings.Contains(err.Error(), "was not written") {
		t.Fatal(err)
	}
	if res.Records != len(got) {
		t.Fatalf("%s: Records %d, fn saw %d", mode, res.Records, len(got))
	}
	return got, res, err
}

// damageWALs are the logs the flip tests damage: one record; many records
// of varied sizes across sector boundaries; and records spanning 32 KiB
// blocks (FIRST, MIDDLE and LAST fragments).
func damageWALs(t *testing.T) map[string]*damageWAL {
	var many [][]byte
	for i := range 24 {
		many = append(many, walPayload(i, 13+(i*97)%400))
	}
	spanning := [][]byte{walPayload(0, 100), walPayload(1, 2*record.BlockSize+500), walPayload(2, 40)}
	return map[string]*damageWAL{
		"one record":      writeDamageWAL(t, [][]byte{walPayload(0, 60)}, 1),
		"many records":    writeDamageWAL(t, many, len(many)),
		"spanning blocks": writeDamageWAL(t, spanning, len(spanning)),
	}
}

// recordAt returns the index of the record holding file offset off, or -1
// for block padding.
func (dw *damageWAL) recordAt(off int) int {
	for k := range dw.recs {
		if int64(off) >= dw.starts[k] && int64(off) < dw.ends[k] {
			return k
		}
	}
	return -1
}

// flipOffsets returns the offsets to damage: every byte of a log up to 8
// KiB (2 KiB under -short) and under SHALE_STRESS=1. In a larger log: every
// byte of the last record when it is small, the bytes around each record's
// start and end and each block boundary (headers, padding, the sectors
// there: 200 on each side, 12 under -short), and every 17th byte in between
// (every 211th under -short).
func (dw *damageWAL) flipOffsets() []int {
	n := len(dw.data)
	whole, near, stride := 8<<10, int64(200), 17
	if testing.Short() {
		whole, near, stride = 2<<10, 12, 211
	}
	if n <= whole || stressed() {
		return rangeOf(n)
	}
	seen := map[int]bool{}
	mark := func(from, to int64) {
		for o := max(from, 0); o < min(to, int64(n)); o++ {
			seen[int(o)] = true
		}
	}
	last := len(dw.recs) - 1
	if dw.ends[last]-dw.starts[last] <= 2<<10 {
		mark(dw.starts[last], dw.ends[last])
	}
	edges := append(slices.Clone(dw.starts), dw.ends...)
	for b := int64(0); b < int64(n); b += record.BlockSize {
		edges = append(edges, b)
	}
	for _, e := range edges {
		mark(e-near, e+near)
	}
	for o := 0; o < n; o += stride {
		seen[o] = true
	}
	offs := make([]int, 0, len(seen))
	for o := range seen {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	return offs
}

func rangeOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestReplayReportsEveryFlip flips every byte of each log (one bit, by the
// offset, and all eight; fewer in the large log and under -short, see
// flipOffsets and flipMasks) under every mode. A flip in record k replays
// exactly the records before it and then: fails naming the WAL and an
// offset in record k (TolerateCorruptedTailRecords, AbsoluteConsistency),
// stops and counts record k and every intact record after it as dropped
// (PointInTimeRecovery), or skips record k alone (SkipAnyCorruptedRecords).
// The last record is no exception: its flips are damage, not a torn tail.
func TestReplayReportsEveryFlip(t *testing.T) {
	for name, dw := range damageWALs(t) {
		t.Run(name, func(t *testing.T) {
			n := len(dw.recs)
			for _, off := range dw.flipOffsets() {
				for _, x := range flipMasks(off, len(dw.data)) {
					data := bytes.Clone(dw.data)
					data[off] ^= x
					k := dw.recordAt(off)
					for _, mode := range allModes {
						what := fmt.Sprintf("%s: flip %#02x at %d (record %d of %d)", mode, x, off, k, n)
						got, res, err := replayBytes(t, data, mode, dw.recs)
						checkFlip(t, what, dw, k, mode, got, res, err)
					}
				}
			}
		})
	}
}

// flipMasks returns what to XOR byte off of a log of n bytes with: one bit
// (which, by the offset), and all eight too in a log of up to 8 KiB (not
// under -short) or under SHALE_STRESS=1.
func flipMasks(off, n int) []byte {
	if stressed() || (!testing.Short() && n <= 8<<10) {
		return []byte{1 << (off % 8), 0xff}
	}
	return []byte{1 << (off % 8)}
}

func stressed() bool { return os.Getenv("SHALE_STRESS") == "1" }

func checkFlip(t *testing.T, what string, dw *damageWAL, k int, mode RecoveryMode, got []int, res ReplayResult, err error) {
	t.Helper()
	n := len(dw.recs)
	if k < 0 { // block padding: not read
		if err != nil || len(got) != n || res.DroppedRecords != 0 || res.Damaged {
			t.Fatalf("%s: padding flip: %d records, %+v, %v", what, len(got), res, err)
		}
		return
	}
	prefix := rangeOf(k)
	switch mode {
	case TolerateCorruptedTailRecords, AbsoluteConsistency:
		var ce *base.CorruptionError
		if !errors.As(err, &ce) || ce.File != damageLog || ce.Offset < dw.starts[k] || ce.Offset >= dw.ends[k] {
			t.Fatalf("%s: err %v, want corruption naming %s at an offset in [%d, %d)", what, err, damageLog, dw.starts[k], dw.ends[k])
		}
		if !slices.Equal(got, prefix) {
			t.Fatalf("%s: replayed %v before failing, want %v", what, got, prefix)
		}
		if res.DroppedRecords != 1 || res.DroppedOffset != dw.starts[k] || (k == n-1) != res.TailCorrupt {
			t.Fatalf("%s: %+v", what, res)
		}
	case PointInTimeRecovery:
		if err != nil || !slices.Equal(got, prefix) {
			t.Fatalf("%s: replayed %v, %v; want %v", what, got, err, prefix)
		}
		if res.DroppedRecords != n-k || res.DroppedOffset != dw.starts[k] || !res.TailCorrupt || !res.Damaged ||
			res.TornTailBytes != int64(len(dw.data))-dw.starts[k] || res.SkippedBytes != 0 {
			t.Fatalf("%s: %+v; want %d dropped from %d, reported as damage", what, res, n-k, dw.starts[k])
		}
	case SkipAnyCorruptedRecords:
		want := slices.Delete(rangeOf(n), k, k+1)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: replayed %v, %v; want %v", what, got, err, want)
		}
		if res.DroppedRecords != 1 || res.DroppedOffset != dw.starts[k] {
			t.Fatalf("%s: %+v; want record %d counted as dropped", what, res, k)
		}
		if k == n-1 {
			if !res.TailCorrupt || res.TornTailBytes != dw.ends[k]-dw.starts[k] || res.SkippedBytes != 0 {
				t.Fatalf("%s: %+v; want the last record reported as a damaged tail", what, res)
			}
		} else if res.TailCorrupt || res.TornTailBytes != 0 || res.SkippedBytes == 0 {
			t.Fatalf("%s: %+v; want record %d reported as skipped", what, res, k)
		}
	}
}

// checkTorn checks a replay of a log that a crash tore inside record k
// (every record before k intact, nothing intact after): every mode but
// AbsoluteConsistency replays records 0..k-1 and reports a torn tail of
// dropped bytes, not damage; AbsoluteConsistency fails on it.
func checkTorn(t *testing.T, what string, dw *damageWAL, data []byte, k int) {
	t.Helper()
	// Zeros at the end are a clean end, not a dropped tail.
	dropped := int64(len(bytes.TrimRight(data[min(int(dw.starts[k]), len(data)):], "\x00")))
	for _, mode := range allModes {
		got, res, err := replayBytes(t, data, mode, dw.recs)
		if !slices.Equal(got, rangeOf(k)) {
			t.Fatalf("%s, %s: replayed %v, want the %d records before the tear", what, mode, got, k)
		}
		if res.TailCorrupt || res.TornTailBytes != dropped || res.SkippedBytes != 0 {
			t.Fatalf("%s, %s: %+v; want a torn tail of %d bytes", what, mode, res, dropped)
		}
		if dropped > 0 && (res.DroppedRecords != 1 || res.DroppedOffset != dw.starts[k] || !res.Damaged) {
			t.Fatalf("%s, %s: %+v; want one record dropped at %d", what, mode, res, dw.starts[k])
		}
		if dropped == 0 && (res.DroppedRecords != 0 || res.Damaged) {
			t.Fatalf("%s, %s: %+v; nothing was dropped", what, mode, res)
		}
		switch {
		case mode == AbsoluteConsistency && dropped > 0:
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), "torn tail") {
				t.Fatalf("%s, %s: err %v, want a torn tail refused", what, mode, err)
			}
		case err != nil:
			t.Fatalf("%s, %s: a torn tail fails the replay: %v", what, mode, err)
		}
	}
}

// TestReplayTornByTruncation cuts each log at every byte of its last
// record (and under -short, of its last 600 bytes otherwise): a cut is a
// torn tail in every mode, never damage.
func TestReplayTornByTruncation(t *testing.T) {
	for name, dw := range damageWALs(t) {
		t.Run(name, func(t *testing.T) {
			last := len(dw.recs) - 1
			from := dw.starts[last]
			if testing.Short() {
				from = max(from, int64(len(dw.data))-600)
			}
			for cut := from + 1; cut < int64(len(dw.data)); cut++ {
				checkTorn(t, fmt.Sprintf("cut at %d", cut), dw, dw.data[:cut], last)
			}
		})
	}
}

// TestReplayTornByCrash crashes a WAL whose last records were committed
// without sync: the crash clone keeps the synced records, and what a power
// loss can add to them of the unsynced append — a prefix cut anywhere, the
// append's sectors up to a boundary with zeros after them (the file size
// reached the disk, the data did not), or one sector of its last record
// never written — is a torn tail that loses none of the synced records.
func TestReplayTornByCrash(t *testing.T) {
	recs := [][]byte{walPayload(0, 300), walPayload(1, 700), walPayload(2, 90),
		walPayload(3, 2500), walPayload(4, record.BlockSize+900)}
	const synced = 3
	dw := writeDamageWAL(t, recs, synced)
	crash := dw.fs.CrashClone()
	durable := readMemFile(t, crash, damageLog)
	if int64(len(durable)) != dw.ends[synced-1] {
		t.Fatalf("the crash clone kept %d bytes, the synced records end at %d", len(durable), dw.ends[synced-1])
	}
	// The crash itself: the unsynced records are gone, the synced ones
	// replay in every mode with nothing dropped.
	for _, mode := range allModes {
		got, res, err := replayBytes(t, durable, mode, recs)
		if err != nil || !slices.Equal(got, rangeOf(synced)) || res.DroppedRecords != 0 {
			t.Fatalf("%s: crash clone replays %v, %+v, %v", mode, got, res, err)
		}
	}
	// tornAt returns the record a tear at byte off of the append falls in.
	tornAt := func(off int) int {
		for k := synced; k < len(recs); k++ {
			if int64(off) < dw.ends[k] {
				return k
			}
		}
		return len(recs)
	}
	step := 5 // every byte under SHALE_STRESS=1
	switch {
	case stressed():
		step = 1
	case testing.Short():
		step = 29
	}
	for cut := len(durable) + 1; cut < len(dw.data); cut += step {
		data := append(bytes.Clone(durable), dw.data[len(durable):cut]...)
		checkTorn(t, fmt.Sprintf("power loss keeping %d bytes", cut), dw, data, tornAt(cut))
	}
	for s := (len(durable) + 511) &^ 511; s < len(dw.data); s += 512 {
		data := bytes.Clone(dw.data)
		clear(data[s:])
		checkTorn(t, fmt.Sprintf("sectors from %d not written", s), dw, data, tornAt(s))
	}
	last := len(recs) - 1
	for s := (dw.starts[last] + 511) &^ 511; s+512 <= dw.ends[last]; s += 512 {
		data := bytes.Clone(dw.data)
		clear(data[s : s+512])
		checkTorn(t, fmt.Sprintf("sector at %d of the last record not written", s), dw, data, last)
	}
}

// TestReplayDamagedTailError: the error of the default mode for a damaged
// last record names the WAL and the record's offset, says it is damage and
// which modes open without it.
func TestReplayDamagedTailError(t *testing.T) {
	dw := writeDamageWAL(t, [][]byte{walPayload(0, 50), walPayload(1, 42)}, 2)
	data := bytes.Clone(dw.data)
	data[dw.starts[1]+30] ^= 0x08
	_, res, err := replayBytes(t, data, TolerateCorruptedTailRecords, dw.recs)
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != damageLog || ce.Offset != dw.starts[1] {
		t.Fatalf("err %v, want corruption at %d", err, dw.starts[1])
	}
	for _, s := range []string{"shale: corruption in " + damageLog, "complete but fails its checksum",
		"not torn by a crash", "PointInTimeRecovery", "SkipAnyCorruptedRecords"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if res.Records != 1 || !res.TailCorrupt || res.DroppedRecords != 1 || res.DroppedOffset != dw.starts[1] ||
		res.TornTailBytes != dw.ends[1]-dw.starts[1] {
		t.Fatalf("result %+v", res)
	}
}

package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// memFS is the least vfs.FS these tests need: files in a map, counting writes
// and syncs, with injectable failures.
type memFS struct{ files map[string]*memFile }

type memFile struct {
	data          []byte
	writes, syncs int
	closed        bool
	failWrite     error
	failSync      error
}

func newMemFS() *memFS { return &memFS{files: map[string]*memFile{}} }

func (fs *memFS) Create(name string, _ ...vfs.OpenOption) (vfs.File, error) {
	f := &memFile{}
	fs.files[name] = f
	return f, nil
}

func (fs *memFS) Open(name string, _ ...vfs.OpenOption) (vfs.File, error) {
	f, ok := fs.files[name]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return &memFile{data: f.data}, nil
}

func (fs *memFS) OpenReadWrite(name string) (vfs.File, error) { return fs.Open(name) }
func (fs *memFS) OpenDir(name string) (vfs.File, error)       { return nil, errors.ErrUnsupported }
func (fs *memFS) Remove(name string) error                    { delete(fs.files, name); return nil }
func (fs *memFS) RemoveAll(name string) error                 { return errors.ErrUnsupported }
func (fs *memFS) Rename(a, b string) error                    { return errors.ErrUnsupported }
func (fs *memFS) MkdirAll(string, os.FileMode) error          { return nil }
func (fs *memFS) List(string) ([]string, error)               { return nil, errors.ErrUnsupported }
func (fs *memFS) Stat(string) (os.FileInfo, error)            { return nil, errors.ErrUnsupported }
func (fs *memFS) Lock(string) (io.Closer, error)              { return nil, errors.ErrUnsupported }
func (fs *memFS) PathJoin(elem ...string) string              { return path.Join(elem...) }
func (fs *memFS) PathBase(p string) string                    { return path.Base(p) }
func (fs *memFS) PathDir(p string) string                     { return path.Dir(p) }

func (f *memFile) Close() error { f.closed = true; return nil }
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *memFile) Write(p []byte) (int, error) {
	if f.failWrite != nil {
		return 0, f.failWrite
	}
	f.writes++
	f.data = append(f.data, p...)
	return len(p), nil
}
func (f *memFile) Sync() error {
	if f.failSync != nil {
		return f.failSync
	}
	f.syncs++
	return nil
}
func (f *memFile) SyncData() error                 { return f.Sync() }
func (f *memFile) StartWriteback(_, _ int64) error { return nil }
func (f *memFile) Size() (int64, error)            { return int64(len(f.data)), nil }
func (f *memFile) Preallocate(_, _ int64) error    { return nil }
func (f *memFile) Truncate(size int64) error {
	f.data = f.data[:size]
	return nil
}

const logName = "000007.log"

func rec(i int) []byte {
	n := 10 + i*37%200
	if i%5 == 4 {
		n = record.BlockSize + i*101 // spans blocks
	}
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i + j*3 + 1)
	}
	return b
}

// writeLog writes n records, each Flush'ed in groups of three, and returns
// the file and the end offset of each record.
func writeLog(t *testing.T, fs *memFS, n int) (*memFile, []int64) {
	t.Helper()
	f, _ := fs.Create(logName)
	w := NewWriter(f, logName)
	var ends []int64
	for i := range n {
		if err := w.AddRecord(rec(i)); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, w.Size())
		if i%3 == 2 {
			if err := w.Flush(i%2 == 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return fs.files[logName], ends
}

func replay(fs vfs.FS, mode RecoveryMode) ([][]byte, ReplayResult, error) {
	var got [][]byte
	res, err := Replay(fs, logName, mode, func(r []byte, _ int64) error {
		got = append(got, bytes.Clone(r))
		return nil
	})
	return got, res, err
}

func TestWriterGroupCommit(t *testing.T) {
	fs := newMemFS()
	f, _ := fs.Create(logName)
	w := NewWriter(f, logName)
	mf := f.(*memFile)
	for i := range 5 {
		if err := w.AddRecord(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if mf.writes != 0 || len(mf.data) != 0 {
		t.Fatal("AddRecord wrote to the file")
	}
	if err := w.Flush(false); err != nil {
		t.Fatal(err)
	}
	if mf.writes != 1 || mf.syncs != 0 || int64(len(mf.data)) != w.Size() {
		t.Fatalf("after Flush(false): %d writes, %d syncs, %d bytes (Size %d)", mf.writes, mf.syncs, len(mf.data), w.Size())
	}
	if err := w.Flush(true); err != nil {
		t.Fatal(err)
	}
	if mf.writes != 1 || mf.syncs != 1 {
		t.Fatalf("after Flush(true): %d writes, %d syncs", mf.writes, mf.syncs)
	}
	if err := w.Flush(true); err != nil { // nothing new: no sync
		t.Fatal(err)
	}
	if mf.syncs != 1 {
		t.Fatalf("idle Flush(true) synced")
	}
	if err := w.AddRecord(rec(5)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if mf.writes != 2 || mf.syncs != 2 || !mf.closed {
		t.Fatalf("after Close: %d writes, %d syncs, closed %v", mf.writes, mf.syncs, mf.closed)
	}
	if err := w.AddRecord(rec(0)); !errors.Is(err, base.ErrClosed) {
		t.Fatalf("AddRecord after Close: %v", err)
	}
	got, res, err := replay(fs, TolerateCorruptedTailRecords)
	if err != nil || len(got) != 6 || res.LastOffset != int64(len(mf.data)) || res.TornTailBytes != 0 {
		t.Fatalf("replay: %d records, %+v, %v", len(got), res, err)
	}
	for i, r := range got {
		if !bytes.Equal(r, rec(i)) {
			t.Fatalf("record %d differs", i)
		}
	}
}

func TestWriterErrorsAreSticky(t *testing.T) {
	for _, failSync := range []bool{false, true} {
		fs := newMemFS()
		f, _ := fs.Create(logName)
		mf := f.(*memFile)
		boom := errors.New("device gone")
		if failSync {
			mf.failSync = boom
		} else {
			mf.failWrite = boom
		}
		w := NewWriter(f, logName)
		if err := w.AddRecord(rec(1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(true); !errors.Is(err, boom) {
			t.Fatalf("Flush: %v", err)
		}
		mf.failSync, mf.failWrite = nil, nil // a retry must not pretend success
		if err := w.Flush(true); !errors.Is(err, boom) {
			t.Fatalf("second Flush: %v", err)
		}
		if err := w.AddRecord(rec(2)); !errors.Is(err, boom) {
			t.Fatalf("AddRecord: %v", err)
		}
		if err := w.Close(); !errors.Is(err, boom) || !mf.closed {
			t.Fatalf("Close: %v, closed %v", err, mf.closed)
		}
	}
}

// TestRecoveryModes damages a log in each way and checks what each mode does.
func TestRecoveryModes(t *testing.T) {
	const n = 12
	fs := newMemFS()
	mf, ends := writeLog(t, fs, n)
	clean := bytes.Clone(mf.data)
	start := func(i int) int64 {
		if i == 0 {
			return 0
		}
		return ends[i-1]
	}
	// Record 6 is small; record 9 spans blocks; 11 is last.
	type want struct {
		records int   // records replayed
		corrupt bool  // error matching ErrCorruption
		torn    int64 // TornTailBytes
		skipped bool  // SkippedBytes > 0
	}
	everyMode := func(w want) map[RecoveryMode]want {
		return map[RecoveryMode]want{
			TolerateCorruptedTailRecords: w,
			AbsoluteConsistency:          w,
			PointInTimeRecovery:          w,
			SkipAnyCorruptedRecords:      w,
		}
	}
	// corruptRecord is what each mode does when record i, not the last, is
	// damaged: stop with corruption, drop the rest as a torn tail, or skip
	// just that record.
	corruptRecord := func(i int) map[RecoveryMode]want {
		return map[RecoveryMode]want{
			TolerateCorruptedTailRecords: {records: i, corrupt: true},
			AbsoluteConsistency:          {records: i, corrupt: true},
			PointInTimeRecovery:          {records: i, torn: int64(len(clean)) - start(i)},
			SkipAnyCorruptedRecords:      {records: n - 1, skipped: true},
		}
	}
	cases := []struct {
		name   string
		damage func([]byte) []byte
		modes  map[RecoveryMode]want
	}{
		{
			name:   "clean",
			damage: func(b []byte) []byte { return b },
			modes:  everyMode(want{records: n}),
		},
		{
			name:   "zero tail",
			damage: func(b []byte) []byte { return append(b, make([]byte, 50000)...) },
			modes:  everyMode(want{records: n}),
		},
		{
			name:   "torn tail",
			damage: func(b []byte) []byte { return b[:start(n-1)+20] },
			modes: map[RecoveryMode]want{
				TolerateCorruptedTailRecords: {records: n - 1, torn: 20},
				AbsoluteConsistency:          {records: n - 1, corrupt: true, torn: 20},
				PointInTimeRecovery:          {records: n - 1, torn: 20},
				SkipAnyCorruptedRecords:      {records: n - 1, torn: 20},
			},
		},
		{
			name: "middle corruption",
			damage: func(b []byte) []byte {
				b[start(6)+9] ^= 0x40
				return b
			},
			modes: corruptRecord(6),
		},
		{
			name: "corrupt fragment of a multi-block record",
			damage: func(b []byte) []byte {
				b[ends[9]-5] ^= 0x01 // in record 9's LAST fragment
				return b
			},
			modes: corruptRecord(9),
		},
	}
	for _, tc := range cases {
		for mode, w := range tc.modes {
			t.Run(fmt.Sprintf("%s/%s", tc.name, mode), func(t *testing.T) {
				mf.data = tc.damage(bytes.Clone(clean))
				got, res, err := replay(fs, mode)
				if w.corrupt {
					var ce *base.CorruptionError
					if !errors.As(err, &ce) || ce.File != logName {
						t.Fatalf("err %v, want corruption naming %s", err, logName)
					}
				} else if err != nil {
					t.Fatalf("err %v", err)
				}
				if len(got) != w.records || res.Records != w.records {
					t.Fatalf("%d records (result %d), want %d", len(got), res.Records, w.records)
				}
				if res.TornTailBytes != w.torn {
					t.Fatalf("TornTailBytes %d, want %d", res.TornTailBytes, w.torn)
				}
				if (res.SkippedBytes > 0) != w.skipped {
					t.Fatalf("SkippedBytes %d", res.SkippedBytes)
				}
				// Replayed records are the written ones, minus the damaged one.
				j := 0
				for i := range n {
					if j < len(got) && bytes.Equal(got[j], rec(i)) {
						j++
					}
				}
				if j != len(got) {
					t.Fatalf("replayed records are not a subsequence of those written")
				}
				if w.records == n || (!w.skipped && w.records > 0) {
					if res.LastOffset != ends[w.records-1] {
						t.Fatalf("LastOffset %d, want %d", res.LastOffset, ends[w.records-1])
					}
				}
			})
		}
	}
}

// TestReplayRandomCut replays random prefixes of a log, as a crash at any
// point would leave it, and checks that every mode but AbsoluteConsistency
// replays exactly the records that fit.
func TestReplayRandomCut(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := newMemFS()
	mf, ends := writeLog(t, fs, 15)
	clean := bytes.Clone(mf.data)
	for range 100 {
		cut := rng.IntN(len(clean) + 1)
		mf.data = clean[:cut]
		wantN := 0
		for wantN < len(ends) && ends[wantN] <= int64(cut) {
			wantN++
		}
		for _, mode := range []RecoveryMode{TolerateCorruptedTailRecords, PointInTimeRecovery, SkipAnyCorruptedRecords} {
			got, res, err := replay(fs, mode)
			if err != nil || len(got) != wantN {
				t.Fatalf("seed %d cut %d mode %s: %d records, want %d; %v", seed, cut, mode, len(got), wantN, err)
			}
			if wantN > 0 && res.LastOffset != ends[wantN-1] {
				t.Fatalf("seed %d cut %d: LastOffset %d", seed, cut, res.LastOffset)
			}
		}
		_, res, err := replay(fs, AbsoluteConsistency)
		if (res.TornTailBytes > 0) != errors.Is(err, base.ErrCorruption) {
			t.Fatalf("seed %d cut %d: AbsoluteConsistency torn %d, err %v", seed, cut, res.TornTailBytes, err)
		}
	}
}

// TestReplayPassesRecordOffsets: fn gets the offset at which each record
// starts, where the one before it ends or, when fewer bytes than a header
// are left in that block, at the next block; after a damaged record skipped
// under SkipAnyCorruptedRecords too.
func TestReplayPassesRecordOffsets(t *testing.T) {
	fs := newMemFS()
	f, ends := writeLog(t, fs, 12)
	starts := make([]int64, len(ends))
	for i := 1; i < len(ends); i++ {
		starts[i] = ends[i-1]
		if rem := record.BlockSize - ends[i-1]%record.BlockSize; rem < record.HeaderSize {
			starts[i] += rem
		}
	}
	const damaged = 2
	for _, mode := range []RecoveryMode{TolerateCorruptedTailRecords, SkipAnyCorruptedRecords} {
		want := starts
		if mode == SkipAnyCorruptedRecords {
			f.data[starts[damaged]+record.HeaderSize] ^= 0x01
			want = append(slices.Clone(starts[:damaged]), starts[damaged+1:]...)
		}
		var got []int64
		if _, err := Replay(fs, logName, mode, func(_ []byte, off int64) error {
			got = append(got, off)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: offsets %v, want %v", mode, got, want)
		}
	}
}

func TestReplayErrors(t *testing.T) {
	fs := newMemFS()
	writeLog(t, fs, 5)
	stop := errors.New("stop here")
	calls := 0
	res, err := Replay(fs, logName, TolerateCorruptedTailRecords, func([]byte, int64) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop || res.Records != 2 {
		t.Fatalf("fn error: got %v, %d records", err, res.Records)
	}
	if _, err := Replay(fs, "missing.log", TolerateCorruptedTailRecords, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Replay(fs, logName, RecoveryMode(9), nil); !errors.Is(err, base.ErrInvalidArgument) {
		t.Fatalf("bad mode: %v", err)
	}
}

package shale

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// walWithRecords writes n synced records of 2 KiB values to a fresh DB in
// fs, closes it, and returns the path of its one WAL and each record's
// start offset in it.
func walWithRecords(t *testing.T, fs *vfs.MemFS, n int) (string, []int64) {
	t.Helper()
	db := openMemFS(t, fs)
	var walName string
	var offsets []int64
	// The size of the WAL's records (the file may run on in zeros).
	size := func() int64 {
		walName = "/db/" + findFile(t, fs, "/db", base.FileTypeLog)
		return int64(len(walRecords(t, readFile(t, fs, walName))))
	}
	for i := range n {
		offsets = append(offsets, size())
		if err := db.Put(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte{byte('a' + i)}, 2048), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return walName, offsets
}

// TestRecoveryLossReported: whatever Open drops from a WAL (a torn tail, a
// damaged record skipped or stopped at) shows in Metrics().Recovery, naming
// the file, and as a WARN line in LOG, under every recovery mode that
// accepts the loss; AbsoluteConsistency refuses.
func TestRecoveryLossReported(t *testing.T) {
	type damage struct {
		name string
		// apply damages the WAL bytes; offs are the record offsets.
		apply func(b []byte, offs []int64) []byte
		// lost are the keys each mode drops (nil: Open must fail).
		lost map[WALRecoveryMode][]int
	}
	cases := []damage{
		{
			name:  "torn tail",
			apply: func(b []byte, offs []int64) []byte { return b[:offs[4]+1000] },
			lost: map[WALRecoveryMode][]int{
				TolerateCorruptedTailRecords: {4},
				PointInTimeRecovery:          {4},
				SkipAnyCorruptedRecords:      {4},
			},
		},
		{
			name: "damaged middle record",
			apply: func(b []byte, offs []int64) []byte {
				b[offs[2]+100] ^= 0xff
				return b
			},
			lost: map[WALRecoveryMode][]int{
				PointInTimeRecovery:     {2, 3, 4},
				SkipAnyCorruptedRecords: {2},
			},
		},
	}
	modes := []WALRecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords}
	for _, c := range cases {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%s/%s", c.name, mode), func(t *testing.T) {
				fs := vfs.NewMem()
				walName, offs := walWithRecords(t, fs, 5)
				b := c.apply(readFile(t, fs, walName), offs)
				writeFile(t, fs, walName, b)
				o := testOptions(fs)
				o.WALRecoveryMode = mode
				db, err := Open("/db", o)
				lost, accepted := c.lost[mode]
				if !accepted {
					if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), walName) {
						t.Fatalf("Open: %v, want ErrCorruption naming %s", err, walName)
					}
					return
				}
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				rec := db.Metrics().Recovery
				for i := range 5 {
					_, err := db.Get(fmt.Appendf(nil, "k%02d", i), nil)
					if want := !slices.Contains(lost, i); (err == nil) != want {
						t.Errorf("k%02d: Get err %v, want found=%v", i, err, want)
					}
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if len(rec.Losses) == 0 || rec.DroppedBytes <= 0 || rec.DroppedRecords <= 0 {
					t.Fatalf("%d records lost but Metrics().Recovery = %+v", len(lost), rec)
				}
				for _, l := range rec.Losses {
					if l.File != walName || l.Reason == "" || l.Bytes <= 0 {
						t.Fatalf("loss %+v does not name %s with a reason and a size", l, walName)
					}
				}
				// Close does not rotate: LOG is still the one of this Open.
				log := string(readFile(t, fs, "/db/LOG"))
				if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "WAL records dropped") || !strings.Contains(log, walName) {
					t.Fatalf("LOG of the open that dropped records has no WARN naming %s:\n%s", walName, log)
				}
			})
		}
	}
}

// TestInfoLogRotation: each Open starts a new LOG and keeps the previous as
// LOG.old.<micros>, at most KeepLogFileNum of them; MaxLogFileSize starts
// a new LOG while open.
func TestInfoLogRotation(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.KeepLogFileNum = 3
	for range 6 {
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	olds := oldLogs(t, fs)
	if len(olds) != 3 {
		t.Fatalf("%d old LOG files after 6 opens with KeepLogFileNum 3: %v", len(olds), olds)
	}
	o.MaxLogFileSize = 2 << 10
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 { // flushes and compactions log events
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 100), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := oldLogs(t, fs); len(got) != 3 || slices.Equal(got, olds) {
		t.Fatalf("MaxLogFileSize rotated nothing or kept too many: before %v, after %v", olds, got)
	}
	fi, err := fs.Stat("/db/LOG")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4<<10 {
		t.Fatalf("LOG is %d bytes with MaxLogFileSize 2 KiB", fi.Size())
	}
}

func oldLogs(t *testing.T, fs vfs.FS) []string {
	var olds []string
	for _, n := range listNames(t, fs, "/db") {
		if strings.HasPrefix(n, "LOG.old.") {
			olds = append(olds, n)
		}
	}
	return olds
}

// TestCloseFlushesOnlyWritesWithoutWAL: Close flushes writes made with
// DisableWAL and nothing else; with AvoidFlushDuringShutdown it flushes
// nothing, and those writes are lost, as in RocksDB.
func TestCloseFlushesOnlyWritesWithoutWAL(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprintf("AvoidFlushDuringShutdown=%v", avoid), func(t *testing.T) {
			fs := vfs.NewMem()
			o := testOptions(fs)
			o.AvoidFlushDuringShutdown = avoid
			db, err := Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Put([]byte("wal"), []byte("1"), nil); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if n := countFiles(t, fs, base.FileTypeTable); n != 0 {
				t.Fatalf("Close flushed a write the WAL holds: %d tables", n)
			}
			db, err = Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Put([]byte("nowal"), []byte("2"), &WriteOptions{DisableWAL: true}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Get([]byte("wal"), nil); err != nil {
				t.Fatalf("the WAL write: %v", err)
			}
			_, err = db.Get([]byte("nowal"), nil)
			if avoid != errors.Is(err, ErrNotFound) {
				t.Fatalf("the DisableWAL write after Close: %v", err)
			}
		})
	}
}

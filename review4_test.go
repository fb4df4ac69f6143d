package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/record"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// Probes of the reliability promises (issue 4) that the fault and
// corruption matrices do not reach.

// TestReviewCloseAfterBackgroundErrorKeepsNoWALWrites: writes made with
// DisableWAL live only in the memtable. When a background error has made the
// DB read-only, Close cannot flush them; it must not then return nil as if
// they were kept.
func TestReviewCloseAfterBackgroundErrorKeepsNoWALWrites(t *testing.T) {
	mem := vfs.NewMem()
	ffs, opts, db := openFaultDB(t, mem, nil)
	var err error
	putRange(t, db, 0, 50, &WriteOptions{DisableWAL: true})
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpCreate, PathPattern: "*.sst", NoSpace: true})
	if err := db.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush with a full disk: %v", err)
	}
	ffs.ClearRules()
	closeErr := db.Close()
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, getErr := db.Get([]byte("key00000"), nil)
	if errors.Is(getErr, ErrNotFound) && closeErr == nil {
		t.Fatal("Close returned nil but the DisableWAL writes it could not flush are lost")
	}
	if closeErr != nil && (!errors.Is(closeErr, ErrReadOnly) || !errors.Is(closeErr, syscall.ENOSPC)) {
		t.Fatalf("Close error %v does not wrap ErrReadOnly and the cause", closeErr)
	}
}

// TestReviewResumeWhileFaultPersists: Resume while the cause is still there
// fails with an error wrapping the cause, leaves the DB read-only (writes
// fail, reads work), and a later Resume after the fault is gone succeeds
// without losing an acknowledged write; for a WAL write fault, a flush
// fault, and a MANIFEST fault.
func TestReviewResumeWhileFaultPersists(t *testing.T) {
	for _, rule := range []vfs.FaultRule{
		{Op: vfs.OpWrite, PathPattern: "*.log", NoSpace: true},
		{Op: vfs.OpSync, PathPattern: "*.log"},
		{Op: vfs.OpCreate, PathPattern: "*.sst", NoSpace: true},
		{Op: vfs.OpWrite, PathPattern: "MANIFEST-*", NoSpace: true},
		{Op: vfs.OpSync, PathPattern: "MANIFEST-*"},
		// Resume's own steps: the fresh WAL and the directory sync after it.
		{Op: vfs.OpCreate, PathPattern: "*.log", NoSpace: true},
		{Op: vfs.OpSync, PathPattern: "db"},
	} {
		t.Run(fmt.Sprintf("%s-%s", rule.Op, rule.PathPattern), func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, opts, db := openFaultDB(t, mem, nil)
			var err error
			defer func() { db.Close() }()
			putRange(t, db, 0, 100, &WriteOptions{Sync: true})
			ffs.AddRule(rule)
			cause := error(vfs.ErrInjected)
			if rule.NoSpace {
				cause = syscall.ENOSPC
			}
			// Meet the fault: a synced write, then a flush.
			err = db.Put([]byte("key00100"), []byte("key00100"), &WriteOptions{Sync: true})
			if err == nil {
				err = db.Flush()
			}
			if !errors.Is(err, cause) {
				t.Fatalf("meeting the fault: %v", err)
			}
			for try := 0; try < 3; try++ {
				// Resume may succeed when it does not meet the fault (a WAL
				// fault, when the fresh WAL is still empty); then the next
				// synced write and flush must meet it again.
				err := resumeWithin(t, db, ffs)
				if err == nil {
					if err = db.Put([]byte("x"), []byte("y"), &WriteOptions{Sync: true}); err == nil {
						err = db.Flush()
					}
				}
				if !errors.Is(err, cause) {
					t.Fatalf("Resume %d with the fault still there (and a write and flush after it) returned %v, want an error wrapping %v", try, err, cause)
				}
				if err := db.Put([]byte("x"), []byte("y"), &WriteOptions{Sync: true}); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("write after a failed Resume: %v", err)
				}
				if db.Metrics().BackgroundError == nil {
					t.Fatal("no background error after a failed Resume")
				}
				expectRange(t, db, 0, 100)
			}
			ffs.ClearRules()
			if err := db.Resume(); err != nil {
				t.Fatalf("Resume after the fault is gone: %v", err)
			}
			putRange(t, db, 200, 250, &WriteOptions{Sync: true})
			expectRange(t, db, 0, 100)
			expectRange(t, db, 200, 250)
			crash := mem.CrashClone()
			if err := db.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, fs := range []vfs.FS{mem, crash} {
				o := testOptions(fs)
				o.Logger = discardLogger()
				db, err = Open("/db", o)
				if err != nil {
					t.Fatalf("reopen: %v", err)
				}
				expectRange(t, db, 0, 100)
				expectRange(t, db, 200, 250)
				db.Close()
			}
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// reviewWALDB writes 40 synced batches that stay in one WAL and returns the
// closed DB's FS and the WAL's name.
func reviewWALDB(t *testing.T) (*vfs.MemFS, string) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.WriteBufferSize = 1 << 20
	opts.Logger = discardLogger()
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("key%05d", i)
		if err := db.Put([]byte(k), []byte(k+strings.Repeat("v", 100)), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List("/db")
	var name string
	var size int
	for _, n := range names {
		if ft, _, ok := base.ParseFilename(n); ok && ft == base.FileTypeLog {
			if d := readFile(t, fs, "/db/"+n); len(d) > size {
				name, size = n, len(d)
			}
		}
	}
	return fs, name
}

// TestReviewWALMiddleRecordEachMode flips a byte in a middle record of the
// WAL under every WALRecoveryMode: the strict modes report ErrCorruption
// naming the WAL; PointInTimeRecovery keeps exactly the records before the
// damage; SkipAnyCorruptedRecords loses only the damaged record.
func TestReviewWALMiddleRecordEachMode(t *testing.T) {
	orig, name := reviewWALDB(t)
	data := readFile(t, orig, "/db/"+name)
	// Each record is a batch of one ~125-byte entry plus a 7-byte header;
	// flip a byte inside record 20's value.
	recLen := (len(data)) / 40
	off := 20*recLen + recLen/2
	for _, mode := range []WALRecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := orig.CrashClone()
			d := readFile(t, fs, "/db/"+name)
			d[off] ^= 0x20
			writeFile(t, fs, "/db/"+name, d)
			o := testOptions(fs)
			o.Logger = discardLogger()
			o.WALRecoveryMode = mode
			db, err := Open("/db", o)
			switch mode {
			case TolerateCorruptedTailRecords, AbsoluteConsistency:
				expectCorruption(t, err, name)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			missing := []int{}
			for i := 0; i < 40; i++ {
				k := fmt.Sprintf("key%05d", i)
				v, err := db.Get([]byte(k), nil)
				switch {
				case errors.Is(err, ErrNotFound):
					missing = append(missing, i)
				case err != nil:
					t.Fatalf("Get(%s): %v", k, err)
				case string(v) != k+strings.Repeat("v", 100):
					t.Fatalf("Get(%s) = %q: wrong data", k, v)
				}
			}
			switch mode {
			case PointInTimeRecovery:
				if len(missing) == 0 || missing[0] < 15 || missing[0] > 25 || missing[len(missing)-1] != 39 ||
					len(missing) != 40-missing[0] {
					t.Fatalf("point-in-time recovery kept more or less than a prefix: missing %v", missing)
				}
			case SkipAnyCorruptedRecords:
				if len(missing) != 1 {
					t.Fatalf("skipping the damaged record lost %v", missing)
				}
			}
			// The recovered DB is consistent and writable.
			if err := db.Put([]byte("after"), []byte("x"), &WriteOptions{Sync: true}); err != nil {
				t.Fatal(err)
			}
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// reviewDamagedTableDB builds a DB with two overlapping L0 tables (so a
// compaction merges them), damages a data block of the older one, and
// returns the FS, the damaged table's name and every key with its value.
func reviewDamagedTableDB(t *testing.T) (*vfs.MemFS, string, map[string]string) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.DisableAutoCompactions = true
	opts.WriteBufferSize = 1 << 20
	opts.Compression = NoCompression
	opts.Logger = discardLogger()
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("key%05d", i)
		want[k] = fmt.Sprintf("a-%05d-%s", i, strings.Repeat("x", 40))
		if err := db.Put([]byte(k), []byte(want[k]), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	older := liveTables(t, fs)
	for i := 0; i < 1000; i += 10 {
		k := fmt.Sprintf("key%05d", i)
		want[k] = fmt.Sprintf("b-%05d", i)
		if err := db.Put([]byte(k), []byte(want[k]), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(older) != 1 {
		t.Fatalf("want one table after the first flush, have %v", older)
	}
	name := older[0]
	data := readFile(t, fs, "/db/"+name)
	data[len(data)/2] ^= 0x08 // inside a data block
	writeFile(t, fs, "/db/"+name, data)
	return fs, name, want
}

// TestReviewCompactionMeetsCorruption: damage found only when a compaction
// reads its input must fail the compaction with ErrCorruption naming the
// file, keep the input (nothing is dropped), leave every readable key
// right, and a reopen finds the same; for a manual and an automatic
// compaction.
func TestReviewCompactionMeetsCorruption(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto=%v", auto), func(t *testing.T) {
			fs, name, want := reviewDamagedTableDB(t)
			opts := testOptions(fs)
			opts.DisableAutoCompactions = !auto
			opts.WriteBufferSize = 1 << 20
			opts.Logger = discardLogger()
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			var cerr error
			if auto {
				if !waitFor(func() bool { return db.Metrics().BackgroundError != nil }) {
					t.Fatal("the automatic compaction never failed")
				}
				cerr = db.Metrics().BackgroundError
				werr := db.Put([]byte("z"), []byte("z"), nil)
				if !errors.Is(werr, ErrReadOnly) {
					t.Fatalf("write after a failed compaction: %v", werr)
				}
				expectCorruption(t, werr, name)
			} else {
				cerr = db.CompactRange(nil, nil)
			}
			expectCorruption(t, cerr, name)
			if _, err := fs.Stat("/db/" + name); err != nil {
				t.Fatalf("the damaged input was removed: %v", err)
			}
			if live := liveTablesOf(db); !live[name] {
				t.Fatalf("the damaged input %s is no longer live: %v", name, live)
			}
			checkReadable := func(db *DB, what string) {
				t.Helper()
				bad := 0
				for k, v := range want {
					got, err := db.Get([]byte(k), nil)
					if err != nil {
						expectCorruption(t, err, name)
						bad++
						continue
					}
					if string(got) != v {
						t.Fatalf("%s: Get(%s) = %q, want %q", what, k, got, v)
					}
				}
				if bad == 0 || bad > 200 {
					t.Fatalf("%s: %d keys unreadable", what, bad)
				}
			}
			checkReadable(db, "after the failed compaction")
			if err := db.Close(); err != nil && !errors.Is(err, ErrCorruption) {
				t.Fatalf("Close: %v", err)
			}
			opts.DisableAutoCompactions = true
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			checkReadable(db, "after reopen")
		})
	}
}

// liveTablesOf returns the names of db's live tables.
func liveTablesOf(db *DB) map[string]bool {
	out := map[string]bool{}
	for num := range db.versions.LiveFileNums() {
		out[base.MakeFilename(base.FileTypeTable, num)] = true
	}
	return out
}

// TestReviewMissingTableIsNotNotFound: a live table whose file is gone must
// make reads of its keys fail (naming the file), never answer "not found",
// and iteration must fail rather than skip the file.
func TestReviewMissingTableIsNotNotFound(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 500, true)
	name := liveTables(t, fs)[0]
	if err := fs.Remove("/db/" + name); err != nil {
		t.Fatal(err)
	}
	o := testOptions(fs)
	o.Logger = discardLogger()
	db, err := Open("/db", o)
	if err != nil {
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("Open error does not name %s: %v", name, err)
		}
		return // refusing to open is fine
	}
	defer db.Close()
	_, err = db.Get([]byte("key00100"), nil)
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Get of a key in the missing table: %v", err)
	}
	it := db.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if it.Err() == nil {
		t.Fatalf("a scan over a missing table ended without an error after %d keys", n)
	}
	it.Close()
	o.ParanoidChecks = true
	db2, err := Open("/db", o)
	if err == nil {
		db2.Close()
		t.Fatal("ParanoidChecks: Open of a DB missing a live table succeeded")
	}
}

// resumeWithin calls db.Resume and fails the test if it does not return
// within a generous bound (a Resume that retries for as long as the fault
// lasts never returns); then the fault is cleared, so the DB can close.
func resumeWithin(t *testing.T, db *DB, ffs *vfs.FaultFS) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- db.Resume() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		ffs.ClearRules()
		<-done
		t.Fatal("Resume with the fault still there did not return")
		return nil
	}
}

// TestReviewCloseAfterWALFailureReportsLoss: writes acknowledged without
// Sync whose WAL write failed in the background live only in the memtable.
// Closing without Resume must not return nil when a reopen lacks them.
func TestReviewCloseAfterWALFailureReportsLoss(t *testing.T) {
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("background=%v", background), func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, opts, db := openFaultDB(t, mem, func(opts *Options) {
				opts.WriteBufferSize = 1 << 20
				opts.WALBackgroundWrites = background
			})
			var err error
			putRange(t, db, 0, 20, &WriteOptions{Sync: true})
			ffs.AddRule(vfs.FaultRule{Op: vfs.OpWrite, PathPattern: "*.log", NoSpace: true})
			acked := 20
			for i := 20; i < 2000; i++ {
				k := fmt.Sprintf("key%05d", i)
				if err := db.Put([]byte(k), []byte(k), nil); err != nil {
					break
				}
				acked = i + 1
			}
			waitFor(func() bool { return db.Metrics().BackgroundError != nil })
			ffs.ClearRules()
			closeErr := db.Close()
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			expectRange(t, db, 0, 20)
			lost := 0
			for i := 20; i < acked; i++ {
				if _, err := db.Get([]byte(fmt.Sprintf("key%05d", i)), nil); errors.Is(err, ErrNotFound) {
					lost++
				}
			}
			t.Logf("%d acknowledged, %d lost, Close: %v", acked-20, lost, closeErr)
			if lost > 0 && closeErr == nil {
				t.Fatalf("Close returned nil, but %d of %d writes acknowledged after the synced ones are lost", lost, acked-20)
			}
			if closeErr != nil && !errors.Is(closeErr, syscall.ENOSPC) {
				t.Fatalf("Close error does not wrap the cause: %v", closeErr)
			}
		})
	}
}

// TestReviewReadErrorIsNotCorruption: a transient read error met by Get, an
// iterator, VerifyChecksum, Check and a compaction wraps the cause and is
// not reported as ErrCorruption (damage on disk is another matter than a
// failing device, and tools act on the difference).
func TestReviewReadErrorIsNotCorruption(t *testing.T) {
	mem := vfs.NewMem()
	fillDB(t, mem, 2000, true)
	ffs, _, db := openFaultDB(t, mem, func(opts *Options) {
		opts.BlockCacheSize = -1
		opts.DisableAutoCompactions = true
	})
	var err error
	defer db.Close()
	// A second, overlapping table, so CompactRange merges (a single table
	// would move without being read).
	putRange(t, db, 0, 2000, nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	rule := vfs.FaultRule{Op: vfs.OpRead, PathPattern: "*.sst"}
	expect := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, vfs.ErrInjected) || errors.Is(err, ErrCorruption) {
			t.Fatalf("%s with a read error: %v (want the cause, not ErrCorruption)", what, err)
		}
	}
	ffs.AddRule(rule)
	_, err = db.Get([]byte("key00100"), nil)
	expect("Get", err)
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	expect("iterator", it.Close())
	expect("VerifyChecksum", db.VerifyChecksum())
	_, errs := db.MultiGet([][]byte{[]byte("key00001"), []byte("key01999")}, nil)
	expect("MultiGet", errs[0])
	expect("CompactRange", db.CompactRange(nil, nil))
	ffs.ClearRules()
	rep, err := Check("/db", &Options{FS: ffs})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("Check of the intact DB:\n%s", rep)
	}
	ffs.AddRule(rule)
	rep, err = Check("/db", &Options{FS: ffs})
	if err == nil {
		for _, f := range rep.Files {
			if f.Kind == "table" && f.Err != nil && errors.Is(f.Err, ErrCorruption) {
				t.Fatalf("Check calls a read error on %s corruption: %v", f.Name, f.Err)
			}
		}
		if rep.OK() {
			t.Fatalf("Check with every table read failing says OK:\n%s", rep)
		}
	}
}

// TestReviewWALBatchCountIsChecked: a WAL record whose checksum holds but
// whose batch header claims far more entries than its bytes can hold (a
// writer bug, or damage the CRC missed) must fail Open with ErrCorruption
// naming the WAL, without sizing a memtable by the claimed count.
func TestReviewWALBatchCountIsChecked(t *testing.T) {
	for _, count := range []uint32{math.MaxUint32, 1 << 24, 3} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			fs := vfs.NewMem()
			o := testOptions(fs)
			o.Logger = discardLogger()
			db, err := Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			putRange(t, db, 0, 10, &WriteOptions{Sync: true})
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// A newer WAL holding one record: seqnum 100, the claimed count,
			// and two Set entries.
			var rec []byte
			rec = binary.LittleEndian.AppendUint64(rec, 100)
			rec = binary.LittleEndian.AppendUint32(rec, count)
			for _, k := range []string{"a", "b"} {
				rec = append(rec, byte(base.KindSet), 1, k[0], 1, 'v')
			}
			name := base.MakeFilename(base.FileTypeLog, 900)
			f, err := fs.Create("/db/" + name)
			if err != nil {
				t.Fatal(err)
			}
			w := record.NewWriter(f)
			if _, err := w.WriteRecord(rec); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			f.Sync()
			f.Close()
			if rep, err := Check("/db", &Options{FS: fs}); err != nil || rep.OK() {
				t.Fatalf("Check of the WAL with a malformed batch: %v\n%s", err, rep)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			db, err = Open("/db", o)
			runtime.ReadMemStats(&after)
			if err == nil {
				db.Close()
			}
			expectCorruption(t, err, name)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
				t.Fatalf("Open allocated %d MiB for a %d-byte record claiming %d entries", grew>>20, len(rec), count)
			}
		})
	}
}

// TestReviewIteratorAfterTransientReadError: an iterator that met a read
// error stays stopped (Next does not go on past the failed block), and
// once the fault is gone, repositioning it reads everything again: no
// block is skipped and no key returned twice or out of order.
func TestReviewIteratorAfterTransientReadError(t *testing.T) {
	mem := vfs.NewMem()
	fillDB(t, mem, 2000, true)
	ffs, _, db := openFaultDB(t, mem, func(opts *Options) {
		opts.BlockCacheSize = -1
	})
	defer db.Close()
	key := func(i int) string { return fmt.Sprintf("key%05d", i) }
	for _, reverse := range []bool{false, true} {
		for _, nth := range []int{2, 3, 4} {
			it := db.NewIterator(nil)
			ffs.AddRule(vfs.FaultRule{Op: vfs.OpRead, PathPattern: "*.sst", Nth: nth})
			n := 0
			var ok bool
			if reverse {
				ok = it.Last()
			} else {
				ok = it.First()
			}
			for ; ok; n++ {
				want := key(n)
				if reverse {
					want = key(1999 - n)
				}
				if string(it.Key()) != want {
					t.Fatalf("reverse %v nth %d: at %d got %q, want %q", reverse, nth, n, it.Key(), want)
				}
				if reverse {
					ok = it.Prev()
				} else {
					ok = it.Next()
				}
			}
			if !errors.Is(it.Err(), vfs.ErrInjected) {
				t.Fatalf("reverse %v nth %d: scan ended after %d keys with %v", reverse, nth, n, it.Err())
			}
			if it.Next() || it.Prev() {
				t.Fatalf("reverse %v nth %d: the iterator moved on after an error, to %q", reverse, nth, it.Key())
			}
			ffs.ClearRules()
			// Reposition where the scan stopped and finish it.
			from := n
			if reverse {
				from = 1999 - n
				ok = it.SeekForPrev([]byte(key(from)))
			} else {
				ok = it.Seek([]byte(key(from)))
			}
			for ; ok; n++ {
				want := key(n)
				if reverse {
					want = key(1999 - n)
				}
				if string(it.Key()) != want || string(it.Value()) != fmt.Sprintf("value-%s-%s", want[3:], strings.Repeat("x", 50)) {
					t.Fatalf("reverse %v nth %d: after repositioning, at %d got %q=%q, want %q", reverse, nth, n, it.Key(), it.Value(), want)
				}
				if reverse {
					ok = it.Prev()
				} else {
					ok = it.Next()
				}
			}
			if it.Err() != nil || n != 2000 {
				t.Fatalf("reverse %v nth %d: after repositioning the scan ended at %d with %v", reverse, nth, n, it.Err())
			}
			if err := it.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	}
}

// TestReviewTornManifestWriteThenResume: a MANIFEST write that fails after
// writing half its bytes leaves a torn record; after Resume the edits that
// follow must not land behind it, or the next Open would find damage
// followed by intact records.
func TestReviewTornManifestWriteThenResume(t *testing.T) {
	mem := vfs.NewMem()
	ffs, _, db := openFaultDB(t, mem, func(opts *Options) {
		opts.MaxManifestFileSize = 1 << 30 // no rotation: edits follow the torn one
	})
	putRange(t, db, 0, 100, &WriteOptions{Sync: true})
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpWrite, PathPattern: "MANIFEST-*", ShortWrite: true, NoSpace: true})
	if err := db.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush with a torn MANIFEST write: %v", err)
	}
	ffs.ClearRules()
	if err := db.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	putRange(t, db, 100, 200, &WriteOptions{Sync: true})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	putRange(t, db, 200, 250, &WriteOptions{Sync: true})
	crash := mem.CrashClone()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, fs := range []vfs.FS{mem, crash} {
		o := testOptions(fs)
		o.Logger = discardLogger()
		db, err := Open("/db", o)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		expectRange(t, db, 0, 250)
		if rep, err := Check("/db", &Options{FS: fs}); err != nil || !rep.OK() {
			t.Fatalf("Check after reopen: %v\n%s", err, rep)
		}
		db.Close()
	}
}

// TestReviewEverySSTByteFlip flips each byte of a small table (data, index,
// bloom filter, properties, metaindex, footer) in turn: every Get and a
// full scan either answer right or fail with ErrCorruption naming the
// table, never "not found" for a present key; and Check finds every flip
// the reads found.
func TestReviewEverySSTByteFlip(t *testing.T) {
	if testing.Short() {
		t.Skip("flips every byte of a table")
	}
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.BloomBitsPerKey = 10
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i < 60; i++ {
		k, v := fmt.Sprintf("key%05d", i*7), fmt.Sprintf("val%05d", i)
		want[k] = v
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	name := liveTables(t, fs)[0]
	orig := readFile(t, fs, "/db/"+name)
	keys := slices.Sorted(maps.Keys(want))
	undetected, readFound := 0, 0
	for off := range orig {
		c := fs.CrashClone()
		d := slices.Clone(orig)
		d[off] ^= 1 << (off % 8)
		writeFile(t, c, "/db/"+name, d)
		oo := testOptions(c)
		oo.Logger = discardLogger()
		oo.BloomBitsPerKey = 10
		db, err := Open("/db", oo)
		if err != nil {
			expectCorruption(t, err, name)
			readFound++
			continue
		}
		found := false
		for _, k := range append(slices.Clone(keys), "key00001", "zzz") {
			v, err := db.Get([]byte(k), nil)
			switch {
			case err == nil && string(v) == want[k]:
			case errors.Is(err, ErrNotFound) && want[k] == "":
			case err != nil && errors.Is(err, ErrCorruption):
				expectCorruption(t, err, name)
				found = true
			default:
				t.Fatalf("flip at %d of %d: Get(%s) = %q, %v; want %q", off, len(orig), k, v, err, want[k])
			}
		}
		it := db.NewIterator(nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if n >= len(keys) || string(it.Key()) != keys[n] || string(it.Value()) != want[keys[n]] {
				t.Fatalf("flip at %d: scan at %d: %q=%q", off, n, it.Key(), it.Value())
			}
			n++
		}
		if err := it.Close(); err != nil {
			expectCorruption(t, err, name)
			found = true
		} else if n != len(keys) {
			t.Fatalf("flip at %d: scan ended at %d of %d without an error", off, n, len(keys))
		}
		db.Close()
		rep, err := Check("/db", &Options{FS: c})
		if err != nil {
			t.Fatal(err)
		}
		if found {
			readFound++
			if rep.OK() {
				t.Fatalf("flip at %d: reads found damage that Check missed\n%s", off, rep)
			}
		} else if rep.OK() {
			undetected++
		}
	}
	t.Logf("%d-byte table: %d flips found by Open or reads, %d found by no one", len(orig), readFound, undetected)
}

// TestReviewEveryWALByteFlipEachMode flips each byte of a WAL of 20 synced
// batches under every WALRecoveryMode: Open either fails with ErrCorruption
// naming the WAL or recovers a state the mode allows (PointInTimeRecovery: a
// prefix of the batches; SkipAnyCorruptedRecords: a subset missing only
// batches at the damage; TolerateCorruptedTailRecords and
// AbsoluteConsistency: all of them, since a flip in a record written whole,
// the last one included, is damage and not a torn tail), and never a value
// that was not written.
func TestReviewEveryWALByteFlipEachMode(t *testing.T) {
	if testing.Short() {
		t.Skip("flips every byte of a WAL")
	}
	const n = 20
	val := func(i int) string { return fmt.Sprintf("v%02d-%s", i, strings.Repeat("w", i*3)) }
	fs, name, orig := walFlipFixture(t, 1<<20, n, val)
	for _, mode := range []WALRecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords} {
		counts := map[string]int{}
		for off := range orig {
			counts[walFlipTrial(t, fs, name, orig, off, mode, n, val)]++
		}
		t.Logf("%s: %d flips: %v", mode, len(orig), counts)
	}
}

// TestReviewTransientTableOpenErrorIsNotSticky: a table that fails to open
// once (a transient open or read error) must be readable by the next read,
// also when the table holds range tombstones, which every read gathers
// from all tables: the failure must not stick to the read state until a
// write replaces it.
func TestReviewTransientTableOpenErrorIsNotSticky(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpOpen, vfs.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			o := testOptions(mem)
			o.Logger = discardLogger()
			o.DisableAutoCompactions = true
			db, err := Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			putRange(t, db, 0, 200, nil)
			if err := db.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := db.DeleteRange([]byte("key00050"), []byte("key00060"), nil); err != nil {
				t.Fatal(err)
			}
			// The tombstone goes to L1, above the data (so it stays): below
			// L0, iterators open tables lazily but gather their range
			// tombstones up front.
			if err := db.CompactRangeWithOptions(nil, nil, &CompactRangeOptions{ChangeLevel: true, TargetLevel: 1}); err != nil {
				t.Fatal(err)
			}
			if n := db.Metrics().Levels[1].NumFiles; n != 1 {
				t.Fatalf("want the tombstone's table in L1, have %d files there", n)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			ffs := vfs.NewFaultFS(mem, 1)
			o = testOptions(ffs)
			o.Logger = discardLogger()
			o.DisableAutoCompactions = true
			o.BlockCacheSize = -1
			db, err = Open("/db", o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ffs.AddRule(vfs.FaultRule{Op: op, PathPattern: "*.sst", Nth: 1})
			it := db.NewIterator(nil)
			for ok := it.First(); ok; ok = it.Next() {
			}
			if err := it.Close(); !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("scan with a failing table: %v", err)
			}
			ffs.ClearRules()
			expectRange(t, db, 0, 50)
			if _, err := db.Get([]byte("key00055"), nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get of a range-deleted key: %v", err)
			}
			it = db.NewIterator(nil)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != 190 {
				t.Fatalf("scan after the fault: %d keys, %v", n, err)
			}
		})
	}
}

// TestReviewInfoLogFaultsAreHarmless: the DB's own LOG file is advisory; a
// full disk or failing writes there must not fail or stop the DB.
func TestReviewInfoLogFaultsAreHarmless(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem, 1)
	o := testOptions(ffs) // Logger nil: the DB writes its LOG file
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
		ffs.AddRule(vfs.FaultRule{Op: op, PathPattern: "LOG*", NoSpace: true})
	}
	putRange(t, db, 0, 500, &WriteOptions{Sync: true})
	if err := db.Flush(); err != nil {
		t.Fatalf("Flush with a failing LOG: %v", err)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatalf("CompactRange with a failing LOG: %v", err)
	}
	if ffs.Injected() == 0 {
		t.Fatal("the DB wrote nothing to its LOG")
	}
	if bg := db.Metrics().BackgroundError; bg != nil {
		t.Fatalf("a failing LOG stopped the DB: %v", bg)
	}
	expectRange(t, db, 0, 500)
	if err := db.Close(); err != nil {
		t.Fatalf("Close with a failing LOG: %v", err)
	}
	db, err = Open("/db", o)
	if err != nil {
		t.Fatalf("Open with a failing LOG: %v", err)
	}
	expectRange(t, db, 0, 500)
	db.Close()
}

// TestReviewMissingCurrentDoesNotMakeANewDB: a directory that holds a
// database but lost its CURRENT file (or has an empty one) must not be
// taken for an empty directory by CreateIfMissing: a fresh database there
// would hide, and its cleanup delete, every table.
func TestReviewMissingCurrentDoesNotMakeANewDB(t *testing.T) {
	for _, damage := range []string{"removed", "empty"} {
		t.Run(damage, func(t *testing.T) {
			fs := vfs.NewMem()
			fillDB(t, fs, 300, true)
			tables := liveTables(t, fs)
			if damage == "removed" {
				if err := fs.Remove("/db/CURRENT"); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, fs, "/db/CURRENT", nil)
			}
			o := testOptions(fs)
			o.Logger = discardLogger()
			db, err := Open("/db", o)
			if err == nil {
				_, gerr := db.Get([]byte("key00001"), nil)
				db.Close()
				if errors.Is(gerr, ErrNotFound) {
					t.Fatalf("Open with CURRENT %s made a new, empty database over the old one", damage)
				}
			}
			for _, name := range tables {
				if _, err := fs.Stat("/db/" + name); err != nil {
					t.Fatalf("Open with CURRENT %s removed table %s: %v", damage, name, err)
				}
			}
			if err != nil && !strings.Contains(err.Error(), "CURRENT") {
				t.Fatalf("Open error does not name CURRENT: %v", err)
			}
			if damage == "removed" && !errors.Is(err, ErrCorruption) {
				t.Fatalf("Open with CURRENT removed: %v, want ErrCorruption", err)
			}
		})
	}
	// A crash while creating, before CURRENT was installed, leaves only the
	// first MANIFEST: creating again must work.
	t.Run("crash while creating", func(t *testing.T) {
		fs := vfs.NewMem()
		fillDB(t, fs, 10, false)
		names, _ := fs.List("/db")
		for _, name := range names {
			if name != "MANIFEST-000001" && name != "LOCK" {
				if err := fs.Remove("/db/" + name); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := fs.Stat("/db/MANIFEST-000001"); err != nil {
			t.Fatalf("the first MANIFEST is not MANIFEST-000001: %v (have %v)", err, names)
		}
		o := testOptions(fs)
		o.Logger = discardLogger()
		db, err := Open("/db", o)
		if err != nil {
			t.Fatalf("creating again after a crash while creating: %v", err)
		}
		putRange(t, db, 0, 10, nil)
		db.Close()
	})
}

// TestReviewManifestLastRecordBitRot: the last MANIFEST record of a flush
// (adding its table and retiring its WAL, which is then deleted) is
// complete but damaged. Open must not take it for a torn tail and drop it:
// the flushed writes would be gone, and the table deleted as obsolete.
func TestReviewManifestLastRecordBitRot(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.DisableAutoCompactions = true
	o.MaxManifestFileSize = 1 << 30
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	putRange(t, db, 0, 200, &WriteOptions{Sync: true})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Let the flushed WAL be deleted, then crash (no Close, which would
	// write more).
	waitFor(func() bool {
		names, _ := fs.List("/db")
		logs := 0
		for _, n := range names {
			if ft, _, ok := base.ParseFilename(n); ok && ft == base.FileTypeLog {
				logs++
			}
		}
		return logs == 1
	})
	crash := fs.CrashClone()
	db.Close()
	name := findFile(t, crash, "/db", base.FileTypeManifest)
	data := readFile(t, crash, "/db/"+name)
	tables := liveTables(t, crash)
	for _, back := range []int{3, 10, 20} {
		c := crash.CrashClone()
		d := slices.Clone(data)
		d[len(d)-back] ^= 0x01
		writeFile(t, c, "/db/"+name, d)
		oo := testOptions(c)
		oo.Logger = discardLogger()
		db, err := Open("/db", oo)
		if err != nil {
			expectCorruption(t, err, name)
		} else {
			for i := 0; i < 200; i++ {
				k := fmt.Sprintf("key%05d", i)
				if v, err := db.Get([]byte(k), nil); err != nil || string(v) != k {
					t.Fatalf("flip %d bytes before the end of %s: Open succeeded but Get(%s) = %q, %v", back, name, k, v, err)
				}
			}
			db.Close()
		}
		for _, tb := range tables {
			if _, err := c.Stat("/db/" + tb); err != nil {
				t.Fatalf("flip %d bytes before the end of %s: table %s removed", back, name, tb)
			}
		}
	}
}

// TestReviewLaterFaults runs the fault matrix's cases of repeated work
// (commits, flushes, compactions, reads) with the fault at later matches
// (eight in a row from the matrix's own) than the matrix tries, so it also meets MANIFEST
// rotations (testOptions rotate at 1 KiB): the CURRENT rename and the
// directory syncs around it.
func TestReviewLaterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("many fault cases")
	}
	for _, c := range faultMatrix {
		if !c.repeats() || c.want == wantTolerated || c.op == vfs.OpOpen {
			continue // the harness's reads open only four tables
		}
		for nth := max(c.nth, 1); nth < max(c.nth, 1)+8; nth++ {
			c := c
			c.nth = nth
			variants := faultVariants(c.op)
			if !stress() {
				variants = variants[:1] // EIO; SHALE_STRESS=1 runs ENOSPC and torn writes too
			}
			for _, v := range variants {
				t.Run(fmt.Sprintf("%s/%s/nth=%d", c.name(), v.name, nth), func(t *testing.T) {
					runFaultCase(t, c, v)
				})
			}
		}
	}
}

// TestReviewCheckMissingCurrent: Check of a database that lost CURRENT (the
// case Open now refuses) reports CURRENT as damaged and still checks the
// newest MANIFEST and the tables.
func TestReviewCheckMissingCurrent(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 300, true)
	tables := liveTables(t, fs)
	if err := fs.Remove("/db/CURRENT"); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if rep.OK() {
		t.Fatalf("Check of a database without CURRENT says OK:\n%s", rep)
	}
	if f := fileOf(t, rep, tables[0]); f.Status != CheckOK {
		t.Fatalf("table %s not checked: %+v\n%s", tables[0], f, rep)
	}
}

// TestReviewCloseAfterFlushedNoWALWrites: DisableWAL writes that a flush
// already put in a table are safe; a later background error must not make
// Close report them lost (the writes since are in the WAL).
func TestReviewCloseAfterFlushedNoWALWrites(t *testing.T) {
	mem := vfs.NewMem()
	ffs, opts, db := openFaultDB(t, mem, nil)
	var err error
	putRange(t, db, 0, 50, &WriteOptions{DisableWAL: true})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	putRange(t, db, 50, 100, &WriteOptions{Sync: true})
	ffs.AddRule(vfs.FaultRule{Op: vfs.OpCreate, PathPattern: "*.sst", NoSpace: true})
	if err := db.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush with a full disk: %v", err)
	}
	ffs.ClearRules()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v (no write is lost)", err)
	}
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	expectRange(t, db, 0, 100)
}

// TestReviewFragmentedWALFlipsEachMode: like the byte-flip test above, for
// a WAL whose records span blocks (FIRST, MIDDLE, LAST fragments): every
// fragment header byte and sampled payload bytes are flipped, under every
// WALRecoveryMode.
func TestReviewFragmentedWALFlipsEachMode(t *testing.T) {
	if testing.Short() {
		t.Skip("many flips")
	}
	const n = 12
	val := func(i int) string {
		// Sizes around and above a block, so records start at varied
		// offsets and span one to three blocks.
		return fmt.Sprintf("v%02d-%s", i, strings.Repeat(string(rune('a'+i)), 9000+i*7000))
	}
	fs, name, orig := walFlipFixture(t, 4<<20, n, val)
	// Offsets: every header byte of every fragment (walk the chain), and
	// a few payload bytes.
	var offs []int
	for blk := 0; blk < len(orig); blk += 32 << 10 {
		for off := blk; off+7 <= min(blk+32<<10, len(orig)); {
			length := int(binary.LittleEndian.Uint16(orig[off+4:]))
			if length == 0 && orig[off+6] == 0 {
				break // padding or preallocated zeros
			}
			for h := 0; h < 7; h++ {
				offs = append(offs, off+h)
			}
			offs = append(offs, off+7, off+7+length/2, off+7+length-1)
			off += 7 + length
			if blk+32<<10-off < 7 {
				break
			}
		}
	}
	for _, mode := range []WALRecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords} {
		counts := map[string]int{}
		for _, off := range offs {
			if off >= len(orig) {
				continue
			}
			counts[walFlipTrial(t, fs, name, orig, off, mode, n, val)]++
		}
		t.Logf("%s: %d-byte WAL, %d flips: %v", mode, len(orig), len(offs), counts)
	}
}

// TestReviewBackgroundWALFailureThenResume: with WALBackgroundWrites, writes
// without Sync are acknowledged before the flusher writes them. When the
// flusher then fails (full disk, torn write), Resume must keep every
// acknowledged write: they are in the memtable, not in the WAL. The fault
// matrix runs with WALBackgroundWrites off.
func TestReviewBackgroundWALFailureThenResume(t *testing.T) {
	for _, torn := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn=%v", torn), func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, opts, db := openFaultDB(t, mem, func(opts *Options) {
				opts.WriteBufferSize = 1 << 20
				opts.WALBackgroundWrites = true
			})
			var err error
			defer func() { db.Close() }()
			putRange(t, db, 0, 20, &WriteOptions{Sync: true})
			ffs.AddRule(vfs.FaultRule{Op: vfs.OpWrite, PathPattern: "*.log", NoSpace: true, ShortWrite: torn, Nth: 2})
			acked := 20
			for i := 20; i < 5000; i++ {
				k := fmt.Sprintf("key%05d", i)
				if err := db.Put([]byte(k), []byte(k), nil); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("Put after the flusher failed: %v", err)
					}
					break
				}
				acked = i + 1
				if i%100 == 0 {
					time.Sleep(100 * time.Microsecond) // let the flusher run
				}
			}
			if !waitFor(func() bool { return db.Metrics().BackgroundError != nil }) {
				t.Fatal("the flusher's failure never made the DB read-only")
			}
			if err := db.Put([]byte("x"), []byte("x"), nil); !errors.Is(err, ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write after the flusher failed: %v", err)
			}
			ffs.ClearRules()
			if err := db.Resume(); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			putRange(t, db, 10000, 10020, &WriteOptions{Sync: true})
			crash := mem.CrashClone()
			expectRange(t, db, 0, acked)
			if err := db.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for what, fs := range map[string]vfs.FS{"reopen": mem, "crash after Resume": crash} {
				o := testOptions(fs)
				o.Logger = discardLogger()
				db, err = Open("/db", o)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				expectRange(t, db, 0, acked) // Resume flushed them
				expectRange(t, db, 10000, 10020)
				db.Close()
			}
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d writes acknowledged before the failure showed", acked-20)
		})
	}
}

// walFlipFixture writes n synced puts (k00.., val(i)) to a new DB on a MemFS
// with the given memtable size, closes it, and returns the FS and the name
// and bytes of its largest WAL.
func walFlipFixture(t *testing.T, writeBufferSize, n int, val func(int) string) (fs *vfs.MemFS, name string, orig []byte) {
	t.Helper()
	fs = vfs.NewMem()
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.WriteBufferSize = writeBufferSize
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%02d", i)), []byte(val(i)), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List("/db")
	for _, nm := range names {
		if ft, _, ok := base.ParseFilename(nm); ok && ft == base.FileTypeLog {
			if d := readFile(t, fs, "/db/"+nm); len(d) > len(orig) {
				name, orig = nm, d
			}
		}
	}
	return fs, name, orig
}

// walFlipTrial opens a copy of fs whose WAL name has the bit (off % 8) of
// byte off flipped, under mode, and returns what it recovered: "corruption"
// (Open failed, naming the WAL), "all", "prefix" (PointInTimeRecovery kept
// a prefix of the n puts) or "skipped" (SkipAnyCorruptedRecords lost at most
// two). Anything the mode does not allow fails the test: the WAL's records
// were all synced and written whole, so a flip is never a torn tail, and
// TolerateCorruptedTailRecords may not drop a batch for it.
func walFlipTrial(t *testing.T, fs *vfs.MemFS, name string, orig []byte, off int, mode WALRecoveryMode, n int, val func(int) string) string {
	t.Helper()
	c := fs.CrashClone()
	d := slices.Clone(orig)
	d[off] ^= 1 << (off % 8)
	writeFile(t, c, "/db/"+name, d)
	oo := testOptions(c)
	oo.Logger = discardLogger()
	oo.WALRecoveryMode = mode
	db, err := Open("/db", oo)
	if err != nil {
		expectCorruption(t, err, name)
		return "corruption"
	}
	defer db.Close()
	var present []int
	for i := 0; i < n; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%02d", i)), nil)
		switch {
		case err == nil && string(v) == val(i):
			present = append(present, i)
		case errors.Is(err, ErrNotFound):
		default:
			t.Fatalf("%s flip at %d: Get(k%02d) = %.20q, %v", mode, off, i, v, err)
		}
	}
	prefix := len(present) == 0 || present[len(present)-1] == len(present)-1
	switch {
	case len(present) == n:
		return "all"
	case mode == AbsoluteConsistency || mode == TolerateCorruptedTailRecords:
		t.Fatalf("%s flip at %d: Open dropped batches %v", mode, off, present)
	case prefix && mode == PointInTimeRecovery:
		return "prefix"
	case mode == SkipAnyCorruptedRecords && len(present) >= n-2:
		return "skipped"
	}
	t.Fatalf("%s flip at %d of %d: recovered batches %v", mode, off, len(orig), present)
	return ""
}

// openFaultDB opens /db on a FaultFS over mem (seed 1) with test options, no
// logging, and set applied to them (set may be nil).
func openFaultDB(t *testing.T, mem *vfs.MemFS, set func(*Options)) (*vfs.FaultFS, *Options, *DB) {
	t.Helper()
	ffs := vfs.NewFaultFS(mem, 1)
	opts := testOptions(ffs)
	opts.Logger = discardLogger()
	if set != nil {
		set(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return ffs, opts, db
}

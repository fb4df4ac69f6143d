package shale

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

func expectCorruption(t *testing.T, err error, file string) {
	t.Helper()
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("want ErrCorruption naming %s, got %v", file, err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("corruption error does not name %s: %v", file, err)
	}
}

func fillDB(t *testing.T, fs vfs.FS, n int, flush bool) {
	t.Helper()
	opts := testOptions(fs)
	opts.WriteBufferSize = 1 << 20
	opts.Compression = NoCompression
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("value-%05d-%s", i, strings.Repeat("x", 50))), nil); err != nil {
			t.Fatal(err)
		}
	}
	if flush {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptSSTBlock(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 2000, true)
	name := findFile(t, fs, "/db", base.FileTypeTable)
	data := readFile(t, fs, "/db/"+name)
	data[len(data)/3] ^= 0x40 // inside a data block
	writeFile(t, fs, "/db/"+name, data)

	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A full scan must hit the damaged block and report it.
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	expectCorruption(t, it.Err(), name)
	it.Close()
	// Some Get must land in the damaged block too; none may return bad data.
	sawCorruption := false
	for i := 0; i < 2000; i++ {
		k := fmt.Sprintf("key%05d", i)
		v, err := db.Get([]byte(k), nil)
		if err != nil {
			expectCorruption(t, err, name)
			sawCorruption = true
			continue
		}
		if want := fmt.Sprintf("value-%05d-%s", i, strings.Repeat("x", 50)); string(v) != want {
			t.Fatalf("Get(%s) = %q, want %q", k, v, want)
		}
	}
	if !sawCorruption {
		t.Fatal("no Get reported the damaged block")
	}
}

func TestCorruptWALMiddleRecord(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 500, false) // the data stays in the WAL
	name := findFile(t, fs, "/db", base.FileTypeLog)
	data := readFile(t, fs, "/db/"+name)
	if len(data) < 10000 {
		// the newest WAL is empty; find the one with data
		names, _ := fs.List("/db")
		for _, n := range names {
			if ft, _, ok := base.ParseFilename(n); ok && ft == base.FileTypeLog {
				if d := readFile(t, fs, "/db/"+n); len(d) > len(data) {
					name, data = n, d
				}
			}
		}
	}
	data[100] ^= 0x01 // the first records; many intact ones follow
	writeFile(t, fs, "/db/"+name, data)
	_, err := Open("/db", testOptions(fs))
	expectCorruption(t, err, name)
}

func TestWALTornTailIsRecovered(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 500, false)
	names, _ := fs.List("/db")
	var name string
	var data []byte
	for _, n := range names {
		if ft, _, ok := base.ParseFilename(n); ok && ft == base.FileTypeLog {
			if d := readFile(t, fs, "/db/"+n); len(d) > len(data) {
				name, data = n, d
			}
		}
	}
	writeFile(t, fs, "/db/"+name, data[:len(data)-30]) // tear the last record
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatalf("torn tail must be tolerated: %v", err)
	}
	defer db.Close()
	if _, err := db.Get([]byte("key00498"), nil); err != nil {
		t.Fatalf("intact record lost: %v", err)
	}
	if _, err := db.Get([]byte("key00499"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("torn record must be dropped, got %v", err)
	}
}

func TestCorruptManifest(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 300, true)
	// Reopen and flush again so the MANIFEST has several records.
	fillDB(t, fs, 300, true)
	name := findFile(t, fs, "/db", base.FileTypeManifest)
	data := readFile(t, fs, "/db/"+name)
	data[12] ^= 0x10 // inside the first record
	writeFile(t, fs, "/db/"+name, data)
	_, err := Open("/db", testOptions(fs))
	expectCorruption(t, err, name)
}

// TestTornWALFollowedByNewerWAL: only the newest WAL with writes may end
// early. A torn older WAL followed by a newer one holding writes lost
// acknowledged data: TolerateCorruptedTailRecords reports it, and
// PointInTimeRecovery stops at the damage instead of replaying past it.
func TestTornWALFollowedByNewerWAL(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 500, false)
	names, _ := fs.List("/db")
	var name string
	var num base.FileNum
	var data []byte
	for _, n := range names {
		if ft, fn, ok := base.ParseFilename(n); ok && ft == base.FileTypeLog {
			if d := readFile(t, fs, "/db/"+n); len(d) > len(data) {
				name, num, data = n, fn, d
			}
		}
	}
	newer := base.MakeFilename(base.FileTypeLog, num+100)
	writeFile(t, fs, "/db/"+newer, data)
	writeFile(t, fs, "/db/"+name, data[:len(data)-30])
	crash := fs.CrashClone()

	_, err := Open("/db", testOptions(fs))
	expectCorruption(t, err, name)

	o := testOptions(crash)
	o.WALRecoveryMode = PointInTimeRecovery
	db, err := Open("/db", o)
	if err != nil {
		t.Fatalf("point-in-time recovery: %v", err)
	}
	defer db.Close()
	if _, err := db.Get([]byte("key00000"), nil); err != nil {
		t.Fatalf("write before the damage lost: %v", err)
	}
	if _, err := db.Get([]byte("key00499"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("point-in-time recovery replayed past the damage: %v", err)
	}
}

// TestVerifyChecksumsOption: ReadOptions.VerifyChecksums changes nothing;
// a damaged block is reported by Get, MultiGet and iterators in both
// directions with the option on and off, and no read returns wrong data.
func TestVerifyChecksumsOption(t *testing.T) {
	fs := vfs.NewMem()
	fillDB(t, fs, 2000, true)
	name := findFile(t, fs, "/db", base.FileTypeTable)
	data := readFile(t, fs, "/db/"+name)
	data[len(data)/3] ^= 0x40
	writeFile(t, fs, "/db/"+name, data)
	want := func(i int) string { return fmt.Sprintf("value-%05d-%s", i, strings.Repeat("x", 50)) }
	for _, verify := range []bool{false, true} {
		o := testOptions(fs.CrashClone())
		o.BlockCacheSize = -1 // every read goes to the file
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		ro := &ReadOptions{VerifyChecksums: verify}
		keys := make([][]byte, 2000)
		getErrs := 0
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("key%05d", i))
			v, err := db.Get(keys[i], ro)
			if err != nil {
				expectCorruption(t, err, name)
				getErrs++
			} else if string(v) != want(i) {
				t.Fatalf("verify %v: Get(%s) = %q", verify, keys[i], v)
			}
		}
		values, errs := db.MultiGet(keys, ro)
		multiErrs := 0
		for i, err := range errs {
			if err != nil {
				expectCorruption(t, err, name)
				multiErrs++
			} else if string(values[i]) != want(i) {
				t.Fatalf("verify %v: MultiGet(%s) = %q", verify, keys[i], values[i])
			}
		}
		if getErrs == 0 || multiErrs != getErrs {
			t.Fatalf("verify %v: Get reported %d damaged keys, MultiGet %d", verify, getErrs, multiErrs)
		}
		for _, reverse := range []bool{false, true} {
			it := db.NewIterator(ro)
			n := 0
			if reverse {
				for ok := it.Last(); ok; ok = it.Prev() {
					if i := 1999 - n; string(it.Key()) != string(keys[i]) || string(it.Value()) != want(i) {
						t.Fatalf("verify %v: reverse scan at %d: %q", verify, i, it.Key())
					}
					n++
				}
			} else {
				for ok := it.First(); ok; ok = it.Next() {
					if string(it.Key()) != string(keys[n]) || string(it.Value()) != want(n) {
						t.Fatalf("verify %v: scan at %d: %q", verify, n, it.Key())
					}
					n++
				}
			}
			expectCorruption(t, it.Err(), name)
			it.Close()
		}
		db.Close()
	}
}

// damagedTableDB builds a DB with two overlapping L0 tables (so a
// compaction merges them), damages a data block of the older one, and
// returns the FS, the damaged table's name and every key with its value.
func damagedTableDB(t *testing.T) (*vfs.MemFS, string, map[string]string) {
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

// TestCompactionMeetsCorruption: damage found only when a compaction
// reads its input must fail the compaction with ErrCorruption naming the
// file, keep the input (nothing is dropped), leave every readable key
// right, and a reopen finds the same; for a manual and an automatic
// compaction.
func TestCompactionMeetsCorruption(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto=%v", auto), func(t *testing.T) {
			fs, name, want := damagedTableDB(t)
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

// TestMissingTableIsNotNotFound: a live table whose file is gone must
// make reads of its keys fail (naming the file), never answer "not found",
// and iteration must fail rather than skip the file.
func TestMissingTableIsNotNotFound(t *testing.T) {
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

// TestEverySSTByteFlip flips each byte of a small table (data, index,
// bloom filter, properties, metaindex, footer) in turn: every Get and a
// full scan either answer right or fail with ErrCorruption naming the
// table, never "not found" for a present key; and Check finds every flip
// the reads found.
func TestEverySSTByteFlip(t *testing.T) {
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

// TestMissingCurrentDoesNotMakeANewDB: a directory that holds a
// database but lost its CURRENT file (or has an empty one) must not be
// taken for an empty directory by CreateIfMissing: a fresh database there
// would hide, and its cleanup delete, every table.
func TestMissingCurrentDoesNotMakeANewDB(t *testing.T) {
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

// TestManifestLastRecordBitRot: the last MANIFEST record of a flush
// (adding its table and retiring its WAL, which is then deleted) is
// complete but damaged. Open must not take it for a torn tail and drop it:
// the flushed writes would be gone, and the table deleted as obsolete.
func TestManifestLastRecordBitRot(t *testing.T) {
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

package shale

import (
	"errors"
	"fmt"
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

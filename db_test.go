package shale

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

func openMem(t *testing.T) (*DB, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewMem()
	return openMemFS(t, fs), fs
}

// openMemFS opens the database /db in fs with testOptions.
func openMemFS(t *testing.T, fs *vfs.MemFS) *DB {
	t.Helper()
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// reopenMem closes db, failing the test if Close fails, and opens /db in fs
// again.
func reopenMem(t *testing.T, db *DB, fs *vfs.MemFS) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return openMemFS(t, fs)
}

func TestBasicOps(t *testing.T) {
	db, _ := openMem(t)
	defer db.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Put([]byte("a"), []byte("1"), nil))
	must(db.Put([]byte("b"), []byte("2"), nil))
	must(db.Put([]byte("c"), []byte("3"), nil))
	v, err := db.Get([]byte("b"), nil)
	if err != nil || string(v) != "2" {
		t.Fatalf("Get(b) = %q, %v", v, err)
	}
	v[0] = 'X' // Get returns a copy
	if v, _ := db.Get([]byte("b"), nil); string(v) != "2" {
		t.Fatalf("Get returned memory the DB still uses: %q", v)
	}
	must(db.Delete([]byte("b"), nil))
	if _, err := db.Get([]byte("b"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(deleted) = %v", err)
	}
	must(db.DeleteRange([]byte("a"), []byte("c"), nil))
	if _, err := db.Get([]byte("a"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(range-deleted) = %v", err)
	}
	if v, err := db.Get([]byte("c"), nil); err != nil || string(v) != "3" {
		t.Fatalf("DeleteRange end must be exclusive: %q, %v", v, err)
	}
	if err := db.DeleteRange([]byte("z"), []byte("a"), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteRange with start > end = %v", err)
	}
}

func TestBatchAtomicAndSnapshot(t *testing.T) {
	db, _ := openMem(t)
	defer db.Close()
	db.Put([]byte("k1"), []byte("old"), nil)
	snap := db.NewSnapshot()
	defer snap.Release()
	b := db.NewBatch()
	b.Put([]byte("k1"), []byte("new"))
	b.Put([]byte("k2"), []byte("v2"))
	b.Delete([]byte("k3"))
	if b.Len() != 3 {
		t.Fatalf("Len = %d", b.Len())
	}
	if err := db.Write(b, &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Get([]byte("k1"), nil); string(v) != "new" {
		t.Fatalf("k1 = %q", v)
	}
	if v, _ := db.Get([]byte("k1"), &ReadOptions{Snapshot: snap}); string(v) != "old" {
		t.Fatalf("k1 at snapshot = %q", v)
	}
	if _, err := db.Get([]byte("k2"), &ReadOptions{Snapshot: snap}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("k2 at snapshot = %v", err)
	}
	// The snapshot survives flush and compaction.
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Get([]byte("k1"), &ReadOptions{Snapshot: snap}); string(v) != "old" {
		t.Fatalf("k1 at snapshot after compaction = %q", v)
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatal("Reset did not empty the batch")
	}
}

func TestConcurrentWriters(t *testing.T) {
	db, _ := openMem(t)
	defer db.Close()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				k := fmt.Sprintf("w%d-%04d", w, i)
				if err := db.Put([]byte(k), []byte(k), &WriteOptions{Sync: i%10 == 0}); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for w := 0; w < 8; w++ {
		for i := 0; i < 300; i++ {
			k := fmt.Sprintf("w%d-%04d", w, i)
			if v, err := db.Get([]byte(k), nil); err != nil || string(v) != k {
				t.Fatalf("Get(%s) = %q, %v", k, v, err)
			}
		}
	}
	if m := db.Metrics(); m.WAL.Syncs == 0 || m.WAL.Syncs > 8*30 {
		t.Fatalf("group commit: %d syncs for 240 sync writes", m.WAL.Syncs)
	}
}

func TestOpenErrors(t *testing.T) {
	fs := vfs.NewMem()
	if _, err := Open("/nope", &Options{FS: fs}); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "CreateIfMissing") {
		t.Fatalf("missing DB without CreateIfMissing: %v", err)
	}
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open("/db", testOptions(fs)); err == nil || !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Open of a held DB: %v", err)
	}
	db.Close()
	o := testOptions(fs)
	o.ErrorIfExists = true
	if _, err := Open("/db", o); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("ErrorIfExists: %v", err)
	}
	if err := db.Put([]byte("a"), nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close = %v", err)
	}
	if _, err := db.Get([]byte("a"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v", err)
	}
	for _, tc := range []struct {
		field string
		set   func(*Options)
	}{
		{"BlockSize", func(o *Options) { o.BlockSize = -1 }},
		{"NumLevels", func(o *Options) { o.NumLevels = 99 }},
		{"Level0StopWritesTrigger", func(o *Options) { o.Level0StopWritesTrigger = 1 }},
		{"MaxWriteBufferNumber", func(o *Options) { o.MaxWriteBufferNumber = 1 }},
		{"MaxBytesForLevelMultiplier", func(o *Options) { o.MaxBytesForLevelMultiplier = 1 }},
	} {
		o := testOptions(fs)
		tc.set(o)
		_, err := Open("/db2", o)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Options."+tc.field) {
			t.Errorf("%s: error must name the option: %v", tc.field, err)
		}
	}
}

func TestOptionsFileRoundTrip(t *testing.T) {
	db, fs := openMem(t)
	db.Close()
	name := findFile(t, fs, "/db", base.FileTypeOptions)
	o, err := ParseOptionsFile(readFile(t, fs, "/db/"+name))
	if err != nil {
		t.Fatal(err)
	}
	want := testOptions(nil).EnsureDefaults()
	if o.WriteBufferSize != want.WriteBufferSize || o.NumLevels != want.NumLevels ||
		o.Compression != want.Compression || o.Level0FileNumCompactionTrigger != want.Level0FileNumCompactionTrigger ||
		o.MaxBytesForLevelMultiplier != want.MaxBytesForLevelMultiplier || o.BlockSize != want.BlockSize {
		t.Fatalf("parsed options differ: %+v", o)
	}
}

func TestReopenKeepsData(t *testing.T) {
	db, fs := openMem(t)
	for i := 0; i < 3000; i++ {
		db.Put([]byte(fmt.Sprintf("%06d", i)), []byte(strings.Repeat("v", 100)), nil)
	}
	db.Delete([]byte("000007"), nil)
	db = reopenMem(t, db, fs)
	defer db.Close()
	n := 0
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	if n != 2999 {
		t.Fatalf("after reopen: %d keys, want 2999", n)
	}
	if m := db.Metrics(); m.Levels[0].NumFiles+m.Levels[len(m.Levels)-1].NumFiles == 0 {
		t.Fatalf("no tables after 300 KB of writes:\n%s", m)
	}
}

func TestIteratorAccounting(t *testing.T) {
	db, _ := openMem(t)
	defer db.Close()
	db.Put([]byte("a"), []byte("1"), nil)
	it := db.NewIterator(nil)
	it2 := db.NewIterator(&ReadOptions{LowerBound: []byte("b")})
	if n := db.Metrics().NumIterators; n != 2 {
		t.Fatalf("NumIterators = %d, want 2", n)
	}
	if it2.First() {
		t.Fatalf("bounded iterator saw %q", it2.Key())
	}
	it.Close()
	it2.Close()
	if err := it.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := db.Metrics().NumIterators; n != 0 {
		t.Fatalf("NumIterators after Close = %d", n)
	}
	if it.First() || it.Valid() || !errors.Is(it.Err(), ErrClosed) {
		t.Fatal("a closed iterator must be invalid and report ErrClosed")
	}
}

// TestCustomComparer uses a reverse-order comparer given without Separator
// and Successor, through flushes and compactions, and checks the order and
// that reopening with another comparer is refused.
func TestCustomComparer(t *testing.T) {
	reverse := &Comparer{Name: "test.reverse", Compare: func(a, b []byte) int { return bytes.Compare(b, a) }}
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.Comparer = reverse
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		db.Put([]byte(fmt.Sprintf("%05d", i)), []byte(strings.Repeat("v", 50)), nil)
	}
	db.DeleteRange([]byte("00999"), []byte("00499"), nil) // [999, 499) in reverse order
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	it := db.NewIterator(nil)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	it.Close()
	if len(got) != 1500 || got[0] != "01999" || got[len(got)-1] != "00000" || slices.Contains(got, "00700") || !slices.Contains(got, "00499") {
		t.Fatalf("reverse scan: %d keys, first %q last %q", len(got), got[0], got[len(got)-1])
	}
	if _, err := db.Get([]byte("00999"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("range-deleted key: %v", err)
	}
	db.Close()
	if _, err := Open("/db", testOptions(fs)); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "test.reverse") {
		t.Fatalf("reopen with another comparer: %v", err)
	}
}

// TestReplayValueLargerThanWriteBuffer reopens a DB whose WAL holds, as
// its only record, a value larger than the write buffer (and then a batch
// of several): replay must size a memtable for it as the write did, fixed
// overhead included, instead of failing Open with a full arena.
func TestReplayValueLargerThanWriteBuffer(t *testing.T) {
	for _, size := range []int{64 << 10, 1 << 20, 4 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := filepath.Join(testdir.New(t), "db")
			db, err := Open(dir, testOptions(vfs.Default))
			if err != nil {
				t.Fatal(err)
			}
			reopen := func() {
				t.Helper()
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if db, err = Open(dir, testOptions(vfs.Default)); err != nil {
					t.Fatal(err)
				}
			}
			big := bytes.Repeat([]byte("v"), size)
			if err := db.Put([]byte("big"), big, nil); err != nil {
				t.Fatal(err)
			}
			reopen() // the WAL holds the one Put
			b := new(Batch)
			for i := range 3 {
				b.Put(fmt.Appendf(nil, "batch%d", i), big)
			}
			if err := db.Write(b, nil); err != nil {
				t.Fatal(err)
			}
			reopen()
			defer db.Close()
			for _, k := range []string{"big", "batch0", "batch1", "batch2"} {
				if v, err := db.Get([]byte(k), nil); err != nil || !bytes.Equal(v, big) {
					t.Fatalf("Get(%s) after reopen: %d bytes, %v", k, len(v), err)
				}
			}
		})
	}
}

// TestEdgeKeysAndValues covers the empty key, empty and nil values, binary
// keys with 0x00/0xff, and a value larger than the write buffer, through a
// flush and a reopen.
func TestEdgeKeysAndValues(t *testing.T) {
	db, fs := openMem(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB > 16 KiB buffer
	cases := map[string][]byte{
		"":                    []byte("empty key"),
		"nil-value":           nil,
		"empty-value":         {},
		"\x00":                []byte("zero byte"),
		"\xff\xff\xff":        []byte("high bytes"),
		"a\x00b":              []byte("embedded zero"),
		"big":                 big,
		string(big[:100<<10]): []byte("100 KiB key"),
	}
	check := func(stage string) {
		t.Helper()
		for k, want := range cases {
			got, err := db.Get([]byte(k), nil)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: Get(%.20q) = %d bytes, %v; want %d bytes", stage, k, len(got), err, len(want))
			}
		}
		n := 0
		it := db.NewIterator(nil)
		var prev []byte
		for ok := it.First(); ok; ok = it.Next() {
			if n > 0 && bytes.Compare(prev, it.Key()) >= 0 {
				t.Fatalf("%s: keys out of order", stage)
			}
			prev = append(prev[:0], it.Key()...)
			n++
		}
		it.Close()
		if n != len(cases) {
			t.Fatalf("%s: scan saw %d keys, want %d", stage, n, len(cases))
		}
	}
	for k, v := range cases {
		if err := db.Put([]byte(k), v, nil); err != nil {
			t.Fatalf("Put(%.20q): %v", k, err)
		}
	}
	check("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	db = reopenMem(t, db, fs)
	defer db.Close()
	check("reopened")
	if err := db.Delete([]byte(""), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(nil, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted empty key: %v", err)
	}
}

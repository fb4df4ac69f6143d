package shale

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// readaheadOptions make a few tables of many small blocks, so scans read
// long runs of blocks from each file.
func readaheadOptions(fs vfs.FS) *Options {
	return &Options{
		CreateIfMissing:    true,
		FS:                 fs,
		WriteBufferSize:    256 << 10,
		TargetFileSizeBase: 1 << 20,
		BlockSize:          1 << 10,
		BlockCacheSize:     1 << 20,
	}
}

// fillReadaheadDB writes n keys with values of varying size and returns the
// model; it flushes every few thousand keys so there are several tables.
func fillReadaheadDB(t *testing.T, db *DB, rng *rand.Rand, n int) model {
	t.Helper()
	m := model{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key%07d", i)
		v := fmt.Sprintf("%s-%s", k, bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(300)))
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
		if i%4000 == 3999 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkScan compares a scan of db within [lower, upper) with the model and
// returns the error that stopped the iterator, if any.
func checkScan(t *testing.T, db *DB, m model, ro *ReadOptions) error {
	t.Helper()
	want := m.sortedKeys(ro.LowerBound, ro.UpperBound)
	it := db.NewIterator(ro)
	n := 0
	var ok bool
	if ro.LowerBound != nil {
		ok = it.Seek(ro.LowerBound)
	} else {
		ok = it.First()
	}
	for ; ok; ok = it.Next() {
		if n >= len(want) || string(it.Key()) != want[n] || string(it.Value()) != m[want[n]] {
			it.Close()
			t.Fatalf("scan %+v: entry %d is %q, want %q", ro, n, it.Key(), want[min(n, len(want)-1)])
		}
		n++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if n != len(want) {
		t.Fatalf("scan %+v returned %d keys, want %d", ro, n, len(want))
	}
	return nil
}

// TestReadaheadScans scans with automatic, explicit and no readahead, whole
// and bounded, and checks the results against the model and the readahead
// metrics.
func TestReadaheadScans(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	fs := vfs.NewMem()
	db, err := Open("/db", readaheadOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	m := fillReadaheadDB(t, db, rng, 12000)

	m0 := db.Metrics().IO
	if err := checkScan(t, db, m, &ReadOptions{SkipFillCache: true}); err != nil {
		t.Fatal(err)
	}
	m1 := db.Metrics().IO
	issued, used := m1.ReadaheadBytesIssued-m0.ReadaheadBytesIssued, m1.ReadaheadBytesUsed-m0.ReadaheadBytesUsed
	if used == 0 || used > issued {
		t.Fatalf("automatic readahead of a full scan: issued %d, used %d", issued, used)
	}
	if m1.BlockReads <= m0.BlockReads || m1.TableReads <= m0.TableReads || m1.TableBytesRead <= m0.TableBytesRead {
		t.Fatalf("block and table reads not counted: %+v then %+v", m0, m1)
	}
	// Readahead reads windows, not blocks: far fewer reads than blocks.
	if reads, blocks := m1.TableReads-m0.TableReads, m1.BlockReads-m0.BlockReads; reads*2 > blocks {
		t.Fatalf("a full scan made %d table reads for %d blocks", reads, blocks)
	}
	if !bytes.Contains([]byte(db.Metrics().String()), []byte("readahead:")) {
		t.Fatalf("Metrics.String does not report readahead")
	}

	for q := 0; q < 20; q++ {
		ro := &ReadOptions{SkipFillCache: rng.IntN(2) == 0, ReadaheadSize: []int64{0, -1, 16 << 10, 1 << 20}[rng.IntN(4)]}
		a, b := rng.IntN(12000), rng.IntN(12000)
		if a > b {
			a, b = b, a
		}
		ro.LowerBound = []byte(fmt.Sprintf("key%07d", a))
		ro.UpperBound = []byte(fmt.Sprintf("key%07d", b))
		if rng.IntN(4) == 0 {
			ro.LowerBound = nil
		}
		before := db.Metrics().IO
		if err := checkScan(t, db, m, ro); err != nil {
			t.Fatal(err)
		}
		after := db.Metrics().IO
		if ro.ReadaheadSize < 0 && after.ReadaheadBytesIssued != before.ReadaheadBytesIssued {
			t.Fatalf("ReadaheadSize -1 issued readahead")
		}
		if after.ReadaheadBytesUsed > after.ReadaheadBytesIssued {
			t.Fatalf("readahead used %d > issued %d", after.ReadaheadBytesUsed, after.ReadaheadBytesIssued)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// MaxAutoReadaheadSize < 0 turns automatic readahead off.
	o := readaheadOptions(fs)
	o.MaxAutoReadaheadSize = -1
	o.DisableAutoCompactions = true
	if db, err = Open("/db", o); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := checkScan(t, db, m, &ReadOptions{SkipFillCache: true}); err != nil {
		t.Fatal(err)
	}
	if io := db.Metrics().IO; io.ReadaheadBytesIssued != 0 || io.BlockReads == 0 {
		t.Fatalf("with automatic readahead off a scan issued %d bytes of readahead (%d block reads)", io.ReadaheadBytesIssued, io.BlockReads)
	}
	// ... and explicit readahead still works.
	if err := checkScan(t, db, m, &ReadOptions{SkipFillCache: true, ReadaheadSize: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	if io := db.Metrics().IO; io.ReadaheadBytesUsed == 0 {
		t.Fatalf("explicit readahead was not used")
	}
}

// TestCompactionReadsAhead checks that compaction inputs are read with the
// large explicit readahead.
func TestCompactionReadsAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := readaheadOptions(vfs.NewMem())
	o.DisableAutoCompactions = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := fillReadaheadDB(t, db, rng, 9000)
	before := db.Metrics().IO
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	after := db.Metrics().IO
	if after.ReadaheadBytesUsed == before.ReadaheadBytesUsed {
		t.Fatalf("compaction read its inputs without readahead: %+v", after)
	}
	// Without readahead every block is a read of its own; with it, a
	// compaction makes the reads of opening each table and one per table.
	if reads, blocks := after.TableReads-before.TableReads, after.BlockReads-before.BlockReads; reads*10 > blocks {
		t.Fatalf("compaction made %d table reads for %d blocks: the 2 MiB readahead should need few", reads, blocks)
	}
	if err := checkScan(t, db, m, &ReadOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDirectReadsScan scans a database on the OS file system with
// UseDirectReads and compares with a buffered scan of the same files. It is
// skipped where the file system refuses direct IO.
func TestDirectReadsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dir := testdir.New(t)
	o := readaheadOptions(vfs.Default)
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	m := fillReadaheadDB(t, db, rng, 12000)
	if err := checkScan(t, db, m, &ReadOptions{SkipFillCache: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	o = readaheadOptions(vfs.Default)
	o.UseDirectReads = true
	o.DisableAutoCompactions = true
	db, err = Open(dir, o)
	if errors.Is(err, vfs.ErrDirectIOUnsupported) {
		t.Skipf("direct IO unsupported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, ro := range []*ReadOptions{
		{SkipFillCache: true},
		{SkipFillCache: true, ReadaheadSize: 512 << 10},
		{SkipFillCache: true, LowerBound: []byte("key0003000"), UpperBound: []byte("key0007000")},
	} {
		if err := checkScan(t, db, m, ro); err != nil {
			if errors.Is(err, vfs.ErrDirectIOUnsupported) {
				t.Skipf("direct IO unsupported here: %v", err)
			}
			t.Fatal(err)
		}
	}
	io := db.Metrics().IO
	if io.DirectReads == 0 || io.DirectReads != io.TableReads {
		t.Fatalf("%d direct reads of %d table reads", io.DirectReads, io.TableReads)
	}
	if io.ReadaheadBytesUsed == 0 || io.ReadaheadBytesUsed > io.ReadaheadBytesIssued {
		t.Fatalf("direct scans: readahead issued %d, used %d", io.ReadaheadBytesIssued, io.ReadaheadBytesUsed)
	}
	// Point lookups read single aligned blocks and agree with the model.
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("key%07d", rng.IntN(12000))
		if v, err := db.Get([]byte(k), nil); err != nil || string(v) != m[k] {
			t.Fatalf("Get(%q) = %q, %v", k, v, err)
		}
	}
}

package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// walRecoveryDB writes 40 synced batches that stay in one WAL and returns the
// closed DB's FS and the WAL's name.
func walRecoveryDB(t *testing.T) (*vfs.MemFS, string) {
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

// TestWALMiddleRecordEachMode flips a byte in a middle record of the
// WAL under every WALRecoveryMode: the strict modes report ErrCorruption
// naming the WAL; PointInTimeRecovery keeps exactly the records before the
// damage; SkipAnyCorruptedRecords loses only the damaged record.
func TestWALMiddleRecordEachMode(t *testing.T) {
	orig, name := walRecoveryDB(t)
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

// TestWALBatchCountIsChecked: a WAL record whose checksum holds but
// whose batch header claims far more entries than its bytes can hold (a
// writer bug, or damage the CRC missed) must fail Open with ErrCorruption
// naming the WAL, without sizing a memtable by the claimed count.
func TestWALBatchCountIsChecked(t *testing.T) {
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

// TestEveryWALByteFlipEachMode flips each byte of a WAL of 20 synced
// batches under every WALRecoveryMode: Open either fails with ErrCorruption
// naming the WAL or recovers a state the mode allows (PointInTimeRecovery: a
// prefix of the batches; SkipAnyCorruptedRecords: a subset missing only
// batches at the damage; TolerateCorruptedTailRecords and
// AbsoluteConsistency: all of them, since a flip in a record written whole,
// the last one included, is damage and not a torn tail), and never a value
// that was not written.
func TestEveryWALByteFlipEachMode(t *testing.T) {
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

// TestFragmentedWALFlipsEachMode: like the byte-flip test above, for
// a WAL whose records span blocks (FIRST, MIDDLE, LAST fragments): every
// fragment header byte and sampled payload bytes are flipped, under every
// WALRecoveryMode.
func TestFragmentedWALFlipsEachMode(t *testing.T) {
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

// TestReopenAfterHugeBatchOfTinyEntries replays a synced batch whose
// skiplist nodes need far more arena than its bytes: recovery must size the
// memtable for the nodes too.
func TestReopenAfterHugeBatchOfTinyEntries(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.WriteBufferSize = 4 << 10
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for i := 0; i < 100000; i++ {
		b.Delete([]byte{byte(i)})
	}
	b.Put([]byte("last"), []byte("v"))
	if err := db.Write(b, &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open("/db", o)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("last"), nil); err != nil || string(v) != "v" {
		t.Fatalf("Get(last) = %q, %v", v, err)
	}
}

package shale

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// The corruption matrix damages every file type of a small database at many
// offsets and checks what shale makes of it: no panic, every error matching
// ErrCorruption and naming the damaged file, and no wrong answer. A flip
// nothing detects (in OPTIONS, which Open never reads, or a byte that
// changes no meaning) must leave every answer as the model's; Check must
// still find every damaged OPTIONS file, by its checksum line.

// matrixDB is a closed database on a MemFS and what it must answer.
type matrixDB struct {
	fs   *vfs.MemFS
	keys []string
	// states[i] is the content after the first i unflushed batches of the
	// WAL: a torn WAL tail (a truncated or zeroed end) recovers to one of
	// them; any other damage must leave states[len(states)-1].
	states []model
	// sets change matrixOptions for every Open of the database.
	sets []func(*Options)
}

func matrixOptions(fs vfs.FS, sets ...func(*Options)) *Options {
	o := testOptions(fs)
	o.DisableAutoCompactions = true // one compaction shape per trial
	o.Logger = discardLogger()
	for _, set := range sets {
		set(o)
	}
	return o
}

// buildMatrixDB writes tables in L0 and the last level (with point and
// range tombstones), then, in a second session, batches that stay in the
// WAL. The live MANIFEST is that of the second session.
func buildMatrixDB(t *testing.T, sets ...func(*Options)) *matrixDB {
	fs := vfs.NewMem()
	m := &matrixDB{fs: fs, sets: sets}
	cur := model{}
	val := func(i, gen int) string { return fmt.Sprintf("v%04d-%d-%s", i, gen, strings.Repeat("x", i%40)) }
	db, err := Open("/db", matrixOptions(fs, sets...))
	if err != nil {
		t.Fatal(err)
	}
	put := func(i, gen int) {
		k := fmt.Sprintf("k%04d", i)
		if err := db.Put([]byte(k), []byte(val(i, gen)), nil); err != nil {
			t.Fatal(err)
		}
		cur[k] = val(i, gen)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		put(i, 1)
	}
	must(db.CompactRange(nil, nil)) // to the last level
	for i := 100; i < 250; i++ {
		put(i, 2)
	}
	for i := 10; i < 20; i++ {
		must(db.Delete([]byte(fmt.Sprintf("k%04d", i)), nil))
		delete(cur, fmt.Sprintf("k%04d", i))
	}
	must(db.DeleteRange([]byte("k0050"), []byte("k0060"), nil))
	for i := 50; i < 60; i++ {
		delete(cur, fmt.Sprintf("k%04d", i))
	}
	must(db.Flush())
	for i := 250; i < 300; i++ {
		put(i, 3)
	}
	must(db.Flush())
	must(db.Close())

	db, err = Open("/db", matrixOptions(fs, sets...))
	must(err)
	m.states = append(m.states, cur.clone())
	for b := 0; b < 24; b++ {
		batch := db.NewBatch()
		for j := 0; j < 3; j++ {
			i := (b*37 + j*101) % 320
			k := fmt.Sprintf("k%04d", i)
			if j == 2 && b%4 == 0 {
				batch.Delete([]byte(k))
				delete(cur, k)
				continue
			}
			batch.Put([]byte(k), []byte(val(i, 10+b)))
			cur[k] = val(i, 10+b)
		}
		must(db.Write(batch, &WriteOptions{Sync: true}))
		m.states = append(m.states, cur.clone())
	}
	must(db.Close())
	// Make the removal of obsolete files durable, as time would on a real
	// disk: a crash clone must not bring back a flushed WAL.
	dir, err := fs.OpenDir("/db")
	must(err)
	must(dir.Sync())
	must(dir.Close())
	for i := 0; i < 320; i++ {
		m.keys = append(m.keys, fmt.Sprintf("k%04d", i))
	}
	return m
}

// matrixOutcome is what one damaged copy led to.
type matrixOutcome int

const (
	outcomeHarmless  matrixOutcome = iota // nothing detected, every answer right
	outcomeDetected                       // an operation reported ErrCorruption
	outcomeRecovered                      // WAL tail dropped: a prefix of the batches
)

// matrixTrial opens a damaged copy and reads, iterates, compacts and
// verifies it. damaged is the base name of the damaged file; walDamage
// allows recovery to a prefix of the unflushed batches.
//
// Right after Open, VerifyFileChecksums reads every live table and blob
// file whole, before anything rewrites them: sumChecked says it ran,
// sumFound that it reported the damage.
func matrixTrial(t *testing.T, m *matrixDB, fs *vfs.MemFS, damaged, what string, walDamage bool) (_ matrixOutcome, checkFound, sumChecked, sumFound bool) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s", what, fmt.Sprintf(format, args...))
	}
	detected := false
	checkErr := func(op string, err error) bool {
		t.Helper()
		if err == nil {
			return false
		}
		if !errors.Is(err, ErrCorruption) {
			fail("%s: error %v does not match ErrCorruption", op, err)
		}
		if !strings.Contains(err.Error(), damaged) {
			fail("%s: corruption error does not name %s: %v", op, damaged, err)
		}
		detected = true
		return true
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		fail("Check: %v", err)
	}
	db, err := Open("/db", matrixOptions(fs, m.sets...))
	if checkErr("Open", err) {
		if rep.OK() {
			fail("Open reported damage that Check missed: %v\n%s", err, rep)
		}
		return outcomeDetected, true, false, false
	}
	defer db.Close()
	sumChecked = true
	sumFound = checkErr("VerifyFileChecksums", db.VerifyFileChecksums())

	// Get every key; the answers pick the state the DB recovered to.
	got := model{}
	readErr := false
	for _, k := range m.keys {
		v, err := db.Get([]byte(k), nil)
		switch {
		case err == nil:
			got[k] = string(v)
		case errors.Is(err, ErrNotFound):
		default:
			checkErr("Get "+k, err)
			readErr = true
		}
	}
	want := m.states[len(m.states)-1]
	recovered := false
	if readErr {
		// Some keys were unreadable; the readable ones must be right.
		matrixGetAll(t, db, m.keys, want, checkErr, fail)
	} else if !maps.Equal(got, want) {
		i := slices.IndexFunc(m.states, func(s model) bool { return maps.Equal(s, got) })
		if i < 0 || !walDamage {
			fail("Get answers match no acknowledged state (wrong data)")
		}
		want, recovered = m.states[i], true
	}
	if readErr && walDamage {
		fail("a damaged WAL made a table read fail")
	}
	if !matrixScan(t, db, want, checkErr, fail) {
		matrixGetAll(t, db, m.keys, want, checkErr, fail)
	}
	if !checkErr("CompactRange", db.CompactRange(nil, nil)) {
		matrixGetAll(t, db, m.keys, want, checkErr, fail)
		matrixScan(t, db, want, checkErr, fail)
	}
	checkErr("VerifyChecksum", db.VerifyChecksum())
	if detected && rep.OK() {
		fail("reads found damage that Check missed\n%s", rep)
	}
	switch {
	case detected:
		return outcomeDetected, true, sumChecked, sumFound
	case recovered:
		if !rep.OK() {
			fail("WAL tail dropped by Open but Check calls it damage\n%s", rep)
		}
		return outcomeRecovered, false, sumChecked, sumFound
	}
	return outcomeHarmless, !rep.OK(), sumChecked, sumFound
}

// matrixGetAll checks every key against want; a corruption error is allowed.
func matrixGetAll(t *testing.T, db *DB, keys []string, want model, checkErr func(string, error) bool, fail func(string, ...any)) {
	t.Helper()
	for _, k := range keys {
		v, err := db.Get([]byte(k), nil)
		if !errors.Is(err, ErrNotFound) && checkErr("Get "+k, err) {
			continue
		}
		w, ok := want[k]
		switch {
		case errors.Is(err, ErrNotFound) && ok:
			fail("Get(%s) not found, want %q", k, w)
		case err == nil && (!ok || string(v) != w):
			fail("Get(%s) = %q, want %q (present %v)", k, v, w, ok)
		}
	}
}

// matrixScan iterates both ways: what is returned before an error must be
// exactly the model's entries in order. It reports whether both scans
// completed without error.
func matrixScan(t *testing.T, db *DB, want model, checkErr func(string, error) bool, fail func(string, ...any)) bool {
	t.Helper()
	keys := want.sortedKeys(nil, nil)
	clean := true
	for _, reverse := range []bool{false, true} {
		it := db.NewIterator(nil)
		i, step := 0, 1
		ok := it.First()
		if reverse {
			i, step, ok = len(keys)-1, -1, it.Last()
		}
		for ; ok; ok = map[bool]func() bool{false: it.Next, true: it.Prev}[reverse]() {
			k := string(it.Key())
			v := it.Value()
			if v == nil && it.Err() != nil {
				break // a blob value that does not read back stops the scan
			}
			if i < 0 || i >= len(keys) || k != keys[i] || string(v) != want[keys[i]] {
				fail("scan (reverse %v) at %d: got %q=%q, wrong data", reverse, i, k, v)
			}
			i += step
		}
		if checkErr(fmt.Sprintf("scan (reverse %v)", reverse), it.Err()) {
			clean = false
		} else if (!reverse && i != len(keys)) || (reverse && i != -1) {
			fail("scan (reverse %v) stopped early at %d of %d without an error", reverse, i, len(keys))
		}
		it.Close()
	}
	return clean
}

type matrixCount struct {
	tried, detected, harmless, recovered, checkOnly int
	// sumChecked counts the trials that ran VerifyFileChecksums (Open
	// succeeded), sumFound those where it reported the damage.
	sumChecked, sumFound int
}

// matrixSamples is how many offsets a damage kind tries in a file larger
// than matrixSmallFile (all offsets in smaller ones).
func matrixSamples() int { return bySize(60, 60, 2000) }

const matrixSmallFile = 600

func TestCorruptionMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	runCorruptionMatrix(t, nil)
}

// TestCorruptionMatrixBlobFiles is TestCorruptionMatrix with blob files on:
// blob files are damaged too, and every flip, cut or zeroed run in one is
// detected (by reads, scans or VerifyChecksum, and by Check), never read
// as another value.
func TestCorruptionMatrixBlobFiles(t *testing.T) {
	runCorruptionMatrix(t, setBlobTestOptions)
}

// TestCorruptionMatrixBlobWriteSeparation is TestCorruptionMatrixBlobFiles
// with values separated at commit: the last memtable's values are in an
// unfinished blob file the WAL points into, whose damage counts as the
// WAL's: a cut or zeroed record may end the WAL there (a prefix of the
// batches), a flipped one is detected.
func TestCorruptionMatrixBlobWriteSeparation(t *testing.T) {
	runCorruptionMatrix(t, setBlobWriteSeparationTestOptions)
}

// runCorruptionMatrix damages the files of the matrix database, with blob
// files when blobSet (which sets their options) is not nil.
func runCorruptionMatrix(t *testing.T, blobSet func(*Options)) {
	seed := modelSeed(t)
	t.Logf("seed %d (rerun with SHALE_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0xc0ffee))
	blobs := blobSet != nil
	var sets []func(*Options)
	if blobs {
		sets = append(sets, blobSet)
	}
	m := buildMatrixDB(t, sets...)
	names, err := m.fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[base.FileType]string{
		base.FileTypeTable: "SST", base.FileTypeLog: "WAL", base.FileTypeManifest: "MANIFEST",
		base.FileTypeCurrent: "CURRENT", base.FileTypeOptions: "OPTIONS",
	}
	required := []string{"SST flip", "WAL flip", "MANIFEST flip", "CURRENT flip", "OPTIONS flip"}
	if blobs {
		kinds[base.FileTypeBlob] = "blob"
		required = append(required, "blob flip")
	}
	counts := map[string]*matrixCount{}
	for _, name := range names {
		ft, _, ok := base.ParseFilename(name)
		kind := kinds[ft]
		if !ok || kind == "" {
			continue
		}
		orig := readFile(t, m.fs, "/db/"+name)
		if len(orig) == 0 {
			continue // an empty WAL has nothing to damage
		}
		sampled := orig
		if ft == base.FileTypeBlob && unfinishedBlob(orig) {
			// A memtable's blob file may end in zeros written ahead of its
			// records for synced writes, which nothing reads (as a WAL's):
			// its records are what is damaged.
			sampled = bytes.TrimRight(orig, "\x00")
		}
		for _, dm := range matrixDamages(rng, sampled) {
			c := counts[kind+" "+dm.what]
			if c == nil {
				c = &matrixCount{}
				counts[kind+" "+dm.what] = c
			}
			for _, off := range dm.offs {
				fs := m.fs.CrashClone()
				writeFile(t, fs, "/db/"+name, dm.fn(slices.Clone(orig), off))
				what := fmt.Sprintf("%s of %s (%d bytes) at offset %d (seed %d)", dm.what, name, len(orig), off, seed)
				c.tried++
				// A memtable's blob file (no footer) holds values of the WAL.
				walDamage := ft == base.FileTypeLog || ft == base.FileTypeBlob && unfinishedBlob(orig)
				outcome, checkFound, sumChecked, sumFound := matrixTrial(t, m, fs, name, what, walDamage)
				if sumChecked {
					c.sumChecked++
				}
				if sumFound {
					c.sumFound++
				}
				switch outcome {
				case outcomeDetected:
					c.detected++
				case outcomeHarmless:
					c.harmless++
					if ft == base.FileTypeTable || ft == base.FileTypeCurrent || ft == base.FileTypeBlob && !checkFound {
						// Every byte of these is checked; say which escaped.
						t.Logf("harmless: %s (found by Check: %v)", what, checkFound)
					}
					if checkFound {
						c.checkOnly++
					}
				case outcomeRecovered:
					c.recovered++
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		c := counts[k]
		t.Logf("%-18s tried %5d  detected %5d  harmless %5d (found by Check %5d)  recovered-prefix %5d  file checksum %5d/%5d",
			k, c.tried, c.detected, c.harmless, c.checkOnly, c.recovered, c.sumFound, c.sumChecked)
	}
	for _, k := range required {
		if counts[k] == nil || counts[k].tried == 0 {
			t.Fatalf("no %s trials: the matrix database lacks a file type", k)
		}
	}
	if c := counts["SST flip"]; c.detected == 0 {
		t.Fatal("no SST flip was detected")
	}
	// Every WAL record was synced and written whole: a flip in one, the
	// last included, is damage, never a torn tail to drop.
	if c := counts["WAL flip"]; c.recovered > 0 {
		t.Errorf("WAL flip: %d of %d damaged WALs were recovered to a prefix, dropping acknowledged batches without an error", c.recovered, c.tried)
	}
	// Every byte of a table is covered by a block checksum or the footer's
	// canonical form, and CURRENT is read whole: no damage there may pass.
	for _, k := range []string{"SST flip", "SST truncate", "SST zero512", "CURRENT flip", "CURRENT truncate", "CURRENT zero512"} {
		if c := counts[k]; c != nil && c.harmless > 0 {
			t.Errorf("%s: %d of %d damaged files went undetected by Open, reads, scans and compaction", k, c.harmless, c.tried)
		}
	}
	// A blob file's every byte is covered by its records' checksums and the
	// whole-file checksum, which Check verifies: Check finds every damage.
	// The DB may not: damage to values only shadowed entries point to is
	// read by nothing, and the compaction of the trial drops those entries
	// and deletes the file before VerifyChecksum looks.
	for _, what := range []string{"flip", "truncate", "zero512"} {
		if c := counts["blob "+what]; c != nil && c.checkOnly != c.harmless {
			t.Errorf("blob %s: %d of %d damaged blob files went undetected by the DB and by Check", what, c.harmless-c.checkOnly, c.tried)
		}
	}
	if c := counts["blob flip"]; blobs && c.detected == 0 {
		t.Error("no blob flip was detected by the DB")
	}
	// Whole-file checksums (issue 16, item 4): every table and blob file
	// has one, so VerifyFileChecksums finds every flipped bit in them
	// (CRC-32C detects any single-bit error) whenever Open succeeds.
	for _, k := range []string{"SST flip", "blob flip"} {
		if c := counts[k]; c != nil && c.sumFound != c.sumChecked {
			t.Errorf("%s: VerifyFileChecksums found %d of the %d damaged files Open opened", k, c.sumFound, c.sumChecked)
		}
	}
	if c := counts["SST flip"]; c.sumChecked == 0 {
		t.Error("SST flip: no damaged table opened, so VerifyFileChecksums never ran on one")
	}
	// Open never reads OPTIONS, so its damage is harmless to the DB, but
	// its checksum line lets Check find every change.
	for _, what := range []string{"flip", "truncate", "zero512"} {
		if c := counts["OPTIONS "+what]; c.checkOnly != c.tried {
			t.Errorf("OPTIONS %s: Check found %d of %d damaged files", what, c.checkOnly, c.tried)
		}
	}
}

// matrixDamage is one way the corruption matrix damages a file: fn returns
// the damaged copy of b at each offset of offs.
type matrixDamage struct {
	what string
	fn   func(b []byte, off int) []byte
	offs []int
}

// matrixDamages returns the damages the matrix tries on a file holding
// orig: a flipped bit, a cut and 512 zeroed bytes. Every offset of a small
// file is flipped; truncation and zeroing, whose outcome changes less from
// one offset to the next, try every fourth (every one under SHALE_STRESS).
// A larger file gets offsets drawn from rng.
func matrixDamages(rng *rand.Rand, orig []byte) []matrixDamage {
	offsets := func(n int) []int {
		if len(orig) <= matrixSmallFile {
			step := 1
			if n < matrixSamples() && !stress() {
				step = 4
			}
			return rangeInts(len(orig), step)
		}
		out := make([]int, n)
		for i := range out {
			out[i] = rng.IntN(len(orig))
		}
		return out
	}
	return []matrixDamage{
		{"flip", func(b []byte, off int) []byte { b[off] ^= 1 << rng.IntN(8); return b }, offsets(matrixSamples())},
		{"truncate", func(b []byte, off int) []byte { return b[:off] }, offsets(matrixSamples() / 4)},
		{"zero512", func(b []byte, off int) []byte { clear(b[off:min(off+512, len(b))]); return b }, offsets(matrixSamples() / 4)},
	}
}

// rangeInts returns 0, step, 2*step, ... below n.
func rangeInts(n, step int) []int {
	var out []int
	for i := 0; i < n; i += step {
		out = append(out, i)
	}
	return out
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// unfinishedBlob reports whether data is a blob file without a footer (a
// memtable's, written at commit).
func unfinishedBlob(data []byte) bool {
	mem := vfs.NewMem()
	f, err := mem.Create("/b")
	if err != nil {
		return false
	}
	_, err = f.Write(data)
	f.Close()
	if err != nil {
		return false
	}
	rf, err := mem.Open("/b")
	if err != nil {
		return false
	}
	r, err := blob.NewReader(rf, blob.ReaderOptions{})
	if err == nil {
		r.Close()
	}
	return errors.Is(err, blob.ErrNoFooter)
}

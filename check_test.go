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
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// liveTables returns the names of the live tables of the DB in /db, as
// Check finds them (without opening the DB, which would flush its WAL).
func liveTables(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range rep.Files {
		if f.Kind == "table" && f.Status == CheckOK {
			out = append(out, f.Name)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no live tables:\n%s", rep)
	}
	return out
}

// fileOf returns the report entry of name.
func fileOf(t *testing.T, rep *CheckReport, name string) CheckedFile {
	t.Helper()
	for _, f := range rep.Files {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("report has no %s:\n%s", name, rep)
	return CheckedFile{}
}

// snapshotDir returns every file's name and content.
func snapshotDir(t *testing.T, fs vfs.FS) map[string]string {
	t.Helper()
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		out[n] = string(readFile(t, fs, "/db/"+n))
	}
	return out
}

func TestCheckCleanAndDamaged(t *testing.T) {
	m := buildMatrixDB(t)
	fs := m.fs.CrashClone()
	before := snapshotDir(t, fs)
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !strings.Contains(rep.String(), "no damage found") {
		t.Fatalf("clean database:\n%s", rep)
	}
	kinds := map[string]int{}
	for _, f := range rep.Files {
		if f.Status == CheckOK {
			kinds[f.Kind]++
		}
		if f.Status == CheckDamaged || f.Status == CheckRecoverable {
			t.Fatalf("clean database: %s is %s", f.Name, f.Status)
		}
	}
	if kinds["CURRENT"] != 1 || kinds["MANIFEST"] != 1 || kinds["table"] < 3 || kinds["WAL"] != 1 || kinds["OPTIONS"] != 1 {
		t.Fatalf("clean database: checked %v\n%s", kinds, rep)
	}
	if after := snapshotDir(t, fs); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("Check modified the database directory")
	}

	tables := liveTables(t, m.fs.CrashClone())
	table := tables[0]
	wal := findFile(t, fs, "/db", base.FileTypeLog)
	manifestName := findFile(t, fs, "/db", base.FileTypeManifest)
	optionsName := findFile(t, fs, "/db", base.FileTypeOptions)
	for _, tc := range []struct {
		name   string
		file   string
		damage func(b []byte) []byte // nil removes the file
		status CheckStatus
		msg    string
	}{
		{"sst data block", table, func(b []byte) []byte { b[100] ^= 0x04; return b }, CheckDamaged, "checksum"},
		{"sst missing", table, nil, CheckDamaged, "missing"},
		{"sst size", table, func(b []byte) []byte {
			foot := bytes.Clone(b[len(b)-53:])
			return append(append(b[:len(b)-53], make([]byte, 100)...), foot...)
		}, CheckDamaged, "the MANIFEST says"},
		{"wal torn tail", wal, func(b []byte) []byte { b = walRecords(t, b); return b[:len(b)-20] }, CheckRecoverable, "torn tail"},
		{"wal last record bit rot", wal, func(b []byte) []byte { b = walRecords(t, b); b[len(b)-3] ^= 0x01; return b }, CheckDamaged, "complete but fails its checksum"},
		{"wal last record length", wal, func(b []byte) []byte {
			// The high byte of the last record's length grows, so that the
			// record seems cut off by the end of the file.
			b = walRecords(t, b)
			rr := record.NewReader(bytes.NewReader(b), wal)
			last := int64(-1)
			for _, err := rr.Next(); err == nil; _, err = rr.Next() {
				last = rr.Offset()
			}
			b[last+5] ^= 0x40
			return b
		}, CheckDamaged, "length field is damaged"},
		{"wal middle", wal, func(b []byte) []byte { b[30] ^= 0x01; return b }, CheckDamaged, "checksum"},
		{"manifest first record", manifestName, func(b []byte) []byte { b[20] ^= 0x01; return b }, CheckDamaged, "checksum"},
		{"manifest last record bit rot", manifestName, func(b []byte) []byte { b[len(b)-3] ^= 0x01; return b }, CheckDamaged, "complete but fails its checksum"},
		{"manifest last record torn", manifestName, func(b []byte) []byte { return b[:len(b)-3] }, CheckRecoverable, "torn tail"},
		{"current garbage", "CURRENT", func(b []byte) []byte { return []byte("MANIFEST-x\n") }, CheckDamaged, "not a MANIFEST name"},
		{"current names a missing manifest", "CURRENT", func(b []byte) []byte { return []byte("MANIFEST-999999\n") }, CheckDamaged, "does not exist"},
		{"options bad value", optionsName, func(b []byte) []byte {
			return bytes.Replace(b, []byte("block_size=1024"), []byte("block_size=1x24"), 1)
		}, CheckDamaged, "block_size"},
		{"options invalid value", optionsName, func(b []byte) []byte {
			return bytes.Replace(b, []byte("block_size=1024"), []byte("block_size=-1000"), 1)
		}, CheckDamaged, "BlockSize"},
		{"options valid but changed value", optionsName, func(b []byte) []byte {
			return bytes.Replace(b, []byte("block_size=1024"), []byte("block_size=2048"), 1)
		}, CheckDamaged, "checksum line"},
		{"options last newline lost", optionsName, func(b []byte) []byte { return b[:len(b)-1] }, CheckDamaged, "checksum line"},
		{"options checksum line lost", optionsName, func(b []byte) []byte {
			return b[:bytes.LastIndex(b, []byte("# crc32c="))]
		}, CheckDamaged, "no checksum line"},
		{"options checksum in upper case", optionsName, func(b []byte) []byte {
			i := bytes.LastIndex(b, []byte("# crc32c="))
			return append(b[:i:i], bytes.ToUpper(b[i:])...)
		}, CheckDamaged, "checksum line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := m.fs.CrashClone()
			if tc.damage == nil {
				if err := fs.Remove("/db/" + tc.file); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, fs, "/db/"+tc.file, tc.damage(readFile(t, fs, "/db/"+tc.file)))
			}
			before := snapshotDir(t, fs)
			rep, err := Check("/db", &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			f := fileOf(t, rep, tc.file)
			if f.Status != tc.status || f.Err == nil || !strings.Contains(f.Err.Error(), tc.msg) {
				t.Fatalf("%s: status %s, err %v; want %s mentioning %q\n%s", tc.file, f.Status, f.Err, tc.status, tc.msg, rep)
			}
			if rep.OK() != (tc.status != CheckDamaged) {
				t.Fatalf("OK() = %v with %s %s\n%s", rep.OK(), tc.file, f.Status, rep)
			}
			if f.Status == CheckDamaged && !strings.Contains(rep.String(), "DAMAGE FOUND") {
				t.Fatalf("report does not say damage was found:\n%s", rep)
			}
			if tc.file != "CURRENT" && !strings.HasPrefix(tc.file, "OPTIONS") && tc.damage != nil && !errors.Is(f.Err, ErrCorruption) {
				t.Fatalf("damage %v does not match ErrCorruption", f.Err)
			}
			if after := snapshotDir(t, fs); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatal("Check modified the database directory")
			}
		})
	}
}

func TestCheckCurrentUnusableChecksNewestManifest(t *testing.T) {
	m := buildMatrixDB(t)
	fs := m.fs.CrashClone()
	writeFile(t, fs, "/db/CURRENT", []byte("garbage"))
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if f := fileOf(t, rep, "CURRENT"); f.Status != CheckDamaged || !strings.Contains(f.Detail, "newest MANIFEST") {
		t.Fatalf("CURRENT: %+v", f)
	}
	// The MANIFEST and the tables are still checked.
	if f := fileOf(t, rep, findFile(t, fs, "/db", base.FileTypeManifest)); f.Status != CheckOK {
		t.Fatalf("MANIFEST: %+v", f)
	}
	if _, err := Check("/nodb", &Options{FS: fs}); err == nil {
		t.Fatal("Check of a missing directory succeeded")
	}
	if err := fs.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Check("/empty", &Options{FS: fs}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Check of an empty directory: %v", err)
	}
}

// TestCheckTornWALBeforeNewerWrites: a torn tail is recoverable only in the
// newest WAL with writes, as Open judges it.
func TestCheckTornWALBeforeNewerWrites(t *testing.T) {
	m := buildMatrixDB(t)
	fs := m.fs.CrashClone()
	wal := findFile(t, fs, "/db", base.FileTypeLog)
	_, num, _ := base.ParseFilename(wal)
	data := walRecords(t, readFile(t, fs, "/db/"+wal))
	writeFile(t, fs, "/db/"+base.MakeFilename(base.FileTypeLog, num+100), data)
	writeFile(t, fs, "/db/"+wal, data[:len(data)-20])
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if f := fileOf(t, rep, wal); f.Status != CheckDamaged || !strings.Contains(f.Err.Error(), "holds writes") {
		t.Fatalf("%s: %+v", wal, f)
	}
	_, err = Open("/db", matrixOptions(fs))
	expectCorruption(t, err, wal)
}

func TestVerifyChecksum(t *testing.T) {
	m := buildMatrixDB(t)
	fs := m.fs.CrashClone()
	db, err := Open("/db", matrixOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.VerifyChecksum(); err != nil {
		t.Fatalf("intact: %v", err)
	}
	db.Close()
	tables := liveTables(t, fs)
	var damaged []string
	for _, name := range tables {
		b := readFile(t, fs, "/db/"+name)
		b[len(b)/4] ^= 0x10 // a data block: Open does not read it
		writeFile(t, fs, "/db/"+name, b)
		damaged = append(damaged, name)
		if len(damaged) == 2 {
			break
		}
	}
	db, err = Open("/db", matrixOptions(fs))
	if err != nil {
		t.Fatalf("a damaged data block must not fail Open: %v", err)
	}
	defer db.Close()
	err = db.VerifyChecksum()
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("want a block checksum error, got %v", err)
	}
	for _, name := range damaged { // every damaged table is reported
		expectCorruption(t, err, name)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.VerifyChecksum(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// growTable inserts bytes before a table's footer: the table still opens
// and reads correctly, but its size no longer matches the MANIFEST.
func growTable(t *testing.T, fs vfs.FS, name string) {
	b := readFile(t, fs, "/db/"+name)
	foot := bytes.Clone(b[len(b)-53:])
	writeFile(t, fs, "/db/"+name, append(append(b[:len(b)-53], make([]byte, 64)...), foot...))
}

func TestParanoidChecksAtOpen(t *testing.T) {
	m := buildMatrixDB(t)
	name := liveTables(t, m.fs)[0]
	for _, tc := range []struct {
		what   string
		damage func(fs *vfs.MemFS)
		msg    string
	}{
		{"size", func(fs *vfs.MemFS) { growTable(t, fs, name) }, "the MANIFEST says"},
		{"missing", func(fs *vfs.MemFS) { fs.Remove("/db/" + name) }, "missing"},
		{"index block", func(fs *vfs.MemFS) {
			b := readFile(t, fs, "/db/"+name)
			b[len(b)-80] ^= 0x01 // in the meta blocks before the footer
			writeFile(t, fs, "/db/"+name, b)
		}, name},
	} {
		paranoid := matrixOptions(m.fs.CrashClone())
		tc.damage(paranoid.FS.(*vfs.MemFS))
		paranoid.ParanoidChecks = true
		_, err := Open("/db", paranoid)
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: paranoid Open: %v, want corruption naming %s", tc.what, err, name)
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: %v does not say %q", tc.what, err, tc.msg)
		}
		// Without ParanoidChecks the damage is found only when the table
		// is read.
		fs := m.fs.CrashClone()
		tc.damage(fs)
		db, err := Open("/db", matrixOptions(fs))
		if err != nil {
			t.Fatalf("%s: Open without ParanoidChecks: %v", tc.what, err)
		}
		if tc.what == "size" {
			if err := db.VerifyChecksum(); err == nil || !strings.Contains(err.Error(), "the MANIFEST says") {
				t.Fatalf("VerifyChecksum of a table of the wrong size: %v", err)
			}
		}
		db.Close()
	}
}

// corruptingFS flips one byte of the first write to a table file made
// while armed: a table damaged between the writer and the disk.
type corruptingFS struct {
	vfs.FS
	armed atomic.Bool
	hits  atomic.Int32
}

func (fs *corruptingFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Create(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") || !fs.armed.Load() {
		return f, err
	}
	return &corruptingFile{File: f, fs: fs}, nil
}

type corruptingFile struct {
	vfs.File
	fs   *corruptingFS
	done bool
}

func (f *corruptingFile) Write(p []byte) (int, error) {
	if f.done || len(p) < 64 {
		return f.File.Write(p)
	}
	f.done = true
	f.fs.hits.Add(1)
	q := bytes.Clone(p)
	q[len(q)/2] ^= 0x08
	return f.File.Write(q)
}

func TestParanoidChecksAfterFlushAndCompaction(t *testing.T) {
	for _, paranoid := range []bool{false, true} {
		cfs := &corruptingFS{FS: vfs.NewMem()}
		o := matrixOptions(cfs)
		o.ParanoidChecks = paranoid
		o.Compression = NoCompression
		o.WriteBufferSize = 1 << 20 // only the armed Flush writes a table
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		val := func(i int) string { return fmt.Sprintf("value-%04d-%s", i, strings.Repeat("y", 30)) }
		for i := 0; i < 300; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(val(i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		cfs.armed.Store(true)
		err = db.Flush()
		if cfs.hits.Load() == 0 {
			t.Fatal("no table write was damaged")
		}
		if paranoid {
			// The damaged table is never installed: the flush fails, the
			// DB stops writes, and the memtable still answers.
			if !errors.Is(err, ErrCorruption) || !errors.Is(err, ErrReadOnly) {
				t.Fatalf("paranoid flush of a damaged table: %v", err)
			}
			if err := db.Put([]byte("x"), []byte("y"), nil); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("write after a failed paranoid flush: %v", err)
			}
			for i := 0; i < 300; i++ {
				if v, err := db.Get([]byte(fmt.Sprintf("k%04d", i)), nil); err != nil || string(v) != val(i) {
					t.Fatalf("Get k%04d after the failed flush: %q %v", i, v, err)
				}
			}
			if n := db.Metrics().Levels[0].NumFiles; n != 0 {
				t.Fatalf("%d damaged L0 tables installed", n)
			}
			if err := db.VerifyChecksum(); err != nil {
				t.Fatalf("a damaged table was installed: %v", err)
			}
		} else {
			// Without the check the damaged table is installed, and the
			// damage shows at read time.
			if err != nil {
				t.Fatalf("flush: %v", err)
			}
			if err := db.VerifyChecksum(); !errors.Is(err, ErrCorruption) {
				t.Fatalf("VerifyChecksum of the damaged flush output: %v", err)
			}
		}
		db.Close()
	}

	// Compaction: the inputs are intact, the output is damaged.
	cfs := &corruptingFS{FS: vfs.NewMem()}
	o := matrixOptions(cfs)
	o.ParanoidChecks = true
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := 0; round < 3; round++ {
		for i := 0; i < 200; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("r%d-%d", round, i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	cfs.armed.Store(true)
	err = db.CompactRange(nil, nil)
	if !errors.Is(err, ErrCorruption) || cfs.hits.Load() == 0 {
		t.Fatalf("paranoid compaction into a damaged table: %v (damaged writes %d)", err, cfs.hits.Load())
	}
	cfs.armed.Store(false)
	for i := 0; i < 200; i++ {
		if v, err := db.Get([]byte(fmt.Sprintf("k%04d", i)), nil); err != nil || string(v) != fmt.Sprintf("r2-%d", i) {
			t.Fatalf("Get k%04d after the failed compaction: %q %v", i, v, err)
		}
	}
	if err := db.VerifyChecksum(); err != nil {
		t.Fatalf("the installed tables must be intact: %v", err)
	}
	if !strings.Contains(fmt.Sprint(db.Put([]byte("a"), nil, nil)), "compaction") {
		t.Fatal("the background error does not say the compaction failed")
	}
}

// TestCheckAgreesWithOpen damages copies of closed databases the ways the
// corruption matrix and the WAL damage tests do — a flipped bit, a cut and
// 512 zeroed bytes at many offsets of CURRENT, the MANIFEST and the WAL of
// the matrix database; a flip at each offset the WAL damage tests try and
// cuts inside the last record of WALs with one, many and block-spanning
// records; the tears a power loss leaves of an unsynced append; a torn WAL
// followed by a newer one with writes; a MANIFEST cut inside its last
// record; CURRENT naming a missing MANIFEST; and, undamaged, the database as
// it is and with zeros after its WAL — and checks that Check and Open, under
// the default WALRecoveryMode, judge the files Open reads alike (see
// checkAgreesWithOpen). Tables are left out: Open reads none of their
// blocks, Check reads all of them. Under -short every fifth copy of each
// kind is tried.
func TestCheckAgreesWithOpen(t *testing.T) {
	var n agreementCount
	seed := modelSeed(t)
	t.Logf("seed %d (rerun with SHALE_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0xc0ffee))
	// every is the stride through each list of damaged copies: all of them
	// without -short.
	every := 1
	if testing.Short() {
		every = 5
	}

	m := buildMatrixDB(t)
	for _, name := range listNames(t, m.fs, "/db") {
		ft, _, ok := base.ParseFilename(name)
		if !ok || (ft != base.FileTypeCurrent && ft != base.FileTypeManifest && ft != base.FileTypeLog) {
			continue
		}
		orig := readFile(t, m.fs, "/db/"+name)
		for _, dm := range matrixDamages(rng, orig) {
			for i, off := range dm.offs {
				if i%every != 0 {
					continue
				}
				fs := m.fs.CrashClone()
				writeFile(t, fs, "/db/"+name, dm.fn(slices.Clone(orig), off))
				checkAgreesWithOpen(t, fs, fmt.Sprintf("%s of %s (%d bytes) at offset %d (seed %d)", dm.what, name, len(orig), off, seed), &n)
			}
		}
	}
	checkAgreesWithOpen(t, m.fs.CrashClone(), "intact", &n)
	fs := m.fs.CrashClone()
	wal := findFile(t, fs, "/db", base.FileTypeLog)
	data := walRecords(t, readFile(t, fs, "/db/"+wal))
	writeFile(t, fs, "/db/"+wal, append(slices.Clone(data), make([]byte, 4<<10)...))
	checkAgreesWithOpen(t, fs, "WAL followed by preallocated zeros", &n)
	fs = m.fs.CrashClone()
	manifestName := findFile(t, fs, "/db", base.FileTypeManifest)
	b := readFile(t, fs, "/db/"+manifestName)
	writeFile(t, fs, "/db/"+manifestName, b[:len(b)-3])
	checkAgreesWithOpen(t, fs, "MANIFEST cut inside its last record", &n)
	fs = m.fs.CrashClone()
	writeFile(t, fs, "/db/CURRENT", []byte("MANIFEST-999999\n"))
	checkAgreesWithOpen(t, fs, "CURRENT names a missing MANIFEST", &n)
	fs = m.fs.CrashClone()
	_, num, _ := base.ParseFilename(wal)
	writeFile(t, fs, "/db/"+base.MakeFilename(base.FileTypeLog, num+100), data)
	writeFile(t, fs, "/db/"+wal, data[:len(data)-20])
	checkAgreesWithOpen(t, fs, "torn WAL followed by a newer WAL with writes", &n)

	for name, d := range walDamageDBs(t) {
		for i, off := range d.offsets() {
			if i%every != 0 {
				continue
			}
			data := bytes.Clone(d.data)
			data[off] ^= 1 << (off % 8)
			checkAgreesWithOpen(t, d.withWAL(t, data), fmt.Sprintf("%s: flip at %d of %d", name, off, len(data)), &n)
		}
		last := d.n - 1
		step := max(1, (d.ends[last]-d.starts[last])/10)
		for cut := d.starts[last] + 1; cut < d.ends[last]; cut += step {
			checkAgreesWithOpen(t, d.withWAL(t, d.data[:cut]), fmt.Sprintf("%s: cut at %d", name, cut), &n)
		}
	}
	d, _, tears := crashTornWALs(t)
	for _, tear := range tears {
		checkAgreesWithOpen(t, d.withWAL(t, tear.data), tear.what, &n)
	}
	t.Logf("%d copies: %d failed Open and Check called damaged; %d opened with a loss Check called recoverable (%d of them a torn MANIFEST); %d opened cleanly and Check found no damage",
		n.damaged+n.recoverable+n.clean, n.damaged, n.recoverable, n.manifestTorn, n.clean)
	if n.damaged == 0 || n.recoverable == 0 || n.manifestTorn == 0 || n.clean == 0 {
		t.Fatal("the corpus lacks damaged, recoverable (a WAL and the MANIFEST) or clean copies")
	}
}

// agreementCount counts the outcomes of checkAgreesWithOpen.
type agreementCount struct{ damaged, recoverable, manifestTorn, clean int }

// checkAgreesWithOpen runs Check on the database in fs, then Open (default
// WALRecoveryMode), which may change fs, and fails unless they agree about
// CURRENT, the MANIFEST and the WALs: Check calls one of them DAMAGED
// exactly when Open fails, and Open's error names a file Check calls
// DAMAGED; Check calls a WAL recoverable exactly when Open succeeds and
// reports a loss of that WAL in Metrics().Recovery; and it calls the
// MANIFEST recoverable exactly when Open succeeds and logs that it dropped
// the MANIFEST's torn tail.
func checkAgreesWithOpen(t *testing.T, fs *vfs.MemFS, what string, n *agreementCount) {
	t.Helper()
	log := &recordingHandler{level: slog.LevelWarn}
	o := matrixOptions(fs)
	o.CreateIfMissing = false
	o.Logger = slog.New(log)
	rep, err := Check("/db", o)
	if err != nil {
		t.Fatalf("%s: Check: %v", what, err)
	}
	damaged := map[string]bool{}
	recoverable := map[string]bool{}
	for _, f := range rep.Files {
		if f.Kind != "CURRENT" && f.Kind != "MANIFEST" && f.Kind != "WAL" {
			continue
		}
		switch f.Status {
		case CheckDamaged:
			damaged[f.Name] = true
		case CheckRecoverable:
			recoverable[f.Name] = true
		}
	}
	db, err := Open("/db", o)
	if err != nil {
		named := false
		for name := range damaged {
			named = named || strings.Contains(err.Error(), name)
		}
		if !named {
			t.Fatalf("%s: Open fails, but Check calls no file its error names DAMAGED: %v\n%s", what, err, rep)
		}
		n.damaged++
		return
	}
	losses := db.Metrics().Recovery.Losses
	if err := db.Close(); err != nil {
		t.Fatalf("%s: Close: %v", what, err)
	}
	if len(damaged) > 0 {
		t.Fatalf("%s: Open succeeds, but Check calls %v DAMAGED\n%s", what, slices.Sorted(maps.Keys(damaged)), rep)
	}
	lost := map[string]bool{}
	for _, l := range losses {
		lost[fs.PathBase(l.File)] = true
	}
	manifestTorn := log.saw("torn tail of MANIFEST")
	for name := range recoverable {
		if ft, _, _ := base.ParseFilename(name); ft == base.FileTypeManifest {
			if !manifestTorn {
				t.Fatalf("%s: Check calls %s recoverable, but Open did not drop a torn tail of it\n%s", what, name, rep)
			}
			manifestTorn = false
			n.manifestTorn++
		} else if !lost[name] {
			t.Fatalf("%s: Check calls %s recoverable, but Open reports no loss of it (%+v)\n%s", what, name, losses, rep)
		}
		delete(lost, name)
	}
	if len(lost) > 0 || manifestTorn {
		t.Fatalf("%s: Open reports losses %+v (MANIFEST tail dropped: %v) that Check does not call recoverable\n%s", what, losses, manifestTorn, rep)
	}
	if len(recoverable) > 0 {
		n.recoverable++
	} else {
		n.clean++
	}
}

// TestCheckMissingCurrent: Check of a database that lost CURRENT (the
// case Open now refuses) reports CURRENT as damaged and still checks the
// newest MANIFEST and the tables.
func TestCheckMissingCurrent(t *testing.T) {
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

// TestCheckReportsTombstoneDates checks that Check reads the MANIFEST's
// tombstone fields: a table holding tombstones is reported with their count
// and the date of the oldest, to the nanosecond, from the DB's clock.
func TestCheckReportsTombstoneDates(t *testing.T) {
	fs := vfs.NewMem()
	clock := newFakeClock(0)
	clock.Advance(123456789 * time.Nanosecond)
	opts := testOptions(fs)
	opts.Clock = clock
	opts.DisableAutoCompactions = true // a compaction would drop the tombstones
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put([]byte(k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// In a table of their own: a flush drops tombstones of keys no table
	// holds.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // later writes do not change the date
	if err := db.DeleteRange([]byte("c"), []byte("d"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	want := "L0, 2 entries, 2 tombstones (1 of 1 data blocks tombstone-dense), the oldest written 2025-01-02T03:04:05.123456789Z"
	for _, f := range rep.Files {
		if f.Kind == "table" && strings.Contains(f.Detail, "tombstones") {
			// The whole-file checksum follows (file_checksum_test.go).
			if !strings.HasPrefix(f.Detail, want+", file checksum "+FileChecksumCrc32cName+" ") {
				t.Fatalf("table %s: detail %q, want %q\n%s", f.Name, f.Detail, want, rep)
			}
			return
		}
	}
	t.Fatalf("no table with tombstones in the report:\n%s", rep)
}

package shale

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// independentCRC32C is the whole-file CRC-32C of data as RocksDB's
// FileChecksumGenCrc32c records it (4 bytes big-endian), computed with the
// standard library alone.
func independentCRC32C(data []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
}

// writeChecksumTestDB writes values (large ones to blob files when
// setBlobTestOptions is among sets) through flushes and a full
// compaction, then more flushes, so that the DB has tables written by
// flushes (L0) and by compactions, and blob files from both.
func writeChecksumTestDB(t *testing.T, db *DB) {
	t.Helper()
	for round := range 3 {
		for i := range 300 {
			k := fmt.Sprintf("key%05d", (i*7919+round*31)%1000)
			v := fmt.Sprintf("value-%d-%d-%s", round, i, strings.Repeat("v", i%50))
			must(t, db.Put([]byte(k), []byte(v), nil))
		}
		must(t, db.Flush())
		if round == 1 {
			must(t, db.CompactRange(nil, nil))
		}
	}
	must(t, db.DeleteRange([]byte("key00100"), []byte("key00200"), nil))
	must(t, db.Flush())
}

// checkRecordedChecksums checks that every live table and blob file of db
// has a recorded checksum named funcName equal to sum(file bytes), and
// returns the checksums by file name.
func checkRecordedChecksums(t *testing.T, db *DB, fs vfs.FS, funcName string, sum func([]byte) []byte) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	levels := map[int]bool{}
	for _, f := range db.GetLiveFilesMetaData() {
		levels[f.Level] = true
		if f.FileChecksumFuncName != funcName {
			t.Errorf("table %s: checksum function %q, want %q", f.Name, f.FileChecksumFuncName, funcName)
		}
		if want := sum(readFile(t, fs, "/db/"+f.Name)); !bytes.Equal(f.FileChecksum, want) {
			t.Errorf("table %s: recorded checksum %x, the file's is %x", f.Name, f.FileChecksum, want)
		}
		got[f.Name] = f.FileChecksum
	}
	if !levels[0] || len(levels) < 2 {
		t.Fatalf("tables at levels %v: want flushed (L0) and compacted ones", levels)
	}
	blobs := db.GetLiveBlobFilesMetaData()
	for _, b := range blobs {
		if b.FileChecksumFuncName != funcName {
			t.Errorf("blob file %s: checksum function %q, want %q", b.Name, b.FileChecksumFuncName, funcName)
		}
		if want := sum(readFile(t, fs, "/db/"+b.Name)); !bytes.Equal(b.FileChecksum, want) {
			t.Errorf("blob file %s: recorded checksum %x, the file's is %x", b.Name, b.FileChecksum, want)
		}
		got[b.Name] = b.FileChecksum
	}
	return got
}

// TestFileChecksumsRecordedForEveryFile checks that every table and blob
// file that flushes and compactions write gets, by default, a recorded
// CRC-32C of its whole content (computed here independently), that
// VerifyFileChecksums and Check accept them, and that a reopen keeps them.
func TestFileChecksumsRecordedForEveryFile(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	setBlobTestOptions(o)
	o.DisableAutoCompactions = true // flushed tables stay in L0
	db, err := Open("/db", o)
	must(t, err)
	defer func() { db.Close() }()
	writeChecksumTestDB(t, db)
	before := checkRecordedChecksums(t, db, fs, FileChecksumCrc32cName, independentCRC32C)
	if len(db.GetLiveBlobFilesMetaData()) == 0 {
		t.Fatal("no blob files: the test covers none")
	}
	must(t, db.VerifyFileChecksums())
	must(t, db.Close())

	rep, err := Check("/db", &Options{FS: fs})
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Check:\n%s", rep)
	}
	matched := 0
	for _, f := range rep.Files {
		if f.Kind == "table" || f.Kind == "blob file" {
			if f.Status == CheckOK && strings.Contains(f.Detail, "file checksum "+FileChecksumCrc32cName+" ") && strings.Contains(f.Detail, "matches") {
				matched++
			} else if f.Status == CheckOK {
				t.Errorf("Check says of %s: %s", f.Name, f.Detail)
			}
		}
	}
	if matched != len(before) {
		t.Errorf("Check matched the checksums of %d files, want %d\n%s", matched, len(before), rep)
	}

	db, err = Open("/db", o)
	must(t, err)
	after := checkRecordedChecksums(t, db, fs, FileChecksumCrc32cName, independentCRC32C)
	if len(after) != len(before) {
		t.Fatalf("reopened with %d files, had %d", len(after), len(before))
	}
	for name, sum := range before {
		if !bytes.Equal(after[name], sum) {
			t.Errorf("%s: checksum %x before the reopen, %x after", name, sum, after[name])
		}
	}
	must(t, db.VerifyFileChecksums())
}

// testFileChecksumFactory is a custom factory: the xxhash64 of the file,
// salted, under the name "test-xxhash64". It counts its generators.
type testFileChecksumFactory struct {
	made atomic.Int64
	salt atomic.Uint64
}

func (f *testFileChecksumFactory) Name() string { return "TestFileChecksumGenFactory" }
func (f *testFileChecksumFactory) CreateFileChecksumGenerator(ctx FileChecksumGenContext) FileChecksumGenerator {
	if ctx.RequestedChecksumFuncName != "" && ctx.RequestedChecksumFuncName != "test-xxhash64" {
		return nil
	}
	f.made.Add(1)
	g := &testXXHashGenerator{d: xxhash.New()}
	_, _ = g.d.Write(binary.LittleEndian.AppendUint64(nil, f.salt.Load()))
	return g
}

type testXXHashGenerator struct {
	d   *xxhash.Digest
	sum []byte
}

func (g *testXXHashGenerator) Update(p []byte)     { _, _ = g.d.Write(p) }
func (g *testXXHashGenerator) Finalize()           { g.sum = g.d.Sum(nil) }
func (g *testXXHashGenerator) GetChecksum() []byte { return g.sum }
func (g *testXXHashGenerator) Name() string        { return "test-xxhash64" }

// testXXHash is testXXHashGenerator's checksum of data with salt 0.
func testXXHash(data []byte) []byte {
	d := xxhash.New()
	_, _ = d.Write(make([]byte, 8))
	_, _ = d.Write(data)
	return d.Sum(nil)
}

// TestFileChecksumCustomFactory checks that a custom factory's generator
// name and values are recorded and verified, that the OPTIONS file names
// the factory, that a DB opened without the factory cannot verify them
// (an error naming the file, and "unchecked" in Check, not damage), and
// that a factory whose values change makes VerifyFileChecksums and Check
// report mismatches naming the files.
func TestFileChecksumCustomFactory(t *testing.T) {
	fs := vfs.NewMem()
	fac := &testFileChecksumFactory{}
	o := testOptions(fs)
	setBlobTestOptions(o)
	o.DisableAutoCompactions = true // flushed tables stay in L0
	o.FileChecksumGenFactory = fac
	db, err := Open("/db", o)
	must(t, err)
	writeChecksumTestDB(t, db)
	sums := checkRecordedChecksums(t, db, fs, "test-xxhash64", testXXHash)
	if fac.made.Load() < int64(len(sums)) {
		t.Fatalf("the factory made %d generators for %d files", fac.made.Load(), len(sums))
	}
	must(t, db.VerifyFileChecksums())
	if _, data := newestOptionsFile(t, fs, "/db"); !bytes.Contains(data, []byte("file_checksum_gen_factory=TestFileChecksumGenFactory\n")) {
		t.Errorf("the OPTIONS file does not name the factory:\n%s", data)
	}
	// The same function with other values: every file mismatches.
	fac.salt.Store(1)
	err = db.VerifyFileChecksums()
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("VerifyFileChecksums with changed values: %v, want corruption", err)
	}
	for name := range sums {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the mismatch error does not name %s", name)
		}
	}
	rep, err := Check("/db", &Options{FS: fs, FileChecksumGenFactory: fac})
	must(t, err)
	for _, f := range rep.Files {
		if _, ok := sums[f.Name]; ok && (f.Status != CheckDamaged || !strings.Contains(fmt.Sprint(f.Err), "file checksum mismatch")) {
			t.Errorf("Check with changed values says of %s: %s %v", f.Name, f.Status, f.Err)
		}
	}
	fac.salt.Store(0)
	must(t, db.Close())

	// Without the factory the checksums cannot be verified: not damage.
	plain := testOptions(fs)
	setBlobTestOptions(plain)
	plain.DisableAutoCompactions = true
	db, err = Open("/db", plain)
	must(t, err)
	err = db.VerifyFileChecksums()
	if !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrCorruption) {
		t.Fatalf("VerifyFileChecksums without the factory: %v, want invalid argument", err)
	}
	if !strings.Contains(err.Error(), "test-xxhash64") {
		t.Errorf("the error does not name the function: %v", err)
	}
	must(t, db.Close())
	rep, err = Check("/db", &Options{FS: fs})
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Check without the factory finds damage:\n%s", rep)
	}
	for _, f := range rep.Files {
		if _, ok := sums[f.Name]; ok && !strings.Contains(f.Detail, "file checksum by test-xxhash64 unchecked") {
			t.Errorf("Check without the factory says of %s: %s", f.Name, f.Detail)
		}
	}

	// Reopened with the factory, files of both functions verify once the
	// default writes new ones beside them.
	db, err = Open("/db", plain)
	must(t, err)
	must(t, db.Put([]byte("new"), []byte(strings.Repeat("n", 100)), nil))
	must(t, db.Flush())
	must(t, db.Close())
	db, err = Open("/db", o)
	must(t, err)
	defer db.Close()
	names := map[string]bool{}
	for _, f := range db.GetLiveFilesMetaData() {
		names[f.FileChecksumFuncName] = true
	}
	if !names[FileChecksumCrc32cName] || !names["test-xxhash64"] {
		t.Fatalf("checksum functions of the live tables: %v", names)
	}
	must(t, db.VerifyFileChecksums())
}

// TestFileChecksumByteFlip flips one byte of each live table and blob file
// in turn, in a copy of the database: VerifyFileChecksums and Check both
// report a mismatch naming the file.
func TestFileChecksumByteFlip(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	setBlobTestOptions(o)
	o.DisableAutoCompactions = true // flushed tables stay in L0
	o.ParanoidChecks = false        // Open reads no file whole; the flip stays for the checks
	db, err := Open("/db", o)
	must(t, err)
	writeChecksumTestDB(t, db)
	var names []string
	for _, f := range db.GetLiveFilesMetaData() {
		names = append(names, f.Name)
	}
	blobs := db.GetLiveBlobFilesMetaData()
	for _, b := range blobs {
		names = append(names, b.Name)
	}
	must(t, db.Close())
	if len(blobs) == 0 {
		t.Fatal("no blob files")
	}
	for i, name := range names {
		orig := readFile(t, fs, "/db/"+name)
		clone := fs.CrashClone()
		damaged := bytes.Clone(orig)
		off := (i * 7919) % len(damaged)
		damaged[off] ^= 0x10
		writeFile(t, clone, "/db/"+name, damaged)

		co := *o
		co.FS = clone
		d, err := Open("/db", &co)
		must(t, err)
		err = d.VerifyFileChecksums()
		if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "file checksum mismatch") {
			t.Errorf("flip of %s at %d: VerifyFileChecksums: %v", name, off, err)
		}
		must(t, d.Close())
		rep, err := Check("/db", &Options{FS: clone})
		must(t, err)
		found := false
		for _, f := range rep.Files {
			if f.Name == name {
				found = f.Status == CheckDamaged && errors.Is(f.Err, ErrCorruption) && strings.Contains(f.Err.Error(), "file checksum mismatch") &&
					strings.Contains(f.Err.Error(), name)
			} else if f.Status == CheckDamaged {
				t.Errorf("flip of %s: Check calls %s damaged: %v", name, f.Name, f.Err)
			}
		}
		if !found {
			t.Errorf("flip of %s at %d: Check does not report its checksum mismatch:\n%s", name, off, rep)
		}
	}
}

// TestFileChecksumFaults checks IO faults around checksums: a table and a
// blob file whose writes were cut short (torn writes) fail their flush and
// leave nothing recorded, and after Resume the rewritten files carry the
// right checksums; a read fault during VerifyFileChecksums is reported as
// the IO error it is, naming the file, not as corruption.
func TestFileChecksumFaults(t *testing.T) {
	for _, ext := range []string{".sst", ".blob"} {
		t.Run(ext, func(t *testing.T) {
			ffs, _, db := openFaultDB(t, vfs.NewMem(), func(o *Options) {
				setBlobTestOptions(o)
				o.MinBlobSize = 0 // putRange's values are short
				o.DisableAutoCompactions = true
			})
			defer db.Close()
			putRange(t, db, 0, 300, nil)
			ffs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, PathContains: ext, Nth: 1, ShortWrite: true})
			if err := db.Flush(); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("Flush with a torn write: %v", err)
			}
			if ffs.Injected() == 0 {
				t.Fatal("no fault injected")
			}
			ffs.ClearRules()
			must(t, db.Resume())
			must(t, db.Flush())
			expectRange(t, db, 0, 300)
			checkRecordedChecksums0(t, db, ffs)
			must(t, db.VerifyFileChecksums())

			ffs.AddRule(errorfs.Rule{Op: errorfs.OpRead, PathContains: ext})
			err := db.VerifyFileChecksums()
			ffs.ClearRules()
			if !errors.Is(err, errorfs.ErrInjected) || errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), ext) {
				t.Fatalf("VerifyFileChecksums under read faults: %v", err)
			}
			must(t, db.VerifyFileChecksums())
		})
	}
}

// checkRecordedChecksums0 checks that every live table and blob file has
// its CRC-32C recorded, whatever the levels.
func checkRecordedChecksums0(t *testing.T, db *DB, fs vfs.FS) {
	t.Helper()
	n := 0
	for _, f := range db.GetLiveFilesMetaData() {
		n++
		if want := independentCRC32C(readFile(t, fs, "/db/"+f.Name)); !bytes.Equal(f.FileChecksum, want) {
			t.Errorf("table %s: recorded checksum %x, the file's is %x", f.Name, f.FileChecksum, want)
		}
	}
	for _, b := range db.GetLiveBlobFilesMetaData() {
		n++
		if want := independentCRC32C(readFile(t, fs, "/db/"+b.Name)); !bytes.Equal(b.FileChecksum, want) {
			t.Errorf("blob file %s: recorded checksum %x, the file's is %x", b.Name, b.FileChecksum, want)
		}
	}
	if n == 0 {
		t.Fatal("no live files")
	}
}

// TestComputeFileChecksum checks the helper ingestion and backups are to
// use: the checksum of a file read through vfs, by the built-in or a
// custom factory, and its errors.
func TestComputeFileChecksum(t *testing.T) {
	fs := vfs.NewMem()
	data := make([]byte, 3*fileChecksumReadChunk+123) // several reads, the last short
	for i := range data {
		data[i] = byte(i * 31)
	}
	writeFile(t, fs, "/f", data)
	sum, name, err := computeFileChecksum(fs, "/f", nil, "")
	must(t, err)
	if name != FileChecksumCrc32cName || !bytes.Equal(sum, independentCRC32C(data)) {
		t.Errorf("built-in: %x by %q, want %x", sum, name, independentCRC32C(data))
	}
	// Asked for the built-in by name, any factory gives it.
	sum, _, err = computeFileChecksum(fs, "/f", &testFileChecksumFactory{}, FileChecksumCrc32cName)
	must(t, err)
	if !bytes.Equal(sum, independentCRC32C(data)) {
		t.Errorf("built-in by name: %x", sum)
	}
	sum, name, err = computeFileChecksum(fs, "/f", &testFileChecksumFactory{}, "")
	must(t, err)
	if name != "test-xxhash64" || !bytes.Equal(sum, testXXHash(data)) {
		t.Errorf("custom: %x by %q, want %x", sum, name, testXXHash(data))
	}
	for _, c := range []struct {
		factory  FileChecksumGenFactory
		funcName string
	}{{NoFileChecksums, ""}, {nil, "test-xxhash64"}, {&testFileChecksumFactory{}, "other"}} {
		if _, _, err := computeFileChecksum(fs, "/f", c.factory, c.funcName); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "/f") {
			t.Errorf("factory %v asked for %q: %v", c.factory, c.funcName, err)
		}
	}
	if _, _, err := computeFileChecksum(fs, "/missing", nil, ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// copyTestdataDB copies the database directory src of testdata into /db
// of a new MemFS.
func copyTestdataDB(t *testing.T, src string) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	must(t, fs.MkdirAll("/db", 0o755))
	osFS := vfs.Default
	names, err := osFS.List(src)
	must(t, err)
	for _, name := range names {
		writeFile(t, fs, "/db/"+name, readFile(t, osFS, osFS.PathJoin(src, name)))
	}
	return fs
}

// TestFileChecksumOldDatabase opens a database written before checksums
// were recorded (testdata/db-before-compaction-stats): its tables have
// none (RocksDB's "Unknown"), VerifyFileChecksums skips them, Check calls
// them unchecked and not damaged, and the tables a compaction then writes
// have checksums, kept by a reopen.
func TestFileChecksumOldDatabase(t *testing.T) {
	fs := copyTestdataDB(t, "testdata/db-before-compaction-stats")
	rep, err := Check("/db", &Options{FS: fs})
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Check:\n%s", rep)
	}
	tables := 0
	for _, f := range rep.Files {
		if f.Kind == "table" && f.Status == CheckOK {
			tables++
			if !strings.Contains(f.Detail, "no file checksum recorded (unchecked)") {
				t.Errorf("Check says of %s: %s", f.Name, f.Detail)
			}
		}
	}
	if tables == 0 {
		t.Fatalf("no live table checked:\n%s", rep)
	}
	o := &Options{FS: fs}
	db, err := Open("/db", o)
	must(t, err)
	for _, f := range db.GetLiveFilesMetaData() {
		if f.FileChecksumFuncName != UnknownFileChecksumFuncName || len(f.FileChecksum) != 0 {
			t.Errorf("old table %s: checksum %x by %q", f.Name, f.FileChecksum, f.FileChecksumFuncName)
		}
	}
	must(t, db.VerifyFileChecksums())
	must(t, db.CompactRange(nil, nil))
	for _, f := range db.GetLiveFilesMetaData() {
		if f.FileChecksumFuncName != FileChecksumCrc32cName || !bytes.Equal(f.FileChecksum, independentCRC32C(readFile(t, fs, "/db/"+f.Name))) {
			t.Errorf("compacted table %s: checksum %x by %q", f.Name, f.FileChecksum, f.FileChecksumFuncName)
		}
	}
	must(t, db.Close())
	db, err = Open("/db", o)
	must(t, err)
	defer db.Close()
	n := 0
	for _, f := range db.GetLiveFilesMetaData() {
		n++
		if f.FileChecksumFuncName != FileChecksumCrc32cName {
			t.Errorf("reopened: table %s has checksum function %q", f.Name, f.FileChecksumFuncName)
		}
	}
	if n == 0 {
		t.Fatal("no tables after the compaction")
	}
	must(t, db.VerifyFileChecksums())
}

// rewriteManifestAsBefore replaces the live MANIFEST of the closed DB in
// /db with one recording what a shale from before whole-file checksums
// recorded: tables without checksums, and blob files with the blob
// format's checksum (the footer's, under "crc32c") as their checksum.
func rewriteManifestAsBefore(t *testing.T, fs vfs.FS) {
	t.Helper()
	num, err := manifest.ParseCurrent(readFile(t, fs, "/db/CURRENT"), "CURRENT")
	must(t, err)
	res, err := manifest.Replay(bytes.NewReader(readFile(t, fs, "/db/"+base.MakeFilename(base.FileTypeManifest, num))),
		"MANIFEST", DefaultComparer, 7)
	must(t, err)
	e := &manifest.VersionEdit{
		ManifestFormat: manifest.ManifestFormatV1, ComparerName: DefaultComparer.Name,
		HasLogNumber: true, LogNumber: res.LogNum, HasNextFileNumber: true, NextFileNumber: res.NextFileNum + 1,
		HasLastSeq: true, LastSeq: res.LastSeq,
	}
	for level, files := range res.Version.Levels {
		for _, f := range files {
			f.FileChecksum, f.FileChecksumFuncName = nil, ""
			e.NewFiles = append(e.NewFiles, manifest.NewFileEntry{Level: level, Meta: f})
		}
	}
	for _, b := range res.Version.BlobFiles {
		name := "/db/" + base.MakeFilename(base.FileTypeBlob, b.FileNum)
		f, err := fs.Open(name)
		must(t, err)
		r, err := blob.NewReader(f, blob.ReaderOptions{FileNum: b.FileNum, FileName: name})
		must(t, err)
		a := *b
		a.GarbageCount, a.GarbageBytes, a.OldestGarbageTime = 0, 0, 0
		a.ChecksumMethod, a.ChecksumValue = "crc32c", binary.BigEndian.AppendUint32(nil, uint32(r.Properties().FileChecksum))
		must(t, r.Close())
		e.NewBlobFiles = append(e.NewBlobFiles, &a)
		if b.GarbageCount != 0 || b.GarbageBytes != 0 {
			e.BlobGarbage = append(e.BlobGarbage, manifest.BlobGarbage{FileNum: b.FileNum, Count: b.GarbageCount, Bytes: b.GarbageBytes})
		}
	}
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	_, err = w.WriteRecord(e.Encode(nil))
	must(t, err)
	must(t, w.Flush())
	must(t, fs.Remove("/db/"+base.MakeFilename(base.FileTypeManifest, num)))
	newName := base.MakeFilename(base.FileTypeManifest, res.NextFileNum)
	writeFile(t, fs, "/db/"+newName, buf.Bytes())
	writeFile(t, fs, "/db/CURRENT", []byte(newName+"\n"))
}

// TestFileChecksumBlobFilesRecordedBefore opens a database whose blob
// files were recorded with the blob format's checksum (before whole-file
// checksums): their LiveBlobFileMetaData shows it, VerifyFileChecksums and
// Check check it against the footer and the bytes before it, and a flipped
// byte is found by both; the tables, recorded without checksums, are
// unchecked.
func TestFileChecksumBlobFilesRecordedBefore(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	setBlobTestOptions(o)
	o.DisableAutoCompactions = true
	o.ParanoidChecks = false
	db, err := Open("/db", o)
	must(t, err)
	writeChecksumTestDB(t, db)
	must(t, db.Close())
	rewriteManifestAsBefore(t, fs)

	db, err = Open("/db", o)
	must(t, err)
	blobs := db.GetLiveBlobFilesMetaData()
	if len(blobs) == 0 {
		t.Fatal("no blob files")
	}
	for _, b := range blobs {
		if b.FileChecksumFuncName != "crc32c" || len(b.FileChecksum) != 4 {
			t.Fatalf("blob file %s: checksum %x by %q", b.Name, b.FileChecksum, b.FileChecksumFuncName)
		}
	}
	for _, f := range db.GetLiveFilesMetaData() {
		if f.FileChecksumFuncName != UnknownFileChecksumFuncName {
			t.Fatalf("table %s: checksum function %q", f.Name, f.FileChecksumFuncName)
		}
	}
	must(t, db.VerifyFileChecksums())
	must(t, db.Close())
	rep, err := Check("/db", &Options{FS: fs})
	must(t, err)
	if !rep.OK() {
		t.Fatalf("Check:\n%s", rep)
	}
	for _, f := range rep.Files {
		if f.Kind == "blob file" && !strings.Contains(f.Detail, "file checksum crc32c (the blob format's, before the footer) matches") ||
			f.Kind == "table" && f.Status == CheckOK && !strings.Contains(f.Detail, "no file checksum recorded (unchecked)") {
			t.Errorf("Check says of %s: %s", f.Name, f.Detail)
		}
	}

	// A flip before the footer of the first blob file.
	name := "/db/" + blobs[0].Name
	data := readFile(t, fs, name)
	data[len(data)/2] ^= 1
	writeFile(t, fs, name, data)
	db, err = Open("/db", o)
	must(t, err)
	defer db.Close()
	if err := db.VerifyFileChecksums(); !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), blobs[0].Name) {
		t.Fatalf("VerifyFileChecksums after a flip in %s: %v", blobs[0].Name, err)
	}
	rep, err = Check("/db", &Options{FS: fs})
	must(t, err)
	if rep.OK() {
		t.Fatalf("Check after a flip in %s:\n%s", blobs[0].Name, rep)
	}
}

// TestNoFileChecksums checks the sentinel that turns checksums off: no
// file gets one, the OPTIONS file says nullptr and parses back to it, and
// the tools call the files unchecked.
func TestNoFileChecksums(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	setBlobTestOptions(o)
	o.DisableAutoCompactions = true // flushed tables stay in L0
	o.FileChecksumGenFactory = NoFileChecksums
	db, err := Open("/db", o)
	must(t, err)
	writeChecksumTestDB(t, db)
	for _, f := range db.GetLiveFilesMetaData() {
		if f.FileChecksumFuncName != UnknownFileChecksumFuncName || f.FileChecksum != nil {
			t.Errorf("table %s: checksum %x by %q", f.Name, f.FileChecksum, f.FileChecksumFuncName)
		}
	}
	for _, b := range db.GetLiveBlobFilesMetaData() {
		if b.FileChecksumFuncName != UnknownFileChecksumFuncName || b.FileChecksum != nil {
			t.Errorf("blob file %s: checksum %x by %q", b.Name, b.FileChecksum, b.FileChecksumFuncName)
		}
	}
	must(t, db.VerifyFileChecksums())
	_, data := newestOptionsFile(t, fs, "/db")
	if !bytes.Contains(data, []byte("file_checksum_gen_factory=nullptr\n")) {
		t.Errorf("OPTIONS:\n%s", data)
	}
	parsed, err := ParseOptionsFile(data)
	must(t, err)
	if parsed.FileChecksumGenFactory != NoFileChecksums {
		t.Errorf("parsed factory %v, want NoFileChecksums", parsed.FileChecksumGenFactory)
	}
	must(t, db.Close())
	rep, err := Check("/db", &Options{FS: fs})
	must(t, err)
	for _, f := range rep.Files {
		if (f.Kind == "table" || f.Kind == "blob file") && f.Status == CheckOK && !strings.Contains(f.Detail, "no file checksum recorded (unchecked)") {
			t.Errorf("Check says of %s: %s", f.Name, f.Detail)
		}
	}
}

// TestFileChecksumOptions checks the option's OPTIONS form for the default
// and its validation: a generator may not take a reserved name.
func TestFileChecksumOptions(t *testing.T) {
	o := (&Options{}).EnsureDefaults()
	if got := optionsFileMap(o)["file_checksum_gen_factory"]; got != "FileChecksumGenCrc32cFactory" {
		t.Errorf("default factory written as %q", got)
	}
	for _, name := range []string{"crc32c", "xxhash64", "Unknown", ""} {
		o := (&Options{FS: vfs.NewMem(), FileChecksumGenFactory: namedGenFactory(name)}).EnsureDefaults()
		if err := o.Validate(); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "FileChecksumGenFactory") {
			t.Errorf("generator named %q: Validate = %v", name, err)
		}
	}
	ok := (&Options{FS: vfs.NewMem(), FileChecksumGenFactory: namedGenFactory("mine")}).EnsureDefaults()
	must(t, ok.Validate())

	// Written and parsed back: the default's name gives nil, nullptr
	// NoFileChecksums, and the OPTIONS file of a custom factory names it.
	for _, c := range []struct {
		set  FileChecksumGenFactory
		name string
		want FileChecksumGenFactory
	}{
		{nil, "FileChecksumGenCrc32cFactory", nil},
		{NewFileChecksumGenCrc32cFactory(), "FileChecksumGenCrc32cFactory", nil},
		{NoFileChecksums, "nullptr", NoFileChecksums},
		{namedGenFactory("mine"), "factory-mine", nil},
	} {
		o := (&Options{FS: vfs.NewMem(), FileChecksumGenFactory: c.set}).EnsureDefaults()
		if got := optionsFileMap(o)["file_checksum_gen_factory"]; got != c.name {
			t.Errorf("factory %v written as %q, want %q", c.set, got, c.name)
		}
		parsed, err := ParseOptionsFile([]byte("file_checksum_gen_factory=" + c.name + "\n"))
		must(t, err)
		if parsed.FileChecksumGenFactory != c.want {
			t.Errorf("%q parsed as %v, want %v", c.name, parsed.FileChecksumGenFactory, c.want)
		}
	}

	// It cannot change while open.
	db, err := Open("/db", testOptions(vfs.NewMem()))
	must(t, err)
	defer db.Close()
	if err := db.SetOptions(map[string]string{"file_checksum_gen_factory": "nullptr"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("SetOptions(file_checksum_gen_factory): %v", err)
	}
	if got := db.GetOptions().FileChecksumGenFactory; got != nil {
		t.Errorf("the factory changed to %v", got)
	}
}

type namedGenFactory string

func (n namedGenFactory) Name() string { return "factory-" + string(n) }
func (n namedGenFactory) CreateFileChecksumGenerator(FileChecksumGenContext) FileChecksumGenerator {
	return namedGen(n)
}

type namedGen string

func (namedGen) Update([]byte)       {}
func (namedGen) Finalize()           {}
func (namedGen) GetChecksum() []byte { return []byte{1} }
func (n namedGen) Name() string      { return string(n) }

// BenchmarkFileChecksumCrc32c measures the built-in generator over 64 KiB
// writes, the cost a table or blob file write pays per byte.
func BenchmarkFileChecksumCrc32c(b *testing.B) {
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	g := NewFileChecksumGenCrc32cFactory().CreateFileChecksumGenerator(FileChecksumGenContext{})
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		g.Update(buf)
	}
}

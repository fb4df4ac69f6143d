package shale

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
)

// TestCheckReportsDeleteStats checks that Check describes each live table
// with its tombstones, tombstone-dense blocks, mark and user properties, and
// reports as damage a MANIFEST whose recorded counts disagree with the
// table's properties.
func TestCheckReportsDeleteStats(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.DisableAutoCompactions = true
	opts.WriteBufferSize = 1 << 20 // one table for the deletes
	opts.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{
		NewCompactOnDeletionCollectorFactory(100, 50, 0), &recordingFactory{log: &collectorLog{}}}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		db.Put([]byte(fmt.Sprintf("k%04d", i)), bytes.Repeat([]byte("v"), 20), nil)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		db.Delete([]byte(fmt.Sprintf("k%04d", i)), nil)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	marked := db.GetLiveFilesMetaData()[0] // L0 is newest first
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil || !rep.OK() {
		t.Fatalf("Check: %v\n%s", err, rep)
	}
	f := fileOf(t, rep, marked.Name)
	for _, want := range []string{"L0", "400 entries", "400 tombstones", "data blocks tombstone-dense", "marked for compaction", "5 user properties"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("detail of %s is %q, want %q in it", marked.Name, f.Detail, want)
		}
	}

	// Record a wrong count of tombstone-dense blocks for the table, as a
	// MANIFEST edit of this version would: Check reports the table as
	// damaged, naming the count.
	vs, err := manifest.Load(manifest.Options{FS: fs, Dir: "/db", NumLevels: opts.NumLevels})
	if err != nil {
		t.Fatal(err)
	}
	v := vs.Current()
	var orig *manifest.FileMetadata
	for _, m := range v.Levels[0] {
		if base.MakeFilename(base.FileTypeTable, m.FileNum) == marked.Name {
			orig = m
		}
	}
	v.Unref()
	if orig == nil {
		t.Fatalf("%s not in L0", marked.Name)
	}
	bad := &manifest.FileMetadata{
		FileNum: orig.FileNum, Size: orig.Size, Smallest: orig.Smallest, Largest: orig.Largest,
		SmallestSeq: orig.SmallestSeq, LargestSeq: orig.LargestSeq,
		NumEntries: orig.NumEntries, NumDeletions: orig.NumDeletions, NumRangeDeletions: orig.NumRangeDeletions,
		RawKeySize: orig.RawKeySize, RawValueSize: orig.RawValueSize, NumDataBlocks: orig.NumDataBlocks,
		NumTombstoneDenseBlocks: orig.NumTombstoneDenseBlocks + 1, MarkedForCompaction: true,
	}
	edit := &manifest.VersionEdit{
		DeletedFiles: map[manifest.DeletedFileEntry]bool{{Level: 0, FileNum: orig.FileNum}: true},
		NewFiles:     []manifest.NewFileEntry{{Level: 0, Meta: bad}},
	}
	if err := vs.LogAndApply(edit); err != nil {
		t.Fatal(err)
	}
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err = Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	f = fileOf(t, rep, marked.Name)
	if rep.OK() || f.Status != CheckDamaged || !errors.Is(f.Err, ErrCorruption) || !strings.Contains(f.Err.Error(), "tombstone-dense data blocks") {
		t.Fatalf("Check after a wrong count: %s: %v %v\n%s", marked.Name, f.Status, f.Err, rep)
	}
}

// TestCheckReportsBlobFiles checks that Check describes the live blob files
// of the MANIFEST (count, bytes, garbage) and the blob files each table
// references, and reports a live blob file that is missing.
func TestCheckReportsBlobFiles(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	opts.DisableAutoCompactions = true
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		db.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("v"), nil)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	table := db.GetLiveFilesMetaData()[0]
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Record the table again as pointing into a blob file, as a flush
	// writing blob files will.
	vs, err := manifest.Load(manifest.Options{FS: fs, Dir: "/db", NumLevels: opts.NumLevels})
	if err != nil {
		t.Fatal(err)
	}
	v := vs.Current()
	orig := v.Levels[0][0]
	v.Unref()
	blobNum := vs.NewFileNum()
	withRefs := &manifest.FileMetadata{
		FileNum: orig.FileNum, Size: orig.Size, Smallest: orig.Smallest, Largest: orig.Largest,
		SmallestSeq: orig.SmallestSeq, LargestSeq: orig.LargestSeq,
		NumEntries: orig.NumEntries, NumDeletions: orig.NumDeletions, NumRangeDeletions: orig.NumRangeDeletions,
		RawKeySize: orig.RawKeySize, RawValueSize: orig.RawValueSize, NumDataBlocks: orig.NumDataBlocks,
		BlobFiles: []base.FileNum{blobNum},
	}
	edit := &manifest.VersionEdit{
		DeletedFiles: map[manifest.DeletedFileEntry]bool{{Level: 0, FileNum: orig.FileNum}: true},
		NewFiles:     []manifest.NewFileEntry{{Level: 0, Meta: withRefs}},
		NewBlobFiles: []*manifest.BlobFileMetadata{{FileNum: blobNum, TotalCount: 10, TotalBytes: 1000, Size: 1100}},
		BlobGarbage:  []manifest.BlobGarbage{{FileNum: blobNum, Count: 1, Bytes: 100}},
	}
	if err := vs.LogAndApply(edit); err != nil {
		t.Fatal(err)
	}
	manifestName := base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum())
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, rep)
	}
	// The blob file was only recorded, never written: Check reports it
	// missing (TestBlobFilesCorruptionDetected checks real ones).
	if f := fileOf(t, rep, base.MakeFilename(base.FileTypeBlob, blobNum)); f.Status != CheckDamaged || !errors.Is(f.Err, ErrCorruption) ||
		!strings.Contains(f.Err.Error(), "live blob file is missing") {
		t.Errorf("blob file recorded but not written: %s %v, want damaged: missing", f.Status, f.Err)
	}
	want := fmt.Sprintf("1 live blob files of 1000 bytes, 100 of them garbage (number:blobs/bytes) %s:10/1000(garbage 1/100)", blobNum)
	if f := fileOf(t, rep, manifestName); !strings.Contains(f.Detail, want) {
		t.Errorf("MANIFEST detail %q, want %q in it", f.Detail, want)
	}
	if f := fileOf(t, rep, table.Name); !strings.Contains(f.Detail, "references blob files "+blobNum.String()) {
		t.Errorf("table detail %q lacks its blob reference", f.Detail)
	}
}

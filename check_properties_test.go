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

package manifest

import (
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// TestCrashAfterEachEdit simulates a power loss after every LogAndApply
// (including rotations): what survives must load, and must be exactly the
// state LogAndApply had reported durable, blob files and garbage included.
func TestCrashAfterEachEdit(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := fs.OpenDir("/"); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	o := Options{FS: fs, Dir: "/db", MaxManifestFileSize: 300}
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	var prevBlob base.FileNum
	for i := range 30 {
		k := fmt.Sprintf("k%03d", i)
		// Each table points into a blob file of its own, and each edit
		// records garbage in the previous blob file, so that rotations
		// snapshot blob files with garbage.
		blob := vs.NewFileNum()
		m := tableMeta(vs.NewFileNum(), k, k, base.SeqNum(i+1))
		m.BlobFiles = []base.FileNum{blob}
		e := &VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: m}},
			NewBlobFiles: []*BlobFileMetadata{{FileNum: blob, TotalCount: 100, TotalBytes: 10000, Size: 10100}}}
		if prevBlob != 0 {
			e.BlobGarbage = []BlobGarbage{{FileNum: prevBlob, Count: 1, Bytes: 100}}
		}
		prevBlob = blob
		vs.SetLastSeq(base.SeqNum(i + 1))
		if err := vs.LogAndApply(e); err != nil {
			t.Fatal(err)
		}
		want := currentString(vs)
		crashed := o
		crashed.FS = fs.CrashClone()
		vs2, err := Load(crashed)
		if err != nil {
			t.Fatalf("after edit %d: Load of crash clone: %v", i, err)
		}
		if got := currentString(vs2); got != want || vs2.LastSeq() != base.SeqNum(i+1) {
			t.Fatalf("after edit %d: crash clone has\n%s(seq %d)\nwant\n%s", i, got, vs2.LastSeq(), want)
		}
		vs2.Close()
	}
	if vs.ManifestFileNum() == 1 {
		t.Fatal("no rotation happened")
	}
}

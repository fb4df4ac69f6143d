package manifest

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/fuzzseed"
	"github.com/shaledb/shale/vfs"
)

const fuzzManifest = "MANIFEST-000005"

// loadFuzzDir puts manifest into a fresh MemFS as MANIFEST-000005 with
// CURRENT naming it (or holding current, when that is not empty), and
// Loads it.
func loadFuzzDir(t *testing.T, current, manifest []byte) (vfs.FS, Options, *VersionSet, error) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	if len(current) == 0 {
		current = []byte(fuzzManifest + "\n")
	}
	for name, data := range map[string][]byte{"CURRENT": current, fuzzManifest: manifest} {
		f, err := fs.Create("/db/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	o := Options{FS: fs, Dir: "/db"}
	vs, err := Load(o)
	return fs, o, vs, err
}

// FuzzManifestLoad loads arbitrary MANIFEST (and CURRENT) bytes. Load
// returns an error matching base.ErrCorruption that names CURRENT or a
// MANIFEST (base.ErrInvalidArgument for a comparer mismatch), or a version
// that passes CheckOrdering and that the MANIFEST Load rewrote loads back
// to: the same files with the same metadata, and the same counters.
func FuzzManifestLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, manifest, current []byte) {
		fs, o, vs, err := loadFuzzDir(t, current, manifest)
		if err != nil {
			var ce *base.CorruptionError
			switch {
			case errors.As(err, &ce):
				// CURRENT, the MANIFEST, or the MANIFEST that a damaged
				// CURRENT names instead (which may not exist).
				if typ, _, ok := base.ParseFilename(ce.File); ce.File != "CURRENT" && (!ok || typ != base.FileTypeManifest) {
					t.Fatalf("corruption error names %q: %v", ce.File, err)
				}
			case errors.Is(err, base.ErrInvalidArgument):
			default:
				t.Fatalf("Load: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "shale: ") {
				t.Fatalf("error without the shale prefix: %v", err)
			}
			return
		}
		defer vs.Close()
		v := vs.Current()
		defer v.Unref()
		if err := v.CheckOrdering(base.DefaultComparer.Compare); err != nil {
			t.Fatalf("loaded version: %v", err)
		}
		vs.Close()
		vs2, err := Load(Options{FS: fs, Dir: o.Dir})
		if err != nil {
			t.Fatalf("reloading the MANIFEST Load wrote: %v", err)
		}
		defer vs2.Close()
		v2 := vs2.Current()
		defer v2.Unref()
		if len(v2.Levels) != len(v.Levels) {
			t.Fatalf("reload has %d levels, want %d", len(v2.Levels), len(v.Levels))
		}
		for level := range v.Levels {
			a, b := v.Levels[level], v2.Levels[level]
			if len(a) != len(b) {
				t.Fatalf("L%d: reload has %d files, want %d", level, len(b), len(a))
			}
			for j := range a {
				if !metaEqual(a[j], b[j]) {
					t.Fatalf("L%d file %d: reload has %+v, want %+v", level, j, b[j], a[j])
				}
			}
		}
		if !reflect.DeepEqual(v.BlobFiles, v2.BlobFiles) {
			t.Fatalf("reload has blob files %v, want %v", v2.BlobFiles, v.BlobFiles)
		}
		if vs2.LastSeq() != vs.LastSeq() || vs2.LogNumber() != vs.LogNumber() || vs2.NewFileNum() <= vs.ManifestFileNum() {
			t.Fatalf("reload: last seq %d, log %d; want %d, %d", vs2.LastSeq(), vs2.LogNumber(), vs.LastSeq(), vs.LogNumber())
		}
	})
}

// manifestSeed builds a small real MANIFEST: a snapshot and edits that add,
// move and delete files, add blob files referenced by a table, record
// garbage and delete a blob file.
func manifestSeed(t *testing.T) []byte {
	fs := vfs.NewMem()
	o := Options{FS: fs, Dir: "/db"}
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	var nums []base.FileNum
	for i := range 4 {
		n := vs.NewFileNum()
		nums = append(nums, n)
		k := fmt.Sprintf("k%d", i)
		vs.SetLastSeq(base.SeqNum(10 * (i + 1)))
		e := &VersionEdit{NewFiles: []NewFileEntry{{Level: i % 2, Meta: tableMeta(n, k, k+"z", base.SeqNum(10*(i+1)))}}}
		if err := vs.LogAndApply(e); err != nil {
			t.Fatal(err)
		}
	}
	e := &VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: nums[0]}: true}, HasLogNumber: true, LogNumber: 9}
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	// A blob file, a table referencing it, its garbage, and a blob file
	// added and deleted.
	blob, gone, table := vs.NewFileNum(), vs.NewFileNum(), vs.NewFileNum()
	vs.SetLastSeq(50)
	e = &VersionEdit{
		NewBlobFiles: []*BlobFileMetadata{{FileNum: blob, TotalCount: 5, TotalBytes: 5000, Size: 5100, ChecksumMethod: "crc32c", ChecksumValue: []byte{1, 2, 3, 4}},
			{FileNum: gone, TotalCount: 1, TotalBytes: 10, Size: 70}},
		NewFiles: []NewFileEntry{{Level: 0, Meta: blobTable(table, "m", 50, blob)}},
	}
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	e = &VersionEdit{BlobGarbage: []BlobGarbage{{FileNum: blob, Count: 2, Bytes: 2000}, {FileNum: gone, Count: 1, Bytes: 10}}, DeletedBlobFiles: []base.FileNum{gone}}
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	name := base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum())
	vs.Close()
	f, err := fs.Open("/db/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteFuzzSeeds writes the FuzzManifestLoad seed corpus into
// testdata/fuzz when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it checks that
// the corpus exists and that its first seed loads.
func TestWriteFuzzSeeds(t *testing.T) {
	if !fuzzseed.Writing() {
		fuzzseed.Sync(t, map[string][][]any{"FuzzManifestLoad": nil, "FuzzEditDecode": nil})
		return
	}
	m := manifestSeed(t)
	if _, _, vs, err := loadFuzzDir(t, nil, m); err != nil {
		t.Fatalf("the seed MANIFEST does not load: %v", err)
	} else {
		vs.Close()
	}
	// FuzzEditDecode: a few random edits, one with a new file whose
	// custom fields are all present, and one with every blob record.
	rng := rand.New(rand.NewPCG(3, 4))
	edits := [][]any{{(&VersionEdit{NewFiles: []NewFileEntry{{Level: 2, Meta: tableMeta(12, "a", "b", 6)}}}).Encode(nil)}}
	edits = append(edits, []any{(&VersionEdit{
		NewFiles:         []NewFileEntry{{Level: 0, Meta: blobTable(14, "a", 6, 3, 13)}},
		NewBlobFiles:     []*BlobFileMetadata{{FileNum: 13, TotalCount: 4, TotalBytes: 400, Size: 470, ChecksumMethod: "crc32c", ChecksumValue: []byte{1, 2, 3, 4}}},
		BlobGarbage:      []BlobGarbage{{FileNum: 3, Count: 1, Bytes: 100}},
		DeletedBlobFiles: []base.FileNum{2},
	}).Encode(nil)})
	for range 3 {
		edits = append(edits, []any{randEdit(rng).Encode(nil)})
	}
	fuzzseed.Sync(t, map[string][][]any{
		"FuzzManifestLoad": {
			{m, []byte(nil)}, {m[:len(m)-3], []byte(nil)}, {m, []byte("MANIFEST-000005")}, {m, []byte("MANIFEST-5\n")}, {[]byte(nil), []byte(nil)},
		},
		"FuzzEditDecode": edits,
	})
}

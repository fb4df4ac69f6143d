package manifest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// TestCatchUpFollowsWriter: a read-only version set catching up at random
// points with a writer that adds and deletes tables, moves the log number
// and switches MANIFESTs (a tiny MaxManifestFileSize) ends each catch-up
// with the writer's current version and counters, and releases the tables
// the writer dropped.
func TestCatchUpFollowsWriter(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, fs := range []vfs.FS{vfs.NewMem(), vfs.Default} {
		o := testOptions(t)
		o.FS = fs
		o.MaxManifestFileSize = 1 << 10
		w, err := Create(o)
		if err != nil {
			t.Fatal(err)
		}
		ro := o
		ro.ReadOnly = true
		f, err := Load(ro)
		if err != nil {
			t.Fatal(err)
		}
		var live []base.FileNum
		switches := 0
		for i := range 300 {
			e := &VersionEdit{}
			if len(live) > 0 && rng.IntN(3) == 0 {
				j := rng.IntN(len(live))
				e.DeletedFiles = map[DeletedFileEntry]bool{{Level: 0, FileNum: live[j]}: true}
				live = append(live[:j], live[j+1:]...)
			} else {
				n := w.NewFileNum()
				k := fmt.Sprintf("k%05d", n)
				e.NewFiles = []NewFileEntry{{Level: 0, Meta: tableMeta(n, k, k, base.SeqNum(i+1))}}
				live = append(live, n)
			}
			if rng.IntN(4) == 0 {
				e.HasLogNumber, e.LogNumber = true, w.NewFileNum()
			}
			e.LastSeq = base.SeqNum(i + 1)
			before := w.ManifestFileNum()
			if err := w.LogAndApply(e); err != nil {
				t.Fatal(err)
			}
			if w.ManifestFileNum() != before {
				switches++
			}
			if rng.IntN(5) != 0 {
				continue
			}
			if _, err := f.CatchUp(); err != nil {
				t.Fatalf("seed %d, edit %d: %v", seed, i, err)
			}
			if got, want := currentString(f), currentString(w); got != want {
				t.Fatalf("seed %d, edit %d: follower\n%s\nwriter\n%s", seed, i, got, want)
			}
			if f.LogNumber() != w.LogNumber() || f.LastSeq() != w.LastSeq() || f.ManifestFileNum() != w.ManifestFileNum() {
				t.Fatalf("seed %d, edit %d: follower log %s seq %d manifest %s, writer %s %d %s", seed, i,
					f.LogNumber(), f.LastSeq(), f.ManifestFileNum(), w.LogNumber(), w.LastSeq(), w.ManifestFileNum())
			}
			if got, want := len(f.LiveFileNums()), len(live); got != want {
				t.Fatalf("seed %d, edit %d: follower holds %d live tables, want %d", seed, i, got, want)
			}
			for _, m := range f.TakeObsoleteTables() {
				if _, ok := f.LiveFileNums()[m.FileNum]; ok {
					t.Fatalf("seed %d: table %s both live and obsolete", seed, m.FileNum)
				}
			}
			if changed, err := f.CatchUp(); err != nil || changed {
				t.Fatalf("seed %d: a catch-up with nothing new: changed %v, %v", seed, changed, err)
			}
		}
		if switches == 0 {
			t.Fatalf("seed %d: the writer never switched MANIFESTs", seed)
		}
		if err := w.LogAndApply(&VersionEdit{}); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.CatchUp(); !errors.Is(err, base.ErrClosed) {
			t.Fatalf("CatchUp after Close: %v", err)
		}
		if _, err := w.CatchUp(); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("CatchUp of a writable set: %v", err)
		}
		w.Close()
	}
}

// TestCatchUpLeavesTornRecordForLater: the first part of an edit being
// appended is not applied and not damage; once the rest is there, the
// next catch-up applies it.
func TestCatchUpLeavesTornRecordForLater(t *testing.T) {
	o := testOptions(t)
	mem := vfs.NewMem()
	o.FS = mem
	w, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ro := o
	ro.ReadOnly = true
	f, err := Load(ro)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := w.NewFileNum()
	if err := w.LogAndApply(&VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: tableMeta(n, "a", "b", 3)}}}); err != nil {
		t.Fatal(err)
	}
	name := o.FS.PathJoin(o.Dir, base.MakeFilename(base.FileTypeManifest, w.ManifestFileNum()))
	full := readFile(t, mem, name)
	want := currentString(w)
	before := currentString(f)
	// The follower's offset is the end of the first record; cut the file
	// inside the second one.
	for cut := int(f.follow.off) + 1; cut < len(full); cut += max(1, (len(full)-int(f.follow.off))/7) {
		writeFile(t, mem, name, string(full[:cut]))
		if changed, err := f.CatchUp(); err != nil || changed {
			t.Fatalf("cut at %d of %d: changed %v, %v", cut, len(full), changed, err)
		}
		if got := currentString(f); got != before {
			t.Fatalf("cut at %d: follower changed to\n%s", cut, got)
		}
	}
	writeFile(t, mem, name, string(full))
	if changed, err := f.CatchUp(); err != nil || !changed {
		t.Fatalf("whole record: changed %v, %v", changed, err)
	}
	if got := currentString(f); got != want {
		t.Fatalf("follower\n%s\nwant\n%s", got, want)
	}
}

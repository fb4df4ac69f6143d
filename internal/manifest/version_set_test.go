package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// faultFS wraps an FS and fails Sync on files whose base name has the
// prefix failSyncPrefix while it is set.
type faultFS struct {
	vfs.FS
	failSyncPrefix atomic.Pointer[string]
}

var errInjected = errors.New("injected fault")

func (fs *faultFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Create(name, opts...)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, fs: fs, name: fs.PathBase(name)}, nil
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) Sync() error {
	if p := f.fs.failSyncPrefix.Load(); p != nil && strings.HasPrefix(f.name, *p) {
		return errInjected
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error { return f.Sync() }

func testOptions(t *testing.T) Options {
	return Options{FS: vfs.Default, Dir: testdir.New(t)}
}

func tableMeta(n base.FileNum, lo, hi string, seq base.SeqNum) *FileMetadata {
	return &FileMetadata{
		FileNum: n, Size: uint64(n) * 100,
		Smallest:    base.MakeInternalKey([]byte(lo), seq, base.KindSet),
		Largest:     base.MakeInternalKey([]byte(hi), seq, base.KindDelete),
		SmallestSeq: seq, LargestSeq: seq, NumEntries: 10, NumDeletions: 2,
		OldestTombstoneTime: uint64(seq) * 7, MarkedForCompaction: seq%2 == 0,
	}
}

func currentString(vs *VersionSet) string {
	v := vs.Current()
	defer v.Unref()
	return v.String()
}

// manifestNames lists the MANIFEST files of dir.
func manifestNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			out = append(out, n)
		}
	}
	return out
}

func TestCreateLoadRoundTrip(t *testing.T) {
	for _, maxSize := range []int64{0, 1} { // default, and rotate on every edit
		t.Run(fmt.Sprintf("max=%d", maxSize), func(t *testing.T) {
			o := testOptions(t)
			o.MaxManifestFileSize = maxSize
			vs, err := Create(o)
			if err != nil {
				t.Fatal(err)
			}
			if got := vs.ManifestFileNum(); got != 1 {
				t.Fatalf("first MANIFEST is %s", got)
			}
			if got := vs.NewFileNum(); got != 2 {
				t.Fatalf("first allocated file number %s, want 000002", got)
			}
			if _, err := Create(o); !errors.Is(err, os.ErrExist) {
				t.Fatalf("Create over an existing DB: %v", err)
			}
			var want []string
			seq := base.SeqNum(0)
			for i := range 20 {
				e := &VersionEdit{}
				if i%3 == 0 {
					e.HasLogNumber, e.LogNumber = true, vs.NewFileNum()
				}
				n := vs.NewFileNum()
				seq += 10
				e.NewFiles = []NewFileEntry{{Level: 0, Meta: tableMeta(n, "a", "z", seq)}}
				if i > 0 && i%4 == 0 {
					// Compact the newest L0 file into L1 under a fresh number.
					v := vs.Current()
					old := v.Levels[0][0]
					v.Unref()
					e.DeletedFiles = map[DeletedFileEntry]bool{{Level: 0, FileNum: old.FileNum}: true}
					key := fmt.Sprintf("k%03d", i)
					e.NewFiles = append(e.NewFiles, NewFileEntry{Level: 1, Meta: tableMeta(vs.NewFileNum(), key, key+"x", seq)})
				}
				vs.SetLastSeq(seq + 5)
				if err := vs.LogAndApply(e); err != nil {
					t.Fatalf("edit %d: %v", i, err)
				}
				if !e.HasLastSeq || e.LastSeq != seq+5 || !e.HasNextFileNumber || e.NextFileNumber <= n {
					t.Fatalf("edit %d: counters not filled: %+v", i, e)
				}
				want = append(want, currentString(vs))
			}
			wantLog, wantSeq, lastNum := vs.LogNumber(), vs.LastSeq(), vs.NewFileNum()
			if maxSize == 1 {
				if got := vs.ManifestFileNum(); got == 1 {
					t.Fatal("MANIFEST never rotated")
				}
				if names := manifestNames(t, o.FS, o.Dir); len(names) != 1 {
					t.Fatalf("old MANIFESTs not removed: %v", names)
				}
			}
			if err := vs.Close(); err != nil {
				t.Fatal(err)
			}
			if err := vs.LogAndApply(&VersionEdit{}); !errors.Is(err, base.ErrClosed) {
				t.Fatalf("LogAndApply after Close: %v", err)
			}

			vs2, err := Load(o)
			if err != nil {
				t.Fatal(err)
			}
			defer vs2.Close()
			if got := currentString(vs2); got != want[len(want)-1] {
				t.Fatalf("loaded version:\n%s\nwant:\n%s", got, want[len(want)-1])
			}
			if vs2.LogNumber() != wantLog || vs2.LastSeq() != wantSeq {
				t.Fatalf("loaded log %s seq %d, want %s %d", vs2.LogNumber(), vs2.LastSeq(), wantLog, wantSeq)
			}
			if n := vs2.NewFileNum(); n < lastNum {
				t.Fatalf("file number %s reused (last allocated before close %s)", n, lastNum)
			}
			// Every field of every file survived.
			v1, v2 := vs2.Current(), vs2.Current()
			defer v1.Unref()
			defer v2.Unref()
			for l := range v1.Levels {
				for _, f := range v1.Levels[l] {
					want := tableMeta(f.FileNum, string(f.Smallest.UserKey), string(f.Largest.UserKey), f.LargestSeq)
					if !metaEqual(f, want) {
						t.Fatalf("file %s: %+v, want %+v", f.FileNum, f, want)
					}
				}
			}
			if err := v1.CheckOrdering(base.DefaultComparer.Compare); err != nil {
				t.Fatal(err)
			}
			// Load moved to a fresh MANIFEST and removed the old one.
			names := manifestNames(t, o.FS, o.Dir)
			if len(names) != 1 || names[0] != base.MakeFilename(base.FileTypeManifest, vs2.ManifestFileNum()) {
				t.Fatalf("MANIFESTs after Load: %v, current %s", names, vs2.ManifestFileNum())
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	o := testOptions(t)
	if _, err := Load(o); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load of an empty dir: %v", err)
	}
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	vs.Close()

	other := o
	other.Comparer = &base.Comparer{Name: "reverse", Compare: func(a, b []byte) int { return -base.DefaultComparer.Compare(a, b) }}
	_, err = Load(other)
	if err == nil || !strings.Contains(err.Error(), `"reverse"`) || !strings.Contains(err.Error(), `"leveldb.BytewiseComparator"`) {
		t.Fatalf("comparer mismatch: %v", err)
	}

	currentPath := o.FS.PathJoin(o.Dir, "CURRENT")
	for _, contents := range []string{"", "MANIFEST-000001", "garbage\n", "MANIFEST-1\n", "000001.log\n"} {
		writeFile(t, o.FS, currentPath, contents)
		var ce *base.CorruptionError
		if _, err := Load(o); !errors.As(err, &ce) || ce.File != "CURRENT" {
			t.Fatalf("CURRENT %q: %v", contents, err)
		}
	}
	// CURRENT names a missing MANIFEST.
	writeFile(t, o.FS, currentPath, "MANIFEST-000099\n")
	if _, err := Load(o); !errors.Is(err, base.ErrCorruption) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing MANIFEST: %v", err)
	}
	// A MANIFEST of garbage: no record survives.
	writeFile(t, o.FS, o.FS.PathJoin(o.Dir, "MANIFEST-000099"), strings.Repeat("not a manifest", 100))
	if _, err := Load(o); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("garbage MANIFEST: %v", err)
	}
}

func writeFile(t *testing.T, fs vfs.FS, path, contents string) {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(contents)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// buildDB creates a DB with n single-file edits and returns the options, the
// MANIFEST path and the version string after each edit.
func buildDB(t *testing.T, n int) (Options, string, []string) {
	o := testOptions(t)
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for i := range n {
		num := vs.NewFileNum()
		e := &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: tableMeta(num, "a", "b", base.SeqNum(i+1))}}}
		if err := vs.LogAndApply(e); err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, currentString(vs))
	}
	path := o.FS.PathJoin(o.Dir, base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum()))
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	return o, path, shapes
}

func TestLoadTornTail(t *testing.T) {
	o, path, shapes := buildDB(t, 5)
	data := readFile(t, o.FS, path)

	// Garbage appended after the last record is a torn tail.
	writeFile(t, o.FS, path, string(data)+"\x01\x02\x03garbage")
	vs, err := Load(o)
	if err != nil {
		t.Fatalf("Load with garbage tail: %v", err)
	}
	if got := currentString(vs); got != shapes[4] {
		t.Fatalf("got\n%s\nwant\n%s", got, shapes[4])
	}
	// New edits go to a fresh MANIFEST: the damaged one is gone.
	if vs.ManifestFileNum() == 0 || o.FS.PathJoin(o.Dir, base.MakeFilename(base.FileTypeManifest, vs.ManifestFileNum())) == path {
		t.Fatal("Load kept appending to the damaged MANIFEST")
	}
	if _, err := o.FS.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old MANIFEST not removed: %v", err)
	}
	vs.Close()

	// A truncated last record is dropped: the version is the one before it.
	o2, path2, shapes2 := buildDB(t, 5)
	data2 := readFile(t, o2.FS, path2)
	writeFile(t, o2.FS, path2, string(data2[:len(data2)-3]))
	vs2, err := Load(o2)
	if err != nil {
		t.Fatalf("Load with torn last record: %v", err)
	}
	defer vs2.Close()
	if got := currentString(vs2); got != shapes2[3] {
		t.Fatalf("got\n%s\nwant\n%s", got, shapes2[3])
	}

	// A flipped bit in the last record, which is whole: the edit was synced
	// and may be relied on (its WAL deleted), so this is corruption, not a
	// tail to drop.
	o3, path3, _ := buildDB(t, 5)
	data3 := readFile(t, o3.FS, path3)
	data3[len(data3)-2] ^= 0x10
	writeFile(t, o3.FS, path3, string(data3))
	if _, err := Load(o3); !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), o3.FS.PathBase(path3)) {
		t.Fatalf("Load with a flipped bit in the last record: %v, want corruption naming the MANIFEST", err)
	}
}

func TestLoadCorruptMiddleRecord(t *testing.T) {
	o, path, _ := buildDB(t, 6)
	data := readFile(t, o.FS, path)
	// Records are small: flip a byte in the middle of the file, which is
	// inside a record followed by intact ones.
	data[len(data)/2] ^= 0x40
	writeFile(t, o.FS, path, string(data))
	_, err := Load(o)
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != o.FS.PathBase(path) {
		t.Fatalf("got %v, want corruption naming %s", err, o.FS.PathBase(path))
	}
}

// TestLoadBadEdit: records that are intact but do not apply are corruption.
func TestLoadBadEdit(t *testing.T) {
	o := testOptions(t)
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	// Write an edit that deletes an absent file behind the set's back.
	vs.writeMu.Lock()
	enc := (&VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 77}: true}}).Encode(nil)
	if err := writeAndSync(vs.writeMu.manifest, vs.writeMu.manifestFile, enc); err != nil {
		t.Fatal(err)
	}
	vs.writeMu.Unlock()
	vs.Close()
	_, err = Load(o)
	var ce *base.CorruptionError
	if !errors.As(err, &ce) || ce.File != "MANIFEST-000001" || !strings.Contains(err.Error(), "000077") {
		t.Fatalf("got %v", err)
	}
}

func TestLogAndApplyRejects(t *testing.T) {
	o := testOptions(t)
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	if err := vs.LogAndApply(&VersionEdit{HasLogNumber: true, LogNumber: 5}); err != nil {
		t.Fatal(err)
	}
	if err := vs.LogAndApply(&VersionEdit{HasLogNumber: true, LogNumber: 4}); !errors.Is(err, base.ErrInvalidArgument) {
		t.Fatalf("log number going back: %v", err)
	}
	bad := &VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: 9}: true}}
	if err := vs.LogAndApply(bad); err == nil {
		t.Fatal("deleting an absent file succeeded")
	}
	// The log number implies the file number is used.
	if n := vs.NewFileNum(); n <= 5 {
		t.Fatalf("NewFileNum %s after log number 5", n)
	}
	vs.MarkFileNumUsed(100)
	if n := vs.NewFileNum(); n != 101 {
		t.Fatalf("NewFileNum after MarkFileNumUsed(100) = %s", n)
	}
	vs.SetLastSeq(50)
	vs.SetLastSeq(40)
	if vs.LastSeq() != 50 {
		t.Fatalf("LastSeq went back to %d", vs.LastSeq())
	}
}

func TestLogAndApplySyncFailure(t *testing.T) {
	fs := &faultFS{FS: vfs.Default}
	o := Options{FS: fs, Dir: testdir.New(t)}
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	add := func(n base.FileNum, k string) *VersionEdit {
		return &VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: tableMeta(n, k, k, 1)}}}
	}
	if err := vs.LogAndApply(add(vs.NewFileNum(), "a")); err != nil {
		t.Fatal(err)
	}
	before := currentString(vs)
	prefix := "MANIFEST-"
	fs.failSyncPrefix.Store(&prefix)
	if err := vs.LogAndApply(add(vs.NewFileNum(), "b")); !errors.Is(err, errInjected) {
		t.Fatalf("LogAndApply with failing sync: %v", err)
	}
	if got := currentString(vs); got != before {
		t.Fatalf("version changed after failed LogAndApply:\n%s", got)
	}
	// Rotation also fails while new MANIFESTs cannot be synced; nothing
	// changes and the unused MANIFEST is removed.
	oldManifest := vs.ManifestFileNum()
	if err := vs.LogAndApply(add(vs.NewFileNum(), "c")); !errors.Is(err, errInjected) {
		t.Fatalf("second LogAndApply: %v", err)
	}
	if vs.ManifestFileNum() != oldManifest || len(manifestNames(t, fs, o.Dir)) != 1 {
		t.Fatalf("failed rotation left MANIFESTs %v", manifestNames(t, fs, o.Dir))
	}
	fs.failSyncPrefix.Store(nil)
	// The next edit starts a new MANIFEST rather than appending after a
	// possibly partial record.
	if err := vs.LogAndApply(add(vs.NewFileNum(), "d")); err != nil {
		t.Fatal(err)
	}
	if vs.ManifestFileNum() == oldManifest {
		t.Fatal("no new MANIFEST after a failed write")
	}
	after := currentString(vs)
	if strings.Contains(after, "b#") || strings.Contains(after, "c#") || !strings.Contains(after, "d#") {
		t.Fatalf("unexpected version:\n%s", after)
	}
	vs.Close()
	vs2, err := Load(Options{FS: vfs.Default, Dir: o.Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer vs2.Close()
	if got := currentString(vs2); got != after {
		t.Fatalf("loaded\n%s\nwant\n%s", got, after)
	}
}

func TestVersionSetObsoleteTables(t *testing.T) {
	vs, err := Create(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	a, b := vs.NewFileNum(), vs.NewFileNum()
	if err := vs.LogAndApply(&VersionEdit{NewFiles: []NewFileEntry{
		{Level: 1, Meta: tableMeta(a, "a", "b", 1)}, {Level: 1, Meta: tableMeta(b, "c", "d", 1)},
	}}); err != nil {
		t.Fatal(err)
	}
	reader := vs.Current() // pins the version holding a
	c := vs.NewFileNum()
	if err := vs.LogAndApply(&VersionEdit{
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: a}: true},
		NewFiles:     []NewFileEntry{{Level: 2, Meta: tableMeta(c, "a", "b", 1)}},
	}); err != nil {
		t.Fatal(err)
	}
	if o := vs.TakeObsoleteTables(); len(o) != 0 {
		t.Fatalf("obsolete while a reader pins it: %v", o)
	}
	if _, ok := vs.LiveFileNums()[a]; !ok {
		t.Fatal("pinned file not live")
	}
	reader.Unref()
	o := vs.TakeObsoleteTables()
	if len(o) != 1 || o[0].FileNum != a {
		t.Fatalf("obsolete = %v, want [%s]", o, a)
	}
	live := vs.LiveFileNums()
	if _, ok := live[a]; ok || len(live) != 2 {
		t.Fatalf("live = %v", sortedNums(live))
	}
	if o := vs.TakeObsoleteTables(); len(o) != 0 {
		t.Fatalf("obsolete reported twice: %v", o)
	}
}

// TestLogAndApplyConcurrent adds files from several goroutines, each in its
// own key range, while readers pin versions; then reloads.
func TestLogAndApplyConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	o := testOptions(t)
	o.MaxManifestFileSize = 512
	vs, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range perWriter {
				v := vs.Current()
				if err := v.CheckOrdering(base.DefaultComparer.Compare); err != nil {
					errs <- err
				}
				k := fmt.Sprintf("w%d-%03d", w, i)
				lvl := 1 + rng.IntN(3)
				e := &VersionEdit{NewFiles: []NewFileEntry{{Level: lvl, Meta: tableMeta(vs.NewFileNum(), k, k, 1)}}}
				if err := vs.LogAndApply(e); err != nil {
					errs <- err
				}
				v.Unref()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("seed %d: %v", seed, err)
	}
	want := currentString(vs)
	if n := strings.Count(want, "\n  "); n != writers*perWriter {
		t.Fatalf("seed %d: %d files, want %d", seed, n, writers*perWriter)
	}
	if len(vs.LiveFileNums()) != writers*perWriter || len(vs.TakeObsoleteTables()) != 0 {
		t.Fatalf("seed %d: live/obsolete accounting off", seed)
	}
	vs.Close()
	vs2, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	defer vs2.Close()
	if got := currentString(vs2); got != want {
		t.Fatalf("seed %d: loaded\n%s\nwant\n%s", seed, got, want)
	}
}

// TestLoadTornSectorInLastRecord: a power loss that persisted the first
// sector of the last edit but not the next one leaves that edit whole in
// length with zeros after the sector boundary. That is a torn write: Load
// drops the edit (it was never acknowledged) and opens, instead of calling
// the MANIFEST corrupt and refusing to open after an ordinary crash.
func TestLoadTornSectorInLastRecord(t *testing.T) {
	for n := 2; n <= 40; n++ {
		o, path, shapes := buildDB(t, n)
		data := readFile(t, o.FS, path)
		boundary := len(data) &^ 511
		if boundary == len(data) || len(data)-boundary >= len(data)-lastRecordOffset(t, data) {
			continue // the last record does not cross a sector boundary
		}
		clear(data[boundary:])
		writeFile(t, o.FS, path, string(data))
		vs, err := Load(o)
		if err != nil {
			t.Fatalf("Load with the last record's second sector never written: %v", err)
		}
		defer vs.Close()
		if got := currentString(vs); got != shapes[n-2] {
			t.Fatalf("got\n%s\nwant\n%s", got, shapes[n-2])
		}
		return
	}
	t.Fatal("no MANIFEST whose last record crosses a sector boundary")
}

// lastRecordOffset returns the offset of the last record of a MANIFEST.
func lastRecordOffset(t *testing.T, data []byte) int {
	t.Helper()
	rr := record.NewReader(bytes.NewReader(data), "MANIFEST")
	off := -1
	for {
		if _, err := rr.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			return off
		}
		off = int(rr.Offset())
	}
}

package shale

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/compact"
	"github.com/shaledb/shale/vfs"
)

// createBlockingFS blocks, once armed, the first Create of a file whose
// name ends in suffix until release is closed; reached is closed when it
// does.
type createBlockingFS struct {
	vfs.FS
	mu      sync.Mutex
	suffix  string
	reached chan struct{}
	release chan struct{}
}

func (fs *createBlockingFS) arm(suffix string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.suffix, fs.reached, fs.release = suffix, make(chan struct{}), make(chan struct{})
}

func (fs *createBlockingFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	fs.mu.Lock()
	var wait chan struct{}
	if fs.suffix != "" && strings.HasSuffix(name, fs.suffix) {
		fs.suffix, wait = "", fs.release
		close(fs.reached)
	}
	fs.mu.Unlock()
	if wait != nil {
		<-wait
	}
	return fs.FS.Create(name, opts...)
}

// putBlobRound writes keys prefix0..prefix9 with values of round r.
func putBlobRound(t *testing.T, d *DB, prefix string, r int) {
	t.Helper()
	for i := range 10 {
		must(t, d.Put([]byte(fmt.Sprintf("%s%d", prefix, i)), blobTestValue(100*r+i), nil))
	}
}

// compactManually runs, as CompactRange does one step, the compaction of
// level into the next (or in place, for the last level) over [start, end].
// It reports, rather than fails the test, so that it may run in a
// goroutine.
func compactManually(d *DB, level int, start, end []byte) error {
	d.mu.Lock()
	v := d.versions.Current()
	co := d.compactOptions()
	c := compact.PickManual(v, &co, level, start, end)
	if c == nil {
		v.Unref()
		d.mu.Unlock()
		return fmt.Errorf("no compaction of L%d over [%s, %s]", level, start, end)
	}
	d.startCompactionLocked(c)
	d.mu.Unlock()
	err := d.runCompaction(c, v)
	d.mu.Lock()
	d.finishCompactionLocked(c)
	d.mu.Unlock()
	return err
}

// onDisk reports which of nums are blob files on disk.
func onDisk(t *testing.T, fs vfs.FS, nums []base.FileNum) []base.FileNum {
	var found []base.FileNum
	for _, n := range blobFileNums(t, fs) {
		if slices.Contains(nums, n) {
			found = append(found, n)
		}
	}
	return found
}

// openBlockingBlobDB opens a DB with blob files (blobTestOptions) and no
// automatic compactions on a createBlockingFS.
func openBlockingBlobDB(t *testing.T) (*createBlockingFS, *DB) {
	t.Helper()
	fs := &createBlockingFS{FS: vfs.NewMem()}
	opts := blobTestOptions(fs)
	opts.DisableAutoCompactions = true
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return fs, d
}

// whileJobBlocked starts job, waits until it blocks creating a table,
// runs during, and then lets the job finish, failing the test if it
// fails. The job is released even when during fails the test, so that
// the DB can close.
func whileJobBlocked(t *testing.T, fs *createBlockingFS, job func() error, during func()) {
	t.Helper()
	fs.arm(".sst")
	done := make(chan error, 1)
	go func() { done <- job() }()
	select {
	case <-fs.reached:
	case err := <-done:
		t.Fatalf("the job ended before writing its table: %v", err)
	}
	defer func() {
		close(fs.release)
		if err := <-done; err != nil {
			t.Errorf("the blocked job: %v", err)
		}
	}()
	during()
}

// TestBlobFilesDeletedWhileAFlushRuns: a blob file that a compaction's
// edit deletes leaves the disk at once, even while a flush that started
// before the edit is still writing: a flush reads tables only and pins no
// blob file. (It once held the whole current version for its secondary
// tombstones, keeping every blob file GC freed on disk until it ended.)
func TestBlobFilesDeletedWhileAFlushRuns(t *testing.T) {
	fs, d := openBlockingBlobDB(t)
	defer d.Close()
	putBlobRound(t, d, "k", 0)
	must(t, d.Flush())
	first := blobFileNums(t, fs)
	putBlobRound(t, d, "k", 1) // every value of the first files overwritten
	must(t, d.Flush())

	putBlobRound(t, d, "z", 2)
	var left []base.FileNum
	whileJobBlocked(t, fs, d.Flush, func() {
		if err := compactManually(d, 0, nil, nil); err != nil {
			t.Fatal(err)
		}
		d.deleteObsoleteFiles(false)
		left = onDisk(t, fs, first)
	})
	if len(left) > 0 {
		t.Fatalf("blob files %v, all garbage and deleted by the compaction, stayed on disk while a flush ran", left)
	}
	checkBlobReferences(t, d)
}

// TestBlobFilesDeletedWhileACompactionRuns: a compaction pins only the blob
// files its inputs reference; a blob file that another compaction's edit
// deletes meanwhile leaves the disk at once, not when the first ends.
func TestBlobFilesDeletedWhileACompactionRuns(t *testing.T) {
	fs, d := openBlockingBlobDB(t)
	defer d.Close()
	putBlobRound(t, d, "a", 0)
	must(t, d.CompactRange(nil, nil)) // the a keys in the last level
	putBlobRound(t, d, "b", 1)
	must(t, d.Flush())
	before := blobFileNums(t, fs)
	putBlobRound(t, d, "b", 2) // every value of the b keys' files overwritten
	must(t, d.Flush())
	var bFiles []base.FileNum
	v := d.versions.Current()
	for _, f := range v.Levels[0] {
		if string(f.Smallest.UserKey) == "b0" {
			for _, n := range f.BlobFiles {
				if slices.Contains(before, n) {
					bFiles = append(bFiles, n)
				}
			}
		}
	}
	last := len(v.Levels) - 1
	v.Unref()
	if len(bFiles) == 0 {
		t.Fatal("no blob file of the first b round found")
	}

	// A rewrite of the a keys in the last level, blocked writing its
	// output, holds the version that has the b keys' first files.
	var left []base.FileNum
	rewrite := func() error { return compactManually(d, last, []byte("a"), []byte("a9")) }
	whileJobBlocked(t, fs, rewrite, func() {
		if err := compactManually(d, 0, []byte("b"), []byte("b9")); err != nil {
			t.Fatal(err)
		}
		d.deleteObsoleteFiles(false)
		left = onDisk(t, fs, bFiles)
	})
	if len(left) > 0 {
		t.Fatalf("blob files %v, all garbage and deleted by a compaction, stayed on disk while another compaction ran", left)
	}
	checkBlobReferences(t, d)
	for i := range 10 {
		for _, k := range []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)} {
			if _, err := d.Get([]byte(k), nil); err != nil {
				t.Fatalf("Get(%s): %v", k, err)
			}
		}
	}
}

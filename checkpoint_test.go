package shale

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// checkpointVariants are the option sets the checkpoint tests run under:
// each read path and kind of file a checkpoint must carry.
var checkpointVariants = []struct {
	name string
	set  func(*Options)
	// read is how the checkpoint is read.
	read *ReadOptions
}{
	{"plain", func(*Options) {}, nil},
	{"blob-files", setBlobTestOptions, nil},
	{"async-io-merges", func(o *Options) { o.MergeOperator = StringAppendOperator(',') },
		&ReadOptions{AsyncIO: true, ReadaheadSize: 4 << 10}},
}

// writeCheckpointWorkload writes n keys from index from on (puts, every
// 7th a merge when the DB has an operator, every 50th a range deletion of
// the three keys before it) and returns what the DB holds afterwards, read
// back.
func writeCheckpointWorkload(t *testing.T, d *DB, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		key := fmt.Appendf(nil, "k%06d", i%1500)
		value := fmt.Appendf(nil, "v%d-%0200d", i, i) // past MinBlobSize
		var err error
		switch {
		case i%7 == 0 && d.opts.MergeOperator != nil:
			err = d.Merge(key, fmt.Appendf(nil, "m%d", i), nil)
		case i%50 == 0:
			err = d.DeleteRange(fmt.Appendf(nil, "k%06d", i%1500-3), key, nil)
		default:
			err = d.Put(key, value, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckpointHoldsAcknowledgedWrites(t *testing.T) {
	for _, v := range checkpointVariants {
		t.Run(v.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := testOptions(fs)
			v.set(opts)
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			// Tables, and writes only in WALs (the mutable memtable's and
			// a queued one's).
			writeCheckpointWorkload(t, d, 0, 3000)
			must(t, d.Flush())
			writeCheckpointWorkload(t, d, 3000, 200)
			want := dbContents(t, d, nil)
			stats, err := d.CheckpointWithStats("/cp")
			if err != nil {
				t.Fatal(err)
			}
			// Writes after the checkpoint stay out of it.
			writeCheckpointWorkload(t, d, 3200, 500)
			must(t, d.Flush())

			if stats.LinkedFiles == 0 || stats.LinkedBytes == 0 {
				t.Errorf("MemFS can link, but nothing was linked: %+v", stats)
			}
			if stats.CopiedFiles < 3 { // MANIFEST, a WAL, OPTIONS
				t.Errorf("copied %d files, want the MANIFEST, the WAL and OPTIONS at least: %+v", stats.CopiedFiles, stats)
			}
			names := listNames(t, fs, "/cp")
			if slices.Contains(names, "LOCK") || slices.Contains(names, "LOG") {
				t.Errorf("the checkpoint holds the DB's LOCK or LOG: %v", names)
			}
			if len(names) != stats.Files {
				t.Errorf("the checkpoint holds %d files, stats say %d: %v", len(names), stats.Files, names)
			}
			if _, err := fs.Stat("/cp.tmp"); err == nil {
				t.Errorf("/cp.tmp is left behind")
			}

			r, err := OpenForReadOnly("/cp", &Options{FS: fs, MergeOperator: opts.MergeOperator})
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffContents(dbContents(t, r, v.read), want); diff != "" {
				t.Errorf("read-only open of the checkpoint:\n%s", diff)
			}
			must(t, r.Close())
			wopts := testOptions(fs)
			v.set(wopts)
			wopts.CreateIfMissing = false
			c, err := Open("/cp", wopts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffContents(dbContents(t, c, v.read), want); diff != "" {
				t.Errorf("open of the checkpoint:\n%s", diff)
			}
			// The checkpoint is a database of its own.
			writeCheckpointWorkload(t, c, 5000, 300)
			must(t, c.Flush())
			must(t, c.CompactRange(nil, nil))
			must(t, c.VerifyChecksum())
			must(t, c.Close())
			// And the source is unharmed by what the checkpoint did.
			must(t, d.VerifyChecksum())
			if v.name == "blob-files" {
				checkBlobReferences(t, d)
			}
		})
	}
}

func TestCheckpointRefusesExistingDirectory(t *testing.T) {
	fs := vfs.NewMem()
	d := openMemFS(t, fs)
	defer d.Close()
	must(t, d.Put([]byte("a"), []byte("1"), nil))
	must(t, fs.MkdirAll("/cp", 0o755))
	writeFile(t, fs, "/cp/mine", []byte("keep"))
	err := d.Checkpoint("/cp")
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Checkpoint into an existing directory: %v, want ErrInvalidArgument", err)
	}
	if got := listNames(t, fs, "/cp"); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("a refused Checkpoint changed /cp: %v", got)
	}
	// A leftover staging directory is refused too, and kept.
	must(t, fs.MkdirAll("/cp2.tmp", 0o755))
	if err := d.Checkpoint("/cp2"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Checkpoint with /cp2.tmp present: %v, want ErrInvalidArgument", err)
	}
	for _, dir := range []string{"/db", "", "/cp3/../db"} {
		if err := d.Checkpoint(dir); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Checkpoint(%q): %v, want ErrInvalidArgument", dir, err)
		}
	}
	must(t, d.Close())
	if err := d.Checkpoint("/cp4"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checkpoint after Close: %v, want ErrClosed", err)
	}
	if _, err := fs.Stat("/cp4"); err == nil {
		t.Fatal("a Checkpoint after Close made /cp4")
	}
}

// TestCheckpointOfReadOnlyDB checkpoints a DB opened read-only, whose
// replayed WALs are copied whole.
func TestCheckpointOfReadOnlyDB(t *testing.T) {
	fs := vfs.NewMem()
	d := openMemFS(t, fs)
	writeCheckpointWorkload(t, d, 0, 2000)
	want := dbContents(t, d, nil)
	must(t, d.Close())
	r, err := OpenForReadOnly("/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	must(t, r.Checkpoint("/cp"))
	c, err := OpenForReadOnly("/cp", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if diff := diffContents(dbContents(t, c, nil), want); diff != "" {
		t.Fatalf("checkpoint of a read-only DB:\n%s", diff)
	}
	if countFiles(t, fs, base.FileTypeLog) == 0 {
		t.Fatal("the workload left no WAL to copy")
	}
}

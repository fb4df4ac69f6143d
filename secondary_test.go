package shale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// dirGuardFS refuses, and counts, every call that could change a file or
// directory under dir: the witness that a secondary instance never writes
// into its primary's directory (it may write elsewhere).
type dirGuardFS struct {
	vfs.FS
	dir      string
	attempts atomic.Int64
}

func (fs *dirGuardFS) inside(name string) bool {
	return name == fs.dir || strings.HasPrefix(name, fs.dir+"/")
}

func (fs *dirGuardFS) guard(name string) error {
	if fs.inside(name) {
		fs.attempts.Add(1)
		return errROFS
	}
	return nil
}

func (fs *dirGuardFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.guard(name); err != nil {
		return nil, err
	}
	return fs.FS.Create(name, opts...)
}

func (fs *dirGuardFS) OpenReadWrite(name string) (vfs.File, error) {
	if err := fs.guard(name); err != nil {
		return nil, err
	}
	return fs.FS.OpenReadWrite(name)
}

func (fs *dirGuardFS) OpenDir(name string) (vfs.File, error) {
	if err := fs.guard(name); err != nil {
		return nil, err
	}
	return fs.FS.OpenDir(name)
}

func (fs *dirGuardFS) Remove(name string) error {
	if err := fs.guard(name); err != nil {
		return err
	}
	return fs.FS.Remove(name)
}

func (fs *dirGuardFS) RemoveAll(name string) error {
	if err := fs.guard(name); err != nil {
		return err
	}
	return fs.FS.RemoveAll(name)
}

func (fs *dirGuardFS) Rename(from, to string) error {
	if err := errors.Join(fs.guard(from), fs.guard(to)); err != nil {
		return err
	}
	return fs.FS.Rename(from, to)
}

func (fs *dirGuardFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.guard(dir); err != nil {
		return err
	}
	return fs.FS.MkdirAll(dir, perm)
}

func (fs *dirGuardFS) Lock(name string) (io.Closer, error) {
	if err := fs.guard(name); err != nil {
		return nil, err
	}
	return fs.FS.Lock(name)
}

// TestSecondaryWritesNothingInPrimaryDir: opening a secondary, catching up,
// reading, taking snapshots, refused writes and Close change no byte of the
// primary's directory and make no call that could; the secondary directory
// is created and holds the instance's LOG.
func TestSecondaryWritesNothingInPrimaryDir(t *testing.T) {
	mem := vfs.NewMem()
	m := fillForReadOnly(t, mem, 3000)
	if n := countFiles(t, mem, base.FileTypeTable); n == 0 {
		t.Fatal("the fill wrote no table")
	}
	before := dirImage(t, mem, "/db")
	guard := &dirGuardFS{FS: mem, dir: "/db"}
	for round := range 2 {
		db, err := OpenAsSecondary("/db", "/sec/instance", &Options{FS: guard})
		if err != nil {
			t.Fatalf("round %d: OpenAsSecondary: %v", round, err)
		}
		checkDBEquals(t, db, m)
		snap := db.NewSnapshot()
		writes := map[string]error{
			"Put":           db.Put([]byte("x"), []byte("y"), nil),
			"Delete":        db.Delete([]byte("k0001"), nil),
			"SingleDelete":  db.SingleDelete([]byte("k0001"), nil),
			"DeleteRange":   db.DeleteRange([]byte("a"), []byte("z"), nil),
			"Merge":         db.Merge([]byte("x"), []byte("y"), nil),
			"Write":         db.Write(func() *Batch { b := db.NewBatch(); b.Put([]byte("x"), nil); return b }(), nil),
			"Flush":         db.Flush(),
			"CompactRange":  db.CompactRange(nil, nil),
			"Resume":        db.Resume(),
			"SetOptions":    db.SetOptions(map[string]string{"write_buffer_size": "1048576"}),
			"DeleteFilesIn": db.DeleteFilesInRange([]byte("a"), []byte("z"), false),
		}
		for what, err := range writes {
			if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "OpenAsSecondary") {
				t.Errorf("%s on a secondary: %v, want ErrReadOnly naming OpenAsSecondary", what, err)
			}
		}
		if err := db.TryCatchUpWithPrimary(); err != nil {
			t.Fatal(err)
		}
		checkDBEquals(t, db, m)
		checkAll(t, db, &ReadOptions{Snapshot: snap}, m)
		snap.Release()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.TryCatchUpWithPrimary(); !errors.Is(err, ErrClosed) {
			t.Fatalf("TryCatchUpWithPrimary after Close: %v, want ErrClosed", err)
		}
	}
	if n := guard.attempts.Load(); n != 0 {
		t.Fatalf("the secondary made %d calls that change the primary's directory", n)
	}
	if after := dirImage(t, mem, "/db"); !maps.Equal(before, after) {
		t.Fatalf("the primary's directory changed:\nbefore %v\nafter  %v", before, after)
	}
	names := listNames(t, mem, "/sec/instance")
	if len(names) == 0 || !strings.HasPrefix(names[0], "LOG") {
		t.Fatalf("the secondary directory holds %q, want its LOG", names)
	}
}

// TestSecondaryOpenErrors: the secondary directory must be given and be
// another directory; the database must exist; TryCatchUpWithPrimary is
// refused on a DB that is not a secondary.
func TestSecondaryOpenErrors(t *testing.T) {
	mem := vfs.NewMem()
	fillForReadOnly(t, mem, 10)
	for _, sec := range []string{"", "/db", "/db/", "/db/."} {
		if _, err := OpenAsSecondary("/db", sec, &Options{FS: mem}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("secondary directory %q: %v, want ErrInvalidArgument", sec, err)
		}
	}
	if _, err := OpenAsSecondary("/missing", "/sec", &Options{FS: mem}); err == nil {
		t.Error("OpenAsSecondary of a missing database succeeded")
	}
	mem.MkdirAll("/empty", 0o755)
	if _, err := OpenAsSecondary("/empty", "/sec", &Options{FS: mem}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenAsSecondary of a directory without CURRENT: %v", err)
	}
	db := openMemFS(t, mem)
	if err := db.TryCatchUpWithPrimary(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("TryCatchUpWithPrimary on a primary: %v, want ErrInvalidArgument", err)
	}
	db.Close()
}

// secondaryTestOptions are the primary's options of the catch-up tests:
// small memtables and tables so that flushes, compactions and MANIFEST
// switches happen often, and blob files and a merge operator when asked.
func secondaryTestOptions(fs vfs.FS, blobs, merges bool) *Options {
	o := &Options{FS: fs, CreateIfMissing: true, WriteBufferSize: 32 << 10, TargetFileSizeBase: 16 << 10,
		MaxBytesForLevelBase: 64 << 10, Level0FileNumCompactionTrigger: 2, MaxManifestFileSize: 4 << 10}
	if blobs {
		o.EnableBlobFiles, o.MinBlobSize = true, 40
	}
	if merges {
		o.MergeOperator = StringAppendOperator(',')
	}
	return o
}

// secondaryOp applies one random write to the primary and the model: Put
// (some values long enough for blob files), Delete, DeleteRange, Merge
// (with an operator), or a batch of those.
func secondaryOp(rng *rand.Rand, db *DB, m model, merges bool, sync bool) error {
	key := func() string { return fmt.Sprintf("k%04d", rng.IntN(400)) }
	value := func() string { return fmt.Sprintf("v%d-%s", rng.Uint32(), strings.Repeat("x", rng.IntN(3)*30)) }
	b := db.NewBatch()
	n := 1
	if rng.IntN(5) == 0 {
		n = 2 + rng.IntN(8)
	}
	for range n {
		switch r := rng.IntN(20); {
		case r < 2:
			s, e := key(), key()
			if s > e {
				s, e = e, s
			}
			b.DeleteRange([]byte(s), []byte(e))
			for k := range m {
				if k >= s && k < e {
					delete(m, k)
				}
			}
		case r < 6:
			k := key()
			b.Delete([]byte(k))
			delete(m, k)
		case r < 9 && merges:
			k, v := key(), fmt.Sprintf("m%d", rng.IntN(100))
			b.Merge([]byte(k), []byte(v))
			if old, ok := m[k]; ok {
				m[k] = old + "," + v
			} else {
				m[k] = v
			}
		default:
			k, v := key(), value()
			b.Put([]byte(k), []byte(v))
			m[k] = v
		}
	}
	return db.Write(b, &WriteOptions{Sync: sync})
}

// TestSecondaryCatchesUp: a primary writes puts, deletes, range deletions,
// blob values and merges while flushes, compactions and MANIFEST switches
// run, and is closed and reopened at times (OS and Mem FS); after each
// catch-up the secondary's scans, Gets and MultiGets equal the model, and
// a catch-up with nothing new changes nothing.
func TestSecondaryCatchesUp(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for _, c := range []struct {
		name          string
		os            bool
		blobs, merges bool
	}{
		{"mem", false, false, false},
		{"mem-blobs-merges", false, true, true},
		{"os-blobs", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			var fs vfs.FS = vfs.NewMem()
			dir, sdir := "/db", "/sec"
			if c.os {
				fs = vfs.Default
				root := testdir.New(t)
				dir, sdir = fs.PathJoin(root, "db"), fs.PathJoin(root, "sec")
			}
			po := secondaryTestOptions(fs, c.blobs, c.merges)
			primary, err := Open(dir, po)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { primary.Close() }()
			so := &Options{FS: fs, MergeOperator: po.MergeOperator}
			sec, err := OpenAsSecondary(dir, sdir, so)
			if err != nil {
				t.Fatal(err)
			}
			defer sec.Close()
			m := model{}
			rounds := 12
			if testing.Short() {
				rounds = 6
			}
			for round := range rounds {
				for range 100 + rng.IntN(300) {
					if err := secondaryOp(rng, primary, m, c.merges, rng.IntN(10) == 0); err != nil {
						t.Fatal(err)
					}
				}
				switch rng.IntN(5) {
				case 0:
					must(t, primary.Flush())
				case 1:
					must(t, primary.CompactRange(nil, nil))
				case 2:
					// The primary restarts: it replays its WAL, may flush
					// it, and starts a new MANIFEST.
					must(t, primary.Close())
					if primary, err = Open(dir, po); err != nil {
						t.Fatal(err)
					}
				}
				if err := sec.TryCatchUpWithPrimary(); err != nil {
					t.Fatalf("seed %d round %d: %v", seed, round, err)
				}
				checkAll(t, sec, nil, m)
				if err := sec.TryCatchUpWithPrimary(); err != nil {
					t.Fatal(err)
				}
				checkAll(t, sec, nil, m)
			}
			if c.blobs && sec.Metrics().Blob.Files == 0 {
				t.Errorf("seed %d: no blob file live at the end", seed)
			}
		})
	}
}

// counterKey is the key the concurrent test's writer puts its op number
// under, in every batch: a read of it tells which prefix of the writes a
// secondary's state is.
const counterKey = "\x00count"

func encodeCounter(n int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

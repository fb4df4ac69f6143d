package shale

import (
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// openOptsFS records, per file type, which open options Create was called
// with, and can refuse DirectIO as a file system without direct IO would.
type openOptsFS struct {
	vfs.FS
	refuseDirect bool

	mu      sync.Mutex
	creates map[base.FileType][]vfs.OpenOption // OR of the options of each Create
	opens   map[base.FileType][]vfs.OpenOption // the same for Open
}

func (fs *openOptsFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	fs.record(&fs.opens, name, opts)
	return fs.FS.Open(name, opts...)
}

func (fs *openOptsFS) Create(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	o := fs.record(&fs.creates, name, opts)
	if fs.refuseDirect && o&vfs.DirectIO != 0 {
		return nil, fmt.Errorf("create %s: %w", name, vfs.ErrDirectIOUnsupported)
	}
	return fs.FS.Create(name, opts...)
}

// record notes the options of one Open or Create of name in *m, by file
// type, and returns them ORed together.
func (fs *openOptsFS) record(m *map[base.FileType][]vfs.OpenOption, name string, opts []vfs.OpenOption) vfs.OpenOption {
	var o vfs.OpenOption
	for _, x := range opts {
		o |= x
	}
	if t, _, ok := base.ParseFilename(fs.PathBase(name)); ok {
		fs.mu.Lock()
		if *m == nil {
			*m = map[base.FileType][]vfs.OpenOption{}
		}
		(*m)[t] = append((*m)[t], o)
		fs.mu.Unlock()
	}
	return o
}

func (fs *openOptsFS) createdWith(t base.FileType) []vfs.OpenOption {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.creates[t])
}

// TestDirectIODatabase runs a database on the OS file system with
// UseDirectReads and UseDirectIOForFlushAndCompaction through flushes and
// compactions, checks every table was created with DirectIO, and checks all
// data against a map before and after reopening.
func TestDirectIODatabase(t *testing.T) {
	for _, blobs := range []bool{false, true} {
		// With blob files (and GC), blob files are written with DirectIO
		// too, and relocation reads them through direct handles.
		t.Run(fmt.Sprintf("blob-files=%v", blobs), func(t *testing.T) { runDirectIODatabase(t, blobs) })
	}
}

func runDirectIODatabase(t *testing.T, blobs bool) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	dir := testdir.New(t)
	fs := &openOptsFS{FS: vfs.Default}
	opts := testOptions(fs)
	opts.UseDirectReads = true
	opts.UseDirectIOForFlushAndCompaction = true
	opts.WriteBufferSize = 32 << 10
	if blobs {
		setBlobTestOptions(opts)
		setBlobGCTestOptions(opts)
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open with direct IO on the test directory: %v", err)
	}
	model := map[string]string{}
	for i := 0; i < 6000; i++ {
		k := fmt.Sprintf("key-%05d", rng.IntN(3000))
		if rng.IntN(8) == 0 {
			if err := db.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
			continue
		}
		v := fmt.Sprintf("%s-v%d-%s", k, i, strings.Repeat("x", rng.IntN(200)))
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		model[k] = v
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Flush.Count == 0 || m.Compact.Count == 0 {
		t.Fatalf("flushes %d, compactions %d: the test did not exercise both", m.Flush.Count, m.Compact.Count)
	}
	checkAgainstModel(t, db, model)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	tables := fs.createdWith(base.FileTypeTable)
	if len(tables) == 0 {
		t.Fatal("no table was created")
	}
	for i, o := range tables {
		if o&vfs.DirectIO == 0 {
			t.Fatalf("table %d of %d was created without DirectIO", i, len(tables))
		}
	}
	if created := fs.createdWith(base.FileTypeBlob); blobs && len(created) == 0 {
		t.Fatal("no blob file was created")
	} else {
		for i, o := range created {
			if o&vfs.DirectIO == 0 {
				t.Fatalf("blob file %d of %d was created without DirectIO", i, len(created))
			}
		}
	}
	for _, o := range fs.createdWith(base.FileTypeLog) {
		if o&vfs.DirectIO != 0 {
			t.Fatal("a WAL was created with DirectIO")
		}
	}
	if probes := fs.createdWith(base.FileTypeTemp); len(probes) == 0 || probes[0]&vfs.DirectIO == 0 {
		t.Fatalf("Open did not probe direct IO (temp creates %v)", probes)
	}

	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkAgainstModel(t, db, model)
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".dbtmp") {
			t.Fatalf("the direct-IO probe file %s was left behind", n)
		}
	}
}

// checkAgainstModel compares Get of every key of model, a scan of the whole
// database, and Get of deleted keys with model.
func checkAgainstModel(t *testing.T, db *DB, model map[string]string) {
	t.Helper()
	for k, v := range model {
		got, err := db.Get([]byte(k), nil)
		if err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %.20q, %v; want %.20q", k, got, err, v)
		}
	}
	it := db.NewIterator(nil)
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		if model[k] != string(it.Value()) {
			t.Fatalf("scan: %s = %.20q, want %.20q", k, it.Value(), model[k])
		}
		keys = append(keys, k)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(model) || !slices.IsSorted(keys) {
		t.Fatalf("scan returned %d keys (sorted %v), the model holds %d", len(keys), slices.IsSorted(keys), len(model))
	}
	if _, err := db.Get([]byte("key-99999"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
}

// TestDirectIORefusedAtOpen: on a file system that refuses direct IO, Open
// fails with an error naming the option and the directory, matching both
// ErrInvalidArgument and vfs.ErrDirectIOUnsupported.
func TestDirectIORefusedAtOpen(t *testing.T) {
	cases := []struct {
		reads, flush bool
		want         string
	}{
		{true, false, "Options.UseDirectReads is set"},
		{false, true, "Options.UseDirectIOForFlushAndCompaction is set"},
		{true, true, "Options.UseDirectReads and Options.UseDirectIOForFlushAndCompaction are set"},
	}
	for _, c := range cases {
		fs := &openOptsFS{FS: vfs.NewMem(), refuseDirect: true}
		opts := testOptions(fs)
		opts.UseDirectReads, opts.UseDirectIOForFlushAndCompaction = c.reads, c.flush
		db, err := Open("/db", opts)
		if err == nil {
			db.Close()
			t.Fatalf("%s: Open succeeded on a file system without direct IO", c.want)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "shale: ") || !strings.Contains(msg, c.want) || !strings.Contains(msg, "/db") || !strings.Contains(msg, "does not support direct IO") {
			t.Fatalf("error %q; want it to start with \"shale: \" and name %q and /db", msg, c.want)
		}
		if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, vfs.ErrDirectIOUnsupported) {
			t.Fatalf("error %v matches ErrInvalidArgument: %v, ErrDirectIOUnsupported: %v; want both", err,
				errors.Is(err, ErrInvalidArgument), errors.Is(err, vfs.ErrDirectIOUnsupported))
		}
		// The refused Open released the directory: a plain Open works.
		plain := testOptions(fs)
		db, err = Open("/db", plain)
		if err != nil {
			t.Fatalf("Open without direct IO after a refused one: %v", err)
		}
		db.Close()
	}
}

// TestDirectIONotProbedWhenOff: without the options Open creates nothing
// with DirectIO; with them on MemFS (which accepts DirectIO) it probes and
// removes the probe file.
func TestDirectIONotProbedWhenOff(t *testing.T) {
	fs := &openOptsFS{FS: vfs.NewMem()}
	db, err := Open("/db", testOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if p := fs.createdWith(base.FileTypeTemp); slices.ContainsFunc(p, func(o vfs.OpenOption) bool { return o&vfs.DirectIO != 0 }) {
		t.Fatal("Open probed direct IO with both direct-IO options off")
	}
	opts := testOptions(fs)
	opts.UseDirectReads = true
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatalf("Open with UseDirectReads on MemFS: %v", err)
	}
	defer db.Close()
	names, _ := fs.List("/db")
	for _, n := range names {
		if strings.HasSuffix(n, ".dbtmp") {
			t.Fatalf("probe file %s left behind", n)
		}
	}
}

// TestDirectIOCompactionInputs checks that UseDirectIOForFlushAndCompaction
// alone makes compactions read their inputs through direct-IO handles, while
// the table cache (user reads) keeps buffered ones, and that the data
// survives.
func TestDirectIOCompactionInputs(t *testing.T) {
	dir := testdir.New(t)
	fs := &openOptsFS{FS: vfs.Default}
	opts := testOptions(fs)
	opts.UseDirectIOForFlushAndCompaction = true
	opts.WriteBufferSize = 32 << 10
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open with direct IO on the test directory: %v", err)
	}
	defer db.Close()
	model := map[string]string{}
	for i := 0; i < 4000; i++ {
		k := fmt.Sprintf("key-%05d", (i*7919)%2500)
		v := fmt.Sprintf("%s-v%d-%s", k, i, strings.Repeat("y", i%150))
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		model[k] = v
	}
	checkAgainstModel(t, db, model) // opens tables through the table cache
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	checkAgainstModel(t, db, model)
	fs.mu.Lock()
	opens := slices.Clone(fs.opens[base.FileTypeTable])
	fs.mu.Unlock()
	var direct, buffered int
	for _, o := range opens {
		if o&vfs.DirectIO != 0 {
			direct++
		} else {
			buffered++
		}
	}
	if direct == 0 || buffered == 0 {
		t.Fatalf("table opens: %d with DirectIO (compaction inputs), %d without (user reads); want both", direct, buffered)
	}
}

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

// TestSecondaryInstanceWritesNothingInPrimaryDir: opening a secondary, catching up,
// reading, taking snapshots, refused writes and Close change no byte of the
// primary's directory and make no call that could; the secondary directory
// is created and holds the instance's LOG.
func TestSecondaryInstanceWritesNothingInPrimaryDir(t *testing.T) {
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

// TestSecondaryInstanceOpenErrors: the secondary directory must be given and be
// another directory; the database must exist; TryCatchUpWithPrimary is
// refused on a DB that is not a secondary.
func TestSecondaryInstanceOpenErrors(t *testing.T) {
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

	// nil options: the OS file system and the defaults.
	root := testdir.New(t)
	dir := vfs.Default.PathJoin(root, "db")
	primary, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	must(t, primary.Put([]byte("a"), []byte("1"), nil))
	sec, err := OpenAsSecondary(dir, vfs.Default.PathJoin(root, "sec"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	must(t, primary.Put([]byte("b"), []byte("2"), nil))
	checkAll(t, sec, nil, model{"a": "1"})
	must(t, sec.TryCatchUpWithPrimary())
	checkAll(t, sec, nil, model{"a": "1", "b": "2"})
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

// secondaryBatch returns a random batch for the primary and the change it
// makes to a model: Puts (some values long enough for blob files),
// Deletes, DeleteRanges and, with merges, Merges (StringAppendOperator
// with ','), over keys k0000..k0399.
func secondaryBatch(rng *rand.Rand, db *DB, merges bool) (*Batch, func(model)) {
	key := func() string { return fmt.Sprintf("k%04d", rng.IntN(400)) }
	value := func() string { return fmt.Sprintf("v%d-%s", rng.Uint32(), strings.Repeat("x", rng.IntN(3)*30)) }
	b := db.NewBatch()
	var apply []func(model)
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
			apply = append(apply, func(m model) {
				for k := range m {
					if k >= s && k < e {
						delete(m, k)
					}
				}
			})
		case r < 6:
			k := key()
			b.Delete([]byte(k))
			apply = append(apply, func(m model) { delete(m, k) })
		case r < 9 && merges:
			k, v := key(), fmt.Sprintf("m%d", rng.IntN(100))
			b.Merge([]byte(k), []byte(v))
			apply = append(apply, func(m model) {
				if old, ok := m[k]; ok {
					m[k] = old + "," + v
				} else {
					m[k] = v
				}
			})
		default:
			k, v := key(), value()
			b.Put([]byte(k), []byte(v))
			apply = append(apply, func(m model) { m[k] = v })
		}
	}
	return b, func(m model) {
		for _, f := range apply {
			f(m)
		}
	}
}

// secondaryOp applies one random batch to the primary and the model.
func secondaryOp(rng *rand.Rand, db *DB, m model, merges bool, sync bool) error {
	b, apply := secondaryBatch(rng, db, merges)
	apply(m)
	return db.Write(b, &WriteOptions{Sync: sync})
}

// TestSecondaryInstanceCatchesUp: a primary writes puts, deletes, range deletions,
// blob values and merges while flushes, compactions and MANIFEST switches
// run, and is closed and reopened at times (OS and Mem FS); after each
// catch-up the secondary's scans, Gets and MultiGets equal the model, and
// a catch-up with nothing new changes nothing.
func TestSecondaryInstanceCatchesUp(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for _, c := range []struct {
		name          string
		os            bool
		blobs, merges bool
		// mmap: the primary writes its WAL through a mapping and the
		// secondary reads tables and blob files through mappings.
		mmap bool
		// writeSep separates values at commit: the secondary reads them
		// from the primary's unfinished blob files as it replays WALs.
		writeSep bool
	}{
		{"mem", false, false, false, false, false},
		{"mem-blobs-merges", false, true, true, false, false},
		{"os-blobs", true, true, false, false, false},
		{"os-mmap", true, false, true, true, false},
		{"mem-blob-write-separation-merges", false, true, true, false, true},
		{"os-blob-write-separation", true, true, false, false, true},
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
			po.AllowMmapWrites = c.mmap
			po.EnableBlobWriteSeparation = c.writeSep
			primary, err := Open(dir, po)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { primary.Close() }()
			so := &Options{FS: fs, MergeOperator: po.MergeOperator, AllowMmapReads: c.mmap}
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

// secondaryState reads the whole state a secondary shows through ro: a
// full scan, which must agree with a Get and a MultiGet of every key seen
// and of keys not seen (absent keys must stay absent).
func secondaryState(db *DB, ro *ReadOptions, rng *rand.Rand) (model, error) {
	it := db.NewIterator(ro)
	got := model{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for range 40 {
		keys = append(keys, []byte(fmt.Sprintf("k%04d", rng.IntN(400))))
	}
	keys = append(keys, []byte(counterKey))
	vals, errs := db.MultiGet(keys, ro)
	for i, k := range keys {
		v, err := db.Get(k, ro)
		want, ok := got[string(k)]
		switch {
		case ok && (err != nil || string(v) != want):
			return nil, fmt.Errorf("Get(%q) = %q, %v; the scan saw %q", k, v, err, want)
		case !ok && !errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("Get(%q) = %q, %v; the scan did not see it", k, v, err)
		case ok && (errs[i] != nil || string(vals[i]) != want):
			return nil, fmt.Errorf("MultiGet(%q) = %q, %v; the scan saw %q", k, vals[i], errs[i], want)
		case !ok && !errors.Is(errs[i], ErrNotFound):
			return nil, fmt.Errorf("MultiGet(%q) = %q, %v; the scan did not see it", k, vals[i], errs[i])
		}
	}
	return got, nil
}

// stateCount returns the op number a state's counter key holds (0 for none).
func stateCount(m model) int {
	v, ok := m[counterKey]
	if !ok || len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64([]byte(v)))
}

// TestSecondaryInstanceFollowsWritingPrimary: a primary written by one goroutine
// (random batches, each also putting its op number under counterKey; sync
// writes now and then; flushes and compactions by hand and in the
// background; blob files and merges in one variant) and a secondary
// catching up at random moments. At each catch-up the secondary's state is
// the model after some prefix of the ops, the one its counter names: at
// least every op acknowledged before the call, at most those issued by the
// time it was read, never going back; Gets and MultiGets agree with its
// scan. A snapshot taken at one catch-up still reads its state after the
// next ones.
func TestSecondaryInstanceFollowsWritingPrimary(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for _, c := range []struct {
		name          string
		os            bool
		blobs, merges bool
		mmap          bool // as in TestSecondaryInstanceCatchesUp
	}{
		{"mem", false, false, false, false},
		{"mem-blobs-merges", false, true, true, false},
		{"os-blobs-merges", true, true, true, false},
		{"os-mmap", true, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			var fs vfs.FS = vfs.NewMem()
			dir, sdir := "/db", "/sec"
			if c.os {
				fs = vfs.Default
				root := testdir.New(t)
				dir, sdir = fs.PathJoin(root, "db"), fs.PathJoin(root, "sec")
			}
			po := secondaryTestOptions(fs, c.blobs, c.merges)
			po.AllowMmapWrites = c.mmap
			primary, err := Open(dir, po)
			if err != nil {
				t.Fatal(err)
			}
			defer primary.Close()
			sec, err := OpenAsSecondary(dir, sdir, &Options{FS: fs, MergeOperator: po.MergeOperator, AllowMmapReads: c.mmap})
			if err != nil {
				t.Fatal(err)
			}
			defer sec.Close()

			n := 2000
			if testing.Short() {
				n = 600
			} else if os.Getenv("SHALE_STRESS") == "1" {
				n = 20000
			}
			applies := make([]func(model), n+1)
			var issued, acked, caught atomic.Int64
			defer caught.Store(-1 << 40) // releases a waiting writer when the test stops early
			writerErr := make(chan error, 1)
			wrng := rand.New(rand.NewPCG(seed, 3))
			go func() {
				writerErr <- func() error {
					for i := 1; i <= n; i++ {
						b, apply := secondaryBatch(wrng, primary, c.merges)
						b.Put([]byte(counterKey), encodeCounter(i))
						applies[i] = apply
						issued.Store(int64(i))
						if err := primary.Write(b, &WriteOptions{Sync: wrng.IntN(20) == 0}); err != nil {
							return err
						}
						acked.Store(int64(i))
						if i%10 == 0 {
							time.Sleep(time.Millisecond) // catch-ups in between
						}
						// Every quarter of the ops, wait for a catch-up after
						// it, so that a slow reader (the race detector, a
						// loaded machine) still sees the primary mid-way.
						if q := n / 4; i%q == 0 && i < n {
							for want := caught.Load() + 1; caught.Load() < want && caught.Load() >= 0; {
								time.Sleep(time.Millisecond)
							}
						}
						switch wrng.IntN(300) {
						case 0:
							if err := primary.Flush(); err != nil {
								return err
							}
						case 1:
							if err := primary.CompactRange(nil, nil); err != nil {
								return err
							}
						}
					}
					return nil
				}()
			}()

			// A reader beside the catch-ups: the op number it sees never
			// goes back, and a scan never shows an older one than a Get
			// before it.
			stopReader, readerErr := make(chan struct{}), make(chan error, 1)
			go func() {
				readerErr <- func() error {
					last := 0
					for {
						select {
						case <-stopReader:
							return nil
						default:
						}
						v, err := sec.Get([]byte(counterKey), nil)
						if err != nil && !errors.Is(err, ErrNotFound) {
							return err
						}
						k := stateCount(model{counterKey: string(v)})
						snap := sec.NewSnapshot()
						it := sec.NewIterator(&ReadOptions{Snapshot: snap})
						scanned := 0
						for ok := it.First(); ok; ok = it.Next() {
							if string(it.Key()) == counterKey {
								scanned = stateCount(model{counterKey: string(it.Value())})
							}
						}
						err = errors.Join(it.Err(), it.Close())
						snap.Release()
						if err != nil {
							return err
						}
						if k < last || scanned < k {
							return fmt.Errorf("the reader saw op %d after %d, then a scan at op %d", k, last, scanned)
						}
						last = scanned
						time.Sleep(time.Millisecond)
					}
				}()
			}()
			defer func() {
				close(stopReader)
				if err := <-readerErr; err != nil {
					t.Errorf("seed %d: %v", seed, err)
				}
			}()
			m, at := model{}, 0 // the model after op at
			advance := func(k int) {
				for ; at < k; at++ {
					applies[at+1](m)
				}
				m[counterKey] = string(encodeCounter(k))
				if k == 0 {
					delete(m, counterKey)
				}
			}
			var snap *Snapshot
			var snapModel model
			catchUps := 0
			for done := false; !done; {
				select {
				case err := <-writerErr:
					if err != nil {
						t.Fatal(err)
					}
					done = true
				case <-time.After(time.Duration(rng.IntN(8)) * time.Millisecond):
				}
				before := int(acked.Load())
				if err := sec.TryCatchUpWithPrimary(); err != nil {
					t.Fatalf("seed %d: catch-up %d: %v", seed, catchUps, err)
				}
				catchUps++
				caught.Add(1)
				got, err := secondaryState(sec, nil, rng)
				if err != nil {
					t.Fatalf("seed %d: catch-up %d: %v", seed, catchUps, err)
				}
				k, after := stateCount(got), int(issued.Load())
				if k < before || k > after || k < at {
					t.Fatalf("seed %d: catch-up %d shows op %d; acknowledged before it %d, issued after %d, shown before %d",
						seed, catchUps, k, before, after, at)
				}
				advance(k)
				if !maps.Equal(got, m) {
					t.Fatalf("seed %d: catch-up %d at op %d: the secondary differs from the model:\n%s", seed, catchUps, k, modelDiff(got, m))
				}
				if done && k != n {
					t.Fatalf("seed %d: the last catch-up shows op %d of %d", seed, k, n)
				}
				if snap != nil {
					sgot, err := secondaryState(sec, &ReadOptions{Snapshot: snap}, rng)
					if err != nil {
						t.Fatalf("seed %d: snapshot: %v", seed, err)
					}
					if !maps.Equal(sgot, snapModel) {
						t.Fatalf("seed %d: a snapshot changed after catch-ups:\n%s", seed, modelDiff(sgot, snapModel))
					}
				}
				if rng.IntN(4) == 0 {
					snap.Release()
					snap, snapModel = sec.NewSnapshot(), m.clone()
				}
			}
			snap.Release()
			if catchUps < 3 {
				t.Fatalf("seed %d: only %d catch-ups", seed, catchUps)
			}
			t.Logf("%d catch-ups over %d ops", catchUps, n)
		})
	}
}

// modelDiff lists the keys where two states differ (at most ten).
func modelDiff(got, want model) string {
	var b strings.Builder
	shown := 0
	for _, k := range sortedUnion(got, want) {
		g, gok := got[k]
		w, wok := want[k]
		if gok == wok && g == w {
			continue
		}
		if shown++; shown > 10 {
			b.WriteString("...\n")
			break
		}
		fmt.Fprintf(&b, "%q: got %q (%v), want %q (%v)\n", k, g, gok, w, wok)
	}
	return b.String()
}

func sortedUnion(a, b model) []string {
	u := a.clone()
	for k, v := range b {
		u[k] = v
	}
	return u.sortedKeys(nil, nil)
}

// readDirFiles returns the bytes of every file of dir.
func readDirFiles(t *testing.T, fs vfs.FS, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range listNames(t, fs, dir) {
		out[name] = readFile(t, fs, fs.PathJoin(dir, name))
	}
	return out
}

func appendFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	must(t, f.Close())
}

// TestSecondaryInstanceTornTails builds, from a primary's files at two moments,
// the directory a secondary meets while the primary is in the middle of
// appending a flush's edit to its MANIFEST and a record to its newer WAL:
// the secondary opens on the complete records (the older WAL's writes and
// a prefix of the newer's), and catch-ups pick up the rest of the edit
// (then the older WAL may go, as the primary would remove it) and of the
// WAL once they are appended.
func TestSecondaryInstanceTornTails(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Open("/db", &Options{FS: mem, CreateIfMissing: true, DisableAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	m := model{}
	for i := range 200 {
		k, v := fmt.Sprintf("a%03d", i), fmt.Sprintf("va%d", i)
		must(t, db.Put([]byte(k), []byte(v), nil))
		m[k] = v
	}
	early := readDirFiles(t, mem, "/db")
	must(t, db.Flush())
	for i := range 200 {
		must(t, db.Put([]byte(fmt.Sprintf("b%03d", i)), []byte(fmt.Sprintf("vb%d", i)), nil))
	}
	must(t, db.Close())
	late := readDirFiles(t, mem, "/db")

	var manifest, oldWAL, newWAL string
	for name := range late {
		switch typ, _, _ := base.ParseFilename(name); typ {
		case base.FileTypeManifest:
			manifest = name
		case base.FileTypeLog:
			newWAL = name
		}
	}
	for name := range early {
		if typ, _, _ := base.ParseFilename(name); typ == base.FileTypeLog {
			oldWAL = name
		}
	}
	if e := early[manifest]; e == nil || len(late[manifest]) <= len(e) || string(late[manifest][:len(e)]) != string(e) ||
		oldWAL == "" || newWAL == "" || oldWAL == newWAL {
		t.Fatalf("the flush did not append to the MANIFEST and switch WALs as the test expects: %v / %v", listNames(t, mem, "/db"), oldWAL)
	}
	mem.MkdirAll("/copy", 0o755)
	for name, data := range late {
		switch name {
		case manifest:
			data = data[:len(early[name])+(len(data)-len(early[name]))/2]
		case newWAL:
			data = data[:len(data)/2]
		}
		writeFile(t, mem, "/copy/"+name, data)
	}
	writeFile(t, mem, "/copy/"+oldWAL, early[oldWAL])

	sec, err := OpenAsSecondary("/copy", "/sec", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	prefix := func() int {
		t.Helper()
		got, err := secondaryState(sec, nil, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		j := 0
		for ; j < 200; j++ {
			if _, ok := got[fmt.Sprintf("b%03d", j)]; !ok {
				break
			}
		}
		want := m.clone()
		for i := range j {
			want[fmt.Sprintf("b%03d", i)] = fmt.Sprintf("vb%d", i)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("the secondary is not the first writes and a prefix of %d of the later ones:\n%s", j, modelDiff(got, want))
		}
		return j
	}
	j := prefix()
	if j == 0 || j == 200 {
		t.Fatalf("a WAL cut in half shows %d of its 200 records", j)
	}
	if sec.Metrics().Levels[0].NumFiles != 0 {
		t.Fatal("the flush's table is live before its edit is complete")
	}
	appendFile(t, mem, "/copy/"+manifest, late[manifest][len(early[manifest])+(len(late[manifest])-len(early[manifest]))/2:])
	must(t, sec.TryCatchUpWithPrimary())
	must(t, mem.Remove("/copy/"+oldWAL))
	if got := prefix(); got != j {
		t.Fatalf("the edit moved the WAL prefix from %d to %d", j, got)
	}
	if sec.Metrics().Levels[0].NumFiles != 1 {
		t.Fatal("the flush's table is not live once its edit is complete")
	}
	appendFile(t, mem, "/copy/"+newWAL, late[newWAL][len(late[newWAL])/2:])
	must(t, sec.TryCatchUpWithPrimary())
	if got := prefix(); got != 200 {
		t.Fatalf("the completed WAL shows %d of 200 records", got)
	}
}

// TestSecondaryInstanceRetriesRemovedTable: when the primary compacts away and
// removes tables between the secondary's MANIFEST read and its opening of
// them, the catch-up reads the MANIFEST again and succeeds; when that
// happens at every attempt it returns an error matching os.ErrNotExist
// and keeps its state, and the next catch-up succeeds.
func TestSecondaryInstanceRetriesRemovedTable(t *testing.T) {
	mem := vfs.NewMem()
	primary, err := Open("/db", &Options{FS: mem, CreateIfMissing: true, DisableAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	sec, err := OpenAsSecondary("/db", "/sec", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	m := model{}
	n := 0
	write := func() {
		for range 50 {
			k, v := fmt.Sprintf("k%04d", n*7%300), fmt.Sprintf("v%d", n)
			must(t, primary.Put([]byte(k), []byte(v), nil))
			m[k] = v
			n++
		}
		must(t, primary.Flush())
	}
	// compactAway writes and flushes a table, compacts everything, and
	// waits until a table of the secondary's current version that it has
	// not opened yet is gone.
	compactAway := func(d *DB) {
		v := d.versions.Current()
		var names []string
		for _, level := range v.Levels {
			for _, f := range level {
				if d.fileCache.lookup(fileKindTable, f.FileNum) == nil {
					names = append(names, d.tablePath(f.FileNum))
				}
			}
		}
		v.Unref()
		if len(names) == 0 {
			t.Fatal("the secondary's version holds no table it has not opened")
		}
		write()
		must(t, primary.CompactRange(nil, nil))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			for _, name := range names {
				if _, err := mem.Stat(name); errors.Is(err, os.ErrNotExist) {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no table of %v was removed", names)
			}
		}
	}
	write()
	write()
	hooked := 0
	followerOpenHook = func(d *DB) {
		if hooked++; hooked == 1 {
			compactAway(d)
		}
	}
	defer func() { followerOpenHook = nil }()
	must(t, sec.TryCatchUpWithPrimary())
	if r := sec.follower.retries; r == 0 {
		t.Fatal("the catch-up did not start over")
	}
	checkAll(t, sec, nil, m)

	before := m.clone()
	write()
	followerOpenHook = compactAway
	if err := sec.TryCatchUpWithPrimary(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a catch-up whose tables vanish at every attempt: %v, want os.ErrNotExist", err)
	}
	checkAll(t, sec, nil, before)
	followerOpenHook = nil
	must(t, sec.TryCatchUpWithPrimary())
	checkAll(t, sec, nil, m)
}

// TestSecondaryInstanceCrashClonePrimary: a secondary opened on a crash
// clone of a writing primary (what survives a power loss: synced bytes
// only) shows exactly what a primary reopened on that clone recovers, and
// keeps showing it, caught up, after that primary has recovered (a flush
// of the old WALs or their reuse, a new MANIFEST) and after it writes on.
func TestSecondaryInstanceCrashClonePrimary(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 4))
	mem := vfs.NewMem()
	po := secondaryTestOptions(mem, true, true)
	primary, err := Open("/db", po)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	m := model{}
	crashes := 6
	if testing.Short() {
		crashes = 3
	}
	for c := range crashes {
		for range 100 + rng.IntN(400) {
			if err := secondaryOp(rng, primary, m, true, rng.IntN(4) == 0); err != nil {
				t.Fatal(err)
			}
		}
		clone := mem.CrashClone()
		sec, err := OpenAsSecondary("/db", "/sec", &Options{FS: clone, MergeOperator: po.MergeOperator})
		if err != nil {
			t.Fatalf("seed %d crash %d: %v", seed, c, err)
		}
		seen, err := secondaryState(sec, nil, rng)
		if err != nil {
			t.Fatalf("seed %d crash %d: %v", seed, c, err)
		}
		co := *po
		co.FS = clone
		recovered, err := Open("/db", &co)
		if err != nil {
			t.Fatalf("seed %d crash %d: reopening the clone: %v", seed, c, err)
		}
		want, err := secondaryState(recovered, nil, rng)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(seen, want) {
			t.Fatalf("seed %d crash %d: the secondary on the crashed files differs from their recovery:\n%s", seed, c, modelDiff(seen, want))
		}
		must(t, sec.TryCatchUpWithPrimary())
		if got, err := secondaryState(sec, nil, rng); err != nil || !maps.Equal(got, want) {
			t.Fatalf("seed %d crash %d: after the recovery the secondary shows (%v)\n%s", seed, c, err, modelDiff(got, want))
		}
		b := recovered.NewBatch()
		b.Put([]byte("after-recovery"), []byte(fmt.Sprint(c)))
		must(t, recovered.Write(b, nil))
		must(t, recovered.Flush())
		want["after-recovery"] = fmt.Sprint(c)
		must(t, sec.TryCatchUpWithPrimary())
		checkAll(t, sec, nil, want)
		must(t, sec.Close())
		must(t, recovered.Close())
	}
}

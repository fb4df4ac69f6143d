package shale

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
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
	{"blob-write-separation", setBlobWriteSeparationTestOptions, nil},
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

// TestCheckpointDuringConcurrentWrites takes checkpoints while writers run
// and flushes, compactions and MANIFEST rotations (every 1 KiB) go on, and
// checks each against what was acknowledged before its call: every write
// acknowledged before is there, each writer's writes form a prefix of what
// it wrote, and every value is the one written.
func TestCheckpointDuringConcurrentWrites(t *testing.T) {
	for _, v := range checkpointVariants[:2] {
		t.Run(v.name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := testOptions(fs)
			v.set(opts)
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			const writers = 3
			var acked [writers]atomic.Int64 // writes acknowledged so far
			stop := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for s := int64(0); ; s++ {
						select {
						case <-stop:
							return
						default:
						}
						wo := &WriteOptions{Sync: s%10 == 0}
						if err := d.Put(checkpointWriterKey(w, s), checkpointWriterValue(w, s), wo); err != nil {
							errs <- err
							return
						}
						acked[w].Store(s + 1)
					}
				}()
			}
			checkpoints := 6
			if testing.Short() {
				checkpoints = 3
			}
			for i := range checkpoints {
				time.Sleep(20 * time.Millisecond)
				var before [writers]int64
				for w := range writers {
					before[w] = acked[w].Load()
				}
				dir := fmt.Sprintf("/cp%d", i)
				if err := d.Checkpoint(dir); err != nil {
					t.Fatal(err)
				}
				ro := &Options{FS: fs}
				c, err := OpenForReadOnly(dir, ro)
				if err != nil {
					t.Fatal(err)
				}
				got := dbContents(t, c, nil)
				must(t, c.Close())
				counts, last := [writers]int64{}, [writers]int64{-1, -1, -1}
				for k, val := range got {
					var w int
					var s int64
					if _, err := fmt.Sscanf(k, "w%d-%d", &w, &s); err != nil || w < 0 || w >= writers {
						t.Fatalf("%s holds a key no writer wrote: %q", dir, k)
					}
					if want := string(checkpointWriterValue(w, s)); val != want {
						t.Fatalf("%s: key %q = %q, want %q", dir, k, val, want)
					}
					counts[w]++
					last[w] = max(last[w], s)
				}
				for w := range writers {
					// A prefix: keys 0..counts[w]-1, each once, so the
					// newest is the count less one.
					if last[w] != counts[w]-1 {
						t.Fatalf("%s: writer %d's %d writes, up to its write %d, are not a prefix of what it wrote",
							dir, w, counts[w], last[w])
					}
					if counts[w] < before[w] {
						t.Fatalf("%s: writer %d had %d writes acknowledged before the call, the checkpoint holds %d",
							dir, w, before[w], counts[w])
					}
				}
			}
			close(stop)
			wg.Wait()
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
		})
	}
}

func checkpointWriterKey(w int, s int64) []byte { return fmt.Appendf(nil, "w%d-%08d", w, s) }

func checkpointWriterValue(w int, s int64) []byte {
	return fmt.Appendf(nil, "%d-%d-%0150d", w, s, s) // past MinBlobSize
}

// TestCheckpointCrash crashes (MemFS crash clone: every unsynced byte and
// directory entry dropped) after every mutation of a checkpoint, and checks
// each crash: the source DB opens with every write it acknowledged; the
// checkpoint directory is either absent or complete (opens and holds those
// writes); a left-over staging directory either does not open or is
// complete.
func TestCheckpointCrash(t *testing.T) {
	for _, v := range checkpointVariants[:2] {
		t.Run(v.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var (
				mu      sync.Mutex
				clones  []*vfs.MemFS
				what    []string
				cloning atomic.Bool
			)
			cfs := errorfs.NewCrashPointFS(mem, func(m errorfs.Mutation) {
				if cloning.Load() {
					mu.Lock()
					clones = append(clones, mem.CrashClone())
					what = append(what, m.String())
					mu.Unlock()
				}
			})
			opts := testOptions(cfs)
			opts.Logger = discardLogger()
			v.set(opts)
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			writeCheckpointWorkload(t, d, 0, 2000)
			must(t, d.Flush())
			// The WAL's writes, synced: a crash keeps them in the source.
			for i := range 50 {
				must(t, d.Put(fmt.Appendf(nil, "s%03d", i), []byte("synced"), &WriteOptions{Sync: true}))
			}
			must(t, d.WaitForCompact(nil))
			want := dbContents(t, d, nil)
			cloning.Store(true)
			if err := d.Checkpoint("/cp"); err != nil {
				t.Fatal(err)
			}
			cloning.Store(false)
			must(t, d.Close())
			if len(clones) < 10 {
				t.Fatalf("only %d mutations during the checkpoint", len(clones))
			}
			complete := 0
			for i, clone := range clones {
				where := fmt.Sprintf("crash after %s (%d of %d)", what[i], i+1, len(clones))
				check := func(dir string, mustOpen bool) bool {
					o := testOptions(clone)
					v.set(o)
					o.CreateIfMissing = false
					o.Logger = discardLogger()
					c, err := Open(dir, o)
					if err != nil {
						if mustOpen {
							t.Fatalf("%s: opening %s: %v", where, dir, err)
						}
						return false
					}
					defer c.Close()
					if diff := diffContents(dbContents(t, c, nil), want); diff != "" {
						t.Fatalf("%s: %s opens but differs:\n%s", where, dir, diff)
					}
					return true
				}
				check("/db", true)
				if _, err := clone.Stat("/cp"); err == nil {
					check("/cp", true)
					complete++
				}
				if _, err := clone.Stat("/cp.tmp"); err == nil && !check("/cp.tmp", false) {
					// Not even CreateIfMissing makes a database of a staging
					// directory holding tables or WALs.
					dbFiles := false
					for _, name := range listNames(t, clone, "/cp.tmp") {
						ft, _, ok := base.ParseFilename(name)
						dbFiles = dbFiles || ok && (ft == base.FileTypeTable || ft == base.FileTypeLog)
					}
					o := testOptions(clone)
					o.Logger = discardLogger()
					if c, err := Open("/cp.tmp", o); dbFiles && err == nil {
						c.Close()
						t.Fatalf("%s: Open with CreateIfMissing made a database of the staging directory", where)
					} else if err == nil {
						c.Close()
					}
				}
			}
			if complete == 0 {
				t.Fatal("no crash point left a complete checkpoint, not even the last")
			}
		})
	}
}

// TestCheckpointFaults fails one file operation of a checkpoint at a time
// (errorfs: links, creates, writes, syncs, the renames, reads of the
// MANIFEST and WAL) and checks that Checkpoint returns the error, leaves
// neither the checkpoint nor its staging directory behind, and that the
// source DB is unharmed and a retry succeeds.
func TestCheckpointFaults(t *testing.T) {
	cases := []struct {
		name string
		rule errorfs.Rule
	}{
		{"link", errorfs.Rule{Op: errorfs.OpLink, PathContains: "/cp", Nth: 2}},
		{"create", errorfs.Rule{Op: errorfs.OpCreate, PathContains: "/cp", PathPattern: "MANIFEST-*"}},
		{"write-enospc", errorfs.Rule{Op: errorfs.OpWrite, PathContains: "/cp", PathPattern: "*.log", NoSpace: true}},
		{"sync", errorfs.Rule{Op: errorfs.OpSync, PathContains: "/cp", PathPattern: "OPTIONS-*"}},
		{"current-temp-sync", errorfs.Rule{Op: errorfs.OpSync, PathContains: "/cp", PathPattern: "*.dbtmp"}},
		{"current-rename", errorfs.Rule{Op: errorfs.OpRename, PathPattern: "CURRENT", PathContains: "/cp"}},
		{"dir-rename", errorfs.Rule{Op: errorfs.OpRename, PathPattern: "cp"}},
		{"read-manifest", errorfs.Rule{Op: errorfs.OpRead, PathContains: "/db/", PathPattern: "MANIFEST-*"}},
		{"read-wal", errorfs.Rule{Op: errorfs.OpRead, PathContains: "/db/", PathPattern: "*.log"}},
		{"open-wal", errorfs.Rule{Op: errorfs.OpOpen, PathContains: "/db/", PathPattern: "*.log"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs, _, d := openFaultDB(t, mem, setBlobTestOptions)
			defer d.Close()
			writeCheckpointWorkload(t, d, 0, 2000)
			must(t, d.Flush())
			writeCheckpointWorkload(t, d, 2000, 100)
			must(t, d.WaitForCompact(nil))
			want := dbContents(t, d, nil)
			ffs.AddRule(c.rule)
			err := d.Checkpoint("/cp")
			if err == nil || ffs.Injected() == 0 {
				t.Fatalf("Checkpoint with a failing %s: err %v after %d injected faults, want the fault's error", c.name, err, ffs.Injected())
			}
			if !errors.Is(err, errorfs.ErrInjected) && !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Checkpoint's error does not wrap the injected fault: %v", err)
			}
			ffs.ClearRules()
			for _, dir := range []string{"/cp", "/cp.tmp"} {
				if _, err := mem.Stat(dir); err == nil {
					t.Fatalf("a failed Checkpoint left %s: %v", dir, listNames(t, mem, dir))
				}
			}
			if diff := diffContents(dbContents(t, d, nil), want); diff != "" {
				t.Fatalf("the source after a failed Checkpoint:\n%s", diff)
			}
			must(t, d.VerifyChecksum())
			must(t, d.Checkpoint("/cp"))
			c, err := OpenForReadOnly("/cp", &Options{FS: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if diff := diffContents(dbContents(t, c, nil), want); diff != "" {
				t.Fatalf("the checkpoint retried after a fault:\n%s", diff)
			}
		})
	}
}

// TestModelCheckpoint is TestModel with opCheckpoint among the operations:
// each checkpoint, opened read-only or read-write, must scan exactly as the
// model's latest state does; under blob files, merges, writes that skip
// the WAL or reach it through the background writer, and AsyncIO reads.
func TestModelCheckpoint(t *testing.T) {
	ops := bySize(3000, 1500, 10000)
	variants := []struct {
		name string
		set  func(*Options)
		cfg  dbRunConfig
	}{
		{"base", func(*Options) {}, dbRunConfig{}},
		{"blob-files", setBlobTestOptions, dbRunConfig{}},
		{"merges-async-io", func(o *Options) { o.MergeOperator = StringAppendOperator(',') },
			dbRunConfig{merge: StringAppendOperator(','), asyncIO: true}},
		{"disable-wal", func(*Options) {}, dbRunConfig{disableWAL: true}},
		{"wal-background-writes", func(o *Options) { o.WALBackgroundWrites = true }, dbRunConfig{}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 5), func(t *testing.T, seed uint64) {
				cfg := v.cfg
				cfg.checkpoints = true
				runModelWith(t, seed, ops, cfg, v.set)
			})
		})
	}
}

// TestMetamorphicCheckpoint is TestMetamorphic with opCheckpoint among the
// operations, under option sets that change which files a checkpoint
// carries and how (WAL modes, blob files read with AsyncIO, the OS file
// system with real hard links, direct IO, a WAL written through a mapping): every set's checkpoints
// must scan alike, and as the model.
func TestMetamorphicCheckpoint(t *testing.T) {
	n := bySize(1000, 500, 4000)
	names := map[string]bool{
		"base": true, "sync-never": true, "disable-wal": true, "wal-background-writes": true,
		"blob-files-async-io": true, "osfs": true, "osfs-mmap-writes": true, "osfs-blob-files-direct": true,
	}
	sets := metamorphicSetsNamed(t, names)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.checkpoints = true
		ops := generateOpsWith(g, n)
		if !slices.ContainsFunc(ops, func(op modelOp) bool { return op.kind == opCheckpoint }) {
			t.Fatal("the sequence holds no checkpoint")
		}
		runMetamorphicOps(t, seed, ops, sets)
	})
}

// TestCheckpointLinksOnOSFS checkpoints a database on the OS file system:
// its tables and blob files are hard-linked, the rest copied, and the
// checkpoint opens with the same contents.
func TestCheckpointLinksOnOSFS(t *testing.T) {
	dir := testdir.New(t)
	opts := testOptions(vfs.Default)
	setBlobTestOptions(opts)
	d, err := Open(vfs.Default.PathJoin(dir, "db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	writeCheckpointWorkload(t, d, 0, 1500)
	must(t, d.Flush())
	writeCheckpointWorkload(t, d, 1500, 100)
	want := dbContents(t, d, nil)
	cp := vfs.Default.PathJoin(dir, "cp")
	stats, err := d.CheckpointWithStats(cp)
	if err != nil {
		t.Fatal(err)
	}
	tables, blobs := 0, 0
	for _, name := range listNames(t, vfs.Default, cp) {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeTable {
			tables++
		} else if ok && ft == base.FileTypeBlob {
			blobs++
		}
	}
	if tables == 0 || blobs == 0 || stats.LinkedFiles != tables+blobs {
		t.Fatalf("linked %d files, want the checkpoint's %d tables and %d blob files: %+v", stats.LinkedFiles, tables, blobs, stats)
	}
	if stats.CopiedFiles != stats.Files-stats.LinkedFiles-1 { // CURRENT is written
		t.Fatalf("copied %d files of %d: %+v", stats.CopiedFiles, stats.Files, stats)
	}
	c, err := OpenForReadOnly(cp, &Options{FS: vfs.Default})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if diff := diffContents(dbContents(t, c, nil), want); diff != "" {
		t.Fatalf("checkpoint on the OS file system:\n%s", diff)
	}
}

// TestCheckpointHoldsFileDeletions checks the hold a checkpoint takes on
// obsolete-file deletion: while held, the tables a compaction replaced stay
// on disk (WaitForCompact included); once released, the deletion goroutine
// removes them without another call.
func TestCheckpointHoldsFileDeletions(t *testing.T) {
	fs := vfs.NewMem()
	d := openMemFS(t, fs)
	defer d.Close()
	writeCheckpointWorkload(t, d, 0, 2000)
	must(t, d.Flush())
	must(t, d.WaitForCompact(nil))
	before := listNames(t, fs, "/db")
	release := d.holdFileDeletions()
	release2 := d.holdFileDeletions()
	must(t, d.CompactRange(nil, nil))
	must(t, d.WaitForCompact(nil))
	held := listNames(t, fs, "/db")
	for _, name := range before {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeTable && !slices.Contains(held, name) {
			t.Fatalf("table %s was deleted while deletions were held", name)
		}
	}
	release()
	release() // a second call of one release does nothing
	must(t, d.WaitForCompact(nil))
	if got := listNames(t, fs, "/db"); !slices.Equal(got, held) {
		t.Fatalf("deletions went on with one of two holds released:\nheld:  %v\nafter: %v", held, got)
	}
	// Let the deletion goroutine take every wake-up sent while held (each
	// deferred), so that only the release can wake it now.
	for len(d.obsoleteCh) > 0 {
		time.Sleep(time.Millisecond)
	}
	d.obsoleteMu.Lock()
	d.obsoleteMu.Unlock()
	release2()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gone := 0
		names := listNames(t, fs, "/db")
		for _, name := range before {
			if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeTable && !slices.Contains(names, name) {
				gone++
			}
		}
		if gone > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no table the compaction replaced was deleted after the release: %v", names)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCheckpointConcurrentCalls runs checkpoints at once: into different
// directories all succeed; into one directory exactly one succeeds and the
// others are refused (ErrInvalidArgument) without harming it.
func TestCheckpointConcurrentCalls(t *testing.T) {
	fs := vfs.NewMem()
	d := openMemFS(t, fs)
	defer d.Close()
	writeCheckpointWorkload(t, d, 0, 3000)
	want := dbContents(t, d, nil)
	const n = 4
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := "/same"
			if i < n {
				dir = fmt.Sprintf("/cp%d", i)
			}
			errs[i] = d.Checkpoint(dir)
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case i < n && err != nil:
			t.Fatalf("checkpoint into /cp%d: %v", i, err)
		case i >= n && err == nil:
			ok++
		case i >= n && !errors.Is(err, ErrInvalidArgument):
			t.Fatalf("a second checkpoint into /same: %v, want ErrInvalidArgument", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d checkpoints into /same succeeded, want 1", ok)
	}
	for _, dir := range []string{"/cp0", "/cp1", "/cp2", "/cp3", "/same"} {
		c, err := OpenForReadOnly(dir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffContents(dbContents(t, c, nil), want); diff != "" {
			t.Fatalf("%s:\n%s", dir, diff)
		}
		must(t, c.Close())
	}
}

// noLinkFS hides the Link of the FS it wraps: a file system without hard
// links.
type noLinkFS struct{ vfs.FS }

// TestCheckpointCopiesWithoutLinks checkpoints a database whose file system
// has no hard links: every file is copied, and the copies (of tables and
// blob files too) are whole.
func TestCheckpointCopiesWithoutLinks(t *testing.T) {
	mem := vfs.NewMem()
	opts := testOptions(noLinkFS{mem})
	setBlobTestOptions(opts)
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	writeCheckpointWorkload(t, d, 0, 2000)
	must(t, d.Flush())
	want := dbContents(t, d, nil)
	stats, err := d.CheckpointWithStats("/cp")
	if err != nil {
		t.Fatal(err)
	}
	if stats.LinkedFiles != 0 || stats.CopiedFiles != stats.Files-1 {
		t.Fatalf("without links every file but CURRENT is copied: %+v", stats)
	}
	// Copies, not links: bytes appended to a source table do not show in
	// its copy (the source DB reads nothing past a table's footer).
	tables := 0
	for _, name := range listNames(t, mem, "/cp") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeTable {
			tables++
			before := readFile(t, mem, "/cp/"+name)
			if string(readFile(t, mem, "/db/"+name)) != string(before) {
				t.Fatalf("the copy of %s differs from it", name)
			}
			f, err := mem.OpenReadWrite("/db/" + name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Write([]byte("appended"))
			must(t, errors.Join(err, f.Close()))
			if string(readFile(t, mem, "/cp/"+name)) != string(before) {
				t.Fatalf("a write to /db/%s shows in its copy: a link, not a copy", name)
			}
		}
	}
	if tables == 0 {
		t.Fatal("the checkpoint holds no table")
	}
	c, err := OpenForReadOnly("/cp", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if diff := diffContents(dbContents(t, c, nil), want); diff != "" {
		t.Fatalf("checkpoint made by copies:\n%s", diff)
	}
	must(t, c.VerifyChecksum())
}

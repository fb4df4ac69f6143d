package shale

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// repairTestOptions are the options of the repair tests' databases: blob
// files for values of 100 bytes and more, a merge operator, and no
// automatic compactions, so that the LSM shape is the test's.
func repairTestOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, CreateIfMissing: true, EnableBlobFiles: true, MinBlobSize: 100,
		MergeOperator: StringAppendOperator(","), DisableAutoCompactions: true}
}

// buildRepairTestDB writes a database with tables in L0 and the last level
// (k's old value below, its new one above), blob values, merges, a range
// deletion, a point deletion, and writes left in the WAL. It returns what a
// reader sees.
func buildRepairTestDB(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	db, err := Open(dir, repairTestOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Put([]byte("a"), []byte("a-old"), nil))
	must(db.Put([]byte("k"), []byte("k-old"), nil))
	must(db.Flush())
	must(db.CompactRange(nil, nil)) // to the last level
	must(db.Put([]byte("k"), []byte("k-new"), nil))
	must(db.Flush())
	for i := range 60 {
		v := fmt.Sprintf("v%02d", i)
		if i%2 == 0 {
			v += strings.Repeat("b", 120) // to a blob file
		}
		must(db.Put(fmt.Appendf(nil, "p%02d", i), []byte(v), nil))
	}
	must(db.Merge([]byte("m"), []byte("1"), nil))
	must(db.Flush())
	must(db.Merge([]byte("m"), []byte("2"), nil))
	must(db.DeleteRange([]byte("p10"), []byte("p20"), nil))
	must(db.Delete([]byte("p30"), nil))
	must(db.Put([]byte("p31"), []byte(strings.Repeat("n", 150)), nil))
	must(db.Flush())
	must(db.Put([]byte("p32"), []byte("in the WAL"), nil))
	must(db.Merge([]byte("m"), []byte("3"), nil))

	want := map[string]string{}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		want[string(it.Key())] = string(it.Value())
	}
	must(it.Close())
	must(db.Close())
	if want["k"] != "k-new" || want["m"] != "1,2,3" || want["p32"] != "in the WAL" {
		t.Fatalf("fixture: %v", want)
	}
	return want
}

// checkRepairedDB opens dir and checks that Get and an iterator see
// exactly want.
func checkRepairedDB(t *testing.T, fs vfs.FS, dir string, want map[string]string) {
	t.Helper()
	o := repairTestOptions(fs)
	o.CreateIfMissing = false
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k, v := range want {
		got, err := db.Get([]byte(k), nil)
		if err != nil || string(got) != v {
			t.Errorf("Get(%q) = %q, %v; want %q", k, got, err, v)
		}
	}
	it := db.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if v, ok := want[string(it.Key())]; !ok || v != string(it.Value()) {
			t.Errorf("iterator: %q = %q, want %q (present %v)", it.Key(), it.Value(), v, ok)
		}
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("iterator saw %d keys, want %d", n, len(want))
	}
}

// TestRepairRebuildsLostOrDamagedManifest removes, or damages, the MANIFEST
// of a database with tables on two levels, blob files, merges, range and
// point deletions and unflushed writes; RepairDB keeps every table and blob
// file and replays the WAL, so that every key reads its newest value by Get
// and by iterator.
func TestRepairRebuildsLostOrDamagedManifest(t *testing.T) {
	for _, damage := range []string{"removed", "damaged", "current-removed"} {
		t.Run(damage, func(t *testing.T) {
			fs := vfs.NewMem()
			want := buildRepairTestDB(t, fs, "db")
			manifestName := "db/" + findFile(t, fs, "db", base.FileTypeManifest)
			switch damage {
			case "removed":
				if err := fs.Remove(manifestName); err != nil {
					t.Fatal(err)
				}
			case "damaged":
				b := readFile(t, fs, manifestName)
				for i := 40; i < len(b); i += 7 {
					b[i] ^= 0x5a
				}
				writeFile(t, fs, manifestName, b)
			case "current-removed":
				if err := fs.Remove("db/CURRENT"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Open("db", repairTestOptions(fs)); err == nil {
				t.Fatal("the damaged database opened before the repair")
			}
			rep, err := Repair("db", repairTestOptions(fs))
			if err != nil {
				t.Fatalf("Repair: %v\n%s", err, rep)
			}
			t.Logf("report:\n%s", rep)
			for _, l := range rep.Lost {
				if !strings.HasPrefix(l.Name, "MANIFEST-") {
					t.Errorf("lost %s: %s", l.Name, l.Reason)
				}
			}
			if len(rep.Tables) != 4 || len(rep.BlobFiles) != 2 || len(rep.WALs) != 1 {
				t.Errorf("report: %d tables, %d blob files, %d WALs; want 4, 2, 1", len(rep.Tables), len(rep.BlobFiles), len(rep.WALs))
			}
			checkRepairedDB(t, fs, "db", want)
			crep, err := Check("db", repairTestOptions(fs))
			if err != nil || !crep.OK() {
				t.Errorf("Check after the repair: %v\n%s", err, crep)
			}
		})
	}
}

// TestRepairMovesUnreadableFilesToLost damages one table and one blob file
// of a database whose key ranges are in separate tables: Repair moves the
// damaged table, the damaged blob file and the table referencing it to
// lost/, reporting the file and offset of each damage, and keeps every key
// of the other tables.
func TestRepairMovesUnreadableFilesToLost(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", repairTestOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var tables, blobs []string
	for _, prefix := range []string{"a", "b", "c"} {
		for i := range 50 {
			k, v := fmt.Sprintf("%s%02d", prefix, i), fmt.Sprintf("%s-value-%02d", prefix, i)
			if prefix == "c" {
				v += strings.Repeat("c", 150) // c's values all in one blob file
			}
			if err := db.Put([]byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		before := map[string]bool{}
		for _, n := range listNames(t, fs, "db") {
			before[n] = true
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, n := range listNames(t, fs, "db") {
			if !before[n] && strings.HasSuffix(n, ".sst") {
				tables = append(tables, n)
			}
			if !before[n] && strings.HasSuffix(n, ".blob") {
				blobs = append(blobs, n)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 3 || len(blobs) != 1 {
		t.Fatalf("fixture: tables %v blob files %v", tables, blobs)
	}
	flip := func(name string, off int) {
		b := readFile(t, fs, "db/"+name)
		b[off] ^= 0xff
		writeFile(t, fs, "db/"+name, b)
	}
	flip(tables[1], 40) // b's table, inside its first data block
	flip(blobs[0], 100) // c's blob file, inside a record
	rep, err := Repair("db", repairTestOptions(fs))
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	t.Logf("report:\n%s", rep)
	lost := map[string]string{}
	for _, l := range rep.Lost {
		lost[l.Name] = l.Reason
	}
	for _, name := range []string{tables[1], blobs[0]} {
		r, ok := lost[name]
		if !ok || !strings.Contains(r, name) || !strings.Contains(r, "offset") {
			t.Errorf("%s: lost reason %q, want one naming the file and offset", name, r)
		}
		if _, err := fs.Stat("db/lost/" + name); err != nil {
			t.Errorf("%s is not in lost/: %v", name, err)
		}
	}
	if r := lost[tables[2]]; !strings.Contains(r, blobs[0]) {
		t.Errorf("%s (referencing the damaged blob file): lost reason %q", tables[2], r)
	}
	if len(rep.Tables) != 1 || rep.Tables[0] != tables[0] {
		t.Errorf("kept tables %v, want [%s]", rep.Tables, tables[0])
	}
	for k := range want {
		if k[0] != 'a' {
			delete(want, k)
		}
	}
	checkRepairedDB(t, fs, "db", want)
}

// TestRepairRefusesWhatIsNoDatabase: an empty or missing directory is not
// repaired into a database.
func TestRepairRefusesWhatIsNoDatabase(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair("empty", &Options{FS: fs}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Repair of an empty directory: %v, want ErrInvalidArgument", err)
	}
	if names := listNames(t, fs, "empty"); len(names) > 1 { // LOCK at most
		t.Errorf("Repair of an empty directory left %v", names)
	}
	if _, err := Repair("missing", &Options{FS: fs}); err == nil {
		t.Error("Repair of a missing directory succeeded")
	}
}

// writeRepairTestTable writes a table of entries (key, seqnum, kind, value)
// in internal key order.
func writeRepairTestTable(t *testing.T, fs vfs.FS, name string, entries ...base.InternalKey) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, name, sstable.WriterOptions{})
	for _, k := range entries {
		if err := w.Add(k, append([]byte(string(k.UserKey)+"@"), byte('0'+k.SeqNum()))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRepairCompactsInterleavedTables gives Repair two tables whose seqnum
// ranges interleave over a shared key, as tables from different levels
// can: 000005 holds k@2 (and j@5), 000006 the newer k@3. In L0, ordered by
// largest seqnum, 000005 would be read first and Get would return k's old
// value; Repair sees the interleaving and compacts.
func TestRepairCompactsInterleavedTables(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	set := func(k string, seq base.SeqNum) base.InternalKey {
		return base.MakeInternalKey([]byte(k), seq, base.KindSet)
	}
	writeRepairTestTable(t, fs, "db/000005.sst", set("a", 1), set("j", 5), set("k", 2))
	writeRepairTestTable(t, fs, "db/000006.sst", set("k", 3))
	rep, err := Repair("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Compacted || len(rep.Tables) != 2 || len(rep.Lost) != 0 {
		t.Errorf("report:\n%s", rep)
	}
	checkRepairedDB(t, fs, "db", map[string]string{"a": "a@1", "j": "j@5", "k": "k@3"})
}

// TestRepairRandomized writes random puts (some to blob files), deletes,
// range deletions and merges with random flushes and range compactions,
// then removes the MANIFEST and repairs: the database reads exactly what
// it read before, by Get and by iterator. Each seed prints on failure.
func TestRepairRandomized(t *testing.T) {
	seeds, ops := 4, 600
	if testing.Short() {
		seeds, ops = 2, 300 // flushes are slow under -race -short in CI
	}
	if os.Getenv("SHALE_STRESS") != "" {
		seeds = 50
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 17))
			fs := vfs.NewMem()
			db, err := Open("db", repairTestOptions(fs))
			if err != nil {
				t.Fatal(err)
			}
			key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(150)) }
			for i := range ops {
				var err error
				switch r := rng.IntN(100); {
				case r < 55:
					v := fmt.Sprintf("v%d", i)
					if rng.IntN(3) == 0 {
						v += strings.Repeat("b", 100+rng.IntN(100))
					}
					err = db.Put(key(), []byte(v), nil)
				case r < 70:
					err = db.Delete(key(), nil)
				case r < 75:
					a, b := key(), key()
					if string(a) > string(b) {
						a, b = b, a
					}
					err = db.DeleteRange(a, b, nil)
				case r < 90:
					err = db.Merge(key(), fmt.Appendf(nil, "m%d", i), nil)
				case r < 97:
					err = db.Flush()
				default:
					a, b := key(), key()
					if string(a) > string(b) {
						a, b = b, a
					}
					err = db.CompactRange(a, b)
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			want := map[string]string{}
			it := db.NewIterator(nil)
			for ok := it.First(); ok; ok = it.Next() {
				want[string(it.Key())] = string(it.Value())
			}
			if err := errors.Join(it.Close(), db.Close()); err != nil {
				t.Fatal(err)
			}
			if err := fs.Remove("db/" + findFile(t, fs, "db", base.FileTypeManifest)); err != nil {
				t.Fatal(err)
			}
			rep, err := Repair("db", repairTestOptions(fs))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Lost) != 0 || len(rep.WALLosses) != 0 {
				t.Fatalf("report:\n%s", rep)
			}
			checkRepairedDB(t, fs, "db", want)
		})
	}
}

// TestModelRepair runs the model test with opRepair among the operations
// (close, remove the MANIFEST, Repair, reopen): after each repair the
// database answers every read as the model does, with blob files, merges
// and a tiny memtable (many tables, on several levels).
func TestModelRepair(t *testing.T) {
	ops := bySize(3000, 1200, 10000)
	variants := []struct {
		name string
		set  func(*Options)
		cfg  dbRunConfig
	}{
		{"base", func(o *Options) {}, dbRunConfig{}},
		{"blob-files-merge-tiny", func(o *Options) {
			setBlobTestOptions(o)
			o.MergeOperator = StringAppendOperator(",")
			o.WriteBufferSize = 4 << 10
			o.TargetFileSizeBase = 4 << 10
		}, dbRunConfig{merge: StringAppendOperator(",")}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				cfg := v.cfg
				cfg.repairs = true
				runModelWith(t, seed, ops, cfg, v.set)
			})
		})
	}
}

// copyMemDir copies the files of dir on from into a new MemFS.
func copyMemDir(t *testing.T, from vfs.FS, dir string) *vfs.MemFS {
	t.Helper()
	to := vfs.NewMem()
	if err := to.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range listNames(t, from, dir) {
		if st, err := from.Stat(from.PathJoin(dir, name)); err != nil || st.IsDir() {
			continue
		}
		writeFile(t, to, to.PathJoin(dir, name), readFile(t, from, from.PathJoin(dir, name)))
	}
	if err := syncDir(to, dir); err != nil { // the copies survive a crash
		t.Fatal(err)
	}
	return to
}

// TestRepairSurvivesIOErrors fails the n-th create, write, sync, rename,
// open or read of a repair of a database whose MANIFEST was removed: the
// repair returns an error or succeeds, never panics, and a second repair
// without faults then yields every key with its value, each merge operand
// applied once (a WAL the failed repair flushed is not replayed again); no
// table or blob file of the original directory ends in lost/ (an IO error
// is not damage).
func TestRepairSurvivesIOErrors(t *testing.T) {
	base0 := vfs.NewMem()
	want := buildRepairTestDB(t, base0, "db")
	if err := base0.Remove("db/" + findFile(t, base0, "db", base.FileTypeManifest)); err != nil {
		t.Fatal(err)
	}
	original := map[string]bool{}
	for _, n := range listNames(t, base0, "db") {
		original[n] = true
	}
	maxN := 12
	if testing.Short() {
		maxN = 4
	}
	injected := 0
	for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename, errorfs.OpOpen, errorfs.OpRead} {
		for n := 1; n <= maxN; n++ {
			mem := copyMemDir(t, base0, "db")
			efs := errorfs.New(mem, 1)
			efs.AddRule(errorfs.Rule{Op: op, Nth: n})
			o := repairTestOptions(efs)
			_, err := Repair("db", o)
			injected += efs.Injected()
			if efs.Injected() == 0 && err != nil {
				t.Fatalf("%s #%d: no fault injected, yet Repair: %v", op, n, err)
			}
			rep, err := Repair("db", repairTestOptions(mem))
			if err != nil {
				t.Fatalf("%s #%d: the second Repair: %v", op, n, err)
			}
			for _, l := range rep.Lost {
				// A WAL whose batches a failed repair flushed goes too.
				if original[l.Name] && !strings.HasPrefix(l.Name, "MANIFEST-") &&
					!(strings.HasSuffix(l.Name, ".log") && strings.Contains(l.Reason, "already in tables")) {
					t.Errorf("%s #%d: %s moved to lost/: %s", op, n, l.Name, l.Reason)
				}
			}
			if len(rep.WALLosses) != 0 {
				t.Errorf("%s #%d: WAL records lost:\n%s", op, n, rep)
			}
			checkRepairedDB(t, mem, "db", want)
		}
	}
	if injected < 6*maxN/2 {
		t.Errorf("only %d faults injected", injected)
	}
}

// TestRepairCrashPoints crashes a repair (a database with blob files,
// merges, a range deletion and a WAL, its MANIFEST removed) after each of
// its durable mutations: repairing the crashed state again yields every
// key with its value, each merge operand applied once.
func TestRepairCrashPoints(t *testing.T) {
	base0 := vfs.NewMem()
	want := buildRepairTestDB(t, base0, "db")
	if err := base0.Remove("db/" + findFile(t, base0, "db", base.FileTypeManifest)); err != nil {
		t.Fatal(err)
	}
	mem := copyMemDir(t, base0, "db")
	var crashed []*vfs.MemFS
	cfs := errorfs.NewCrashPointFS(mem, func(m errorfs.Mutation) {
		if m.Durable() {
			crashed = append(crashed, mem.CrashClone())
		}
	})
	if _, err := Repair("db", repairTestOptions(cfs)); err != nil {
		t.Fatal(err)
	}
	if len(crashed) < 10 {
		t.Fatalf("only %d durable mutations", len(crashed))
	}
	for i, c := range crashed {
		rep, err := Repair("db", repairTestOptions(c))
		if err != nil {
			t.Fatalf("crash point %d: Repair: %v", i, err)
		}
		if len(rep.WALLosses) != 0 {
			t.Errorf("crash point %d: WAL records lost:\n%s", i, rep)
		}
		checkRepairedDB(t, c, "db", want)
		if t.Failed() {
			t.Fatalf("crash point %d of %d", i, len(crashed))
		}
	}
	t.Logf("%d crash points", len(crashed))
}

// TestRepairRecordsMergeOperator: after a repair given the merge operator
// of a database holding operands, opening it under another operator is
// refused, as before the MANIFEST was lost.
func TestRepairRecordsMergeOperator(t *testing.T) {
	fs := vfs.NewMem()
	buildRepairTestDB(t, fs, "db")
	if err := fs.Remove("db/" + findFile(t, fs, "db", base.FileTypeManifest)); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair("db", repairTestOptions(fs)); err != nil {
		t.Fatal(err)
	}
	o := repairTestOptions(fs)
	o.MergeOperator = UInt64AddOperator
	if db, err := Open("db", o); !errors.Is(err, ErrInvalidArgument) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("Open under another merge operator after the repair: %v, want ErrInvalidArgument", err)
	}
}

// TestRepairKeepsIngestedTablesAtTheirGlobalSeqNum ingests a table over
// older data of its keys (so it reads at a global seqnum that only its
// MANIFEST edit records), then repairs: with the MANIFEST still readable
// (CURRENT lost) the table is kept at that seqnum and its values win; with
// the MANIFEST gone the table is moved to lost/ and reported, never read
// at seqnum 0 under the older values it replaced.
func TestRepairKeepsIngestedTablesAtTheirGlobalSeqNum(t *testing.T) {
	for _, damage := range []string{"current-removed", "manifest-removed"} {
		t.Run(damage, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := repairTestOptions(fs)
			opts.EnableBlobFiles = false
			d, err := Open("db", opts)
			must(t, err)
			must(t, d.Put([]byte("a"), []byte("old-a"), nil))
			must(t, d.Put([]byte("b"), []byte("old-b"), nil))
			must(t, d.Flush())
			writeExternal(t, opts, "ext.sst", extEntry{'p', "a", "new-a"}, extEntry{'p', "b", "new-b"})
			must(t, d.IngestExternalFile([]string{"ext.sst"}, nil))
			must(t, d.Put([]byte("c"), []byte("c"), nil))
			must(t, d.Close())
			if damage == "current-removed" {
				must(t, fs.Remove("db/CURRENT"))
			} else {
				must(t, fs.Remove("db/"+findFile(t, fs, "db", base.FileTypeManifest)))
			}
			rep, err := Repair("db", opts)
			if err != nil {
				t.Fatalf("Repair: %v\n%s", err, rep)
			}
			lostIngested := false
			for _, l := range rep.Lost {
				if strings.HasSuffix(l.Name, ".sst") {
					lostIngested = strings.Contains(l.Reason, "global seqnum")
				}
			}
			d, err = Open("db", opts)
			must(t, err)
			defer d.Close()
			want := map[string]string{"a": "new-a", "b": "new-b", "c": "c"}
			if damage == "manifest-removed" {
				if !lostIngested {
					t.Fatalf("the ingested table was not reported lost:\n%s", rep)
				}
				want["a"], want["b"] = "old-a", "old-b"
			} else if lostIngested {
				t.Fatalf("the ingested table was lost though its MANIFEST was readable:\n%s", rep)
			}
			for k, v := range want {
				if got := getString(t, d, k, nil); got != v {
					t.Errorf("%s = %q, want %q\n%s", k, got, v, rep)
				}
			}
		})
	}
}

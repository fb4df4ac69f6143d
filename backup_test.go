package shale

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// backupVariants are the option sets the backup tests run under: plain,
// values in blob files, and merges (the generator's ops include range
// deletions in every one).
var backupVariants = []struct {
	name string
	set  func(*Options)
	cfg  dbRunConfig
}{
	{name: "base", set: func(*Options) {}},
	{name: "blob-files", set: setBlobTestOptions},
	{name: "blob-write-separation", set: setBlobWriteSeparationTestOptions},
	{name: "merge-blob-files", set: func(o *Options) {
		setBlobTestOptions(o)
		o.MergeOperator = crashMergeOperator
	}, cfg: dbRunConfig{merge: crashMergeOperator}},
}

// TestBackupModelRestoresEachBackup runs random operations (puts, deletes,
// range deletions, merges, blob values, flushes, compactions, reopens)
// against the DB and the model, backs the DB up at random points, then
// restores every backup and compares it with the model's state when it was
// made. Later backups must share the tables earlier ones copied.
func TestBackupModelRestoresEachBackup(t *testing.T) {
	ops := bySize(2500, 800, 15000)
	for _, v := range backupVariants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(2, 1, 8), func(t *testing.T, seed uint64) {
				runBackupModel(t, seed, ops, v.cfg, v.set)
			})
		})
	}
}

// TestModelBackup is TestModel with opBackupRestore among the operations:
// the DB backed up (half the time after a flush), the newest three backups
// kept, the newest restored elsewhere and scanned, and the scan compared
// with the model's.
func TestModelBackup(t *testing.T) {
	ops := bySize(2500, 1000, 10000)
	for _, v := range backupVariants {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				cfg := v.cfg
				cfg.backups = true
				runModelWith(t, seed, ops, cfg, v.set)
			})
		})
	}
}

// TestMetamorphicBackup is TestMetamorphic with opBackupRestore among the
// operations, under option sets that change the files a backup copies
// (tables, blob files, WALs written in the background or skipped, the OS
// file system): every restored scan must match the model's.
func TestMetamorphicBackup(t *testing.T) {
	n := bySize(1000, 400, 4000)
	names := map[string]bool{
		"base": true, "3-static-levels": true, "disable-wal": true, "wal-background-writes": true,
		"blob-files-tiny": true, "blob-gc-cutoff-1-force-0.5": true, "osfs-blob-files-direct": true,
	}
	sets := metamorphicSetsNamed(t, names)
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		g := newOpGenerator(seed, modelKeys)
		g.backups = true
		runMetamorphicOps(t, seed, generateOpsWith(g, n), sets)
	})
}

func runBackupModel(t *testing.T, seed uint64, ops int, cfg dbRunConfig, set func(*Options)) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	set(opts)
	d, err := openDBTarget("/db", opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.close() }()
	m := newModelTarget()
	gen := newOpGenerator(seed, modelKeys)
	gen.merge = cfg.merge
	rng := rand.New(rand.NewPCG(seed, 17))
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	states := map[BackupID]model{}
	var got, want []string
	for i := 0; i < ops; i++ {
		op := gen.next()
		got = runOp(d, op, i, got[:0])
		want = runOp(m, op, i, want[:0])
		if j := firstDifference(got, want); j >= 0 {
			t.Fatalf("op %d (%s): the DB and the model differ\n   db: %s\nmodel: %s", i, op, lineAt(got, j), lineAt(want, j))
		}
		if rng.IntN(ops/6) == 0 {
			// Half the backups flush first; the others copy the WALs.
			if err := e.CreateNewBackupFlush(d.db, rng.IntN(2) == 0); err != nil {
				t.Fatalf("op %d: CreateNewBackup: %v", i, err)
			}
			infos := e.GetBackupInfo()
			states[infos[len(infos)-1].ID] = m.cur.clone()
		}
	}
	// Once compactions are done, a backup, and another at once that
	// shares every table and blob file with it: it copies only its private
	// files.
	if err := d.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.CreateNewBackup(d.db); err != nil {
			t.Fatal(err)
		}
		infos := e.GetBackupInfo()
		states[infos[len(infos)-1].ID] = m.cur.clone()
	}
	infos := e.GetBackupInfo()
	last := infos[len(infos)-1]
	var private uint64
	for _, f := range e.metas[last.ID].files {
		if strings.HasPrefix(f.path, "private/") {
			private += uint64(f.size)
		}
	}
	if last.BytesCopied != private {
		t.Fatalf("a backup right after another copied %d bytes, its private files hold %d", last.BytesCopied, private)
	}
	if len(infos) != len(states) {
		t.Fatalf("GetBackupInfo lists %d backups, %d were made", len(infos), len(states))
	}
	for i, bi := range infos {
		if bi.BytesCopied > bi.Size {
			t.Fatalf("backup %d copied %d bytes of %d", bi.ID, bi.BytesCopied, bi.Size)
		}
		if i > 0 && bi.SequenceNumber < infos[i-1].SequenceNumber {
			t.Fatalf("backup %d has sequence %d below backup %d's %d", bi.ID, bi.SequenceNumber, infos[i-1].ID, infos[i-1].SequenceNumber)
		}
	}
	for _, bi := range infos {
		if err := e.VerifyBackup(bi.ID); err != nil {
			t.Fatal(err)
		}
		dir := fmt.Sprintf("/restore-%d", bi.ID)
		if err := e.RestoreDBFromBackup(bi.ID, dir); err != nil {
			t.Fatal(err)
		}
		checkRestoredDB(t, fs, dir, opts, states[bi.ID])
	}
	checkNoBackupGarbage(t, fs, e)
}

// checkRestoredDB opens the DB in dir with opts (on fs) and checks that it
// holds exactly want, and that Check finds nothing wrong.
func checkRestoredDB(t *testing.T, fs vfs.FS, dir string, opts *Options, want model) {
	t.Helper()
	o := *opts
	o.FS = fs
	o.CreateIfMissing = false
	o.EventListener = nil
	db, err := Open(dir, &o)
	if err != nil {
		t.Fatalf("opening the restored DB in %s: %v", dir, err)
	}
	defer db.Close()
	checkAll(t, db, nil, want)
	if err := db.VerifyChecksum(); err != nil {
		t.Fatalf("restored DB in %s: %v", dir, err)
	}
}

// checkNoBackupGarbage checks that every private directory and shared file
// of e's directory (on fs) belongs to a backup, and no temp file is left.
func checkNoBackupGarbage(t *testing.T, fs vfs.FS, e *BackupEngine) {
	t.Helper()
	dir := e.dir
	used := map[string]bool{}
	for _, m := range e.metas {
		for _, f := range m.files {
			used[f.path] = true
		}
	}
	names, err := fs.List(fs.PathJoin(dir, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !used["shared/"+n] {
			t.Errorf("shared/%s is left but no backup uses it", n)
		}
	}
	names, _ = fs.List(fs.PathJoin(dir, "private"))
	for _, n := range names {
		id, ok := parseBackupID(n)
		if _, live := e.metas[id]; !ok || !live {
			t.Errorf("private/%s is left but no backup has that ID", n)
		}
	}
	names, _ = fs.List(fs.PathJoin(dir, "meta"))
	for _, n := range names {
		if _, ok := parseBackupID(n); !ok {
			t.Errorf("meta/%s is left", n)
		}
	}
}

// backupTestDB opens a DB on fs in dir with blob files, merges and small
// tables, and writes n keys (key%05d) starting at from, a few of them as
// merges, with a range deletion: it returns the model of what it wrote
// on top of m.
func backupTestDB(t *testing.T, fs vfs.FS, dir string) (*DB, *Options) {
	t.Helper()
	opts := testOptions(fs)
	setBlobTestOptions(opts)
	opts.MergeOperator = crashMergeOperator
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db, opts
}

// writeBackupTestData writes keys [from, from+n) of round r into db and m,
// some as merges, and deletes a range of earlier keys.
func writeBackupTestData(t *testing.T, db *DB, m model, from, n, r int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		k := fmt.Sprintf("key%05d", i)
		v := fmt.Sprintf("value-%d-round-%d-%s", i, r, strings.Repeat("x", i%40))
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = v
		if i%7 == 0 {
			if err := db.Merge([]byte(k), []byte("m"), nil); err != nil {
				t.Fatal(err)
			}
			m[k] += "|m"
		}
	}
	lo, hi := fmt.Sprintf("key%05d", from/2), fmt.Sprintf("key%05d", from/2+3)
	if err := db.DeleteRange([]byte(lo), []byte(hi), nil); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		if k >= lo && k < hi {
			delete(m, k)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestBackupCrashAtEveryMutation crashes (MemFS crash clones) after every
// mutation of a second CreateNewBackup, then of a DeleteBackup, and checks
// that every clone's earlier backups restore to their data, a completed
// backup is whole, and opening the engine leaves no garbage.
func TestBackupCrashAtEveryMutation(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	defer db.Close()
	m1 := model{}
	writeBackupTestData(t, db, m1, 0, 200, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := m1.clone()
	writeBackupTestData(t, db, m2, 150, 200, 2)
	states := map[BackupID]model{1: m1, 2: m2}

	checkClones := func(t *testing.T, clones []*vfs.MemFS, wantIDs func(i int) [][]BackupID) {
		for i, c := range clones {
			e, err := OpenBackupEngine("/backup", &BackupOptions{FS: c})
			if err != nil {
				t.Fatalf("crash after mutation %d: OpenBackupEngine: %v", i+1, err)
			}
			var ids []BackupID
			for _, bi := range e.GetBackupInfo() {
				ids = append(ids, bi.ID)
			}
			if !slices.ContainsFunc(wantIDs(i), func(w []BackupID) bool { return slices.Equal(w, ids) }) {
				t.Fatalf("crash after mutation %d: backups %v, want one of %v", i+1, ids, wantIDs(i))
			}
			for _, id := range ids {
				dir := fmt.Sprintf("/restore-%d", id)
				if err := e.RestoreDBFromBackup(id, dir); err != nil {
					t.Fatalf("crash after mutation %d: restoring backup %d: %v", i+1, id, err)
				}
				checkRestoredDB(t, c, dir, opts, states[id])
			}
			checkNoBackupGarbage(t, c, e)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}

	var clones []*vfs.MemFS
	crashFS := errorfs.NewCrashPointFS(mem, func(errorfs.Mutation) { clones = append(clones, mem.CrashClone()) })
	e, err = OpenBackupEngine("/backup", &BackupOptions{FS: crashFS})
	if err != nil {
		t.Fatal(err)
	}
	clones = nil // the open's own mutations (none that matter) are not the backup's
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	createClones := clones
	clones = nil
	if err := e.DeleteBackup(1); err != nil {
		t.Fatal(err)
	}
	deleteClones := clones
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d mutations in CreateNewBackup, %d in DeleteBackup", len(createClones), len(deleteClones))
	if len(createClones) < 10 || len(deleteClones) < 2 {
		t.Fatalf("too few mutations: %d, %d", len(createClones), len(deleteClones))
	}
	t.Run("create", func(t *testing.T) {
		checkClones(t, createClones, func(i int) [][]BackupID {
			if i == len(createClones)-1 {
				// The last mutation syncs meta/: the backup is durable.
				return [][]BackupID{{1, 2}}
			}
			return [][]BackupID{{1}, {1, 2}}
		})
	})
	t.Run("delete", func(t *testing.T) {
		checkClones(t, deleteClones, func(int) [][]BackupID { return [][]BackupID{{1, 2}, {2}} })
	})
}

// TestBackupErrorAtEachStep fails each mutation of CreateNewBackup in turn
// (errorfs: creates, writes, syncs, renames), and checks that the call
// fails, lists no new backup, leaves no garbage, and that a retry works.
func TestBackupErrorAtEachStep(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	defer db.Close()
	m1 := model{}
	writeBackupTestData(t, db, m1, 0, 150, 1)
	efs := errorfs.New(mem, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: efs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	m2 := m1.clone()
	writeBackupTestData(t, db, m2, 100, 150, 2)
	failures := 0
	for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename, errorfs.OpOpen, errorfs.OpRead} {
		for n := 1; ; n++ {
			efs.AddRule(errorfs.Rule{Op: op, PathContains: "/backup", Nth: n})
			err := e.CreateNewBackup(db)
			injected := efs.Injected()
			efs.ClearRules()
			if err == nil {
				if injected != failures {
					t.Fatalf("%s #%d: an injected failure was not reported", op, n)
				}
				// Past the last such operation: the backup is 2 (or the
				// next ID after retries); delete it for the next op kind.
				infos := e.GetBackupInfo()
				if len(infos) != 2 {
					t.Fatalf("%s #%d: %d backups, want 2", op, n, len(infos))
				}
				if err := e.DeleteBackup(infos[1].ID); err != nil {
					t.Fatal(err)
				}
				break
			}
			failures = injected
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("%s #%d: %v, want the injected error", op, n, err)
			}
			if infos := e.GetBackupInfo(); len(infos) != 1 || infos[0].ID != 1 {
				t.Fatalf("%s #%d: backups %+v after a failed backup", op, n, infos)
			}
		}
	}
	if failures < 20 {
		t.Fatalf("only %d failures injected", failures)
	}
	t.Logf("%d failures injected", failures)
	// A full disk part way through a shared file (a torn write): ENOSPC,
	// no new backup, no garbage.
	efs.AddRule(errorfs.Rule{Op: errorfs.OpWrite, PathContains: "/backup/shared/", Nth: 2, NoSpace: true, ShortWrite: true})
	err = e.CreateNewBackup(db)
	efs.ClearRules()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("CreateNewBackup on a full disk: %v, want ENOSPC", err)
	}
	if infos := e.GetBackupInfo(); len(infos) != 1 {
		t.Fatalf("backups %+v after a full disk", infos)
	}
	checkNoBackupGarbage(t, mem, e)
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	infos := e.GetBackupInfo()
	for i, want := range []model{m1, m2} {
		dir := fmt.Sprintf("/restore-%d", i)
		if err := e.RestoreDBFromBackup(infos[i].ID, dir); err != nil {
			t.Fatal(err)
		}
		checkRestoredDB(t, mem, dir, opts, want)
	}
}

// TestRestoreErrorAtEachStep fails each mutation of a restore over an
// existing DB in turn: the call fails, the directory then holds no
// openable DB (no CURRENT), and a retry restores the backup.
func TestRestoreErrorAtEachStep(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	m := model{}
	writeBackupTestData(t, db, m, 0, 150, 1)
	efs := errorfs.New(mem, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem, RestoreFS: efs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	writeBackupTestData(t, db, model{}, 100, 100, 2)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	failures := 0
	for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename, errorfs.OpRemove} {
		for n := 1; ; n++ {
			efs.AddRule(errorfs.Rule{Op: op, PathContains: "/db", Nth: n})
			err := e.RestoreDBFromBackup(1, "/db")
			injected := efs.Injected()
			efs.ClearRules()
			if err == nil && injected == failures {
				break
			}
			failures = injected
			if err == nil {
				t.Fatalf("%s #%d: an injected failure was not reported", op, n)
			}
			if _, statErr := mem.Stat("/db/CURRENT"); statErr == nil {
				// A failed removal of the old CURRENT (the old DB is
				// untouched) or a failed sync after the new CURRENT's
				// rename (the restore is all there): either way the DB
				// must open whole. The old DB is the backup's data too,
				// restored by the last round of OpCreate failures.
				if op != errorfs.OpSync && op != errorfs.OpRemove {
					t.Fatalf("%s #%d: restore failed (%v) but left CURRENT", op, n, err)
				}
				checkRestoredDB(t, mem, "/db", opts, m)
			} else if _, openErr := Open("/db", &Options{FS: mem}); openErr == nil {
				t.Fatalf("%s #%d: a failed restore left a DB that opens", op, n)
			}
		}
	}
	t.Logf("%d failures injected", failures)
	if failures < 10 {
		t.Fatalf("only %d failures injected", failures)
	}
	checkRestoredDB(t, mem, "/db", opts, m)
}

// TestBackupDetectsDamage damages each file of a backup in turn (a flipped
// byte, a truncation, removal), and checks that VerifyBackup and
// RestoreDBFromBackup report it as corruption naming the file, and that
// the failed restore leaves the DB already in the target directory alone.
func TestBackupDetectsDamage(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	m := model{}
	writeBackupTestData(t, db, m, 0, 300, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The restore target holds a DB of other data.
	other := model{}
	odb, err := Open("/target", opts)
	if err != nil {
		t.Fatal(err)
	}
	writeBackupTestData(t, odb, other, 1000, 50, 9)
	if err := odb.Close(); err != nil {
		t.Fatal(err)
	}
	meta := e.metas[1]
	kinds := map[string]bool{}
	for _, f := range meta.files {
		kinds[extOf(f.dbName)+strings.SplitN(f.dbName, "-", 2)[0]] = true
	}
	for _, want := range []string{".sst", ".blob", ".log", "MANIFEST", "CURRENT", "OPTIONS"} {
		if !slices.ContainsFunc(slices.Collect(mapKeys(kinds)), func(k string) bool { return strings.Contains(k, want) }) {
			t.Fatalf("the backup has no %s file: %v", want, kinds)
		}
	}
	damages := []struct {
		name string
		do   func(p string, data []byte) error
	}{
		{"flip-first", func(p string, data []byte) error { return rewriteFile(mem, p, flipByte(data, 0)) }},
		{"flip-middle", func(p string, data []byte) error { return rewriteFile(mem, p, flipByte(data, len(data)/2)) }},
		{"flip-last", func(p string, data []byte) error { return rewriteFile(mem, p, flipByte(data, len(data)-1)) }},
		{"truncate", func(p string, data []byte) error { return rewriteFile(mem, p, data[:len(data)-1]) }},
		{"remove", func(p string, data []byte) error { return mem.Remove(p) }},
	}
	for _, f := range meta.files {
		p := e.path(f.path)
		orig, err := vfs.ReadFile(mem, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, dmg := range damages {
			if len(orig) == 0 && dmg.name != "remove" {
				continue // an empty WAL: only its removal is damage
			}
			if err := dmg.do(p, slices.Clone(orig)); err != nil {
				t.Fatal(err)
			}
			for what, call := range map[string]func() error{
				"VerifyBackup": func() error { return e.VerifyBackup(1) },
				"Restore":      func() error { return e.RestoreDBFromBackup(1, "/target") },
			} {
				err := call()
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), p) {
					t.Fatalf("%s of %s: %s: %v, want corruption naming the file", dmg.name, f.path, what, err)
				}
			}
			if err := rewriteFile(mem, p, orig); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkRestoredDB(t, mem, "/target", opts, other)

	// Damaged metadata: the backup is not listed, and Verify and Restore
	// name the metadata file.
	mp := e.path(metaPath(1))
	orig, _ := vfs.ReadFile(mem, mp)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	metaDamages := append(slices.Clone(damages[:len(damages)-1]), struct {
		name string
		do   func(p string, data []byte) error
	}{"other-digit", func(p string, data []byte) error {
		// Still well-formed: only the checksum tells.
		i := bytes.Index(data, []byte("\nsequence ")) + len("\nsequence ")
		data[i] = '0' + (data[i]-'0'+1)%10
		return rewriteFile(mem, p, data)
	}})
	for _, dmg := range metaDamages {
		if err := dmg.do(mp, slices.Clone(orig)); err != nil {
			t.Fatal(err)
		}
		e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(e.GetBackupInfo()); n != 0 {
			t.Fatalf("%s of the metadata: %d backups listed", dmg.name, n)
		}
		if got := e.GetCorruptedBackups(); !slices.Equal(got, []BackupID{1}) {
			t.Fatalf("%s of the metadata: GetCorruptedBackups = %v, want [1]", dmg.name, got)
		}
		for what, err := range map[string]error{"VerifyBackup": e.VerifyBackup(1), "Restore": e.RestoreDBFromBackup(1, "/target")} {
			if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), mp) {
				t.Fatalf("%s of the metadata: %s: %v, want corruption naming it", dmg.name, what, err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rewriteFile(mem, mp, orig); err != nil {
			t.Fatal(err)
		}
	}
	// Whole again, and the shared files survived the damaged metadata
	// (no collection while a metadata file was unreadable).
	e, err = OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.RestoreDBFromBackup(1, "/target"); err != nil {
		t.Fatal(err)
	}
	checkRestoredDB(t, mem, "/target", opts, m)
	// Removed metadata is a deleted backup: not found, its files collected.
	if err := mem.Remove(mp); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.VerifyBackup(1); !errors.Is(err, ErrBackupNotFound) {
		t.Fatalf("VerifyBackup with its metadata removed: %v", err)
	}
	if names, _ := mem.List("/backup/shared"); len(names) != 0 {
		t.Fatalf("shared files of a removed backup left: %v", names)
	}
}

func flipByte(data []byte, i int) []byte {
	data[i] ^= 0x40
	return data
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// rewriteFile replaces name's content with data.
func rewriteFile(fs vfs.FS, name string, data []byte) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestBackupPurgeAndDeleteKeepSharedFiles deletes backups whose shared
// files later backups still use, and checks that exactly the unused shared
// files go and every remaining backup restores.
func TestBackupPurgeAndDeleteKeepSharedFiles(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	defer db.Close()
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := model{}
	states := map[BackupID]model{}
	for r := 1; r <= 4; r++ {
		writeBackupTestData(t, db, m, r*80, 100, r)
		if err := e.CreateNewBackup(db); err != nil {
			t.Fatal(err)
		}
		states[BackupID(r)] = m.clone()
	}
	if err := e.DeleteBackup(2); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteBackup(2); !errors.Is(err, ErrBackupNotFound) {
		t.Fatalf("second DeleteBackup(2): %v, want ErrBackupNotFound", err)
	}
	checkNoBackupGarbage(t, mem, e)
	if err := e.PurgeOldBackups(2); err != nil {
		t.Fatal(err)
	}
	var ids []BackupID
	for _, bi := range e.GetBackupInfo() {
		ids = append(ids, bi.ID)
	}
	if !slices.Equal(ids, []BackupID{3, 4}) {
		t.Fatalf("after PurgeOldBackups(2): backups %v, want [3 4]", ids)
	}
	// Backup 1's first tables are still used by 3 and 4 unless compacted
	// away; either way every shared file left is used and 3 and 4 restore.
	checkNoBackupGarbage(t, mem, e)
	for _, id := range ids {
		if err := e.VerifyBackup(id); err != nil {
			t.Fatal(err)
		}
		dir := fmt.Sprintf("/restore-%d", id)
		if err := e.RestoreDBFromBackup(id, dir); err != nil {
			t.Fatal(err)
		}
		checkRestoredDB(t, mem, dir, opts, states[id])
	}
	if err := e.PurgeOldBackups(0); err != nil {
		t.Fatal(err)
	}
	if names, _ := mem.List("/backup/shared"); len(names) != 0 {
		t.Fatalf("shared files left with no backup: %v", names)
	}
	if err := e.RestoreDBFromLatestBackup("/restore-none"); !errors.Is(err, ErrBackupNotFound) {
		t.Fatalf("RestoreDBFromLatestBackup with no backup: %v", err)
	}
	if err := e.PurgeOldBackups(-1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("PurgeOldBackups(-1): %v", err)
	}
}

// TestBackupRateLimiterCountsBytes checks that every byte a backup and a
// restore write goes through their rate limiters (counted, not timed).
func TestBackupRateLimiterCountsBytes(t *testing.T) {
	mem := vfs.NewMem()
	db, _ := backupTestDB(t, mem, "/db")
	defer db.Close()
	writeBackupTestData(t, db, model{}, 0, 300, 1)
	backupRL, restoreRL := NewGenericRateLimiter(1<<40), NewGenericRateLimiter(1<<40)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem, BackupRateLimiter: backupRL, RestoreRateLimiter: restoreRL})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	writeBackupTestData(t, db, model{}, 300, 30, 2)
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	infos := e.GetBackupInfo()
	copied := infos[0].BytesCopied + infos[1].BytesCopied
	if got := backupRL.TotalBytesThrough(IOPriorityLow); got != int64(copied) || copied == 0 {
		t.Fatalf("backup limiter passed %d bytes, the backups copied %d", got, copied)
	}
	if infos[1].BytesCopied >= infos[1].Size {
		t.Fatalf("the second backup copied %d of %d bytes: nothing shared", infos[1].BytesCopied, infos[1].Size)
	}
	if err := e.RestoreDBFromLatestBackup("/restored"); err != nil {
		t.Fatal(err)
	}
	if got := restoreRL.TotalBytesThrough(IOPriorityTotal); got != int64(infos[1].Size) {
		t.Fatalf("restore limiter passed %d bytes, the backup holds %d", got, infos[1].Size)
	}
	// BackupRateLimit alone makes a limiter of its own.
	e2, err := OpenBackupEngine("/backup2", &BackupOptions{FS: mem, BackupRateLimit: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if e2.backupLimiter == nil || e2.backupLimiter.BytesPerSecond() != 1<<40 {
		t.Fatalf("BackupRateLimit made no limiter")
	}
	if _, err := OpenBackupEngine("/backup3", &BackupOptions{FS: mem, BackupRateLimit: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative BackupRateLimit: %v", err)
	}
}

// TestBackupWithoutSharing checks DisableShareTableFiles: every backup
// copies every file into its own directory, and restores.
func TestBackupWithoutSharing(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	defer db.Close()
	m := model{}
	writeBackupTestData(t, db, m, 0, 200, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem, DisableShareTableFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for range 2 {
		if err := e.CreateNewBackup(db); err != nil {
			t.Fatal(err)
		}
	}
	for _, bi := range e.GetBackupInfo() {
		if bi.BytesCopied != bi.Size {
			t.Fatalf("backup %d copied %d of %d bytes without sharing", bi.ID, bi.BytesCopied, bi.Size)
		}
	}
	if names, _ := mem.List("/backup/shared"); len(names) != 0 {
		t.Fatalf("shared files without sharing: %v", names)
	}
	if err := e.RestoreDBFromBackup(2, "/restored"); err != nil {
		t.Fatal(err)
	}
	checkRestoredDB(t, mem, "/restored", opts, m)
}

// TestRestoreIntoNonEmptyDir restores over an existing DB: its files are
// replaced (files of other names stay), and a restore into the directory
// of an open DB is refused without changing a byte.
func TestRestoreIntoNonEmptyDir(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	m := model{}
	writeBackupTestData(t, db, m, 0, 100, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	// The DB moves on and is open: the restore must refuse.
	later := m.clone()
	writeBackupTestData(t, db, later, 500, 100, 2)
	if err := rewriteFile(mem, "/db/notes.txt", []byte("keep me")); err != nil {
		t.Fatal(err)
	}
	// The WALs the flushes made obsolete are deleted in the background:
	// let that happen before the directory is listed.
	must(t, db.WaitForCompact(nil))
	before, _ := mem.List("/db")
	if err := e.RestoreDBFromBackup(1, "/db"); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("restore into an open DB's directory: %v, want a lock error", err)
	}
	after, _ := mem.List("/db")
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("a refused restore changed the directory: %v -> %v", before, after)
	}
	checkAll(t, db, nil, later)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.RestoreDBFromBackup(1, "/db"); err != nil {
		t.Fatal(err)
	}
	checkRestoredDB(t, mem, "/db", opts, m)
	if data, err := vfs.ReadFile(mem, "/db/notes.txt"); err != nil || string(data) != "keep me" {
		t.Fatalf("notes.txt after restore: %q, %v", data, err)
	}
	if err := e.RestoreDBFromBackup(7, "/db"); !errors.Is(err, ErrBackupNotFound) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("restoring a backup that does not exist: %v", err)
	}
}

// TestBackupEngineLockAndClose: one engine per directory, and a closed
// engine refuses every call.
func TestBackupEngineLockAndClose(t *testing.T) {
	mem := vfs.NewMem()
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem}); err == nil {
		t.Fatal("a second engine opened a locked backup directory")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.VerifyBackup(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("VerifyBackup after Close: %v", err)
	}
	if err := e.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if err := e.CreateNewBackup(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("CreateNewBackup(nil): %v", err)
	}
	// A closed DB is refused.
	db, _ := backupTestDB(t, mem, "/db")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackup(db); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateNewBackup of a closed DB: %v", err)
	}
	if n := len(e.GetBackupInfo()); n != 0 {
		t.Fatalf("%d backups after a refused one", n)
	}
}

// TestBackupOSFileSystem backs up and restores through the OS file system
// (nil options: vfs.Default).
func TestBackupOSFileSystem(t *testing.T) {
	dir := testdir.New(t)
	dbDir, backupDir, restoreDir := dir+"/db", dir+"/backup", dir+"/restored"
	opts := testOptions(vfs.Default)
	setBlobTestOptions(opts)
	opts.MergeOperator = crashMergeOperator
	db, err := Open(dbDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := model{}
	writeBackupTestData(t, db, m, 0, 200, 1)
	e, err := OpenBackupEngine(backupDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.RestoreDBFromLatestBackup(restoreDir); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	checkRestoredDB(t, vfs.Default, restoreDir, opts, m)
}

// TestBackupIncrementalBytes is the figure of docs/decisions.md: the bytes
// a first backup of a DB of 100k keys (100-byte random values, default
// options) copies, and those of a second one after 1% of the keys were
// overwritten, with the change in the WAL (CreateNewBackup) and flushed to
// a table (CreateNewBackupFlush).
func TestBackupIncrementalBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a figure, not a check: skipped under -short")
	}
	mem := vfs.NewMem()
	db, err := Open("/db", &Options{CreateIfMissing: true, FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 100)
	put := func(i int) {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		if err := db.Put(fmt.Appendf(nil, "key%07d", i), val, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(i)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	for range n / 100 {
		put(rng.IntN(n))
	}
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateNewBackupFlush(db, true); err != nil {
		t.Fatal(err)
	}
	infos := e.GetBackupInfo()
	for i, what := range []string{"full", "1% changed, in the WAL", "1% changed, flushed"} {
		bi := infos[i]
		t.Logf("backup %d (%s): %d files, %d bytes, copied %d bytes (%.2f%%)", bi.ID, what, bi.NumFiles, bi.Size, bi.BytesCopied,
			100*float64(bi.BytesCopied)/float64(infos[0].BytesCopied))
	}
	for _, bi := range infos[1:] {
		if bi.BytesCopied*10 > infos[0].BytesCopied {
			t.Fatalf("backup %d copied %d bytes, the first %d", bi.ID, bi.BytesCopied, infos[0].BytesCopied)
		}
	}
}

// TestBackupDuringWrites backs up a DB while a writer goroutine writes
// keys in order: every restored backup holds every key acknowledged before
// its CreateNewBackup began, and the keys it holds are a prefix of the
// writes (nothing torn or out of order).
func TestBackupDuringWrites(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	defer db.Close()
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := db.Put(fmt.Appendf(nil, "w%07d", i), []byte(strings.Repeat("v", 20+i%50)), nil); err != nil {
				done <- err
				return
			}
			acked.Store(int64(i + 1))
		}
	}()
	var before []int64
	for range bySize(6, 3, 20) {
		for acked.Load() < int64(len(before)+1)*200 {
			runtime.Gosched()
		}
		before = append(before, acked.Load())
		if err := e.CreateNewBackup(db); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, bi := range e.GetBackupInfo() {
		dir := fmt.Sprintf("/restore-%d", bi.ID)
		if err := e.RestoreDBFromBackup(bi.ID, dir); err != nil {
			t.Fatal(err)
		}
		o := *opts
		o.CreateIfMissing = false
		rdb, err := Open(dir, &o)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		it := rdb.NewIterator(nil)
		for ok := it.First(); ok; ok = it.Next() {
			if want := fmt.Sprintf("w%07d", n); string(it.Key()) != want {
				t.Fatalf("backup %d: key %q where %q was expected", bi.ID, it.Key(), want)
			}
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
		if n < before[i] {
			t.Fatalf("backup %d holds %d keys, %d were acknowledged before it began", bi.ID, n, before[i])
		}
	}
}

// TestBackupReadOnlyDB backs up a DB opened read-only, whose last writes
// are only in its WAL: the restored DB has them, and the source directory
// is unchanged.
func TestBackupReadOnlyDB(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	m := model{}
	writeBackupTestData(t, db, m, 0, 100, 1)
	for i := range 20 {
		k := fmt.Sprintf("wal-only-%02d", i)
		if err := db.Put([]byte(k), []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		m[k] = "x"
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirListing(t, mem, "/db")
	rodb, err := OpenForReadOnly("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackupFlush(rodb, true); err != nil {
		t.Fatal(err)
	}
	if err := rodb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.RestoreDBFromLatestBackup("/restored"); err != nil {
		t.Fatal(err)
	}
	checkRestoredDB(t, mem, "/restored", opts, m)
	if after := dirListing(t, mem, "/db"); after != before {
		t.Fatalf("backing up a read-only DB changed its directory:\n%s\n->\n%s", before, after)
	}
}

// dirListing lists dir's files with their sizes, sorted.
func dirListing(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fi, err := fs.Stat(fs.PathJoin(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d\n", n, fi.Size())
	}
	return b.String()
}

// TestBackupKilledAtEveryMutation stops CreateNewBackup for good after each
// of its mutations in turn (the goroutine exits there, as a killed process
// would, leaving every byte it wrote), then opens the backup directory
// afresh: backup 1 restores to its data, the interrupted backup is either
// absent or whole, and nothing it left is kept.
func TestBackupKilledAtEveryMutation(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	defer db.Close()
	m1 := model{}
	writeBackupTestData(t, db, m1, 0, 200, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := m1.clone()
	writeBackupTestData(t, db, m2, 150, 200, 2)
	kills := 0
	for k := 1; ; k++ {
		var armed atomic.Bool
		var n atomic.Int64
		killed := false
		crashFS := errorfs.NewCrashPointFS(mem, func(errorfs.Mutation) {
			if armed.Load() && n.Add(1) == int64(k) {
				killed = true
				runtime.Goexit()
			}
		})
		e, err := OpenBackupEngine("/backup", &BackupOptions{FS: crashFS})
		if err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		done := make(chan error, 1)
		go func() {
			defer close(done)
			done <- e.CreateNewBackup(db)
		}()
		err, finished := <-done
		if finished && err != nil {
			t.Fatalf("kill point %d: CreateNewBackup: %v", k, err)
		}
		// The killed engine's lock goes with its process.
		if err := e.lock.Close(); err != nil {
			t.Fatal(err)
		}
		e, err = OpenBackupEngine("/backup", &BackupOptions{FS: mem})
		if err != nil {
			t.Fatalf("kill point %d: %v", k, err)
		}
		infos := e.GetBackupInfo()
		if len(infos) == 0 || infos[0].ID != 1 || len(infos) > 2 || (!killed && len(infos) != 2) {
			t.Fatalf("kill point %d (killed %v): backups %+v", k, killed, infos)
		}
		for i, want := range []model{m1, m2}[:len(infos)] {
			if err := e.RestoreDBFromBackup(infos[i].ID, "/restored"); err != nil {
				t.Fatalf("kill point %d: restoring backup %d: %v", k, infos[i].ID, err)
			}
			checkRestoredDB(t, mem, "/restored", opts, want)
		}
		checkNoBackupGarbage(t, mem, e)
		if len(infos) == 2 {
			if err := e.DeleteBackup(infos[1].ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if !killed {
			break
		}
		kills++
	}
	t.Logf("killed at each of %d mutations", kills)
	if kills < 10 {
		t.Fatalf("only %d kill points", kills)
	}
}

// TestRestoreCrashAtEveryMutation restores a backup over another DB and
// crashes (MemFS crash clones) after every mutation of the restore: each
// clone's directory opens as the old DB whole, as the restored DB whole, or
// not at all; never as a mix.
func TestRestoreCrashAtEveryMutation(t *testing.T) {
	mem := vfs.NewMem()
	db, opts := backupTestDB(t, mem, "/db")
	m := model{}
	writeBackupTestData(t, db, m, 0, 200, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateNewBackup(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	other := model{}
	odb, err := Open("/target", opts)
	if err != nil {
		t.Fatal(err)
	}
	writeBackupTestData(t, odb, other, 1000, 150, 9)
	if err := odb.Close(); err != nil {
		t.Fatal(err)
	}

	var clones []*vfs.MemFS
	crashFS := errorfs.NewCrashPointFS(mem, func(errorfs.Mutation) { clones = append(clones, mem.CrashClone()) })
	e, err = OpenBackupEngine("/backup", &BackupOptions{FS: mem, RestoreFS: crashFS})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.RestoreDBFromBackup(1, "/target"); err != nil {
		t.Fatal(err)
	}
	sawOld, sawNew, sawNone := 0, 0, 0
	for i, c := range clones {
		o := *opts
		o.FS, o.CreateIfMissing = c, false
		rdb, err := Open("/target", &o)
		if err != nil {
			if _, statErr := c.Stat("/target/CURRENT"); statErr == nil {
				t.Fatalf("crash after mutation %d: CURRENT is there but the DB does not open: %v", i+1, err)
			}
			sawNone++
			continue
		}
		got := model{}
		it := rdb.NewIterator(nil)
		for ok := it.First(); ok; ok = it.Next() {
			got[string(it.Key())] = string(it.Value())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
		switch {
		case maps.Equal(got, other):
			sawOld++
		case maps.Equal(got, m):
			sawNew++
		default:
			t.Fatalf("crash after mutation %d: the directory opens as neither the old DB nor the backup (%d keys)", i+1, len(got))
		}
	}
	t.Logf("%d crash points: %d old DB, %d no DB, %d restored DB", len(clones), sawOld, sawNone, sawNew)
	if sawOld == 0 || sawNone == 0 || sawNew == 0 {
		t.Fatalf("crash points saw old %d, none %d, new %d: want each", sawOld, sawNone, sawNew)
	}
}

// TestBackupTwoDBsShareOneDirectory backs up a DB and the DB restored from
// it, both written to after the restore (so they make files of the same
// numbers with different contents), into one backup directory: every
// backup restores to its own DB's data, and identical files are shared.
func TestBackupTwoDBsShareOneDirectory(t *testing.T) {
	mem := vfs.NewMem()
	a, opts := backupTestDB(t, mem, "/a")
	ma := model{}
	writeBackupTestData(t, a, ma, 0, 200, 1)
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.CreateNewBackupFlush(a, true); err != nil {
		t.Fatal(err)
	}
	if err := e.RestoreDBFromBackup(1, "/b"); err != nil {
		t.Fatal(err)
	}
	// a reopened from the MANIFEST the backup copied, as b opens from the
	// copy: both number their next files from the same point, whatever the
	// background work a did before (under Wine its timing made the
	// numbers of the two interleave, and no file number met).
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if a, err = Open("/a", opts); err != nil {
		t.Fatal(err)
	}
	defer func() { a.Close() }()
	b, err := Open("/b", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mb := ma.clone()
	// The same keys, other values: the same file numbers come next in both.
	for r := range 4 {
		writeBackupTestData(t, a, ma, 300+100*r, 100, 10+r)
		writeBackupTestData(t, b, mb, 300+100*r, 100, 20+r)
	}
	for _, db := range []*DB{a, b} {
		if err := e.CreateNewBackupFlush(db, true); err != nil {
			t.Fatal(err)
		}
	}
	infos := e.GetBackupInfo()
	if len(infos) != 3 {
		t.Fatalf("%d backups, want 3", len(infos))
	}
	// b's backup shares what b holds from the restore.
	if infos[2].BytesCopied >= infos[2].Size {
		t.Fatalf("the restored DB's backup copied %d of %d bytes: nothing shared", infos[2].BytesCopied, infos[2].Size)
	}
	sameNum := false
	byNum := map[string]string{}
	for _, id := range []BackupID{2, 3} {
		for _, f := range e.metas[id].files {
			if strings.HasPrefix(f.path, "shared/") {
				if p, ok := byNum[f.dbName]; ok && p != f.path {
					sameNum = true
				}
				byNum[f.dbName] = f.path
			}
		}
	}
	if !sameNum {
		t.Fatal("the two DBs made no file of the same number with other contents: the test shows nothing")
	}
	for i, want := range []model{ma, mb} {
		dir := fmt.Sprintf("/restore-%d", i)
		if err := e.RestoreDBFromBackup(infos[i+1].ID, dir); err != nil {
			t.Fatal(err)
		}
		checkRestoredDB(t, mem, dir, opts, want)
	}
}

// TestBackupChecksFilesAgainstTheManifest checks that a backup compares each
// table and blob file it reads with the whole-file CRC-32C the MANIFEST
// recorded when the file was written: a damaged file is refused (naming it)
// and not backed up; and that a file an earlier backup holds is shared on
// that recorded checksum without being read again.
func TestBackupChecksFilesAgainstTheManifest(t *testing.T) {
	mem := vfs.NewMem()
	db, _ := backupTestDB(t, mem, "/db")
	defer db.Close()
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	writeBackupTestData(t, db, model{}, 0, 200, 1)
	tables := db.GetLiveFilesMetaData()
	if len(tables) == 0 {
		t.Fatal("no table to damage")
	}
	name := tables[0].Name
	flipByteAt(t, mem, "/db/"+name, int64(tables[0].Size/2))
	err = e.CreateNewBackup(db)
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), name) {
		t.Fatalf("backup of a damaged %s: %v, want ErrCorruption naming it", name, err)
	}
	if n := len(e.GetBackupInfo()); n != 0 {
		t.Fatalf("%d backups after a refused one, want 0", n)
	}
	// Undo the damage: the backup succeeds, and a second one reads none of
	// the files the first shared (the damage now made again goes unread).
	flipByteAt(t, mem, "/db/"+name, int64(tables[0].Size/2))
	must(t, e.CreateNewBackup(db))
	flipByteAt(t, mem, "/db/"+name, int64(tables[0].Size/2))
	must(t, e.CreateNewBackup(db))
	infos := e.GetBackupInfo()
	if len(infos) != 2 {
		t.Fatalf("%d backups, want 2", len(infos))
	}
	must(t, e.VerifyBackup(infos[1].ID))
}

// TestCreateBackupReturnsItsID: CreateBackup returns the ID GetBackupInfo
// then lists, after a purge too (IDs are never reused), and 0 with an
// error when it fails.
func TestCreateBackupReturnsItsID(t *testing.T) {
	mem := vfs.NewMem()
	db, _ := backupTestDB(t, mem, "/db")
	defer db.Close()
	e, err := OpenBackupEngine("/backup", &BackupOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := model{}
	var got []BackupID
	for r := 1; r <= 3; r++ {
		writeBackupTestData(t, db, m, r*50, 60, r)
		id, err := e.CreateBackup(db, &CreateBackupOptions{FlushBeforeBackup: r == 2})
		if err != nil {
			t.Fatal(err)
		}
		infos := e.GetBackupInfo()
		if last := infos[len(infos)-1].ID; id != last {
			t.Fatalf("CreateBackup returned %d; GetBackupInfo's newest is %d", id, last)
		}
		got = append(got, id)
		if r == 2 {
			must(t, e.PurgeOldBackups(1))
		}
	}
	if !slices.Equal(got, []BackupID{1, 2, 3}) {
		t.Fatalf("IDs %v, want 1, 2, 3", got)
	}
	if id, err := e.CreateBackup(nil, nil); err == nil || id != 0 {
		t.Fatalf("CreateBackup(nil) = %d, %v; want 0 and an error", id, err)
	}
}

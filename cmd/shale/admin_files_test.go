package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// dbFiles returns the names of dir's files ending in suffix, sorted.
func dbFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// copyDir copies the files of src (no subdirectories) to a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(testdir.New(t), "copy")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// adminReadCase is one run of a read-only verb and what its output must
// contain.
type adminReadCase struct {
	args []string
	has  []string
}

// adminReadCases are the read-only verbs run on adminVerbDB's dir.
func adminReadCases(t *testing.T, dir string) []adminReadCase {
	tables, blobs, wals := dbFiles(t, dir, ".sst"), dbFiles(t, dir, ".blob"), dbFiles(t, dir, ".log")
	if len(tables) != 2 || len(blobs) != 2 || len(wals) != 1 {
		t.Fatalf("fixture files: %v %v %v", tables, blobs, wals)
	}
	path := func(n string) string { return filepath.Join(dir, n) }
	cases := []adminReadCase{
		{args: []string{"idump", "--db", dir}, has: []string{
			"k050 @ 204 : RANGEDEL => k060", "k100 @ 205 : DEL", "m1 @ 202 : MERGE => b",
			"k101 @ 206 : BLOBINDEX => blob file 000009 offset", "k001 @ 2 : SET => v001", "# L6 000005.sst"}},
		{args: []string{"idump", "--db", dir, "--from", "k001", "--to", "k003"}, has: []string{"k001 @ 2 : SET => v001", "k002 @ 3 : SET"}},
		{args: []string{"manifest_dump", "--db", dir}, has: []string{
			"merge operator: StringAppendOperator", "new blob file: 000006:67/", "deleted file: L0 000005",
			"new file: L6 000005:[k000#1,BLOBINDEX-m1#201,SET]", "last seqnum 206"}},
		{args: []string{"manifest_dump", "--db", dir, "--json"}, has: []string{`"new_files"`, `"merge_operator": "StringAppendOperator"`}},
		{args: []string{"list_live_files", "--db", dir}, has: []string{"L0:\n  000008.sst", "L6:\n  000005.sst", "keys=[k000 .. m1]", "blob files:\n  000006.blob"}},
		{args: []string{"list_live_files", "--db", dir, "--json"}, has: []string{`"level": 6`, `"blob_files": [`}},
		{args: []string{"dump_wal", "--walfile", path(wals[0])}, has: []string{"seqnum 207 count 1", "k102 @ 207 : SET => in the WAL", "m2 @ 208 : MERGE => y"}},
		{args: []string{"dump_wal", "--walfile", path(wals[0]), "--header"}, has: []string{"seqnum 208 count 1"}},
		{args: []string{"get_property", "--db", dir, "--merge_operator", "stringappend", "rocksdb.num-files-at-level6"}, has: []string{"1\n"}},
		{args: []string{"get_property", "--db", dir, "--merge_operator", "stringappend", "--json", "rocksdb.estimate-num-keys"}, has: []string{`"name": "rocksdb.estimate-num-keys"`}},
		{args: []string{"dump", "--db", dir, "--merge_operator", "stringappend", "--file", "-"}, has: []string{dumpMagic}},
		{args: []string{"scan", "--db", dir, "--merge_operator", "stringappend", "--from", "m"}, has: []string{"m1 : a,b\nm2 : x,y\n"}},
	}
	for _, tb := range tables {
		cases = append(cases,
			adminReadCase{args: []string{"sst_dump", "--file", path(tb), "--command=scan", "--show_properties"}, has: []string{"properties:", "# entries:", " @ "}},
			adminReadCase{args: []string{"sst_dump", "--file", path(tb), "--command=raw"}, has: []string{"block 0: data offset 0", "metaindex", "footer", "rocksdb.properties"}},
			adminReadCase{args: []string{"sst_dump", "--file", path(tb), "--command=verify"}, has: []string{"every block checksum verified"}},
			adminReadCase{args: []string{"sst_dump", "--file", path(tb), "--command=check"}, has: []string{"as the properties record"}})
	}
	for _, b := range blobs {
		cases = append(cases,
			adminReadCase{args: []string{"sst_dump", "--file", path(b), "--command=scan", "--show_properties"}, has: []string{"blob file properties:", " => "}},
			adminReadCase{args: []string{"sst_dump", "--file", path(b), "--command=raw", "--key_hex"}, has: []string{"record at offset 24 size"}},
			adminReadCase{args: []string{"sst_dump", "--file", path(b), "--command=verify"}, has: []string{"whole-file checksum verified"}},
			adminReadCase{args: []string{"sst_dump", "--file", path(b), "--command=check"}, has: []string{"as the footer records"}})
	}
	return cases
}

// TestAdminReadVerbsOnDatabase runs every read-only ldb and sst_dump verb on
// a database with tables on two levels, blob files, merges, range and
// point deletions and a WAL, and checks what each prints; the --json
// outputs parse, and list_live_files' sizes are the files' sizes.
func TestAdminReadVerbsOnDatabase(t *testing.T) {
	dir, _ := adminVerbDB(t)
	for _, c := range adminReadCases(t, dir) {
		name := strings.Join(c.args, " ")
		out, stderr, err := run(t, c.args...)
		if err != nil {
			t.Errorf("shale %s: %v (stderr %q)", name, err, stderr)
			continue
		}
		for _, h := range c.has {
			if !strings.Contains(out, h) {
				t.Errorf("shale %s printed\n%s\nwant it to contain %q", name, out, h)
			}
		}
	}
	var lf liveFiles
	if err := json.Unmarshal([]byte(mustRun(t, "list_live_files", "--db", dir, "--json")), &lf); err != nil {
		t.Fatal(err)
	}
	if len(lf.Tables) != 2 || len(lf.BlobFiles) != 2 {
		t.Fatalf("list_live_files --json: %+v", lf)
	}
	for _, f := range append([]liveFile{}, lf.Tables...) {
		if st, err := os.Stat(filepath.Join(dir, f.Name)); err != nil || uint64(st.Size()) != f.Size {
			t.Errorf("%s: listed size %d, on disk %v %v", f.Name, f.Size, st, err)
		}
	}
	for _, b := range lf.BlobFiles {
		if st, err := os.Stat(filepath.Join(dir, b.Name)); err != nil || uint64(st.Size()) != b.Size {
			t.Errorf("%s: listed size %d, on disk %v %v", b.Name, b.Size, st, err)
		}
	}
	var md manifestDump
	if err := json.Unmarshal([]byte(mustRun(t, "manifest_dump", "--db", dir, "--json")), &md); err != nil {
		t.Fatal(err)
	}
	if len(md.Edits) != 6 || md.LastSeqno != 206 || len(md.Version.Tables) != 2 {
		t.Errorf("manifest_dump --json: %d edits, last seqno %d, %d tables", len(md.Edits), md.LastSeqno, len(md.Version.Tables))
	}
	if _, _, err := run(t, "get_property", "--db", dir, "--merge_operator", "stringappend", "no.such.property"); err == nil {
		t.Error("get_property of an unknown name succeeded")
	}
	if _, _, err := run(t, "sst_dump", "--file", filepath.Join(dir, "000005.sst"), "--command=bogus"); err == nil || !strings.Contains(err.Error(), "--command") {
		t.Errorf("sst_dump --command=bogus: %v", err)
	}
}

// TestAdminReadVerbsChangeNothing runs every read-only verb and compares
// the name and checksum of every file of the directory before and after
// each; then runs them all again over a file system that refuses every
// write, remove, rename and lock, and counts no attempt.
func TestAdminReadVerbsChangeNothing(t *testing.T) {
	dir, _ := adminVerbDB(t)
	cases := adminReadCases(t, dir)
	for _, c := range cases {
		before := dirState(t, dir)
		if _, _, err := run(t, c.args...); err != nil {
			t.Errorf("shale %s: %v", strings.Join(c.args, " "), err)
		}
		if d := diffStates(before, dirState(t, dir)); d != "" {
			t.Errorf("shale %s changed the directory: %s", strings.Join(c.args, " "), d)
		}
	}
	ffs := errorfs.New(vfs.Default, 1)
	for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename, errorfs.OpRemove,
		errorfs.OpLock, errorfs.OpTruncate, errorfs.OpPreallocate, errorfs.OpStartWriteback} {
		ffs.AddRule(errorfs.Rule{Op: op})
	}
	adminFS = ffs
	defer func() { adminFS = nil }()
	for _, c := range cases {
		if _, _, err := run(t, c.args...); err != nil {
			t.Errorf("shale %s over a refusing file system: %v", strings.Join(c.args, " "), err)
		}
	}
	if n := ffs.Injected(); n != 0 {
		t.Errorf("the read verbs attempted %d writes, removes, renames or locks", n)
	}
}

// TestAdminVerbsReportDamage damages one file of a copy of the database at
// a time (a table's data block, the MANIFEST, a WAL record, a blob file's
// record) and runs every verb on it: the verbs that read the damaged file
// fail with an error naming it and the offset, none panics, and the
// read-only ones change nothing.
func TestAdminVerbsReportDamage(t *testing.T) {
	dir, _ := adminVerbDB(t)
	damages := []struct {
		file string
		off  int
		// failing are the verbs (first argument) that must report it.
		failing []string
	}{
		{file: "000005.sst", off: 40, failing: []string{"idump", "dump", "sst_dump"}},
		{file: "MANIFEST-000001", off: 100, failing: []string{"idump", "dump", "manifest_dump", "list_live_files", "get_property"}},
		{file: dbFiles(t, dir, ".log")[0], off: 10, failing: []string{"dump_wal", "dump"}},
		{file: "000006.blob", off: 100, failing: []string{"dump", "sst_dump"}},
	}
	for _, dm := range damages {
		t.Run(dm.file, func(t *testing.T) {
			cp := copyDir(t, dir)
			p := filepath.Join(cp, dm.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[dm.off] ^= 0xff
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, c := range adminReadCases(t, cp) {
				name := strings.Join(c.args, " ")
				reads := !strings.HasPrefix(c.args[0], "sst_dump") && !strings.HasPrefix(c.args[0], "dump_wal") ||
					slices.ContainsFunc(c.args, func(a string) bool { return strings.HasSuffix(a, dm.file) })
				before := dirState(t, cp)
				_, _, err := run(t, c.args...)
				if reads && slices.Contains(dm.failing, c.args[0]) {
					if err == nil {
						t.Errorf("shale %s on a damaged %s: no error", name, dm.file)
					} else if msg := cliMessage(err); !strings.Contains(msg, dm.file) || !strings.Contains(msg, "offset") {
						t.Errorf("shale %s: %q does not name %s and the offset", name, msg, dm.file)
					}
				}
				if d := diffStates(before, dirState(t, cp)); d != "" {
					t.Errorf("shale %s changed the damaged directory: %s", name, d)
				}
			}
			// The tool itself, in a process of its own: exit status 1 and
			// the damage on stderr.
			args := []string{dm.failing[0], "--db", cp, "--merge_operator", "stringappend"}
			if dm.failing[0] == "dump_wal" {
				args = []string{"dump_wal", "--walfile", p}
			} else if dm.failing[0] == "dump" {
				args = append(args, "--file", filepath.Join(testdir.New(t), "d"))
			}
			if _, stderr, code := runShaleProcess(t, args...); code != 1 || !strings.HasPrefix(stderr, "shale: ") ||
				!strings.Contains(stderr, dm.file) || !strings.Contains(stderr, "offset") {
				t.Errorf("shale %s in a process: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
			}
			// repair keeps what it can and exits non-zero when it lost
			// something; on a damaged MANIFEST only the MANIFEST is lost.
			out, _, err := run(t, "repair", "--db", cp, "--merge_operator", "stringappend")
			switch {
			case dm.file == "MANIFEST-000001" && err != nil:
				t.Errorf("repair of a damaged MANIFEST: %v\n%s", err, out)
			case dm.file != "MANIFEST-000001" && !errors.Is(err, errRepairLostData):
				t.Errorf("repair with a damaged %s: %v, want errRepairLostData\n%s", dm.file, err, out)
			}
			if strings.HasSuffix(dm.file, ".sst") || strings.HasSuffix(dm.file, ".blob") {
				if !strings.Contains(out, "moved "+dm.file+" to lost/") {
					t.Errorf("repair report does not name %s as lost:\n%s", dm.file, out)
				}
			}
			if _, _, err := run(t, "check", "--db", cp); err != nil {
				t.Errorf("check after repair: %v", err)
			}
		})
	}
}

// TestCompactVerb compacts a range and then everything: the LSM shape
// changes (one table left, in the last level) and what a reader sees does
// not; an inverted range is refused.
func TestCompactVerb(t *testing.T) {
	dir, want := adminVerbDB(t)
	mustRun(t, "compact", "--db", dir, "--merge_operator", "stringappend", "--from", "k000", "--to", "k100")
	mustRun(t, "compact", "--db", dir, "--merge_operator", "stringappend")
	var lf liveFiles
	if err := json.Unmarshal([]byte(mustRun(t, "list_live_files", "--db", dir, "--json")), &lf); err != nil {
		t.Fatal(err)
	}
	if len(lf.Tables) != 1 || lf.Tables[0].Level != 6 {
		t.Errorf("after compact: %+v", lf.Tables)
	}
	got := scanAll(t, dir, "--merge_operator", "stringappend")
	if len(got) != len(want) {
		t.Errorf("after compact: %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("after compact: %q = %q, want %q", k, got[k], v)
		}
	}
	if _, _, err := run(t, "compact", "--db", dir, "--from", "z", "--to", "a"); err == nil {
		t.Error("compact --from z --to a succeeded")
	}
}

// TestDumpWALTornTail cuts the WAL inside its last record, as a crash
// does: dump_wal prints the batches before it, notes the torn tail on
// stderr and succeeds, as Open drops such a tail.
func TestDumpWALTornTail(t *testing.T) {
	dir, _ := adminVerbDB(t)
	wal := filepath.Join(dir, dbFiles(t, dir, ".log")[0])
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wal, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "dump_wal", "--walfile", wal)
	if err != nil || !strings.Contains(out, "k102 @ 207 : SET => in the WAL") || strings.Contains(out, "m2 @ 208") ||
		!strings.Contains(stderr, "torn tail") {
		t.Errorf("dump_wal of a torn WAL: %v\nstdout %s\nstderr %s", err, out, stderr)
	}
}

// TestFileVerbsOnDamagedBytes flips bytes all over each file of a copy of
// the database (a stride through tables and blob files, every byte of the
// MANIFEST and the WAL) and runs the verbs that read that file: each ends
// with output or with an error naming the file, and none panics (a panic
// would end the test binary).
func TestFileVerbsOnDamagedBytes(t *testing.T) {
	dir, _ := adminVerbDB(t)
	cp := copyDir(t, dir)
	stride := 13
	if testing.Short() {
		stride = 31
	}
	runs, failures := 0, 0
	for _, name := range append(append(dbFiles(t, cp, ".sst"), dbFiles(t, cp, ".blob")...), "MANIFEST-000001", dbFiles(t, cp, ".log")[0]) {
		p := filepath.Join(cp, name)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var verbs [][]string
		step := stride
		switch {
		case strings.HasSuffix(name, ".log"):
			verbs, step = [][]string{{"dump_wal", "--walfile", p}}, 1
		case strings.HasPrefix(name, "MANIFEST"):
			verbs, step = [][]string{{"manifest_dump", "--db", cp}, {"list_live_files", "--db", cp, "--json"}}, 1
		default:
			for _, c := range []string{"scan", "raw", "verify", "check"} {
				verbs = append(verbs, []string{"sst_dump", "--file", p, "--command=" + c, "--show_properties"})
			}
		}
		for off := 0; off < len(orig); off += step {
			b := bytes.Clone(orig)
			b[off] ^= 0x41
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range verbs {
				runs++
				if _, _, err := run(t, args...); err != nil {
					failures++
					if msg := cliMessage(err); !strings.Contains(msg, name) {
						t.Errorf("shale %s with byte %d of %s flipped: %q does not name the file", strings.Join(args, " "), off, name, msg)
					}
				}
			}
		}
		if err := os.WriteFile(p, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d runs, %d reported damage", runs, failures)
	if failures < runs/2 {
		t.Errorf("only %d of %d runs on damaged files failed", failures, runs)
	}
}

package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// readVerbDB builds a database with a table, a WAL holding the last writes
// and a LOG, as the read verbs meet them: binKey/binValue are for --hex.
func readVerbDB(t *testing.T) (dir string, binKey, binValue []byte) {
	t.Helper()
	dir = filepath.Join(testdir.New(t), "db")
	binKey, binValue = []byte{0x00, 0xff, '\n'}, []byte{0xde, 0xad, 0x00}
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := db.Put(fmt.Appendf(nil, "k%02d", i), fmt.Appendf(nil, "v%02d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(binKey, binValue, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k05"), []byte("in the WAL"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, binKey, binValue
}

// readVerbCase is one read verb run and what it must print.
type readVerbCase struct {
	args    []string
	out     string // exact stdout; "" with contains
	has     string // stdout must contain this
	missing bool   // get of an absent key: errNotFound
}

func readVerbCases(dir string, binKey, binValue []byte) []readVerbCase {
	var all strings.Builder
	all.WriteString(hex.EncodeToString(binKey) + " : " + hex.EncodeToString(binValue) + "\n")
	for i := range 20 {
		v := fmt.Sprintf("v%02d", i)
		if i == 5 {
			v = "in the WAL"
		}
		fmt.Fprintf(&all, "%s : %s\n", hex.EncodeToString(fmt.Appendf(nil, "k%02d", i)), hex.EncodeToString([]byte(v)))
	}
	return []readVerbCase{
		{args: []string{"get", "--db", dir, "k03"}, out: "v03\n"},
		{args: []string{"get", "--db", dir, "k05"}, out: "in the WAL\n"},
		{args: []string{"get", "--db", dir, "nokey"}, missing: true},
		{args: []string{"get", "--db", dir, "--hex", hex.EncodeToString(binKey)}, out: hex.EncodeToString(binValue) + "\n"},
		{args: []string{"get", "--db", dir, "--hex", "0x0102"}, missing: true},
		{args: []string{"scan", "--db", dir, "--from", "k18"}, out: "k18 : v18\nk19 : v19\n"},
		{args: []string{"scan", "--db", dir, "--reverse", "--limit", "2", "--to", "k06"}, out: "k05 : in the WAL\nk04 : v04\n"},
		{args: []string{"scan", "--db", dir, "--hex"}, out: all.String()},
		{args: []string{"check", "--db", dir}, has: "no damage found"},
	}
}

// runReadVerbs runs every read verb case on dir and fails when one printed
// the wrong thing or changed any file (name or checksum) under dir.
func runReadVerbs(t *testing.T, dir string, binKey, binValue []byte) {
	t.Helper()
	for _, c := range readVerbCases(dir, binKey, binValue) {
		name := strings.Join(c.args, " ")
		before := dirState(t, dir)
		out, stderr, err := run(t, c.args...)
		switch {
		case c.missing:
			if !errors.Is(err, errNotFound) || out != "" {
				t.Errorf("shale %s: out %q err %v, want not found", name, out, err)
			}
		case err != nil:
			t.Errorf("shale %s: %v", name, err)
		case c.out != "" && out != c.out:
			t.Errorf("shale %s printed\n%s\nwant\n%s", name, out, c.out)
		case c.has != "" && !strings.Contains(out, c.has):
			t.Errorf("shale %s printed\n%s\nwant it to contain %q", name, out, c.has)
		}
		if stderr != "" {
			t.Errorf("shale %s wrote to stderr: %q", name, stderr)
		}
		if d := diffStates(before, dirState(t, dir)); d != "" {
			t.Errorf("shale %s changed the directory: %s", name, d)
		}
	}
}

// TestReadVerbsChangeNothing runs get (found and missing keys, with and
// without --hex), scan and check on a database and compares the name and
// checksum of every file before and after each, on a writable directory,
// on a chmod'ed read-only one, and on a file system that refuses every
// write (which root cannot bypass).
func TestReadVerbsChangeNothing(t *testing.T) {
	t.Run("writable", func(t *testing.T) {
		dir, k, v := readVerbDB(t)
		runReadVerbs(t, dir, k, v)
	})
	t.Run("chmod", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("Windows has no read-only directories by mode bits")
		}
		if os.Geteuid() == 0 {
			t.Skip("running as root, which bypasses file permissions; the refusing-fs subtest covers a read-only directory")
		}
		dir, k, v := readVerbDB(t)
		makeReadOnly(t, dir)
		runReadVerbs(t, dir, k, v)
	})
	t.Run("refusing-fs", func(t *testing.T) {
		dir, k, v := readVerbDB(t)
		ffs := errorfs.New(vfs.Default, 1)
		for _, op := range []errorfs.Op{errorfs.OpCreate, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename, errorfs.OpRemove,
			errorfs.OpLock, errorfs.OpTruncate, errorfs.OpPreallocate, errorfs.OpStartWriteback} {
			ffs.AddRule(errorfs.Rule{Op: op})
		}
		adminFS = ffs
		defer func() { adminFS = nil }()
		runReadVerbs(t, dir, k, v)
		if n := ffs.Injected(); n != 0 {
			t.Errorf("the read verbs attempted %d writes, removes, renames or locks", n)
		}
	})
}

// makeReadOnly makes dir's files 0444 and its directories 0555, restoring
// them when t ends so that the directory can be removed.
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		return os.Chmod(path, 0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Chmod(d, 0o755)
		}
	})
}

// TestFailedReadLeavesNothing runs get and scan on directories that hold
// no database: they fail and leave no LOCK, LOG or directory behind.
func TestFailedReadLeavesNothing(t *testing.T) {
	root := testdir.New(t)
	empty := filepath.Join(root, "empty")
	foreign := filepath.Join(root, "foreign")
	missing := filepath.Join(root, "missing")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(foreign, "notes.txt"), "not a database")
	for _, dir := range []string{empty, foreign, missing} {
		for _, args := range [][]string{{"get", "--db", dir, "k"}, {"scan", "--db", dir}} {
			before := dirState(t, root)
			if _, _, err := run(t, args...); err == nil || errors.Is(err, errNotFound) {
				t.Errorf("shale %s: %v, want an error saying there is no database", strings.Join(args, " "), err)
			}
			if d := diffStates(before, dirState(t, root)); d != "" {
				t.Errorf("shale %s left: %s", strings.Join(args, " "), d)
			}
		}
	}
}

// TestReadVerbsBesideAWriter has this process write keys in order to an
// open database (flushing as it goes) while get and scan run in other
// processes: each sees a prefix of the writes, at least every write
// acknowledged before it started, with the right values.
func TestReadVerbsBesideAWriter(t *testing.T) {
	dir := filepath.Join(testdir.New(t), "db")
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true, WriteBufferSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) string { return fmt.Sprintf("key%06d", i) }
	value := func(i int) string { return fmt.Sprintf("value%06d-%s", i, strings.Repeat("x", 100)) }
	var (
		acked atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
		werr  error
	)
	wg.Go(func() {
		// About 20,000 writes a second, so the scans stay small.
		for i := 0; !stop.Load() && i < 100_000; i++ {
			if werr = db.Put([]byte(key(i)), []byte(value(i)), nil); werr != nil {
				return
			}
			acked.Store(int64(i + 1))
			if i%20 == 19 {
				time.Sleep(time.Millisecond)
			}
		}
	})
	defer func() {
		stop.Store(true)
		wg.Wait()
		db.Close()
	}()
	for acked.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	for round := range 6 {
		n := int(acked.Load())
		out, stderr, code := runShaleProcess(t, "get", "--db", dir, key(n-1))
		if code != 0 || out != value(n-1)+"\n" {
			t.Fatalf("round %d: get of acked key %d beside the writer: exit %d, out %q, stderr %q", round, n-1, code, out, stderr)
		}
		n = int(acked.Load())
		out, stderr, code = runShaleProcess(t, "scan", "--db", dir)
		if code != 0 {
			t.Fatalf("round %d: scan beside the writer: exit %d, stderr %q", round, code, stderr)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		i := 0
		for ; sc.Scan(); i++ {
			if want := key(i) + " : " + value(i); sc.Text() != want {
				t.Fatalf("round %d: scan line %d is %q, want %q: not a prefix of the writes", round, i, sc.Text(), want)
			}
		}
		if i < n {
			t.Fatalf("round %d: scan saw %d keys, but %d were acknowledged before it started", round, i, n)
		}
		t.Logf("round %d: scan saw %d keys (%d acknowledged before it started); stderr %q", round, i, n, stderr)
	}
	stop.Store(true)
	wg.Wait()
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
}

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
)

// dirState maps every file and directory under dir (relative, slash
// separated) to the SHA-256 of its contents ("dir" for a directory): two
// states are equal when no file was added, removed, renamed or changed.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			state[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		state[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return state
}

// diffStates describes how after differs from before, "" when it does not.
func diffStates(before, after map[string]string) string {
	var diffs []string
	for name, sum := range before {
		switch got, ok := after[name]; {
		case !ok:
			diffs = append(diffs, "removed "+name)
		case got != sum:
			diffs = append(diffs, "changed "+name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, "added "+name)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}

// writeFile writes a file of a test fixture, creating its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shaleProcess returns a command that runs this test binary as the shale
// tool with args, in a process of its own: TestMain runs main() when
// stressChildEnv is set, as for the children of `shale stress`.
func shaleProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), stressChildEnv+"=1")
	return cmd
}

// runShaleProcess runs the shale tool with args in another process and
// returns what it printed and its exit code.
func runShaleProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := shaleProcess(t, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running shale %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// adminVerbDB builds the database the ldb-style verbs are tested on: tables
// on several levels, blob files (values of 100 bytes and more), merges
// (under the "stringappend" operator, --merge_operator=stringappend), a
// range deletion, point deletions and writes still in the WAL. It returns
// the directory and what a reader sees (key to value).
func adminVerbDB(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := filepath.Join(testdir.New(t), "db")
	db, err := shale.Open(dir, &shale.Options{CreateIfMissing: true, EnableBlobFiles: true, MinBlobSize: 100,
		MergeOperator: shale.StringAppendOperator(",")})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		v := fmt.Sprintf("v%03d", i)
		if i%3 == 0 {
			v += strings.Repeat("b", 120) // to a blob file
		}
		must(db.Put(fmt.Appendf(nil, "k%03d", i), []byte(v), nil))
	}
	must(db.Merge([]byte("m1"), []byte("a"), nil))
	must(db.Flush())
	must(db.CompactRange(nil, nil))
	must(db.Merge([]byte("m1"), []byte("b"), nil))
	must(db.Merge([]byte("m2"), []byte("x"), nil))
	must(db.DeleteRange([]byte("k050"), []byte("k060"), nil))
	must(db.Delete([]byte("k100"), nil))
	must(db.Put([]byte("k101"), []byte(strings.Repeat("new", 50)), nil))
	must(db.Flush())
	must(db.Put([]byte("k102"), []byte("in the WAL"), nil))
	must(db.Merge([]byte("m2"), []byte("y"), nil))
	want := map[string]string{}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		want[string(it.Key())] = string(it.Value())
	}
	must(it.Close())
	must(db.Close())
	if want["m1"] != "a,b" || want["m2"] != "x,y" || len(want) != 200-10-1+2 {
		t.Fatalf("fixture: m1 %q m2 %q, %d keys", want["m1"], want["m2"], len(want))
	}
	return dir, want
}

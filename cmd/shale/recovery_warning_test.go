package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
)

// tornTailDB builds a database whose WAL's last record (the put of key c)
// lost its last bytes, as a crash mid-write leaves it.
func tornTailDB(t *testing.T, dir string) {
	t.Helper()
	mustRun(t, "put", "--db", dir, "a", "1")
	mustRun(t, "put", "--db", dir, "c", "a value long enough to tear")
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("want one WAL holding both puts, got %v (%v)", logs, err)
	}
	fi, err := os.Stat(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logs[0], fi.Size()-3); err != nil {
		t.Fatal(err)
	}
}

var walLossWarningRE = regexp.MustCompile(`(?m)^shale: warning: opening the database dropped 1 WAL record\(s\), \d+ bytes, of \S+\.log from offset \d+: \S.*$`)

// TestVerbsWarnOfDroppedWALRecords runs every verb that opens a database
// on a copy of one with a torn WAL tail: each prints one warning on stderr
// naming the WAL, and does its work on what is left.
func TestVerbsWarnOfDroppedWALRecords(t *testing.T) {
	root := testdir.New(t)
	for _, tc := range []struct {
		args []string
		out  string // expected stdout, "" to not check it
	}{
		{args: []string{"get", "a"}, out: "1\n"},
		{args: []string{"scan"}, out: "a : 1\n"},
		{args: []string{"put", "b", "2"}},
		{args: []string{"delete", "a"}},
		{args: []string{"deleterange", "a", "b"}},
		{args: []string{"bench", "--use_existing_db", "--benchmarks", "readseq", "--num", "10"}},
	} {
		dir := filepath.Join(root, tc.args[0])
		tornTailDB(t, dir)
		args := append([]string{tc.args[0], "--db", dir}, tc.args[1:]...)
		out, stderr, err := run(t, args...)
		name := strings.Join(args, " ")
		if err != nil {
			t.Errorf("shale %s: %v", name, err)
			continue
		}
		if tc.out != "" && out != tc.out {
			t.Errorf("shale %s printed %q, want %q", name, out, tc.out)
		}
		if n := len(walLossWarningRE.FindAllString(stderr, -1)); n != 1 || !strings.Contains(stderr, dir) {
			t.Errorf("shale %s: %d warnings of the dropped record in stderr, want 1 naming the WAL in %s:\n%s", name, n, dir, stderr)
		}
	}
	// A database whose WAL is whole gets no warning.
	dir := filepath.Join(root, "whole")
	mustRun(t, "put", "--db", dir, "a", "1")
	for _, args := range [][]string{{"get", "--db", dir, "a"}, {"put", "--db", dir, "b", "2"}} {
		if _, stderr, err := run(t, args...); err != nil || stderr != "" {
			t.Errorf("shale %s on a whole database: err %v, stderr %q", strings.Join(args, " "), err, stderr)
		}
	}
}

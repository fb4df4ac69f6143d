package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
)

func TestCheckpointVerb(t *testing.T) {
	dir := testdir.New(t)
	db, cp := filepath.Join(dir, "db"), filepath.Join(dir, "cp")
	for i := range 20 {
		mustRun(t, "put", "--db", db, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i))
	}
	mustRun(t, "delete", "--db", db, "k03")
	before := dirState(t, db)
	out := mustRun(t, "checkpoint", "--db", db, "--to", cp)
	if !strings.HasPrefix(out, "checkpoint "+cp+": ") || !strings.Contains(out, "copied") {
		t.Fatalf("checkpoint printed %q", out)
	}
	if diff := diffStates(before, dirState(t, db)); diff != "" {
		t.Fatalf("checkpoint changed the source database:\n%s", diff)
	}
	want := mustRun(t, "scan", "--db", db)
	if got := mustRun(t, "scan", "--db", cp); got != want || strings.Count(got, "\n") != 19 {
		t.Fatalf("scan of the checkpoint:\n%s\nwant:\n%s", got, want)
	}
	// The checkpoint is a database of its own.
	mustRun(t, "put", "--db", cp, "k03", "back", "--create_if_missing=false")
	if got := mustRun(t, "get", "--db", cp, "k03"); got != "back\n" {
		t.Fatalf("get k03 in the checkpoint after put: %q", got)
	}
	if _, _, err := run(t, "get", "--db", db, "k03"); err == nil {
		t.Fatal("a write to the checkpoint showed in the source")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"checkpoint", "--db", db, "--to", cp}, "already exists"},
		{[]string{"checkpoint", "--db", db}, "--to is required"},
		{[]string{"checkpoint", "--to", filepath.Join(dir, "cp2")}, "--db is required"},
		{[]string{"checkpoint", "--db", filepath.Join(dir, "none"), "--to", filepath.Join(dir, "cp3")}, "no database there"},
	} {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shale %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// TestStressKillsCheckpoints runs the process-kill loop with the child taking
// checkpoints while it writes (over blob files), so that kills land inside
// checkpoints too: after each kill every checkpoint must open and hold, for
// every writer, a prefix of its batches covering those acknowledged before
// the call, and an unfinished one must not open unless it is whole.
func TestStressKillsCheckpoints(t *testing.T) {
	kills := 5
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	// Kills late enough for checkpoints to finish on a loaded machine.
	out := runStressTest(t, kills, "--checkpoints", "--enable_blob_files", "--min_blob_size", "32",
		"--kill_min", "150ms", "--kill_max", "600ms")
	m := regexp.MustCompile(`checkpoints verified: +(\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("no checkpoint was verified:\n%s", out)
	}
}

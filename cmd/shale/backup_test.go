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

func TestBackupAndRestoreVerbs(t *testing.T) {
	dir := testdir.New(t)
	db, bk := filepath.Join(dir, "db"), filepath.Join(dir, "backups")
	for i := range 20 {
		mustRun(t, "put", "--db", db, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i))
	}
	scan1 := mustRun(t, "scan", "--db", db)
	before := dirState(t, db)
	out := mustRun(t, "backup", "--db", db, "--backup_dir", bk)
	if !strings.HasPrefix(out, "backup 1 in "+bk+": ") {
		t.Fatalf("backup printed %q", out)
	}
	if diff := diffStates(before, dirState(t, db)); diff != "" {
		t.Fatalf("backup changed the source database:\n%s", diff)
	}
	mustRun(t, "delete", "--db", db, "k03")
	mustRun(t, "put", "--db", db, "k99", "late")
	scan2 := mustRun(t, "scan", "--db", db)
	if out := mustRun(t, "backup", "--db", db, "--backup_dir", bk); !strings.HasPrefix(out, "backup 2 in ") {
		t.Fatalf("second backup printed %q", out)
	}
	list := mustRun(t, "list_backups", "--backup_dir", bk, "--verify")
	if strings.Count(list, "\n") != 2 || strings.Count(list, ": ok\n") != 2 || !strings.HasPrefix(list, "backup 1: ") {
		t.Fatalf("list_backups printed:\n%s", list)
	}

	r1, r2 := filepath.Join(dir, "r1"), filepath.Join(dir, "r2")
	mustRun(t, "restore", "--backup_dir", bk, "--db", r1, "--backup_id", "1")
	if got := mustRun(t, "scan", "--db", r1); got != scan1 {
		t.Fatalf("scan of backup 1:\n%s\nwant:\n%s", got, scan1)
	}
	mustRun(t, "restore", "--backup_dir", bk, "--db", r2)
	if got := mustRun(t, "scan", "--db", r2); got != scan2 {
		t.Fatalf("scan of the latest backup:\n%s\nwant:\n%s", got, scan2)
	}
	// Restoring over a database replaces it.
	mustRun(t, "restore", "--backup_dir", bk, "--db", r2, "--backup_id", "1")
	if got := mustRun(t, "scan", "--db", r2); got != scan1 {
		t.Fatalf("scan after restoring backup 1 over the latest:\n%s\nwant:\n%s", got, scan1)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--db", db}, "--backup_dir is required"},
		{[]string{"backup", "--backup_dir", bk}, "--db is required"},
		{[]string{"backup", "--db", filepath.Join(dir, "none"), "--backup_dir", bk}, "no database there"},
		{[]string{"restore", "--db", r1}, "--backup_dir is required"},
		{[]string{"restore", "--backup_dir", bk}, "--db is required"},
		{[]string{"restore", "--backup_dir", bk, "--db", r1, "--backup_id", "7"}, "backup 7"},
		{[]string{"restore", "--backup_dir", bk, "--db", r1, "--backup_id", "0"}, "--backup_id must be at least 1"},
		{[]string{"list_backups"}, "--backup_dir is required"},
	} {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shale %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}

	// A damaged file (the admin verbs leave the data in WALs, so a WAL):
	// list_backups --verify and restore name it, and the failed restore
	// leaves the target alone.
	shared, err := filepath.Glob(filepath.Join(bk, "private", "1", "*.log"))
	if err != nil || len(shared) == 0 {
		t.Fatalf("no WAL in backup 1: %v", err)
	}
	data, err := os.ReadFile(shared[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(shared[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := run(t, "list_backups", "--backup_dir", bk, "--verify")
	if err == nil || !strings.Contains(stdout, filepath.Base(shared[0])) {
		t.Fatalf("list_backups --verify of a damaged backup: %v\n%s", err, stdout)
	}
	target := dirState(t, r1)
	if _, _, err := run(t, "restore", "--backup_dir", bk, "--db", r1, "--backup_id", "1"); err == nil || !strings.Contains(err.Error(), filepath.Base(shared[0])) {
		t.Fatalf("restore of a damaged backup: %v", err)
	}
	if diff := diffStates(target, dirState(t, r1)); diff != "" {
		t.Fatalf("a failed restore changed the target:\n%s", diff)
	}
}

// TestStressKillsBackups runs the process-kill loop with the child adding
// backups while it writes (over blob files, with merges), so that kills
// land inside backups too: after each kill every backup must restore to,
// for every writer, a prefix of its batches covering those acknowledged
// before the call, and what an interrupted backup left is collected.
func TestStressKillsBackups(t *testing.T) {
	kills := 5
	if os.Getenv("SHALE_STRESS") == "1" {
		kills = 40
	}
	// Kills late enough for backups to finish on a loaded machine.
	out := runStressTest(t, kills, "--backups", "--merges", "--enable_blob_files", "--min_blob_size", "32",
		"--kill_min", "150ms", "--kill_max", "600ms")
	m := regexp.MustCompile(`backups restored: +(\d+)`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("no backup was restored:\n%s", out)
	}
	t.Logf("%s", m[0])
}

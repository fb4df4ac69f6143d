package main

import (
	"errors"
	"github.com/shaledb/shale/internal/testdir"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale"
)

func TestCheckVerb(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	mustRun(t, "put", "--db", db, "first", strings.Repeat("v", 100))
	// A flush puts the first write in a table; the last stays in the WAL.
	sdb, err := shale.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(sdb.Flush(), sdb.Close()); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "put", "--db", db, "last", "value")
	out, _, err := run(t, "check", "--db", db)
	if err != nil || !strings.Contains(out, "no damage found") || !strings.Contains(out, ".sst") {
		t.Fatalf("clean database: err %v\n%s", err, out)
	}
	names, _ := filepath.Glob(filepath.Join(db, "*.sst"))
	if len(names) == 0 {
		t.Fatal("no table to damage")
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 0x01 // the first data block
	if err := os.WriteFile(names[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "check", "--db", db)
	if !errors.Is(err, errDamaged) || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, filepath.Base(names[0])) {
		t.Fatalf("damaged table: err %v\n%s", err, out)
	}
	if _, _, err := run(t, "check"); err == nil {
		t.Fatal("check without --db succeeded")
	}
	if _, _, err := run(t, "check", "--db", filepath.Join(testdir.New(t), "none")); err == nil {
		t.Fatal("check of a missing directory succeeded")
	}
}

// TestCheckVerbDamagedLastWALRecord is the case of a user who flips a byte
// of the value of their last put (acknowledged, so in the WAL whole): check
// reports the WAL as DAMAGED and exits non-zero, and the put is not dropped
// silently: opening the database to write fails naming the WAL. A WAL cut
// short inside that record, as a crash in the middle of the append leaves
// it, stays recoverable.
func TestCheckVerbDamagedLastWALRecord(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	mustRun(t, "put", "--db", db, "cli-key-1", "cli-value-1")
	mustRun(t, "put", "--db", db, "cli-key-3", "cli-value-3")
	logs, err := filepath.Glob(filepath.Join(db, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no WAL: %v", err)
	}
	wal := logs[len(logs)-1]
	orig, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(orig), "cli-value-3") {
		t.Fatalf("the last put is not the end of %s", wal)
	}
	b := []byte(strings.Clone(string(orig)))
	b[len(b)-5] ^= 0x01 // in the value
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "check", "--db", db)
	if !errors.Is(err, errDamaged) || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, filepath.Base(wal)) ||
		!strings.Contains(out, "complete but fails its checksum") || !strings.Contains(out, "DAMAGE FOUND") {
		t.Fatalf("damaged last WAL record: err %v\n%s", err, out)
	}
	if out, _, err := run(t, "put", "--db", db, "cli-key-4", "v"); err == nil || !strings.Contains(err.Error(), filepath.Base(wal)) {
		t.Fatalf("put after the damage: %q, %v; want an error naming the WAL", out, err)
	}

	if err := os.WriteFile(wal, orig[:len(orig)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "check", "--db", db)
	if err != nil || !strings.Contains(out, "recoverable") || !strings.Contains(out, "torn tail") || !strings.Contains(out, "no damage found") {
		t.Fatalf("torn last WAL record: err %v\n%s", err, out)
	}
}

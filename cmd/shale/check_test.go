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

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
)

// scanAll returns what `shale scan --hex` prints of dir as a map.
func scanAll(t *testing.T, dir string, extra ...string) map[string]string {
	t.Helper()
	out := mustRun(t, append([]string{"scan", "--db", dir}, extra...)...)
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " : ")
		if !ok {
			t.Fatalf("scan line %q", line)
		}
		m[k] = v
	}
	return m
}

// TestDumpLoadRoundTrip dumps a database with blob values, merges and
// deletions, loads the dump into a new database, and compares the two key
// by key; then a dump limited by --from, --to and --max_keys holds exactly
// those keys.
func TestDumpLoadRoundTrip(t *testing.T) {
	dir, want := adminVerbDB(t)
	root := testdir.New(t)
	dump := filepath.Join(root, "all.dump")
	_, stderr, err := run(t, "dump", "--db", dir, "--merge_operator", "stringappend", "--file", dump)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	if !strings.Contains(stderr, fmt.Sprintf("dumped %d entries", len(want))) {
		t.Errorf("dump summary %q, want %d entries", stderr, len(want))
	}
	loaded := filepath.Join(root, "loaded")
	if _, _, err := run(t, "load", "--db", loaded, "--file", dump); err != nil {
		t.Fatalf("load: %v", err)
	}
	got := scanAll(t, loaded)
	if len(got) != len(want) {
		t.Errorf("loaded %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("loaded %q = %q, want %q", k, got[k], v)
		}
	}

	// A range: [k010, k050), at most 25 keys.
	part := filepath.Join(root, "part.dump")
	mustRun(t, "dump", "--db", dir, "--merge_operator", "stringappend", "--file", part, "--from", "k010", "--to", "k050", "--max_keys", "25")
	partDB := filepath.Join(root, "part")
	mustRun(t, "load", "--db", partDB, "--file", part)
	got = scanAll(t, partDB)
	if len(got) != 25 || got["k010"] != want["k010"] || got["k034"] != want["k034"] || got["k035"] != "" {
		t.Errorf("partial dump loaded %d keys: %v", len(got), got)
	}

	// Loading again into a database holding keys is refused, and changes
	// nothing, unless --allow_non_empty.
	before := dirState(t, partDB)
	if _, _, err := run(t, "load", "--db", partDB, "--file", dump); !errors.Is(err, errNotEmpty) {
		t.Errorf("load into a non-empty database: %v, want errNotEmpty", err)
	}
	if d := diffStates(before, dirState(t, partDB)); d != "" {
		t.Errorf("refused load changed the database: %s", d)
	}
	mustRun(t, "load", "--db", partDB, "--file", dump, "--allow_non_empty")
	if got := scanAll(t, partDB); len(got) != len(want) {
		t.Errorf("load --allow_non_empty: %d keys, want %d", len(got), len(want))
	}
}

// TestLoadRefusesDamagedDump flips every byte of a small dump, and cuts it
// at every length: load refuses each with errDumpCorrupt naming the file
// and offset, and writes nothing (the database is not even created).
func TestLoadRefusesDamagedDump(t *testing.T) {
	root := testdir.New(t)
	src := filepath.Join(root, "src")
	mustRun(t, "put", "--db", src, "a", "1")
	mustRun(t, "put", "--db", src, "bb", "22")
	dump := filepath.Join(root, "good.dump")
	mustRun(t, "dump", "--db", src, "--file", dump)
	good, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "bad.dump")
	target := filepath.Join(root, "target")
	try := func(what string, data []byte) {
		t.Helper()
		if err := os.WriteFile(bad, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := run(t, "load", "--db", target, "--file", bad)
		if !errors.Is(err, errDumpCorrupt) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: load: %v, want a damaged-dump error naming the file and offset", what, err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("%s: load of a damaged dump created the database", what)
		}
	}
	for i := range good {
		d := bytes.Clone(good)
		d[i] ^= 0x01
		try(fmt.Sprintf("byte %d flipped", i), d)
	}
	for n := range len(good) {
		try(fmt.Sprintf("cut at %d", n), good[:n])
	}
	try("trailing byte", append(bytes.Clone(good), 0))
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// reported is what main prints on stderr for err.
func reported(err error) string {
	var b bytes.Buffer
	reportError(&b, err)
	return b.String()
}

func TestReportErrorHasOnePrefix(t *testing.T) {
	libErr := errors.New("shale: database d does not exist")
	cases := []struct {
		err  error
		want string
	}{
		{errors.New("boom"), "shale: boom\n"},
		{libErr, "shale: database d does not exist\n"},
		{fmt.Errorf("opening d: %w", libErr), "shale: opening d: database d does not exist\n"},
		{fmt.Errorf("shale: opening d: %w", fmt.Errorf("shale: cannot lock d/LOCK: %w", vfs.ErrLocked)),
			"shale: opening d: cannot lock d/LOCK: lock held by another process or another DB in this process\n"},
		{errNotFound, "not found\n"},
	}
	for _, c := range cases {
		if got := reported(c.err); got != c.want {
			t.Errorf("reportError(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestCLIErrorsSpeakCLI runs failing commands and checks what main would
// print: one "shale:" prefix, flags named as flags, no Options field and no
// temporary path; and that the failed runs left nothing behind.
func TestCLIErrorsSpeakCLI(t *testing.T) {
	dir := testdir.New(t)
	tmp := testdir.New(t)
	t.Setenv("TMPDIR", tmp) // bench's temporary directory goes here
	missing := filepath.Join(dir, "missing")
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "db")
	mustRun(t, "put", "--db", existing, "k", "v")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"get", "--db", missing, "k"}, "directory does not exist"},
		{[]string{"scan", "--db", missing}, "directory does not exist"},
		{[]string{"get", "--db", filepath.Join(dir, "empty"), "k"}, "holds no database"},
		{[]string{"delete", "--db", missing, "k"}, "--create_if_missing"},
		{[]string{"deleterange", "--db", missing, "a", "b"}, "--create_if_missing"},
		{[]string{"put", "--db", missing, "--create_if_missing=false", "k", "v"}, "--create_if_missing"},
		{[]string{"bench", "--num", "10", "--block_size=-1000"}, "--block_size must be between 1 byte and 256 MiB"},
		{[]string{"bench", "--num", "10", "--bloom_bits", "100"}, "--bloom_bits must be at most 64"},
		{[]string{"bench", "--num", "10", "--write_buffer_size", "10"}, "--write_buffer_size must be at least"},
		{[]string{"bench", "--num", "10", "--level0_slowdown_writes_trigger", "2"},
			"--level0_slowdown_writes_trigger (2) must be >= --level0_file_num_compaction_trigger (4)"},
		{[]string{"bench", "--num", "10", "--max_background_jobs", "100"}, "--max_background_jobs must be between 1 and 64"},
		{[]string{"bench", "--db", existing, "--num", "10", "--block_size=-3"}, "--block_size"},
		{[]string{"bench", "--db", missing, "--num", "10", "--use_existing_db", "--benchmarks", "readrandom"}, "--use_existing_db: there is no database"},
		{[]string{"bench", "--db", filepath.Join(dir, "empty"), "--num", "10", "--use_existing_db", "--benchmarks", "readrandom"}, "--use_existing_db=false"},
	}
	defer func() {
		// A refused --use_existing_db leaves nothing in a directory that
		// holds no database (LockDirectory would leave a LOCK file).
		if names, _ := os.ReadDir(filepath.Join(dir, "empty")); len(names) != 0 {
			t.Errorf("a refused bench --use_existing_db left %d files in an empty directory", len(names))
		}
	}()
	for _, c := range cases {
		_, _, err := run(t, c.args...)
		if err == nil {
			t.Errorf("shale %s succeeded", strings.Join(c.args, " "))
			continue
		}
		msg := reported(err)
		if !strings.Contains(msg, c.want) {
			t.Errorf("shale %s: %q, want it to contain %q", strings.Join(c.args, " "), msg, c.want)
		}
		if n := strings.Count(msg, "shale:"); n != 1 {
			t.Errorf("shale %s: %d \"shale:\" in %q, want 1", strings.Join(c.args, " "), n, msg)
		}
		for _, bad := range []string{"Options.", "shale-bench-", tmp} {
			if strings.Contains(msg, bad) {
				t.Errorf("shale %s: %q names %q", strings.Join(c.args, " "), msg, bad)
			}
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed command created %s: %v", missing, err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("failed benches left temporary directories: %v", entries)
	}
	if got := mustRun(t, "get", "--db", existing, "k"); got != "v\n" {
		t.Errorf("a bench refused for a bad flag changed --db: get k = %q", got)
	}
}

func TestFlagErrorRewordsOptionFields(t *testing.T) {
	cause := fmt.Errorf("shale: Options.Level0SlowdownWritesTrigger (2) must be >= Level0FileNumCompactionTrigger (4): %w", shale.ErrInvalidArgument)
	err := flagError(cause, benchOptionFlags)
	want := "shale: --level0_slowdown_writes_trigger (2) must be >= --level0_file_num_compaction_trigger (4): " + shale.ErrInvalidArgument.Error()
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
	if !errors.Is(err, shale.ErrInvalidArgument) {
		t.Error("the reworded error no longer matches its cause")
	}
	plain := errors.New("shale: Compression of table 7 is unknown; Options.Compression must be none, snappy or zstd")
	if got, want := flagError(plain, benchOptionFlags).Error(), "shale: Compression of table 7 is unknown; --compression_type must be none, snappy or zstd"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	other := errors.New("shale: Options.Comparer must have a Name")
	if flagError(other, benchOptionFlags) != other {
		t.Error("an error naming no flag's field was rewrapped")
	}
}

// TestBenchOptionFlagsAreBenchFlags checks that every flag the messages
// name is one bench has.
func TestBenchOptionFlagsAreBenchFlags(t *testing.T) {
	flags := newBenchCmd().Flags()
	for field, flag := range benchOptionFlags {
		name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		if flags.Lookup(name) == nil {
			t.Errorf("benchOptionFlags[%s] = %s: bench has no such flag", field, flag)
		}
	}
	for field, flag := range adminOptionFlags {
		if newPutCmd().Flags().Lookup(strings.TrimPrefix(flag, "--")) == nil {
			t.Errorf("adminOptionFlags[%s] = %s: put has no such flag", field, flag)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	out, _, err := run(t, "--version")
	if want := "shale version " + shale.Version + "\n"; err != nil || out != want {
		t.Errorf("shale --version: %q, %v; want %q", out, err, want)
	}
}

// TestCreateIfMissing checks which verbs create a missing database: put by
// default, delete and deleterange only with --create_if_missing, the read
// verbs never (they have no such flag).
func TestCreateIfMissing(t *testing.T) {
	root := testdir.New(t)
	exists := func(db string) bool {
		_, err := os.Stat(filepath.Join(db, "CURRENT"))
		return err == nil
	}
	cases := []struct {
		args    []string
		creates bool
	}{
		{[]string{"put", "k", "v"}, true},
		{[]string{"put", "--create_if_missing=false", "k", "v"}, false},
		{[]string{"delete", "k"}, false},
		{[]string{"delete", "--create_if_missing", "k"}, true},
		{[]string{"deleterange", "a", "b"}, false},
		{[]string{"deleterange", "--create_if_missing", "a", "b"}, true},
	}
	for i, c := range cases {
		db := filepath.Join(root, fmt.Sprint(i))
		args := append([]string{c.args[0], "--db", db}, c.args[1:]...)
		_, _, err := run(t, args...)
		if c.creates != (err == nil) || c.creates != exists(db) {
			t.Errorf("shale %s: err %v, database created %v; want created %v", strings.Join(args, " "), err, exists(db), c.creates)
		}
	}
	for _, verb := range []*struct {
		name string
		args []string
	}{{"get", []string{"k"}}, {"scan", nil}} {
		args := append([]string{verb.name, "--db", filepath.Join(root, "0"), "--create_if_missing"}, verb.args...)
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("shale %s: %v, want an unknown flag error", strings.Join(args, " "), err)
		}
	}
}

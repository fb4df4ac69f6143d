package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
)

// TestIngestVerb: shale ingest adds external tables (copied, or moved with
// --move) that get then reads, over what put wrote; a file that is not an
// external table fails naming it and changes nothing.
func TestIngestVerb(t *testing.T) {
	dir := testdir.New(t)
	db := filepath.Join(dir, "db")
	mustRun(t, "put", "--db", db, "a", "old")
	write := func(name string, kv ...string) string {
		p := filepath.Join(dir, name)
		w := shale.NewSSTFileWriter(&shale.Options{FS: vfs.Default})
		if err := w.Open(p); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kv); i += 2 {
			if err := w.Put([]byte(kv[i]), []byte(kv[i+1])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := write("1.sst", "a", "new", "b", "1")
	p2 := write("2.sst", "c", "2")
	mustRun(t, "ingest", "--db", db, p1)
	mustRun(t, "ingest", "--db", db, "--move", p2)
	if _, err := os.Stat(p1); err != nil {
		t.Errorf("ingest without --move removed its file: %v", err)
	}
	if _, err := os.Stat(p2); err == nil {
		t.Error("ingest --move kept its file")
	}
	for k, want := range map[string]string{"a": "new", "b": "1", "c": "2"} {
		if got := strings.TrimSpace(mustRun(t, "get", "--db", db, k)); got != want {
			t.Errorf("get %s = %q, want %q", k, got, want)
		}
	}
	bogus := filepath.Join(dir, "bogus.sst")
	if err := os.WriteFile(bogus, []byte("not a table at all, not even close to 53 bytes long......"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "ingest", "--db", db, bogus); err == nil || !strings.Contains(err.Error(), bogus) {
		t.Errorf("ingest of a bogus file: %v, want an error naming it", err)
	}
	if got := strings.TrimSpace(mustRun(t, "get", "--db", db, "a")); got != "new" {
		t.Errorf("after a failed ingest, get a = %q", got)
	}
}

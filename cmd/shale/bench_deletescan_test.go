package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/testdir"
)

// deleteScanLineRE matches a timed scan line of deletescan.
var deleteScanLineRE = regexp.MustCompile(`^deletescan   : ([\w-]+) +: first (\d+) live keys (.+): \d+\.\d{3} ms, internal_delete_skipped_count (\d+), internal_key_skipped_count (\d+)$`)

// TestBenchDeleteScan runs deletescan at 10,000 keys without waiting: the
// scenario line, each variant's timed scans, and the counts, which are
// exact at this size, where every entry is still in the memtable: the scan
// right after the deletes steps over the 9,000 tombstones and the values
// they hide, and over the 500 keys it reads; after the full compaction
// only over the keys it reads. The collector variant, whose collector sees
// only tables, counts what the default one does. After the first scan of
// the default and collector variants the memtable may have been flushed
// (Options.MemtableOpScanFlushTrigger), which at this size drops every
// tombstone: the scan after the wait counts either state. Every scan is
// followed by point lookups of deleted keys, none found.
func TestBenchDeleteScan(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	out, _, err := run(t, "bench", "--db", db, "--num", "10000", "--delete_wait", "0", "--benchmarks", "deletescan")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if !strings.Contains(out, "deletescan   : 10000 keys of 500-byte values written in order, the lowest 9000 deleted, first 500 live keys read from the start; idle wait 0s\n") {
		t.Errorf("no scenario line with the default value size of 500 in:\n%s", out)
	}
	type scan struct {
		read, deletes, keys int
	}
	got := map[string]scan{}
	gets := 0
	for _, line := range strings.Split(out, "\n") {
		if deleteScanGetsRE.MatchString(line) {
			gets++
			continue
		}
		m := deleteScanLineRE.FindStringSubmatch(line)
		if m == nil {
			if strings.Contains(line, "live keys") && !strings.Contains(line, "idle wait") {
				t.Errorf("malformed scan line %q", line)
			}
			continue
		}
		n, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[4])
		k, _ := strconv.Atoi(m[5])
		got[m[1]+" "+m[3]] = scan{n, d, k}
	}
	want := map[string]scan{
		"default right after the deletes":      {500, 9000, 9000 + 500},
		"default after 0s idle":                {500, 9000, 9000 + 500},
		"collector right after the deletes":    {500, 9000, 9000 + 500},
		"collector after 0s idle":              {500, 9000, 9000 + 500},
		"compacted right after the compaction": {500, 0, 500},
		"compacted after 0s idle":              {500, 0, 500},
		"aware-off right after the deletes":    {500, 9000, 9000 + 500},
		"aware-off after 0s idle":              {500, 9000, 9000 + 500},
	}
	flushed := scan{500, 0, 500}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("no scan line %q in:\n%s", k, out)
		} else if g != w && !(g == flushed && (k == "default after 0s idle" || k == "collector after 0s idle")) {
			t.Errorf("%s: read %d keys, %d deletes and %d keys skipped; want %d, %d and %d", k, g.read, g.deletes, g.keys, w.read, w.deletes, w.keys)
		}
	}
	if len(got) != len(want) {
		t.Errorf("scan lines %v, want those of %v", got, want)
	}
	if gets != len(want) {
		t.Errorf("%d lines of gets of deleted keys, want one per scan (%d):\n%s", gets, len(want), out)
	}
}

// deleteScanGetsRE matches a line of timed point lookups of deleted keys.
var deleteScanGetsRE = regexp.MustCompile(`^deletescan   : [\w-]+ +: 10000 gets of deleted keys .+: \d+\.\d{3} us/op$`)

// TestBenchDeleteScanFlags checks that --value_size given replaces
// deletescan's 500 and that a negative --delete_wait is refused by name.
func TestBenchDeleteScanFlags(t *testing.T) {
	db := filepath.Join(testdir.New(t), "db")
	out, _, err := run(t, "bench", "--db", db, "--num", "200", "--value_size", "32", "--delete_wait", "0", "--benchmarks", "deletescan")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if !strings.Contains(out, "200 keys of 32-byte values") {
		t.Errorf("--value_size 32 not used:\n%s", out)
	}
	if _, _, err := run(t, "bench", "--db", db, "--delete_wait", "-1", "--benchmarks", "deletescan"); err == nil || !strings.Contains(err.Error(), "--delete_wait") {
		t.Errorf("--delete_wait -1: error %v, want one naming the flag", err)
	}
}

package shale

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
)

// intProperty returns GetIntProperty(name), failing t when it is unknown,
// and checks that GetProperty gives the same number in decimal.
func intProperty(t *testing.T, d *DB, name string) uint64 {
	t.Helper()
	v, ok := d.GetIntProperty(name)
	if !ok {
		t.Fatalf("GetIntProperty(%q): unknown", name)
	}
	if s, ok := d.GetProperty(name); !ok || s != strconv.FormatUint(v, 10) {
		t.Fatalf("GetProperty(%q) = %q, %v; GetIntProperty %d", name, s, ok, v)
	}
	return v
}

// TestProperties checks the DB properties against Metrics and against the
// writes made: per-level file counts, table and blob file sizes, the key
// estimate, memtables, snapshots and their age, the pending-compaction
// estimate, and unknown names.
func TestProperties(t *testing.T) {
	opts := blobTestOptions(vfs.NewMem())
	opts.DisableAutoCompactions = true
	clock := newFakeClock(0)
	opts.Clock = clock
	d, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := intProperty(t, d, "rocksdb.estimate-num-keys"); n != 0 {
		t.Fatalf("estimate-num-keys %d on an empty DB", n)
	}
	if n := intProperty(t, d, "rocksdb.estimate-pending-compaction-bytes"); n != 0 {
		t.Fatalf("estimate-pending-compaction-bytes %d on an empty DB", n)
	}
	// Five tables of 100 keys in L0, the last with 30 deletions of keys of
	// the first.
	for tbl := range 5 {
		for i := range 100 {
			if err := d.Put([]byte(fmt.Sprintf("k%d-%03d", tbl, i)), blobTestValue(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if tbl == 4 {
			for i := range 30 {
				if err := d.Delete([]byte(fmt.Sprintf("k0-%03d", i)), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	m := d.Metrics()
	var tables uint64
	for l, lm := range m.Levels {
		if n := intProperty(t, d, "rocksdb.num-files-at-level"+strconv.Itoa(l)); n != uint64(lm.NumFiles) {
			t.Fatalf("num-files-at-level%d = %d, Metrics %d", l, n, lm.NumFiles)
		}
		tables += lm.Size
	}
	if m.Levels[0].NumFiles != 5 {
		t.Fatalf("%d L0 files, want 5", m.Levels[0].NumFiles)
	}
	for _, c := range []struct {
		name string
		want uint64
	}{
		{"rocksdb.live-sst-files-size", tables},
		{"rocksdb.total-sst-files-size", tables},
		{"rocksdb.estimate-num-keys", 530 - 2*30},
		{"rocksdb.cur-size-all-mem-tables", m.MemtableSize},
		{"rocksdb.num-entries-active-mem-table", 0},
		{"rocksdb.num-immutable-mem-table", 0},
		{"rocksdb.mem-table-flush-pending", 0},
		{"rocksdb.num-running-flushes", 0},
		{"rocksdb.num-running-compactions", 0},
		{"rocksdb.compaction-pending", 1}, // 5 L0 files over a trigger of 4
		{"rocksdb.block-cache-capacity", uint64(m.BlockCache.Capacity)},
		{"rocksdb.block-cache-usage", uint64(m.BlockCache.Size)},
		{"rocksdb.num-blob-files", uint64(m.Blob.Files)},
		{"rocksdb.live-blob-file-size", m.Blob.Size},
		{"rocksdb.total-blob-file-size", m.Blob.Size},
		{"rocksdb.live-blob-file-garbage-size", 0},
		{"rocksdb.num-snapshots", 0},
		{"rocksdb.oldest-snapshot-time", 0},
		{"rocksdb.background-errors", 0},
		{"rocksdb.is-write-stopped", 0},
	} {
		if got := intProperty(t, d, c.name); got != c.want {
			t.Errorf("%s = %d, want %d", c.name, got, c.want)
		}
	}
	if m.Blob.Files == 0 {
		t.Fatal("no blob files written")
	}
	if p := intProperty(t, d, "rocksdb.estimate-pending-compaction-bytes"); p < tables {
		t.Errorf("estimate-pending-compaction-bytes %d with L0 due, want at least L0's %d bytes", p, tables)
	}
	if err := d.Put([]byte("memtable"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if n := intProperty(t, d, "rocksdb.num-entries-active-mem-table"); n != 1 {
		t.Errorf("num-entries-active-mem-table %d after one Put", n)
	}

	// Snapshots: their number and the creation time of the oldest.
	s1 := d.NewSnapshot()
	clock.Advance(time.Hour)
	s2 := d.NewSnapshot()
	if n := intProperty(t, d, "rocksdb.num-snapshots"); n != 2 {
		t.Errorf("num-snapshots %d, want 2", n)
	}
	if got, want := intProperty(t, d, "rocksdb.oldest-snapshot-time"), uint64(s1.created.Unix()); got != want || want == 0 {
		t.Errorf("oldest-snapshot-time %d, want %d", got, want)
	}
	s1.Release()
	if got, want := intProperty(t, d, "rocksdb.oldest-snapshot-time"), uint64(s2.created.Unix()); got != want {
		t.Errorf("oldest-snapshot-time %d after the oldest went, want %d", got, want)
	}
	s2.Release()

	// A full compaction: one level, nothing pending, and the table sizes of
	// the versions still in use equal the current one's again.
	if err := d.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	if n := intProperty(t, d, "rocksdb.compaction-pending"); n != 0 {
		t.Errorf("compaction-pending %d after a full compaction", n)
	}
	if n := intProperty(t, d, "rocksdb.estimate-pending-compaction-bytes"); n != 0 {
		t.Errorf("estimate-pending-compaction-bytes %d after a full compaction", n)
	}
	if live, total := intProperty(t, d, "rocksdb.live-sst-files-size"), intProperty(t, d, "rocksdb.total-sst-files-size"); live != total || live == 0 {
		t.Errorf("live-sst-files-size %d, total-sst-files-size %d after a full compaction", live, total)
	}
	m = d.Metrics()
	if g := intProperty(t, d, "rocksdb.live-blob-file-garbage-size"); g != m.Blob.GarbageBytes {
		t.Errorf("live-blob-file-garbage-size %d, Metrics %d", g, m.Blob.GarbageBytes)
	}

	// The string properties.
	if s, ok := d.GetProperty("rocksdb.stats"); !ok || !strings.Contains(s, "level  files") {
		t.Errorf("rocksdb.stats = %q, %v", s, ok)
	}
	if s, ok := d.GetProperty("rocksdb.levelstats"); !ok || !strings.HasPrefix(s, "Level Files Size(MB)\n--------------------\n  0        0        0\n") ||
		strings.Count(s, "\n") != 2+len(m.Levels) {
		t.Errorf("rocksdb.levelstats = %q, %v", s, ok)
	}
	want := fmt.Sprintf("Number of blob files: %d\nTotal size of blob files: %d\nTotal size of garbage in blob files: %d\n",
		m.Blob.Files, m.Blob.Size, m.Blob.GarbageBytes)
	if s, ok := d.GetProperty("rocksdb.blob-stats"); !ok || !strings.HasPrefix(s, want) || !strings.Contains(s, "Blob file space amplification: ") {
		t.Errorf("rocksdb.blob-stats = %q, %v; want it to start %q", s, ok, want)
	}

	// Names it does not know, including malformed levels.
	for _, name := range []string{"rocksdb.no-such-property", "stats", "rocksdb.num-files-at-level", "rocksdb.num-files-at-level-1",
		"rocksdb.num-files-at-level07", "rocksdb.num-files-at-level99", "rocksdb.num-files-at-levelx"} {
		if s, ok := d.GetProperty(name); ok || s != "" {
			t.Errorf("GetProperty(%q) = %q, %v; want unknown", name, s, ok)
		}
		if _, ok := d.GetIntProperty(name); ok {
			t.Errorf("GetIntProperty(%q) known", name)
		}
	}
	if _, ok := d.GetIntProperty("rocksdb.stats"); ok {
		t.Error("GetIntProperty(rocksdb.stats) is known: it is not a number")
	}
	d.Close()
	if _, ok := d.GetProperty("rocksdb.num-snapshots"); ok {
		t.Error("GetProperty on a closed DB is known")
	}
}

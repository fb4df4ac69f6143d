package shale

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// faultWant is what a fault case must lead to.
type faultWant int

const (
	// wantReadOnly: the call that met the fault (or, for background work,
	// the next write) fails with an error wrapping ErrReadOnly and the
	// cause; reads still work; Resume after the fault is gone makes the DB
	// writable again.
	wantReadOnly faultWant = iota
	// wantOpenError: Open fails with an error wrapping the cause; a later
	// Open succeeds with every acknowledged write.
	wantOpenError
	// wantReadError: the read fails with an error wrapping the cause; the
	// DB stays writable and the next read succeeds.
	wantReadError
	// wantTolerated: nothing fails: removing an obsolete file (logged; the
	// next Open removes the file), and the hints preallocation and writeback
	// (the writer stops giving them).
	wantTolerated
)

// faultCase is one cell of the fault matrix: an operation on one kind of
// file, met by one job.
type faultCase struct {
	op      errorfs.Op
	kind    string // WAL, SST, MANIFEST, CURRENT, OPTIONS, LOCK, dir
	pattern string // base-name glob of the files the rule matches
	// job is the work that meets the fault: "commit" (synced writes),
	// "commit-nosync" (writes the WAL flusher writes in the background),
	// "flush" (DB.Flush, the flush runs in the background), "compaction"
	// (automatic, background), "manual compaction" (CompactRange), "open",
	// "get", "iterator" or "cleanup" (obsolete-file removal).
	job  string
	want faultWant
	nth  int // the rule fails the nth match (default 1)
	// blobs runs the case with blob files on (every value separated).
	blobs bool
}

func (c faultCase) background() bool {
	switch c.job {
	case "commit-nosync", "flush", "compaction", "cleanup":
		return true
	}
	return false
}

// repeats reports whether the job meets its fault again and again, so a
// rule may fail a later match than the first.
func (c faultCase) repeats() bool {
	switch c.job {
	case "commit", "commit-nosync", "flush", "compaction", "get", "iterator":
		return true
	}
	return false
}

func (c faultCase) name() string {
	where := "fg"
	if c.background() {
		where = "bg"
	}
	return fmt.Sprintf("%s/%s/%s-%s", c.op, c.kind, c.job, where)
}

// faultMatrix lists the cases: every operation an errorfs.FS can fail, on each
// kind of file where shale does it, in foreground and background work.
var faultMatrix = []faultCase{
	// WAL: commits, rotation, recovery.
	{op: errorfs.OpWrite, kind: "WAL", pattern: "*.log", job: "commit", want: wantReadOnly},
	{op: errorfs.OpSync, kind: "WAL", pattern: "*.log", job: "commit", want: wantReadOnly},
	{op: errorfs.OpPreallocate, kind: "WAL", pattern: "*.log", job: "commit", want: wantTolerated},
	{op: errorfs.OpWrite, kind: "WAL", pattern: "*.log", job: "commit-nosync", want: wantReadOnly},
	{op: errorfs.OpCreate, kind: "WAL", pattern: "*.log", job: "flush", want: wantReadOnly},
	{op: errorfs.OpTruncate, kind: "WAL", pattern: "*.log", job: "flush", want: wantReadOnly},
	{op: errorfs.OpSync, kind: "dir", pattern: "db", job: "flush", want: wantReadOnly},
	{op: errorfs.OpRead, kind: "WAL", pattern: "*.log", job: "open", want: wantOpenError},
	{op: errorfs.OpOpen, kind: "WAL", pattern: "*.log", job: "open", want: wantOpenError},
	// Open keeps appending to a last WAL that replayed cleanly: its second
	// open of the WAL (for appending) failing makes it flush the replayed
	// memtable and start a new WAL instead.
	{op: errorfs.OpOpen, kind: "WAL", pattern: "*.log", job: "open", want: wantTolerated, nth: 2},
	{op: errorfs.OpRemove, kind: "WAL", pattern: "*.log", job: "cleanup", want: wantTolerated},
	// SST: flush and compaction outputs, reads.
	{op: errorfs.OpCreate, kind: "SST", pattern: "*.sst", job: "flush", want: wantReadOnly},
	{op: errorfs.OpWrite, kind: "SST", pattern: "*.sst", job: "flush", want: wantReadOnly, nth: 2},
	{op: errorfs.OpSync, kind: "SST", pattern: "*.sst", job: "flush", want: wantReadOnly},
	{op: errorfs.OpPreallocate, kind: "SST", pattern: "*.sst", job: "flush", want: wantTolerated},
	{op: errorfs.OpStartWriteback, kind: "SST", pattern: "*.sst", job: "flush", want: wantTolerated},
	{op: errorfs.OpTruncate, kind: "SST", pattern: "*.sst", job: "flush", want: wantReadOnly},
	{op: errorfs.OpCreate, kind: "SST", pattern: "*.sst", job: "compaction", want: wantReadOnly},
	{op: errorfs.OpWrite, kind: "SST", pattern: "*.sst", job: "compaction", want: wantReadOnly, nth: 3},
	{op: errorfs.OpSync, kind: "SST", pattern: "*.sst", job: "compaction", want: wantReadOnly},
	{op: errorfs.OpRead, kind: "SST", pattern: "*.sst", job: "compaction", want: wantReadOnly, nth: 2},
	{op: errorfs.OpOpen, kind: "SST", pattern: "*.sst", job: "compaction", want: wantReadOnly},
	{op: errorfs.OpCreate, kind: "SST", pattern: "*.sst", job: "manual compaction", want: wantReadOnly},
	{op: errorfs.OpRead, kind: "SST", pattern: "*.sst", job: "manual compaction", want: wantReadOnly},
	{op: errorfs.OpRead, kind: "SST", pattern: "*.sst", job: "get", want: wantReadError, nth: 2},
	{op: errorfs.OpOpen, kind: "SST", pattern: "*.sst", job: "get", want: wantReadError},
	{op: errorfs.OpRead, kind: "SST", pattern: "*.sst", job: "iterator", want: wantReadError, nth: 2},
	{op: errorfs.OpOpen, kind: "SST", pattern: "*.sst", job: "iterator", want: wantReadError},
	{op: errorfs.OpRemove, kind: "SST", pattern: "*.sst", job: "cleanup", want: wantTolerated},
	// MANIFEST: edits, rotation, recovery.
	{op: errorfs.OpWrite, kind: "MANIFEST", pattern: "MANIFEST-*", job: "flush", want: wantReadOnly},
	{op: errorfs.OpSync, kind: "MANIFEST", pattern: "MANIFEST-*", job: "flush", want: wantReadOnly},
	{op: errorfs.OpCreate, kind: "MANIFEST", pattern: "MANIFEST-*", job: "flush", want: wantReadOnly},
	// Open syncs two MANIFEST records (the snapshot and its recovery
	// edit); the third is the compaction's.
	{op: errorfs.OpSync, kind: "MANIFEST", pattern: "MANIFEST-*", job: "compaction", want: wantReadOnly, nth: 3},
	{op: errorfs.OpRead, kind: "MANIFEST", pattern: "MANIFEST-*", job: "open", want: wantOpenError},
	{op: errorfs.OpOpen, kind: "MANIFEST", pattern: "MANIFEST-*", job: "open", want: wantOpenError},
	{op: errorfs.OpCreate, kind: "MANIFEST", pattern: "MANIFEST-*", job: "open", want: wantOpenError},
	{op: errorfs.OpRemove, kind: "MANIFEST", pattern: "MANIFEST-*", job: "cleanup", want: wantTolerated},
	// CURRENT: replaced (temp file, sync, rename) at MANIFEST rotation.
	{op: errorfs.OpCreate, kind: "CURRENT", pattern: "*.dbtmp", job: "flush", want: wantReadOnly},
	{op: errorfs.OpWrite, kind: "CURRENT", pattern: "*.dbtmp", job: "flush", want: wantReadOnly},
	{op: errorfs.OpSync, kind: "CURRENT", pattern: "*.dbtmp", job: "flush", want: wantReadOnly},
	{op: errorfs.OpRename, kind: "CURRENT", pattern: "CURRENT", job: "flush", want: wantReadOnly},
	{op: errorfs.OpRead, kind: "CURRENT", pattern: "CURRENT", job: "open", want: wantOpenError},
	{op: errorfs.OpOpen, kind: "CURRENT", pattern: "CURRENT", job: "open", want: wantOpenError},
	{op: errorfs.OpRename, kind: "CURRENT", pattern: "CURRENT", job: "open", want: wantOpenError},
	// OPTIONS: written at Open, after CURRENT (so its temp file is the
	// second one Open writes).
	{op: errorfs.OpCreate, kind: "OPTIONS", pattern: "*.dbtmp", job: "open", want: wantOpenError, nth: 2},
	{op: errorfs.OpWrite, kind: "OPTIONS", pattern: "*.dbtmp", job: "open", want: wantOpenError, nth: 2},
	{op: errorfs.OpSync, kind: "OPTIONS", pattern: "*.dbtmp", job: "open", want: wantOpenError, nth: 2},
	{op: errorfs.OpRename, kind: "OPTIONS", pattern: "OPTIONS-*", job: "open", want: wantOpenError},
	// The directory and its lock.
	{op: errorfs.OpLock, kind: "LOCK", pattern: "LOCK", job: "open", want: wantOpenError},
	{op: errorfs.OpList, kind: "dir", pattern: "db", job: "open", want: wantOpenError},
	{op: errorfs.OpSync, kind: "dir", pattern: "db", job: "open", want: wantOpenError},
}

// faultVariant is how an injected failure looks.
type faultVariant struct {
	name       string
	noSpace    bool
	shortWrite bool
}

func faultVariants(op errorfs.Op) []faultVariant {
	vs := []faultVariant{{name: "EIO"}}
	switch op {
	case errorfs.OpWrite:
		vs = append(vs, faultVariant{name: "ENOSPC", noSpace: true}, faultVariant{name: "torn", shortWrite: true},
			faultVariant{name: "torn-ENOSPC", noSpace: true, shortWrite: true})
	case errorfs.OpSync, errorfs.OpCreate, errorfs.OpPreallocate, errorfs.OpRename, errorfs.OpTruncate:
		vs = append(vs, faultVariant{name: "ENOSPC", noSpace: true})
	}
	return vs
}

// TestFaultMatrix injects one failure per case of faultMatrix and checks
// what follows: foreground calls return an error wrapping the cause; a
// failure of background work (or of a commit) makes the DB read-only with
// writes failing with an error wrapping the cause while reads work; Resume
// once the fault is gone makes it writable again (ENOSPC included); failed
// reads leave the DB usable; failed opens leave the DB openable; and after
// a crash (MemFS.CrashClone) and after Close, a reopen finds every
// acknowledged write, nothing else but writes whose call failed, and no
// file the MANIFEST does not reference. The default run takes one variant
// per case (seeded); SHALE_STRESS=1 runs every variant at Nth = 1..3.
func TestFaultMatrix(t *testing.T) { runFaultMatrix(t, faultMatrix) }

// faultMatrixBlobFiles are the cases of blob files, run with blob files on
// (every value separated): flushes write them, reads open and read them,
// compactions delete them.
var faultMatrixBlobFiles = []faultCase{
	{op: errorfs.OpCreate, kind: "blob", pattern: "*.blob", job: "flush", want: wantReadOnly},
	{op: errorfs.OpWrite, kind: "blob", pattern: "*.blob", job: "flush", want: wantReadOnly},
	{op: errorfs.OpSync, kind: "blob", pattern: "*.blob", job: "flush", want: wantReadOnly},
	{op: errorfs.OpPreallocate, kind: "blob", pattern: "*.blob", job: "flush", want: wantTolerated},
	{op: errorfs.OpStartWriteback, kind: "blob", pattern: "*.blob", job: "flush", want: wantTolerated},
	{op: errorfs.OpTruncate, kind: "blob", pattern: "*.blob", job: "flush", want: wantReadOnly},
	{op: errorfs.OpRead, kind: "blob", pattern: "*.blob", job: "get", want: wantReadError},
	{op: errorfs.OpRead, kind: "blob", pattern: "*.blob", job: "get", want: wantReadError, nth: 3},
	{op: errorfs.OpOpen, kind: "blob", pattern: "*.blob", job: "get", want: wantReadError},
	{op: errorfs.OpRead, kind: "blob", pattern: "*.blob", job: "iterator", want: wantReadError, nth: 3},
	{op: errorfs.OpOpen, kind: "blob", pattern: "*.blob", job: "iterator", want: wantReadError},
	{op: errorfs.OpRemove, kind: "blob", pattern: "*.blob", job: "cleanup", want: wantTolerated},
	// The table side of the same jobs, with blob indexes in the tables.
	{op: errorfs.OpSync, kind: "SST", pattern: "*.sst", job: "flush", want: wantReadOnly},
	{op: errorfs.OpWrite, kind: "SST", pattern: "*.sst", job: "compaction", want: wantReadOnly, nth: 3},
	{op: errorfs.OpSync, kind: "MANIFEST", pattern: "MANIFEST-*", job: "flush", want: wantReadOnly},
	{op: errorfs.OpSync, kind: "MANIFEST", pattern: "MANIFEST-*", job: "compaction", want: wantReadOnly, nth: 3},
}

// TestFaultMatrixBlobFiles is TestFaultMatrix over faultMatrixBlobFiles:
// every fault in a blob file's write fails its flush and leaves nothing
// behind once recovered, every fault in a blob read fails that read only,
// and no blob file is left that the MANIFEST does not know.
func TestFaultMatrixBlobFiles(t *testing.T) {
	cases := slices.Clone(faultMatrixBlobFiles)
	for i := range cases {
		cases[i].blobs = true
	}
	runFaultMatrix(t, cases)
}

func runFaultMatrix(t *testing.T, matrix []faultCase) {
	seed := modelSeed(t)
	t.Logf("seed %d (rerun with SHALE_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0xfa17))
	injected := map[errorfs.Op]int{}
	cases := 0
	for _, c := range matrix {
		variants := faultVariants(c.op)
		nths := []int{0}
		if stress() {
			if c.repeats() {
				nths = []int{0, 1, 2}
			}
		} else {
			variants = []faultVariant{variants[rng.IntN(len(variants))]}
		}
		for _, v := range variants {
			for _, extra := range nths {
				c := c
				c.nth = max(c.nth, 1) + extra
				t.Run(fmt.Sprintf("%s/%s/nth=%d", c.name(), v.name, c.nth), func(t *testing.T) {
					op, n := runFaultCase(t, c, v)
					injected[op] += n
				})
				cases++
			}
		}
	}
	var ops []string
	for op, n := range injected {
		ops = append(ops, fmt.Sprintf("%s=%d", op, n))
	}
	slices.Sort(ops)
	t.Logf("%d cases; faults injected per operation: %s", cases, strings.Join(ops, " "))
}

// faultHarness holds a DB on an errorfs.FS over a MemFS and the model of what
// was written to it.
type faultHarness struct {
	t    *testing.T
	mem  *vfs.MemFS
	ffs  *errorfs.FS
	opts *Options
	db   *DB
	// acked holds acknowledged writes; synced the keys of those that were
	// acknowledged as durable; maybe the writes whose call failed, which
	// may or may not have happened.
	acked, maybe model
	synced       map[string]bool
	next         int
}

func newFaultHarness(t *testing.T, blobs bool) *faultHarness {
	mem := vfs.NewMem()
	ffs := errorfs.New(mem, 1)
	opts := testOptions(ffs)
	if blobs {
		// With garbage collection, so that faults also land in the reads
		// and writes of relocations.
		setBlobTestOptions(opts)
		setBlobGCTestOptions(opts)
		opts.MinBlobSize = 0
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.BytesPerSync = 2 << 10 // exercise StartWriteback
	opts.BlockCacheSize = -1    // reads reach the files
	opts.DisableAutoCompactions = true
	h := &faultHarness{t: t, mem: mem, ffs: ffs, opts: opts, acked: model{}, maybe: model{}, synced: map[string]bool{}}
	h.open()
	return h
}

func (h *faultHarness) open() {
	h.t.Helper()
	db, err := Open("/db", h.opts)
	if err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	h.db = db
}

func (h *faultHarness) close() {
	h.t.Helper()
	if err := h.db.Close(); err != nil {
		h.t.Fatalf("Close: %v", err)
	}
	h.db = nil
}

// put writes the next key; it records the outcome in the model.
func (h *faultHarness) put(sync bool) error {
	h.next++
	return h.putKey(h.next-1, sync)
}

// putKey writes key i with a value it never had.
func (h *faultHarness) putKey(i int, sync bool) error {
	k := fmt.Sprintf("key%06d", i)
	// Values that compress poorly, so tables reach BytesPerSync.
	var pad strings.Builder
	for x := uint64(h.next)*0x9e3779b97f4a7c15 + 1; pad.Len() < 40+i%90; x = x*6364136223846793005 + 1442695040888963407 {
		fmt.Fprintf(&pad, "%016x", x)
	}
	v := fmt.Sprintf("%s-%d-%s", k, h.next, pad.String())
	h.next++
	if err := h.db.Put([]byte(k), []byte(v), &WriteOptions{Sync: sync}); err != nil {
		h.maybe[k] = v
		return err
	}
	h.acked[k] = v
	if sync {
		h.synced[k] = true
	}
	return nil
}

func (h *faultHarness) putN(n int) error {
	for range n {
		if err := h.put(true); err != nil {
			return err
		}
	}
	return nil
}

// overwriteSpread rewrites every fifth key written so far and flushes, so
// the new table overlaps every older one.
func (h *faultHarness) overwriteSpread() error {
	for i, n := 0, h.next; i < n; i += 5 {
		if err := h.putKey(i, true); err != nil {
			return err
		}
	}
	return h.db.Flush()
}

// compactionsIdle reports whether no compaction runs or waits to start.
func (h *faultHarness) compactionsIdle() bool {
	d := h.db
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.compact.running > 0 || d.mu.compact.flushing {
		return false
	}
	v := d.versions.Current()
	defer v.Unref()
	// With nothing running, a compaction to pick means work
	// maybeScheduleLocked has yet to start.
	return !d.picker.NeedsCompaction(v, d.pickEnvLocked())
}

// check compares db with the model: every key in must (with its acked
// value) is there, and nothing but acked or maybe writes.
func (h *faultHarness) check(db *DB, what string, must func(k string) bool) {
	h.t.Helper()
	got := model{}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		h.t.Fatalf("%s: scan: %v", what, err)
	}
	for k, v := range got {
		if h.acked[k] != v && h.maybe[k] != v {
			h.t.Fatalf("%s: key %s = %q was never written", what, k, v)
		}
	}
	for k, v := range h.acked {
		if !must(k) {
			continue
		}
		if m, ok := h.maybe[k]; ok && got[k] == m {
			v = m // a later write whose call failed happened after all
		}
		if got[k] != v {
			h.t.Fatalf("%s: acknowledged write of %s is lost (scan has %q)", what, k, got[k])
		}
		if val, err := db.Get([]byte(k), nil); err != nil || string(val) != v {
			h.t.Fatalf("%s: Get(%s) = %q, %v", what, k, val, err)
		}
	}
}

// checkNoOrphans makes sure the directory holds only the files the DB uses:
// the live tables, one MANIFEST, WALs from the log number on. It first waits
// for the compactions the reopen started: their outputs, and the inputs
// they made obsolete until the deleting goroutine removes them, are not yet
// or no longer live without being orphans. (WaitForCompact deletes only
// files a version made obsolete; one that no version ever tracked, which is
// what this looks for, stays for the check to see.)
func checkNoOrphans(t *testing.T, db *DB, fs vfs.FS) {
	t.Helper()
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatalf("WaitForCompact: %v", err)
	}
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	live := db.versions.LiveFileNums()
	liveBlobs := db.versions.LiveBlobFileNums()
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		bad := false
		switch typ {
		case base.FileTypeTable:
			_, isLive := live[num]
			bad = !isLive
		case base.FileTypeBlob:
			_, isLive := liveBlobs[num]
			bad = !isLive
		case base.FileTypeManifest:
			bad = num != db.versions.ManifestFileNum()
		case base.FileTypeLog:
			bad = num < db.versions.LogNumber()
		case base.FileTypeTemp:
			bad = true
		}
		if bad {
			t.Errorf("after reopen the directory still holds %s, which the DB does not use", name)
		}
	}
}

// waitFor polls cond until it holds or a generous deadline passes (the
// deadline only stops a hung test; nothing is asserted on timing).
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func runFaultCase(t *testing.T, c faultCase, v faultVariant) (errorfs.Op, int) {
	h := newFaultHarness(t, c.blobs)
	defer func() {
		if h.db != nil {
			h.db.Close()
		}
	}()
	// Some data in tables and some in the WAL.
	for range 3 {
		if err := h.putN(60); err != nil {
			t.Fatal(err)
		}
		if err := h.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.putN(40); err != nil {
		t.Fatal(err)
	}
	cause := errorfs.ErrInjected
	if v.noSpace {
		cause = syscall.ENOSPC
	}
	rule := errorfs.Rule{Op: c.op, PathPattern: c.pattern, Nth: c.nth, NoSpace: v.noSpace, ShortWrite: v.shortWrite}
	arm := func() { h.ffs.AddRule(rule) }

	var err error // the error the foreground call (or the next write) returned
	var crash *vfs.MemFS
	switch c.job {
	case "commit":
		arm()
		for i := 0; i < 2000 && err == nil; i++ {
			err = h.put(true)
		}
	case "commit-nosync":
		arm()
		for i := 0; i < 2000 && err == nil; i++ {
			err = h.put(false)
		}
		if err == nil && waitFor(func() bool { return h.db.Metrics().BackgroundError != nil }) {
			err = h.put(true)
		}
	case "flush":
		arm()
		for i := 0; i < 40 && err == nil; i++ {
			if err = h.putN(30); err == nil {
				err = h.db.Flush()
			}
		}
	case "compaction":
		// Overlapping L0 tables (a compaction of disjoint ones is a
		// trivial move, which writes no table); then reopen with automatic
		// compactions on: L0 is over the trigger, so a compaction starts
		// in the background at once, and Open itself touches no table.
		if err := h.overwriteSpread(); err != nil {
			t.Fatal(err)
		}
		h.close()
		arm()
		h.opts.DisableAutoCompactions = false
		h.open()
		for i := 0; i < 20; i++ {
			waitFor(func() bool { return h.compactionsIdle() || h.db.Metrics().BackgroundError != nil })
			if h.db.Metrics().BackgroundError != nil {
				err = h.put(true)
				break
			}
			// The rule's match is later: two more overlapping tables
			// start another compaction.
			if err = h.overwriteSpread(); err != nil {
				break
			}
			if err = h.overwriteSpread(); err != nil {
				break
			}
		}
	case "manual compaction":
		arm()
		err = h.db.CompactRange(nil, nil)
	case "open":
		h.close()
		arm()
		var db *DB
		db, err = Open("/db", h.opts)
		if err == nil {
			db.Close()
		}
		crash = h.mem.CrashClone()
		if c.want == wantTolerated {
			h.ffs.ClearRules()
			h.open()
		}
	case "get", "iterator":
		// A fresh Open, so tables are opened (and read) by this read.
		h.close()
		h.open()
		arm()
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range h.acked {
				if !yield(k) {
					return
				}
			}
		})
		if c.job == "get" {
			for _, k := range keys {
				if _, err = h.db.Get([]byte(k), nil); err != nil {
					break
				}
			}
		} else {
			it := h.db.NewIterator(nil)
			for ok := it.First(); ok; ok = it.Next() {
				_ = it.Value() // a blob value is read only when asked for
			}
			err = it.Close()
		}
	case "cleanup":
		arm()
		for i := 0; i < 40 && h.ffs.Injected() == 0; i++ {
			if err = h.putN(30); err == nil && c.blobs {
				// Blob files become obsolete once every value in them is
				// overwritten.
				for k, n := 0, h.next; k < n && err == nil; k++ {
					err = h.putKey(k, false)
				}
			}
			if err == nil {
				err = h.db.CompactRange(nil, nil)
			}
			if err != nil {
				break
			}
		}
	default:
		t.Fatalf("unknown job %q", c.job)
	}
	injected := h.ffs.Injected()
	if injected == 0 {
		t.Fatalf("the rule never matched (err %v)", err)
	}
	if crash == nil {
		crash = h.mem.CrashClone()
	}
	crashSynced := make(map[string]bool, len(h.synced))
	for k := range h.synced {
		crashSynced[k] = true
	}

	switch c.want {
	case wantReadOnly:
		if !errors.Is(err, cause) {
			t.Fatalf("want an error wrapping %v, got %v", cause, err)
		}
		if perr := h.put(true); !errors.Is(perr, ErrReadOnly) || !errors.Is(perr, cause) {
			t.Fatalf("a write in the read-only state returned %v, want ErrReadOnly wrapping %v", perr, cause)
		}
		if h.db.Metrics().BackgroundError == nil {
			t.Fatal("Metrics shows no background error")
		}
		h.check(h.db, "reads while read-only", func(string) bool { return true })
		h.ffs.ClearRules()
		if err := h.db.Resume(); err != nil {
			t.Fatalf("Resume: %v", err)
		}
	case wantOpenError:
		if !errors.Is(err, cause) {
			t.Fatalf("Open returned %v, want an error wrapping %v", err, cause)
		}
		h.ffs.ClearRules()
		h.open()
	case wantReadError:
		if !errors.Is(err, cause) {
			t.Fatalf("the read returned %v, want an error wrapping %v", err, cause)
		}
		h.ffs.ClearRules()
		if m := h.db.Metrics(); m.BackgroundError != nil {
			t.Fatalf("a failed read stopped the DB: %v", m.BackgroundError)
		}
	case wantTolerated:
		if err != nil {
			t.Fatalf("a tolerated failure surfaced: %v", err)
		}
		h.ffs.ClearRules()
	}
	// Writable again, and everything acknowledged is readable.
	if err := h.putN(30); err != nil {
		t.Fatalf("write after recovering from the fault: %v", err)
	}
	if err := h.db.Flush(); err != nil {
		t.Fatalf("Flush after recovering from the fault: %v", err)
	}
	h.check(h.db, "after the fault", func(string) bool { return true })

	// Power loss at the fault: every write acknowledged as durable before
	// it survives.
	o := *h.opts
	o.FS = crash
	cdb, err := Open("/db", &o)
	if err != nil {
		t.Fatalf("reopen after a crash at the fault: %v", err)
	}
	h.check(cdb, "after a crash at the fault", func(k string) bool { return crashSynced[k] })
	cdb.Close()

	// Close and reopen on the same FS: everything acknowledged is there and
	// no file is left over.
	h.close()
	h.open()
	h.check(h.db, "after Close and reopen", func(string) bool { return true })
	checkNoOrphans(t, h.db, h.mem)
	// Nothing the fault left behind is damage: Check finds every live file
	// intact, after Close and after the crash and its recovery.
	h.close()
	for what, fs := range map[string]vfs.FS{"after Close": h.mem, "after the crash": crash} {
		rep, err := Check("/db", &Options{FS: fs})
		if err != nil || !rep.OK() {
			t.Fatalf("Check %s: %v\n%s", what, err, rep)
		}
	}
	return c.op, injected
}

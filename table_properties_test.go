package shale

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// feedCollector runs a collector of f over entries given as a string, one
// byte per entry: 'd' Delete, 's' SingleDelete, 'r' range tombstone, 'p'
// Put. It returns whether the collector asked for compaction before Finish
// and after it.
func feedCollector(t *testing.T, f TablePropertiesCollectorFactory, entries string) (before, after bool) {
	t.Helper()
	c := f.CreateTablePropertiesCollector(TablePropertiesCollectorContext{})
	for i, e := range entries {
		typ := map[rune]EntryType{'d': EntryDelete, 's': EntrySingleDelete, 'r': EntryRangeDeletion, 'p': EntryPut}[e]
		if err := c.AddUserKey([]byte(strconv.Itoa(i)), nil, typ, uint64(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	before = c.NeedCompact()
	if err := c.Finish(UserCollectedProperties{}); err != nil {
		t.Fatal(err)
	}
	return before, c.NeedCompact()
}

func TestCompactOnDeletionCollector(t *testing.T) {
	for _, tc := range []struct {
		name           string
		window, trig   int
		ratio          float64
		entries        string
		window1, final bool // NeedCompact before and after Finish
	}{
		{"3 deletions within 10 entries", 10, 3, 0, "dppppdpppd", true, true},
		{"3 deletions spread over 11 entries", 10, 3, 0, "dpppppppppdd", false, false},
		{"a later window of 10 holds them", 10, 3, 0, "dpppppppppddd", true, true},
		{"SingleDelete counts", 4, 2, 0, "psps", true, true},
		{"range tombstones are entries, not deletions", 4, 2, 0, "pdrrrd", false, false},
		{"window larger than the file", 1000, 3, 0, "pdpdpd", true, true},
		{"window larger than the file, too few", 1000, 4, 0, "pdpdpd", false, false},
		{"trigger 0 marks at the first deletion", 100, 0, 0, "pppd", true, true},
		{"trigger 0 without deletions", 100, 0, 0, "pppp", false, false},
		{"trigger 1", 100, 1, 0, "pd", true, true},
		{"trigger above the window: window test off", 2, 3, 0, "dddddd", false, false},
		{"window 0: window test off", 0, 1, 0, "dddd", false, false},
		{"ratio reached at Finish", 0, 0, 0.5, "dpdpdpdppd", false, true},
		{"ratio not reached", 0, 0, 0.5, "dpdpdppppd", false, false},
		{"ratio 1 with only deletions", 0, 0, 1, "ddsd", false, true},
		{"ratio counts range tombstones as entries", 0, 0, 0.5, "ddrr", false, true},
		{"ratio counts range tombstones as entries, below", 0, 0, 0.6, "ddrr", false, false},
		{"ratio above 1 is off", 0, 0, 1.5, "dddd", false, false},
		{"ratio 0 is off", 0, 0, 0, "dddd", false, false},
		{"negative ratio is off", 0, 0, -0.5, "dddd", false, false},
		{"empty table", 10, 1, 0.5, "", false, false},
		{"negative window and trigger count as 0", -5, -1, 0, "dddd", false, false},
		{"window and ratio: window first", 5, 2, 0.9, "ddpppppppp", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewCompactOnDeletionCollectorFactory(tc.window, tc.trig, tc.ratio)
			before, after := feedCollector(t, f, tc.entries)
			if before != tc.window1 || after != tc.final {
				t.Fatalf("%s over %q: NeedCompact %v before Finish, %v after; want %v, %v", f.Name(), tc.entries, before, after, tc.window1, tc.final)
			}
		})
	}
}

// TestCompactOnDeletionCollectorWindowExact compares the window test with a
// direct count over random sequences: marked exactly when some window of N
// consecutive entries (or the whole table, when shorter) holds D
// deletions.
func TestCompactOnDeletionCollectorWindowExact(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 9))
	for iter := range 3000 {
		n := rng.IntN(200)
		window, trig := 1+rng.IntN(40), rng.IntN(12)
		var b strings.Builder
		density := rng.Float64()
		for range n {
			switch r := rng.Float64(); {
			case r < density*0.8:
				b.WriteByte('d')
			case r < density:
				b.WriteByte('s')
			case r < density+0.05:
				b.WriteByte('r')
			default:
				b.WriteByte('p')
			}
		}
		entries := b.String()
		want := false
		need := max(trig, 1)
		for end := range len(entries) {
			cnt := 0
			for i := max(0, end-window+1); i <= end; i++ {
				if entries[i] == 'd' || entries[i] == 's' {
					cnt++
				}
			}
			if cnt >= need && need <= window {
				want = true
			}
		}
		got, _ := feedCollector(t, NewCompactOnDeletionCollectorFactory(window, trig, 0), entries)
		if got != want {
			t.Fatalf("seed %d iter %d: window %d trigger %d over %q: marked %v, want %v", seed, iter, window, trig, entries, got, want)
		}
	}
}

// recordingCollector is a user's collector: it counts entries by type,
// keeps the sizes and seqnums it was given, and asks for compaction when it
// sees the key "compact-me".
type recordingCollector struct {
	ctx        TablePropertiesCollectorContext
	counts     map[EntryType]int
	sizes      []uint64
	lastSeq    uint64
	marked     bool
	failAdd    bool
	failFinish bool
	log        *collectorLog
}

// collectorLog gathers what the collectors of one DB saw, for the test.
type collectorLog struct {
	mu         sync.Mutex
	contexts   []TablePropertiesCollectorContext
	sizeErrors []string
}

func (c *recordingCollector) Name() string { return "test.recording" }

func (c *recordingCollector) AddUserKey(key, value []byte, typ EntryType, seq uint64, fileSize uint64) error {
	c.counts[typ]++
	if n := len(c.sizes); n > 0 && fileSize < c.sizes[n-1] {
		c.log.mu.Lock()
		c.log.sizeErrors = append(c.log.sizeErrors, fmt.Sprintf("file size went from %d to %d", c.sizes[n-1], fileSize))
		c.log.mu.Unlock()
	}
	c.sizes = append(c.sizes, fileSize)
	c.lastSeq = max(c.lastSeq, seq)
	if string(key) == "compact-me" {
		c.marked = true
	}
	if c.failAdd {
		return errors.New("add failed on purpose")
	}
	return nil
}

func (c *recordingCollector) Finish(props UserCollectedProperties) error {
	props["test.puts"] = strconv.Itoa(c.counts[EntryPut])
	props["test.deletes"] = strconv.Itoa(c.counts[EntryDelete] + c.counts[EntrySingleDelete])
	props["test.rangedels"] = strconv.Itoa(c.counts[EntryRangeDeletion])
	props["test.maxseq"] = strconv.FormatUint(c.lastSeq, 10)
	props["test.level"] = strconv.Itoa(c.ctx.Level)
	props["shale.num.tombstone-dense-blocks"] = "not a user's to set"
	if c.failFinish {
		return errors.New("finish failed on purpose")
	}
	return nil
}

func (c *recordingCollector) NeedCompact() bool { return c.marked }

type recordingFactory struct {
	log                 *collectorLog
	failAdd, failFinish bool
}

func (f *recordingFactory) Name() string { return "test.recording-factory" }

func (f *recordingFactory) CreateTablePropertiesCollector(ctx TablePropertiesCollectorContext) TablePropertiesCollector {
	f.log.mu.Lock()
	f.log.contexts = append(f.log.contexts, ctx)
	f.log.mu.Unlock()
	return &recordingCollector{ctx: ctx, counts: map[EntryType]int{}, log: f.log, failAdd: f.failAdd, failFinish: f.failFinish}
}

// TestUserTablePropertiesCollector runs a user's collector in flushes and
// compactions: its properties are stored and read back, it sees every
// entry kind with growing file sizes, its NeedCompact marks the table in
// the MANIFEST (across a reopen), and a marked table is compacted once
// automatic compactions run.
func TestUserTablePropertiesCollector(t *testing.T) {
	fs := vfs.NewMem()
	log := &collectorLog{}
	opts := testOptions(fs)
	opts.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{&recordingFactory{log: log}}
	opts.DisableAutoCompactions = true
	opts.Logger = slog.New(slog.DiscardHandler)
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		db.Put([]byte(fmt.Sprintf("k%03d", i)), bytes.Repeat([]byte("v"), 100), nil)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Tombstones of keys in a table survive the flush (those of keys no
	// table holds would be dropped at once).
	db.Delete([]byte("k001"), nil)
	db.SingleDelete([]byte("k002"), nil)
	db.DeleteRange([]byte("k010"), []byte("k020"), nil)
	db.Put([]byte("compact-me"), []byte("x"), nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	props, err := db.GetPropertiesOfAllTables()
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 2 {
		t.Fatalf("%d tables, want 2", len(props))
	}
	files := db.GetLiveFilesMetaData() // L0, newest first
	if len(files) != 2 || !files[0].MarkedForCompaction || files[1].MarkedForCompaction || files[0].Level != 0 {
		t.Fatalf("live files %+v, want the newer L0 table marked", files)
	}
	for name, p := range props {
		u := p.UserCollectedProperties
		want := "test.puts=50 test.deletes=0 test.rangedels=0 test.level=0"
		if strings.HasSuffix(name, files[0].Name) {
			want = "test.puts=1 test.deletes=2 test.rangedels=1 test.level=0"
		}
		got := fmt.Sprintf("test.puts=%s test.deletes=%s test.rangedels=%s test.level=%s",
			u["test.puts"], u["test.deletes"], u["test.rangedels"], u["test.level"])
		if got != want {
			t.Errorf("%s: user properties %s, want %s", name, got, want)
		}
		if _, ok := u["shale.num.tombstone-dense-blocks"]; ok {
			t.Errorf("%s: a collector's property took a built-in name: %v", name, u)
		}
	}
	if len(log.sizeErrors) > 0 || len(log.contexts) != 2 || !log.contexts[0].Flush {
		t.Fatalf("collector saw %v, contexts %+v", log.sizeErrors, log.contexts)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The mark is in the MANIFEST: it survives a reopen, and a crash.
	for _, clone := range []bool{false, true} {
		o := *opts
		if clone {
			o.FS = fs.CrashClone()
		}
		db, err := Open("/db", &o)
		if err != nil {
			t.Fatal(err)
		}
		files := db.GetLiveFilesMetaData()
		if len(files) != 2 || !files[0].MarkedForCompaction {
			t.Fatalf("after reopen (crash clone %v): live files %+v, want the marked table", clone, files)
		}
		db.Close()
	}

	// With automatic compactions, the marked table is compacted although
	// L0 is far below its trigger. Its output is marked again (it still
	// holds the key), and goes down level by level to the last, where a
	// marked table without tombstones stays.
	o := *opts
	o.DisableAutoCompactions = false
	db, err = Open("/db", &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.WaitForCompact(nil); err != nil {
		t.Fatal(err)
	}
	files = db.GetLiveFilesMetaData()
	if len(files) == 0 {
		t.Fatal("no tables after compaction")
	}
	for _, f := range files {
		if f.Level != o.NumLevels-1 {
			t.Fatalf("after compactions: %+v, want every table in the last level", files)
		}
	}
	props, err = db.GetPropertiesOfAllTables()
	if err != nil {
		t.Fatal(err)
	}
	var levels []string
	for _, p := range props {
		levels = append(levels, p.UserCollectedProperties["test.level"])
		// In the last level the range tombstone and the deletions went
		// with what they deleted.
		if p.UserCollectedProperties["test.deletes"] != "0" || p.UserCollectedProperties["test.rangedels"] != "0" {
			t.Errorf("last-level table kept tombstones: %v", p.UserCollectedProperties)
		}
	}
	if want := strconv.Itoa(o.NumLevels - 1); len(levels) == 0 || levels[0] != want {
		t.Errorf("collector context levels %v, want %s", levels, want)
	}
	if v, err := db.Get([]byte("k015"), nil); err == nil {
		t.Fatalf("k015 (range-deleted) = %q", v)
	}
	if v, err := db.Get([]byte("k030"), nil); err != nil || len(v) != 100 {
		t.Fatalf("k030 = %q, %v", v, err)
	}
}

// TestTablePropertiesCollectorErrors checks that a collector's errors never
// fail a write: a failing AddUserKey is logged, a failing Finish drops the
// collector's properties.
func TestTablePropertiesCollectorErrors(t *testing.T) {
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf, mu: &logMu}, nil))
	for _, tc := range []struct {
		name                string
		failAdd, failFinish bool
		wantProps           bool
		wantLog             string
	}{
		{"add fails", true, false, true, "failed to add an entry"},
		{"finish fails", false, true, false, "failed to finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logMu.Lock()
			logBuf.Reset()
			logMu.Unlock()
			opts := testOptions(vfs.NewMem())
			opts.Logger = logger
			opts.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{
				&recordingFactory{log: &collectorLog{}, failAdd: tc.failAdd, failFinish: tc.failFinish}}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.Put([]byte("a"), []byte("1"), nil)
			db.Put([]byte("b"), []byte("2"), nil)
			if err := db.Flush(); err != nil {
				t.Fatalf("flush failed: %v", err)
			}
			props, err := db.GetPropertiesOfAllTables()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range props {
				if _, ok := p.UserCollectedProperties["test.puts"]; ok != tc.wantProps {
					t.Fatalf("user properties %v, want them stored: %v", p.UserCollectedProperties, tc.wantProps)
				}
			}
			logMu.Lock()
			got := logBuf.String()
			logMu.Unlock()
			if strings.Count(got, tc.wantLog) != 1 {
				t.Fatalf("log %q, want one %q", got, tc.wantLog)
			}
			if v, err := db.Get([]byte("b"), nil); err != nil || string(v) != "2" {
				t.Fatalf("b = %q, %v", v, err)
			}
		})
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestCompactOnDeletionCollectorInDB marks a flushed table with RocksDB's
// collector and lets automatic compaction take it, with the built-in
// policy off (so the collector alone decides): a table of interleaved puts
// and deletes that is not tombstone-dense, but holds 10 deletions in some
// 100 entries.
func TestCompactOnDeletionCollectorInDB(t *testing.T) {
	for _, withCollector := range []bool{false, true} {
		t.Run(fmt.Sprintf("collector=%v", withCollector), func(t *testing.T) {
			opts := testOptions(vfs.NewMem())
			opts.DisableDeleteAwareCompaction = true
			opts.Level0FileNumCompactionTrigger = 8
			if withCollector {
				opts.TablePropertiesCollectorFactories = []TablePropertiesCollectorFactory{
					NewCompactOnDeletionCollectorFactory(100, 10, 0)}
			}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i := range 200 {
				db.Put([]byte(fmt.Sprintf("k%04d", i)), bytes.Repeat([]byte("v"), 30), nil)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.WaitForCompact(nil); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 200; i += 5 {
				db.Delete([]byte(fmt.Sprintf("k%04d", i)), nil)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.WaitForCompact(nil); err != nil {
				t.Fatal(err)
			}
			var dels uint64
			for _, f := range db.GetLiveFilesMetaData() {
				dels += f.NumDeletions
			}
			if withCollector && dels != 0 {
				t.Fatalf("%d tombstones left: the marked table was not compacted", dels)
			}
			if !withCollector && dels != 40 {
				t.Fatalf("%d tombstones left without the collector, want all 40", dels)
			}
		})
	}
}

package shale

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/testdir"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/latencyfs"
)

// slowLatency is the read latency of the slow device of the deadline tests:
// far beyond the deadlines they set, so that a read that is not cut short
// at its deadline makes the test fail its bound.
const slowLatency = 5 * time.Second

// deadlineSlack is how late after its deadline a timed-out call may return:
// generous, since the machine running the tests is loaded.
const deadlineSlack = 2 * time.Second

// deadlineDB is a DB over a latency FS whose one table holds deadlineKeys
// keys in many data blocks, with the table open and the block of key 0
// cached, while the FS reads fast.
type deadlineDB struct {
	db  *DB
	lfs *latencyfs.FS
	// goroutines and pinned are the baselines the calls must come back to.
	goroutines int
	pinned     int64
}

const deadlineKeys = 200

func deadlineKey(i int) []byte   { return fmt.Appendf(nil, "key%04d", i) }
func deadlineValue(i int) []byte { return fmt.Appendf(nil, "value-%04d-%0100d", i, i) }

// deadlineEnvs are the file systems and async readers the deadline tests
// run on: MemFS (whose files every async reader reads on goroutines), and on
// the OS file system io_uring (Linux, when the kernel allows it) and the
// portable reader.
var deadlineEnvs = []struct {
	name           string
	os             bool
	disableIOUring bool
}{
	{name: "mem"},
	{name: "os-io_uring", os: true},
	{name: "os-portable", os: true, disableIOUring: true},
}

// openDeadlineDB makes the deadlineDB of env, or skips t when env cannot
// run here.
func openDeadlineDB(t *testing.T, env string) *deadlineDB {
	t.Helper()
	var base vfs.FS
	dir := "/db"
	o := -1
	for i, e := range deadlineEnvs {
		if e.name == env {
			o = i
		}
	}
	e := deadlineEnvs[o]
	if e.disableIOUring && testing.Short() {
		// Env "mem" already reads on goroutines as the portable reader
		// does (every reader reads MemFS files so): skipped in short
		// runs, which CI runs under -race.
		t.Skip("the portable reader on the OS FS: not in short runs")
	}
	if e.os {
		base, dir = vfs.Default, testdir.New(t)
	} else {
		base = vfs.NewMem()
	}
	// A short latency while the DB is built: it starts the latency FS's
	// waker, which lives on, before the goroutine baseline.
	lfs := latencyfs.New(base, latencyfs.Options{ReadLatency: time.Millisecond})
	opts := testOptions(lfs)
	opts.WriteBufferSize = 1 << 20
	opts.DisableAutoCompactions = true
	opts.DisableIOUring = e.disableIOUring
	opts.CacheIndexAndFilterBlocks = true
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if env == "os-io_uring" && db.ioReader.Kind() != "io_uring" {
		t.Skip("io_uring unavailable here")
	}
	for i := range deadlineKeys {
		if err := db.Put(deadlineKey(i), deadlineValue(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get(deadlineKey(0), nil); err != nil || string(v) != string(deadlineValue(0)) {
		t.Fatalf("warm-up Get: %q, %v", v, err)
	}
	d := &deadlineDB{db: db, lfs: lfs}
	d.goroutines = runtime.NumGoroutine()
	d.pinned = db.Metrics().BlockCache.PinnedSize
	return d
}

// slow makes every read from now on take slowLatency.
func (d *deadlineDB) slow() { d.lfs.SetReadLatency(slowLatency) }

// fast makes reads immediate again.
func (d *deadlineDB) fast() { d.lfs.SetReadLatency(0) }

// checkReleased fails t unless the goroutine count comes back to the
// baseline (reads cut short at their deadline may still be finishing for a
// moment) and the block cache pins what it pinned before.
func (d *deadlineDB) checkReleased(t *testing.T) {
	t.Helper()
	var n int
	for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
		if n = runtime.NumGoroutine(); n <= d.goroutines {
			break
		}
	}
	if n > d.goroutines {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before the call:\n%s", n, d.goroutines, buf[:runtime.Stack(buf, true)])
	}
	if p := d.db.Metrics().BlockCache.PinnedSize; p != d.pinned {
		t.Fatalf("block cache pins %d bytes, %d before the call", p, d.pinned)
	}
}

// checkTimedOut fails t unless err matches ErrTimedOut and the call,
// started at start with deadline dl, returned within deadlineSlack of it.
func checkTimedOut(t *testing.T, what string, err error, start, dl time.Time) {
	t.Helper()
	if !errors.Is(err, ErrTimedOut) {
		t.Fatalf("%s: err %v, want ErrTimedOut", what, err)
	}
	if el := time.Since(start); el > dl.Sub(start)+deadlineSlack {
		t.Fatalf("%s returned after %v, deadline %v", what, el, dl.Sub(start))
	}
}

// TestReadDeadlineGet: a Get whose data block read takes 5 s returns
// ErrTimedOut soon after its Deadline (or IOTimeout), releasing what it
// held; the same Get without a deadline then returns the value.
func TestReadDeadlineGet(t *testing.T) {
	for _, env := range deadlineEnvs {
		for _, ioTimeout := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/io-timeout=%t", env.name, ioTimeout), func(t *testing.T) {
				d := openDeadlineDB(t, env.name)
				d.slow()
				start := time.Now()
				ro := &ReadOptions{}
				dl := start.Add(200 * time.Millisecond)
				if ioTimeout {
					ro.IOTimeout = 200 * time.Millisecond
				} else {
					ro.Deadline = dl
				}
				_, err := d.db.Get(deadlineKey(150), ro)
				checkTimedOut(t, "Get", err, start, dl)
				d.checkReleased(t)
				d.fast()
				if v, err := d.db.Get(deadlineKey(150), nil); err != nil || string(v) != string(deadlineValue(150)) {
					t.Fatalf("Get without a deadline: %q, %v", v, err)
				}
			})
		}
	}
}

// TestReadDeadlineMultiGet: a MultiGet (AsyncIO off and on) whose block
// reads take 5 s answers the key of a cached block, and every other key
// with ErrTimedOut, soon after its Deadline (or IOTimeout); without a
// deadline it then answers every key.
func TestReadDeadlineMultiGet(t *testing.T) {
	keys := [][]byte{deadlineKey(0), deadlineKey(60), deadlineKey(120), deadlineKey(199)}
	want := []int{0, 60, 120, 199}
	for _, env := range deadlineEnvs {
		for _, c := range []struct{ async, ioTimeout bool }{{false, false}, {true, false}, {true, true}} {
			async := c.async
			t.Run(fmt.Sprintf("%s/async=%t/io-timeout=%t", env.name, async, c.ioTimeout), func(t *testing.T) {
				d := openDeadlineDB(t, env.name)
				d.slow()
				start := time.Now()
				dl := start.Add(200 * time.Millisecond)
				ro := NewReadOptions()
				ro.AsyncIO = async
				if c.ioTimeout {
					ro.IOTimeout = 200 * time.Millisecond
				} else {
					ro.Deadline = dl
				}
				values, errs := d.db.MultiGet(keys, ro)
				if errs[0] != nil || string(values[0]) != string(deadlineValue(0)) {
					t.Fatalf("key of a cached block: %q, %v", values[0], errs[0])
				}
				for i := 1; i < len(keys); i++ {
					checkTimedOut(t, fmt.Sprintf("MultiGet key %s", keys[i]), errs[i], start, dl)
				}
				d.checkReleased(t)
				d.fast()
				values, errs = d.db.MultiGet(keys, &ReadOptions{AsyncIO: async})
				for i := range keys {
					if errs[i] != nil || string(values[i]) != string(deadlineValue(want[i])) {
						t.Fatalf("MultiGet without a deadline, key %s: %q, %v", keys[i], values[i], errs[i])
					}
				}
			})
		}
	}
}

// TestReadDeadlineMultiGetMarksKeysLeft: once a MultiGet's Deadline has
// passed, the keys of its later rounds are answered ErrTimedOut without
// being looked up, even one whose block is cached (RocksDB marks the keys
// left TimedOut). Two L0 tables: the newer one's round times out on a 5 s
// read, and the key of the older one, in the next round, must not be
// answered from the cache. (With AsyncIO and without
// MultiGetOneLevelAtATime both keys are in the first round, which answers
// the cached one.)
func TestReadDeadlineMultiGetMarksKeysLeft(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%t", async), func(t *testing.T) {
			d := openDeadlineDB(t, "mem")
			for i := 1000; i < 1000+deadlineKeys; i++ {
				if err := d.db.Put(deadlineKey(i), deadlineValue(i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.db.Flush(); err != nil {
				t.Fatal(err)
			}
			if _, err := d.db.Get(deadlineKey(1000), nil); err != nil {
				t.Fatal(err)
			}
			d.goroutines = runtime.NumGoroutine()
			d.slow()
			start := time.Now()
			dl := start.Add(200 * time.Millisecond)
			ro := &ReadOptions{AsyncIO: async, Deadline: dl, MultiGetOneLevelAtATime: true}
			_, errs := d.db.MultiGet([][]byte{deadlineKey(1150), deadlineKey(0)}, ro)
			checkTimedOut(t, "key of the newer table", errs[0], start, dl)
			checkTimedOut(t, "cached key of the older table", errs[1], start, dl)
			d.checkReleased(t)
		})
	}
}

// TestReadDeadlineIterator: an iterator (AsyncIO off and on) whose Seek,
// or whose Next into a block not read yet, would read for 5 s stops with
// ErrTimedOut soon after its Deadline (the Seek with AsyncIO: its
// IOTimeout), invalid; once closed it holds nothing, and a new iterator
// without a deadline reads the keys.
func TestReadDeadlineIterator(t *testing.T) {
	for _, env := range deadlineEnvs {
		for _, async := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/async=%t/seek", env.name, async), func(t *testing.T) {
				d := openDeadlineDB(t, env.name)
				d.slow()
				start := time.Now()
				dl := start.Add(200 * time.Millisecond)
				ro := &ReadOptions{AsyncIO: async, Deadline: dl}
				if async {
					// IOTimeout alone bounds the step as well.
					ro.Deadline, ro.IOTimeout = time.Time{}, 200*time.Millisecond
				}
				it := d.db.NewIterator(ro)
				if it.Seek(deadlineKey(100)) || it.Valid() {
					t.Fatal("Seek valid through a 5 s read with a 200 ms deadline")
				}
				checkTimedOut(t, "Seek", it.Err(), start, dl)
				if err := it.Close(); !errors.Is(err, ErrTimedOut) {
					t.Fatalf("Close: %v, want ErrTimedOut", err)
				}
				d.checkReleased(t)
				d.fast()
				it = d.db.NewIterator(&ReadOptions{AsyncIO: async})
				if !it.Seek(deadlineKey(100)) || string(it.Value()) != string(deadlineValue(100)) {
					t.Fatalf("Seek without a deadline: %q, %v", it.Key(), it.Err())
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
			})
			t.Run(fmt.Sprintf("%s/async=%t/next", env.name, async), func(t *testing.T) {
				d := openDeadlineDB(t, env.name)
				d.fast()
				start := time.Now()
				dl := start.Add(500 * time.Millisecond)
				it := d.db.NewIterator(&ReadOptions{AsyncIO: async, Deadline: dl})
				if !it.Seek(deadlineKey(0)) {
					t.Fatalf("Seek: %v", it.Err())
				}
				d.slow()
				n := 1
				for it.Next() {
					if string(it.Key()) != string(deadlineKey(n)) {
						t.Fatalf("key %q, want %q", it.Key(), deadlineKey(n))
					}
					n++
				}
				if n >= deadlineKeys {
					t.Fatalf("Next read all %d keys through a 5 s device within a 500 ms deadline", n)
				}
				checkTimedOut(t, fmt.Sprintf("Next after %d keys", n), it.Err(), start, dl)
				if it.Valid() {
					t.Fatal("iterator valid after timing out")
				}
				it.Close()
				d.checkReleased(t)
			})
		}
	}
}

// TestReadDeadlinePassedDoesNoIO: a Get, MultiGet or iterator step whose
// Deadline has already passed returns ErrTimedOut at once, reading nothing.
func TestReadDeadlinePassedDoesNoIO(t *testing.T) {
	d := openDeadlineDB(t, "mem")
	d.slow()
	before := d.lfs.Stats().ReadsDelayed
	start := time.Now()
	ro := &ReadOptions{Deadline: start.Add(-time.Second), AsyncIO: true}
	if _, err := d.db.Get(deadlineKey(0), ro); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("Get of a cached key: %v, want ErrTimedOut", err)
	}
	if _, err := d.db.Get(deadlineKey(150), ro); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("Get: %v, want ErrTimedOut", err)
	}
	_, errs := d.db.MultiGet([][]byte{deadlineKey(1), deadlineKey(150)}, ro)
	for i, err := range errs {
		if !errors.Is(err, ErrTimedOut) {
			t.Fatalf("MultiGet key %d: %v, want ErrTimedOut", i, err)
		}
	}
	it := d.db.NewIterator(ro)
	if it.First() || !errors.Is(it.Err(), ErrTimedOut) {
		t.Fatalf("First: valid %t, %v", it.Valid(), it.Err())
	}
	it.Close()
	if el := time.Since(start); el > time.Second {
		t.Fatalf("calls past their deadline took %v", el)
	}
	if n := d.lfs.Stats().ReadsDelayed - before; n != 0 {
		t.Fatalf("%d reads made past the deadline", n)
	}
	d.checkReleased(t)
}

// --- the model test's opDeadlineRead ---

// deadlineReadTarget runs opDeadlineRead: the DB with a far deadline, the
// model as any read.
type deadlineReadTarget interface {
	readWithin(op modelOp) string
}

// deadlineReadOp returns an opDeadlineRead of random keys and bounds.
func (g *opGenerator) deadlineReadOp() modelOp {
	op := modelOp{kind: opDeadlineRead, key: g.key(), snap: g.readSnap()}
	for n := 1 + g.rng.IntN(6); n > 0; n-- {
		op.keys = append(op.keys, g.key())
	}
	if g.rng.IntN(2) == 0 {
		op.lower, op.upper = g.orderedPair()
	}
	return op
}

// reportReadWithin formats the answers of an opDeadlineRead.
func reportReadWithin(op modelOp, v []byte, err error, vals [][]byte, errs []error, it kvIterator) string {
	var b strings.Builder
	fmt.Fprintf(&b, "get=%s multiget:", fmtResult(v, err))
	for j, k := range op.keys {
		fmt.Fprintf(&b, " %s=%s", k, fmtResult(vals[j], errs[j]))
	}
	b.WriteString(" scan:")
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Fprintf(&b, " %s=%s", it.Key(), fmtValue(it.Value()))
	}
	fmt.Fprintf(&b, " close=%s", fmtErr(it.Close()))
	return b.String()
}

func (m *modelTarget) readWithin(op modelOp) string {
	v, err := m.get(op.key, op.snap)
	vals, errs := m.multiGet(op.keys, op.snap)
	return reportReadWithin(op, v, err, vals, errs, m.newIter(op.snap, op.lower, op.upper, iterMode{}))
}

// readWithin reads as opDeadlineRead says with a deadline an hour away and
// an IO timeout of an hour.
func (d *dbTarget) readWithin(op modelOp) string {
	ro := &ReadOptions{AsyncIO: d.cfg.asyncIO, OptimizeMultiGetForIO: d.cfg.optimizeMultiGet,
		Deadline: time.Now().Add(time.Hour), IOTimeout: time.Hour}
	if op.snap != 0 {
		ro.Snapshot = d.snaps[op.snap]
	}
	v, err := d.db.Get(op.key, ro)
	vals, errs := d.db.MultiGet(op.keys, ro)
	iro := *ro
	iro.LowerBound, iro.UpperBound = op.lower, op.upper
	return reportReadWithin(op, v, err, vals, errs, d.db.NewIterator(&iro))
}

// TestModelReadDeadlines runs the model test with opDeadlineRead among the
// operations (AsyncIO off and on, with blob files): reads with a deadline
// that is met answer as the model does.
func TestModelReadDeadlines(t *testing.T) {
	ops := bySize(3000, 1000, 5000)
	for _, v := range []struct {
		name string
		set  func(*Options)
		cfg  dbRunConfig
	}{
		{"base", func(o *Options) {}, dbRunConfig{deadlines: true}},
		{"async-io-blob-files", setBlobTestOptions, dbRunConfig{deadlines: true, asyncIO: true, optimizeMultiGet: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 2), func(t *testing.T, seed uint64) {
				runModelWith(t, seed, ops, v.cfg, v.set)
			})
		})
	}
}

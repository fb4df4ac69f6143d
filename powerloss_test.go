package shale

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// TestPowerLoss crashes (drops every unsynced byte and directory change)
// after every mutating file-system operation of a workload that goes
// through flushes, compactions, MANIFEST rotations, CURRENT replacements,
// WAL rotations and reopens, and checks each crash: Open succeeds, every
// table the recovered version references exists with its recorded size,
// and the DB holds exactly the state after some prefix of the writes that
// includes every write acknowledged as durable before the crash (the
// writes are sequential, so the prefix is exact). A few times the workload
// fails a WAL sync or a flush (errorfs.FS above the crash points) and calls
// Resume, so crashes during and after a Resume are covered too.
//
// Under MemFS's model only a sync changes what a crash leaves
// (errorfs.Mutation.Durable), so the test reopens one crash clone per sync and
// checks every crash point after that sync against it. The default run
// reopens a seeded sample of them; SHALE_STRESS=1 reopens all.
func TestPowerLoss(t *testing.T) {
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runPowerLoss(t, seed, bySize(3000, 1500, 20000), 1)
	})
}

// TestPowerLossDeletePersistence is TestPowerLoss with a delete persistence
// threshold on a clock that moves as the DB reads it, so that crashes hit
// deadline flushes and compactions of expired tables too; with blob files,
// also the rewrites of blob files past their deadline.
func TestPowerLossDeletePersistence(t *testing.T) {
	sample := 1.0
	if testing.Short() && !stress() {
		sample = 0.5
	}
	for _, blobs := range []bool{false, true} {
		t.Run(fmt.Sprintf("blob-files=%v", blobs), func(t *testing.T) {
			forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
				runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, func(o *Options) {
					// 1 ms a reading: memtables outlive their share between
					// the DB's readings of the clock.
					o.DeletePersistenceThreshold = 5 * time.Millisecond
					o.Clock = newFakeClock(time.Millisecond)
					if blobs {
						setBlobTestOptions(o)
					}
				})
			})
		})
	}
}

// TestPowerLossSecondaryDelete is TestPowerLoss with DeleteBySecondaryRange
// among the writes (attributes: crashAttr), so that crashes hit the
// tombstone's MANIFEST edit, the flushes and compactions applying it and
// the edits retiring it: every recovered state is a prefix of the writes
// holding every secondary delete that returned.
func TestPowerLossSecondaryDelete(t *testing.T) {
	sample := 1.0
	if testing.Short() && !stress() {
		sample = 0.5
	}
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, func(o *Options) {
			o.SecondaryDeleteKey = crashAttr
		})
	})
}

// TestPowerLossPartitionedIndex is TestPowerLoss writing tables with
// partitioned index and filters (many tiny partitions a table): every
// recovered state is a prefix of the writes, read through the partitions.
func TestPowerLossPartitionedIndex(t *testing.T) {
	sample := 1.0
	if testing.Short() && !stress() {
		sample = 0.5
	}
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, setPartitionedTestOptions)
	})
}

// TestPowerLossMerge is TestPowerLoss with Merges among the writes, over
// blob files: crashes hit flushes and compactions merging operands fully
// or in part, and every recovered state is a prefix of the writes, merged
// values exact.
func TestPowerLossMerge(t *testing.T) {
	sample := 1.0
	if testing.Short() && !stress() {
		sample = 0.5
	}
	forEachSeed(t, bySize(1, 1, 3), func(t *testing.T, seed uint64) {
		runPowerLoss(t, seed, bySize(3000, 1500, 20000), sample, func(o *Options) {
			o.MergeOperator = crashMergeOperator
			setBlobTestOptions(o)
		})
	})
}

// plStep is one step of the power-loss workload: a write, or an action.
type plStep struct {
	write crashWrite
	sync  bool
	// action is "", "flush", "compact", "reopen", or a fault followed by
	// Resume: "wal-fault" (a synced write whose WAL sync fails) or
	// "flush-fault" (a flush whose table cannot be created).
	action string
}

// plPoint is a crash point: what the crash follows and what was
// acknowledged by then.
type plPoint struct {
	m     errorfs.Mutation
	phase string
	// lastSynced writes were acknowledged as durable before the crash.
	lastSynced int
}

func (p plPoint) String() string { return fmt.Sprintf("crash after %s [%s]", p.m, p.phase) }

// plImage is what a crash leaves after one durable mutation, with every
// crash point that leaves the same (those up to the next durable one).
type plImage struct {
	fs     *vfs.MemFS // nil when the image is not sampled
	issued int        // writes started before the image was taken
	points []plPoint
}

// plWorkload returns the steps of numbered writes; with secondary, some
// writes are DeleteBySecondaryRange over write numbers (crashAttr); with
// merges, some are Merges under crashMergeOperator.
func plWorkload(rng *rand.Rand, writes int, secondary, merges bool) []plStep {
	var steps []plStep
	for i := 0; i < writes; i++ {
		if merges && rng.IntN(4) == 0 {
			k := fmt.Sprintf("k%04d", rng.IntN(300))
			steps = append(steps, plStep{write: crashWrite{key: k, merge: true, value: fmt.Sprintf("m%d", i)}, sync: rng.IntN(4) == 0})
			continue
		}
		if secondary && rng.IntN(120) == 0 {
			w := crashWrite{secondary: true, lo: uint64(rng.IntN(i + 1))}
			w.hi = w.lo + uint64(rng.IntN(i/2+10))
			// Always synced: DeleteBySecondaryRange is.
			steps = append(steps, plStep{write: w, sync: true})
			continue
		}
		k := fmt.Sprintf("k%04d", rng.IntN(300))
		w := crashWrite{key: k}
		if rng.IntN(6) > 0 {
			w.value = fmt.Sprintf("%s-%d-%s", k, i, strings.Repeat("v", rng.IntN(300)))
		}
		steps = append(steps, plStep{write: w, sync: rng.IntN(4) == 0})
		switch {
		case i%1000 == 999:
			steps = append(steps, plStep{action: "reopen"})
		case i%700 == 699:
			steps = append(steps, plStep{action: "compact"})
		case rng.IntN(150) == 0:
			steps = append(steps, plStep{action: "flush"})
		case rng.IntN(400) == 0:
			steps = append(steps, plStep{action: "wal-fault"})
		case rng.IntN(400) == 0:
			steps = append(steps, plStep{action: "flush-fault"})
		}
	}
	return steps
}

// runPowerLoss runs the workload of numWrites writes from seed with the
// options of testOptions changed by variants, reopening a share sample of
// the crash images. A run with a delete persistence threshold injects no
// faults: its own background work (a deadline flush) could take the one
// failure meant for the foreground call.
func runPowerLoss(t *testing.T, seed uint64, numWrites int, sample float64, variants ...func(*Options)) {
	rng := rand.New(rand.NewPCG(seed, 0x90e7))
	probe := testOptions(nil)
	for _, v := range variants {
		v(probe)
	}
	merges := probe.MergeOperator != nil
	steps := plWorkload(rng, numWrites, probe.SecondaryDeleteKey != nil, merges)
	deadlines := probe.DeletePersistenceThreshold > 0
	if deadlines {
		steps = slices.DeleteFunc(steps, func(s plStep) bool { return strings.HasSuffix(s.action, "-fault") })
	}
	var writes []crashWrite
	for _, s := range steps {
		if s.action == "" {
			writes = append(writes, s.write)
		}
	}

	// failed holds the writes whose call failed (each to a key of its own):
	// they may or may not be there after a crash.
	failed := model{}
	for i, s := range steps {
		if s.action == "wal-fault" {
			failed[fmt.Sprintf("failed%04d", i)] = fmt.Sprintf("failed-value-%d", i)
		}
	}
	mem := vfs.NewMem()
	var issued, lastSynced atomic.Int64
	var (
		cur      *plImage
		stack    = make([]byte, 64<<10)
		phases   = map[string]int{}
		total    int
		sampled  int
		verified = make(chan *plImage, 2)
	)
	sampleRng := rand.New(rand.NewPCG(seed, 0x5a3))
	hook := func(m errorfs.Mutation) {
		// Read what was acknowledged before taking the image: an ack
		// follows its sync, which is this mutation or an earlier one.
		ls := int(lastSynced.Load())
		if m.Durable() || cur == nil {
			if cur != nil {
				verified <- cur
			}
			cur = &plImage{issued: int(issued.Load())}
			if sampleRng.Float64() < sample {
				cur.fs = mem.CrashClone()
				sampled++
			}
		}
		n := runtime.Stack(stack, false)
		phase := crashPhase(string(stack[:n]))
		phases[phase]++
		total++
		cur.points = append(cur.points, plPoint{m: m, phase: phase, lastSynced: ls})
	}
	cfs := errorfs.NewCrashPointFS(mem, hook)
	// Faults are injected above the crash points: a failed operation never
	// reaches the file system.
	ffs := errorfs.New(cfs, seed)

	var wg sync.WaitGroup
	var checked, reopened atomic.Int64
	failures := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for img := range verified {
			if img.fs == nil {
				continue
			}
			if msg := checkPowerLossImage(img, writes, failed, merges); msg != "" {
				select {
				case failures <- msg:
				default:
				}
			}
			reopened.Add(1)
			checked.Add(int64(len(img.points)))
		}
	}()

	opts := testOptions(ffs)
	opts.Logger = slog.New(slog.DiscardHandler)
	for _, v := range variants {
		v(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	faults := 0
	for i, s := range steps {
		var err error
		switch s.action {
		case "":
			wo := &WriteOptions{Sync: s.sync}
			issued.Add(1)
			switch {
			case s.write.merge:
				err = db.Merge([]byte(s.write.key), []byte(s.write.value), wo)
			case s.write.secondary:
				err = db.DeleteBySecondaryRange(s.write.lo, s.write.hi, wo)
			case s.write.value == "":
				err = db.Delete([]byte(s.write.key), wo)
			default:
				err = db.Put([]byte(s.write.key), []byte(s.write.value), wo)
			}
			if err == nil && s.sync {
				n := issued.Load()
				if s.write.secondary && s.write.lo == s.write.hi {
					// An empty range deletes nothing: its sync makes the
					// writes before it durable, and finds nothing to do
					// when they are already (no durable mutation follows).
					n--
				}
				lastSynced.Store(n)
			}
		case "flush":
			// Everything written before a Flush is in tables once it returns.
			n := issued.Load()
			if err = db.Flush(); err == nil {
				lastSynced.Store(n)
			}
		case "compact":
			n := issued.Load()
			if err = db.CompactRange(nil, nil); err == nil {
				lastSynced.Store(n)
			}
		case "wal-fault", "flush-fault":
			rule := errorfs.Rule{Op: errorfs.OpSync, PathPattern: "*.log", Nth: 1}
			if s.action == "flush-fault" {
				rule = errorfs.Rule{Op: errorfs.OpCreate, PathPattern: "*.sst", Nth: 1}
			}
			ffs.AddRule(rule)
			injected, before := ffs.Injected(), issued.Load()
			if s.action == "wal-fault" {
				k := fmt.Sprintf("failed%04d", i)
				err = db.Put([]byte(k), []byte(failed[k]), &WriteOptions{Sync: true})
			} else {
				err = db.Flush()
			}
			ffs.ClearRules()
			if s.action == "flush-fault" && err == nil && ffs.Injected() == injected {
				// The flush wrote no table (its memtable held only
				// tombstones of keys no table has, which it drops): a
				// plain flush, and nothing failed.
				lastSynced.Store(before)
				continue
			}
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("%s: the failed call returned %v", s.action, err)
			}
			faults++
			// Resume flushes the memtables: everything acknowledged
			// before it is in tables when it returns.
			n := issued.Load()
			if err = db.Resume(); err == nil {
				lastSynced.Store(n)
			}
		case "reopen":
			// Close syncs the WAL: everything written is durable after it.
			if err = db.Close(); err == nil {
				lastSynced.Store(issued.Load())
				db, err = Open("/db", opts)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", cmpOr(s.action, "write"), err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	lastSynced.Store(issued.Load())
	// A crash after the final Close: everything is there.
	final := &plImage{fs: mem.CrashClone(), issued: int(issued.Load()),
		points: []plPoint{{m: errorfs.Mutation{Index: cfs.Mutations() + 1, Op: errorfs.OpSync, Path: "(after Close)"}, phase: "close", lastSynced: len(writes)}}}
	verified <- cur
	verified <- final
	close(verified)
	wg.Wait()
	select {
	case msg := <-failures:
		t.Fatal(msg)
	default:
	}
	t.Logf("%d injected faults followed by Resume", faults)
	t.Logf("%d writes, %d mutations = crash points; %d durable images, %d reopened (sample %.2f), %d crash points checked",
		len(writes), total, sampled, reopened.Load(), sample, checked.Load())
	names := slices.Sorted(func(yield func(string) bool) {
		for p := range phases {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range names {
		t.Logf("  %6d crash points in %s", phases[p], p)
	}
	// Which job rotates the MANIFEST (and so replaces CURRENT) depends on
	// timing: count those phases over every job.
	for _, suffix := range []string{"MANIFEST rotation", "CURRENT replacement"} {
		n := 0
		for p, c := range phases {
			if strings.HasSuffix(p, ": "+suffix) {
				n += c
			}
		}
		if n == 0 {
			t.Errorf("the workload has no crash point in a %s", suffix)
		}
	}
	wants := []string{"flush: table write", "compaction: table write", "WAL rotation: WAL"}
	if deadlines {
		// A memtable switched at its delete persistence deadline.
		wants = append(wants, "deadline flush: WAL")
	}
	for _, want := range wants {
		if phases[want] == 0 {
			t.Errorf("the workload has no crash point in %q", want)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// crashPhase names the work a mutation belongs to from the stack of the
// goroutine doing it: "<job>: <step>", e.g. "flush: CURRENT replacement".
func crashPhase(stack string) string {
	job := "other"
	for _, j := range []struct{ fn, name string }{
		{"(*DB).backgroundFlush(", "flush"},
		{"(*DB).runCompaction(", "compaction"},
		{"(*DB).deadlineReached(", "deadline flush"},
		{"(*DB).rotateMemtableLocked(", "WAL rotation"},
		{"wal.(*Writer).flushLoop(", "commit"},
		{"(*DB).deleteObsoleteFiles(", "obsolete-file deletion"},
		{"shale.Open(", "open"},
		{"(*DB).Close(", "close"},
		{"(*DB).Resume(", "resume"},
		{"(*DB).retireSecondaryTombstones(", "secondary tombstone retirement"},
		{"(*DB).commitSecondaryLocked(", "secondary delete"},
	} {
		if strings.Contains(stack, j.fn) {
			job = j.name
			break
		}
	}
	step := "other"
	for _, s := range []struct{ fn, name string }{
		{"manifest.setCurrent(", "CURRENT replacement"},
		{"(*VersionSet).switchManifestLocked(", "MANIFEST rotation"},
		{"(*VersionSet).LogAndApply(", "MANIFEST edit"},
		{"blob.(*Writer).", "blob file write"},
		{"(*blobOutput).", "blob file write"},
		{"sstable.", "table write"},
		{"(*DB).runToTables(", "table write"},
		{"(*DB).writeOptionsFile(", "OPTIONS"},
		{"(*DB).createWAL(", "WAL"},
		{"internal/wal.", "WAL"},
		{"(*DB).syncDir(", "dir sync"},
		{"(*DB).deleteObsoleteFiles(", "remove"},
		{"(*DB).openInfoLog(", "LOG"},
		{"(*MemFS).Lock(", "LOCK"},
		{"(*CrashPointFS).Lock(", "LOCK"},
		{"(*CrashPointFS).MkdirAll(", "mkdir"},
	} {
		if strings.Contains(stack, s.fn) {
			step = s.name
			break
		}
	}
	return job + ": " + step
}

// checkPowerLossImage reopens one crash image and checks every crash point
// that leaves it; it returns a failure message, or "".
func checkPowerLossImage(img *plImage, writes []crashWrite, failed model, merges bool) string {
	first := img.points[0]
	where := first.String()
	if len(img.points) > 1 {
		where += fmt.Sprintf(" (and the %d crash points after it up to op %d)", len(img.points)-1, img.points[len(img.points)-1].m.Index)
	}
	o := testOptions(img.fs)
	o.Logger = slog.New(slog.DiscardHandler)
	o.DisableAutoCompactions = true
	// Needed to open an image holding secondary tombstones; it changes
	// nothing for the others. (Merges, which cannot go with it, are never
	// in the same workload.)
	if merges {
		o.MergeOperator = crashMergeOperator
	} else {
		o.SecondaryDeleteKey = crashAttr
	}
	db, err := Open("/db", o)
	if err != nil {
		return fmt.Sprintf("%s: reopen: %v\n%s", where, err, img.fs)
	}
	defer db.Close()
	if _, err := verifyBlobReferences(db); err != nil {
		return fmt.Sprintf("%s: after recovery: %v\n%s", where, err, img.fs)
	}
	v := db.versions.Current()
	for level, files := range v.Levels {
		for _, f := range files {
			fi, err := img.fs.Stat(db.tablePath(f.FileNum))
			if err == nil && uint64(fi.Size()) != f.Size {
				err = fmt.Errorf("it holds %d bytes, the MANIFEST records %d", fi.Size(), f.Size)
			}
			if err != nil {
				v.Unref()
				return fmt.Sprintf("%s: L%d table %s referenced by the MANIFEST: %v\n%s", where, level, f.FileNum, err, img.fs)
			}
		}
	}
	v.Unref()
	got := model{}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		return fmt.Sprintf("%s: scan: %v", where, err)
	}
	for k, want := range got {
		if failed[k] == want {
			delete(got, k)
			continue
		}
		if val, err := db.Get([]byte(k), nil); err != nil || string(val) != want {
			return fmt.Sprintf("%s: Get(%s) = %q, %v; the scan saw %q", where, k, val, err, want)
		}
	}
	// matches[p] tells whether the recovered state is the state after the
	// first p writes; diff counts the keys where the two differ.
	hi := img.issued
	state := model{}
	diff := len(got)
	set := func(k, v string) {
		old, had := state[k]
		g, in := got[k]
		before := had != in || (had && old != g)
		if v == "" {
			delete(state, k)
		} else {
			state[k] = v
		}
		now, has := state[k]
		after := has != in || (has && now != g)
		switch {
		case before && !after:
			diff--
		case !before && after:
			diff++
		}
	}
	matches := make([]bool, hi+1)
	for p := 0; ; p++ {
		matches[p] = diff == 0
		if p == hi {
			break
		}
		if w := writes[p]; w.secondary {
			for k, v := range state {
				if a, ok := crashAttr([]byte(k), []byte(v)); ok && a >= w.lo && a < w.hi {
					set(k, "")
				}
			}
			continue
		}
		if w := writes[p]; w.merge {
			var existing []byte
			if v, ok := state[w.key]; ok {
				existing = []byte(v)
			}
			v, _ := crashMergeOperator.FullMerge([]byte(w.key), existing, [][]byte{[]byte(w.value)})
			set(w.key, string(v))
			continue
		}
		set(writes[p].key, writes[p].value)
	}
	for _, pt := range img.points {
		if pt.lastSynced > hi {
			return fmt.Sprintf("%s: %d writes were acknowledged as durable, but the last sync before the crash came when only %d had started", pt, pt.lastSynced, hi)
		}
		if !slices.Contains(matches[pt.lastSynced:], true) {
			return fmt.Sprintf("%s: the recovered state (%d keys) is not the state after any prefix of %d..%d writes\n%s",
				pt, len(got), pt.lastSynced, hi, img.fs)
		}
	}
	return ""
}

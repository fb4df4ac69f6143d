package shale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/blob"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/wal"
	"github.com/shaledb/shale/sstable"
	"github.com/shaledb/shale/vfs"
	"github.com/shaledb/shale/vfs/errorfs"
)

// Every test poisons the arenas of released memtables, so that a read of a
// recycled arena shows as wrong data (memtable_arena.go).
func init() { poisonReleasedArenas = true }

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return buf
}

func writeFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func findFile(t *testing.T, fs vfs.FS, dir string, typ base.FileType) string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if ft, _, ok := base.ParseFilename(n); ok && ft == typ {
			return n
		}
	}
	t.Fatalf("no file of type %d in %v", typ, names)
	return ""
}

// listNames lists dir in fs, sorted; nil when dir is missing.
func listNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// countFiles counts the files of type t in /db.
func countFiles(t *testing.T, fs vfs.FS, typ base.FileType) int {
	t.Helper()
	n := 0
	for _, name := range listNames(t, fs, "/db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == typ {
			n++
		}
	}
	return n
}

// recordingHandler keeps the messages logged at level or above.
type recordingHandler struct {
	level slog.Level
	mu    sync.Mutex
	msgs  []string
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) saw(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// openFaultDB opens /db on an errorfs.FS over mem (seed 1) with test options, no
// logging, and set applied to them (set may be nil).
func openFaultDB(t *testing.T, mem *vfs.MemFS, set func(*Options)) (*errorfs.FS, *Options, *DB) {
	t.Helper()
	ffs := errorfs.New(mem, 1)
	opts := testOptions(ffs)
	opts.Logger = discardLogger()
	if set != nil {
		set(opts)
	}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return ffs, opts, db
}

// dumpKey lists every stored version of key, by source (for debugging tests).
func (d *DB) dumpKey(key string) string {
	var b strings.Builder
	rs := d.loadReadState()
	defer rs.unref()
	mems := append([]*memTable{rs.mem}, rs.imms...)
	for i, m := range mems {
		it := m.NewIter()
		for ok := it.SeekGE([]byte(key)); ok && string(it.Key().UserKey) == key; ok = it.Next() {
			fmt.Fprintf(&b, " mem%d:%s", i, it.Key())
		}
		it.Close()
	}
	for level, files := range rs.version.Levels {
		for _, f := range files {
			t, err := d.fileCache.findTable(f.FileNum)
			if err != nil {
				fmt.Fprintf(&b, " L%d/%s: %v", level, f.FileNum, err)
				continue
			}
			it := t.reader.NewIter(sstable.IterOptions{})
			for ok := it.SeekGE([]byte(key)); ok && string(it.Key().UserKey) == key; ok = it.Next() {
				fmt.Fprintf(&b, " L%d/%s:%s", level, f.FileNum, it.Key())
			}
			it.Close()
			t.release()
		}
	}
	return b.String()
}

// fakeClock is an Options.Clock that moves only when told: by Advance, or
// by step on every Now when step is set (so that time passes as the DB works,
// for the model and metamorphic tests). Timers fire when the clock reaches
// them: Advance and fireDue run their calls and wait for them to return;
// Now with a step starts them and does not wait (it may be called with the
// DB's mutex held).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	step   time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	f    func()
	done bool // fired or stopped
}

// newFakeClock returns a clock at a fixed, realistic date.
func newFakeClock(step time.Duration) *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), step: step}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	c.now = c.now.Add(c.step)
	now := c.now
	var due []func()
	if c.step > 0 {
		due = c.takeDueLocked()
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
	return now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) ClockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// takeDueLocked marks the timers due by now as fired and returns their
// calls.
func (c *fakeClock) takeDueLocked() []func() {
	var due []func()
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t.f)
		default:
			kept = append(kept, t)
		}
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	return due
}

// Advance moves the clock by d and fires the timers it passes.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.fireDue()
}

// fireDue runs the calls of the timers due now, and of those their calls
// arm due now, and returns once all have returned. It reports whether any
// fired.
func (c *fakeClock) fireDue() bool {
	fired := false
	for {
		c.mu.Lock()
		due := c.takeDueLocked()
		c.mu.Unlock()
		if len(due) == 0 {
			return fired
		}
		fired = true
		var wg sync.WaitGroup
		for _, f := range due {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f()
			}()
		}
		wg.Wait()
	}
}

// settle lets the DB's background work run to its end at the clock's
// current time: it fires due timers, waits for flushes and compactions to
// finish (each may schedule more, or arm a timer due at once), and removes
// obsolete files, until nothing is left to do.
func settle(t *testing.T, d *DB, c *fakeClock) {
	t.Helper()
	for {
		fired := c.fireDue()
		d.mu.Lock()
		for (d.mu.compact.flushing || d.mu.compact.running > 0 || len(d.mu.mem.queue) > 0) && d.mu.bgErr == nil {
			d.mu.compact.cond.Wait()
		}
		err := d.mu.bgErr
		d.mu.Unlock()
		if err != nil {
			t.Fatalf("background error: %v", err)
		}
		d.deleteObsoleteFiles(false)
		if !fired {
			c.mu.Lock()
			due := false
			for _, tm := range c.timers {
				due = due || (!tm.done && !tm.at.After(c.now))
			}
			c.mu.Unlock()
			if !due {
				return
			}
		}
	}
}

// newestOptionsFile returns the name and the bytes of the newest OPTIONS
// file in dir.
func newestOptionsFile(t *testing.T, fs vfs.FS, dir string) (string, []byte) {
	t.Helper()
	var newest string
	var newestNum base.FileNum
	for _, name := range listNames(t, fs, dir) {
		if typ, num, ok := base.ParseFilename(name); ok && typ == base.FileTypeOptions && num >= newestNum {
			newest, newestNum = name, num
		}
	}
	if newest == "" {
		t.Fatalf("no OPTIONS file in %s", dir)
	}
	return newest, readFile(t, fs, fs.PathJoin(dir, newest))
}

// optionsFileMap returns what the OPTIONS file would record of o, by name
// (o may come from ParseOptionsFile, which leaves the comparer nil).
func optionsFileMap(o *Options) map[string]string {
	if o.Comparer == nil {
		c := *o
		c.Comparer = DefaultComparer
		o = &c
	}
	m := map[string]string{}
	for _, kv := range o.optionsFileFields() {
		m[kv[0]] = kv[1]
	}
	return m
}

// setBlobTestOptions turns blob files on with small sizes: every value of at
// least 10 bytes separated, blob files rolled at 4 KiB.
func setBlobTestOptions(o *Options) {
	o.EnableBlobFiles = true
	o.MinBlobSize = 10
	o.BlobFileSize = 4 << 10
}

// setBlobWriteSeparationTestOptions is setBlobTestOptions with values
// separated as they are written (EnableBlobWriteSeparation): the WAL and
// memtables hold blob indexes into the memtables' blob files.
var setBlobWriteSeparationTestOptions = withBlobWriteSeparation(setBlobTestOptions)

// withBlobWriteSeparation returns set followed by
// EnableBlobWriteSeparation: set's variant with values separated at commit.
func withBlobWriteSeparation(set func(*Options)) func(*Options) {
	return func(o *Options) {
		set(o)
		o.EnableBlobWriteSeparation = true
	}
}

// setBlobTinyTestOptions is setBlobTestOptions with 4 KiB memtables and
// tables: flushes and compactions all the time.
func setBlobTinyTestOptions(o *Options) {
	setBlobTestOptions(o)
	o.WriteBufferSize = 4 << 10
	o.TargetFileSizeBase = 4 << 10
}

// setBlobDeletePersistenceTestOptions turns blob files on
// (setBlobTestOptions) with tiny tables and a 20 ms delete persistence
// threshold on a clock moving 1 ms at every reading: blob files holding
// deleted values are rewritten at their deadlines all the time, as the DB
// works.
func setBlobDeletePersistenceTestOptions(o *Options) {
	setBlobTestOptions(o)
	o.DeletePersistenceThreshold = 20 * time.Millisecond
	o.Clock = newFakeClock(time.Millisecond)
	o.WriteBufferSize = 4 << 10
	o.TargetFileSizeBase = 4 << 10
}

// setAgedCompactionTestOptions turns TTL (2 s) and periodic (5 s)
// compactions on, on a clock that moves 250 ms at every reading: as the DB
// works (it reads the clock at each pick, table and memtable), the data of
// a table above the last level soon outlives the TTL and every table the
// period, so both kinds of compaction run all the time
// (TestModelAgedCompactions checks that they do). Time stands still while
// the DB is idle, so over the model tests' few tables they end; over more
// than about ten, periodic rewrites (two readings each) would keep time,
// and themselves, going.
func setAgedCompactionTestOptions(o *Options) {
	o.TTL = 2
	o.PeriodicCompactionSeconds = 5
	o.Clock = newFakeClock(250 * time.Millisecond)
}

// setBlobGCTestOptions turns blob garbage collection on, relocating every
// blob file's values, with targeted compactions of the tables referencing a
// file once half of it is garbage.
func setBlobGCTestOptions(o *Options) {
	o.EnableBlobGarbageCollection = true
	o.BlobGarbageCollectionAgeCutoff = 1
	o.BlobGarbageCollectionForceThreshold = 0.5
}

// checkBlobReferences checks the blob invariants of d's current version
// (verifyBlobReferences) and returns the number of blob indexes its tables
// hold.
func checkBlobReferences(t *testing.T, d *DB) int {
	t.Helper()
	n, err := verifyBlobReferences(d)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// verifyBlobReferences checks the blob invariants of d's current version and
// returns the number of blob indexes its tables hold: every blob index of
// every live table points into a live blob file that the table records and
// reads back as its key's value (no dangling reference), every live blob
// file is on disk and referenced by some table (an edit deletes the blob
// files it leaves unreferenced), and its values less its garbage are the
// blob indexes that point into it.
func verifyBlobReferences(d *DB) (int, error) {
	v := d.versions.Current()
	defer v.Unref()
	held := map[base.FileNum]*cachedFile{}
	defer func() {
		for _, f := range held {
			f.release()
		}
	}()
	// refs counts the blob indexes into each blob file.
	refs := map[base.FileNum]uint64{}
	open := func(num base.FileNum) (*blob.Reader, error) {
		refs[num]++
		if v.BlobFile(num) == nil {
			return nil, fmt.Errorf("blob file %s is not live", num)
		}
		if f := held[num]; f != nil {
			return f.blobReader, nil
		}
		f, err := d.fileCache.findBlob(num)
		if err != nil {
			return nil, err
		}
		held[num] = f
		return f.blobReader, nil
	}
	n := 0
	for level, files := range v.Levels {
		for _, f := range files {
			tf, err := d.fileCache.findTable(f.FileNum)
			if err != nil {
				return n, err
			}
			m, err := checkTableBlobRefs(d.tablePath(f.FileNum), tf.reader, f.BlobFiles, open)
			tf.release()
			if err != nil {
				return n, fmt.Errorf("L%d table %s: %w", level, f.FileNum, err)
			}
			n += m
		}
	}
	for _, b := range v.BlobFiles {
		if len(v.TablesReferencingBlob(b.FileNum)) == 0 {
			return n, fmt.Errorf("live blob file %s is referenced by no table", b.FileNum)
		}
		// The garbage accounting: what is not garbage is referenced. It
		// may fall short (never exceed) only for inputs secondary
		// tombstones drop unread.
		live := b.TotalCount - b.GarbageCount
		if refs[b.FileNum] > live || refs[b.FileNum] < live && d.opts.SecondaryDeleteKey == nil {
			return n, fmt.Errorf("live blob file %s: %d blob indexes point into it, its %d values less %d garbage leave %d",
				b.FileNum, refs[b.FileNum], b.TotalCount, b.GarbageCount, live)
		}
		if fi, err := d.fs.Stat(d.blobPath(b.FileNum)); err != nil {
			return n, fmt.Errorf("live blob file %s: %w", b.FileNum, err)
		} else if uint64(fi.Size()) != b.Size {
			return n, fmt.Errorf("live blob file %s holds %d bytes, the MANIFEST records %d", b.FileNum, fi.Size(), b.Size)
		}
	}
	return n, nil
}

// waitForRateWaiters returns once n requests of priority pri wait in r.
func waitForRateWaiters(t *testing.T, r *RateLimiter, pri IOPriority, n int) {
	t.Helper()
	for {
		r.mu.Lock()
		got := len(r.queues[priIndex(pri)])
		r.mu.Unlock()
		if got == n {
			return
		}
		if got > n {
			t.Fatalf("%d %s-priority requests wait, want %d", got, pri, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// assertRateWaiters checks that n requests of priority pri wait in r now
// (after a fake clock's Advance, whose refill has run when it returns).
func assertRateWaiters(t *testing.T, r *RateLimiter, pri IOPriority, n int) {
	t.Helper()
	r.mu.Lock()
	got := len(r.queues[priIndex(pri)])
	r.mu.Unlock()
	if got != n {
		t.Fatalf("%d %s-priority requests wait, want %d", got, pri, n)
	}
}

// drainRateLimiter empties r's bucket and puts the next refill a period
// ahead: on a clock that does not move, no request gets a token from then on.
func drainRateLimiter(r *RateLimiter) {
	r.mu.Lock()
	r.available = 0
	r.nextRefill = r.clock.Now().Add(r.refillPeriod)
	r.mu.Unlock()
}

// recordedEvent is one event a recordingListener received.
type recordedEvent struct {
	kind string // the method's name without "On"
	info any
}

// recordingListener records every event, in order. When block is set, each
// call first waits until block is closed. Every event is also sent to
// events, if set, without ever blocking on it.
type recordingListener struct {
	block  chan struct{}
	events chan recordedEvent

	mu  sync.Mutex
	got []recordedEvent
}

func (l *recordingListener) record(kind string, info any) {
	if l.block != nil {
		<-l.block
	}
	ev := recordedEvent{kind, info}
	l.mu.Lock()
	l.got = append(l.got, ev)
	l.mu.Unlock()
	if l.events != nil {
		select {
		case l.events <- ev:
		default:
		}
	}
}

// recorded returns the events so far.
func (l *recordingListener) recorded() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// ofKind returns the infos of the recorded events of one kind, in order.
func ofKind[T any](l *recordingListener, kind string) []T {
	var out []T
	for _, ev := range l.recorded() {
		if ev.kind == kind {
			out = append(out, ev.info.(T))
		}
	}
	return out
}

func (l *recordingListener) OnFlushBegin(i FlushInfo)           { l.record("FlushBegin", i) }
func (l *recordingListener) OnFlushCompleted(i FlushInfo)       { l.record("FlushCompleted", i) }
func (l *recordingListener) OnCompactionBegin(i CompactionInfo) { l.record("CompactionBegin", i) }
func (l *recordingListener) OnCompactionCompleted(i CompactionInfo) {
	l.record("CompactionCompleted", i)
}
func (l *recordingListener) OnTableFileCreated(i TableFileInfo) { l.record("TableFileCreated", i) }
func (l *recordingListener) OnTableFileDeleted(i TableFileInfo) { l.record("TableFileDeleted", i) }
func (l *recordingListener) OnBlobFileCreated(i BlobFileInfo)   { l.record("BlobFileCreated", i) }
func (l *recordingListener) OnBlobFileDeleted(i BlobFileInfo)   { l.record("BlobFileDeleted", i) }
func (l *recordingListener) OnStallConditionsChanged(i WriteStallInfo) {
	l.record("StallConditionsChanged", i)
}
func (l *recordingListener) OnBackgroundError(i BackgroundErrorInfo) { l.record("BackgroundError", i) }
func (l *recordingListener) OnEventsDropped(i EventsDroppedInfo)     { l.record("EventsDropped", i) }

// must fails the test on a non-nil error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// dbContents returns every key and value a forward scan of d shows (under ro
// when not nil).
func dbContents(t *testing.T, d *DB, ro *ReadOptions) map[string]string {
	t.Helper()
	it := d.NewIterator(ro)
	defer it.Close()
	m := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return m
}

// diffContents describes how got differs from want, or returns "" when they
// are equal.
func diffContents(got, want map[string]string) string {
	var b strings.Builder
	n := 0
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok || g != want[k] {
			if n < 5 {
				fmt.Fprintf(&b, "key %q: got %q (present %v), want %q\n", k, g, ok, want[k])
			}
			n++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			if n < 5 {
				fmt.Fprintf(&b, "key %q: got %q, want absent\n", k, got[k])
			}
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(&b, "%d keys differ (%d got, %d want)", n, len(got), len(want))
	}
	return b.String()
}

// metamorphicSetsNamed returns the option sets of metamorphicSets whose
// names are in names, failing t when one is missing (renamed or removed).
func metamorphicSetsNamed(t testing.TB, names map[string]bool) []metaOptionSet {
	t.Helper()
	var sets []metaOptionSet
	for _, s := range metamorphicSets {
		if names[s.name] {
			sets = append(sets, s)
		}
	}
	if len(sets) != len(names) {
		t.Fatalf("found %d of the %d option sets named", len(sets), len(names))
	}
	return sets
}

// walRecords returns the bytes of a WAL that its records take, without the
// zeros after them: small synced writes zero-fill a WAL ahead of its records
// (wal.WriterOptions.ZeroFill), so a WAL copied from a crash clone, or from
// a DB still open, ends in zeros. Tests that damage or cut a WAL's last
// records do it here.
func walRecords(t *testing.T, b []byte) []byte {
	t.Helper()
	res, err := wal.ReplayFrom(bytes.NewReader(b), "wal", 0, wal.TolerateCorruptedTailRecords, func([]byte, int64) error { return nil })
	if err != nil || res.Damaged {
		t.Fatalf("WAL of %d bytes does not replay to a clean end: %+v, %v", len(b), res, err)
	}
	return b[:res.LastOffset]
}

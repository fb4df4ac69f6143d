package shale

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/record"
	"github.com/shaledb/shale/vfs"
)

// These tests damage the WAL of a closed database and check what Open and
// Check make of it (the rule is internal/wal's: a torn tail is what a crash
// in the middle of an append leaves; a damaged byte in a record written
// whole is damage). They do not depend on whether recovery flushes the
// replayed WAL into a table: every trial opens a fresh crash clone.

// walDamageDB is a closed database on a MemFS whose WAL holds n puts, each
// acknowledged with Sync and each one record.
type walDamageDB struct {
	fs           *vfs.MemFS
	wal          string // base name
	data         []byte
	starts, ends []int64 // record i (put i) spans [starts[i], ends[i])
	n            int
	val          func(int) string
}

func walDamageKey(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }

func buildWALDamageDB(t *testing.T, n int, val func(int) string) *walDamageDB {
	t.Helper()
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.WriteBufferSize = 8 << 20 // the puts stay in the WAL
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := db.Put(walDamageKey(i), []byte(val(i)), &WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	d := &walDamageDB{fs: fs, n: n, val: val}
	for _, name := range listNames(t, fs, "/db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeLog {
			if b := readFile(t, fs, "/db/"+name); len(b) > len(d.data) {
				d.wal, d.data = name, b
			}
		}
	}
	rr := record.NewReader(bytes.NewReader(d.data), d.wal)
	for {
		if _, err := rr.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		d.starts = append(d.starts, rr.Offset())
		d.ends = append(d.ends, rr.EndOffset())
	}
	if len(d.starts) != n || d.ends[n-1] != int64(len(d.data)) {
		t.Fatalf("WAL %s (%d bytes) holds %d records ending at %v, want the %d puts", d.wal, len(d.data), len(d.starts), d.ends, n)
	}
	return d
}

// recordAt returns the put whose record holds WAL offset off, or -1 for
// block padding.
func (d *walDamageDB) recordAt(off int) int {
	for k := range d.n {
		if int64(off) >= d.starts[k] && int64(off) < d.ends[k] {
			return k
		}
	}
	return -1
}

// withWAL returns a crash clone of the database whose WAL holds data.
func (d *walDamageDB) withWAL(t *testing.T, data []byte) *vfs.MemFS {
	t.Helper()
	c := d.fs.CrashClone()
	writeFile(t, c, "/db/"+d.wal, data)
	return c
}

// walOpen is what Open of a copy did: the error, or which puts it kept
// and what Metrics().Recovery said.
type walOpen struct {
	err      error
	present  []int
	recovery RecoveryMetrics
}

func (d *walDamageDB) open(t *testing.T, fs *vfs.MemFS, mode WALRecoveryMode) walOpen {
	t.Helper()
	o := testOptions(fs.CrashClone())
	o.Logger = discardLogger()
	o.WALRecoveryMode = mode
	db, err := Open("/db", o)
	if err != nil {
		return walOpen{err: err}
	}
	defer db.Close()
	res := walOpen{recovery: db.Metrics().Recovery}
	for i := range d.n {
		v, err := db.Get(walDamageKey(i), nil)
		switch {
		case err == nil && string(v) == d.val(i):
			res.present = append(res.present, i)
		case errors.Is(err, ErrNotFound):
		default:
			t.Fatalf("%s: Get(%s) = %.20q, %v: wrong data", mode, walDamageKey(i), v, err)
		}
	}
	return res
}

// lossReported checks that Open reported dropping records records of the
// WAL from offset off, for a reason mentioning why ("damage" or "torn").
func (d *walDamageDB) lossReported(t *testing.T, what string, r walOpen, records int, off int64, why string) {
	t.Helper()
	m := r.recovery
	if m.DroppedRecords < 1 || m.DroppedBytes < 1 || len(m.Losses) != 1 || !strings.Contains(m.Losses[0].File, d.wal) {
		t.Fatalf("%s: Open dropped writes without reporting them: Metrics().Recovery %+v", what, m)
	}
	if l := m.Losses[0]; l.Records != int64(records) || l.Offset != off || !strings.Contains(l.Reason, why) {
		t.Fatalf("%s: Open reported %+v; want %d records dropped from offset %d, for %s", what, l, records, off, why)
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// walDamageDBs are the databases the tests damage: one put; many puts of
// varied sizes; and puts whose records span 32 KiB blocks.
func walDamageDBs(t *testing.T) map[string]*walDamageDB {
	return map[string]*walDamageDB{
		"one record": buildWALDamageDB(t, 1, func(int) string { return "cli-value-3" }),
		"many records": buildWALDamageDB(t, 20, func(i int) string {
			return fmt.Sprintf("v%02d-%s", i, strings.Repeat("w", (i*37)%150))
		}),
		"spanning blocks": buildWALDamageDB(t, 3, func(i int) string {
			return fmt.Sprintf("v%02d-%s", i, strings.Repeat(string(rune('a'+i)), 40000+i*9000))
		}),
	}
}

// offsets returns the WAL offsets to damage (each trial opens the database
// five times, so every byte only under SHALE_STRESS=1, and there in a WAL
// of up to 4 KiB, every 97th in a larger one): every byte of the
// last record (every 3rd under -short, unless it is small); the header
// bytes of each record and at each block boundary, with two bytes either
// side (under -short the headers only, of four records); and every 11th
// byte elsewhere in a WAL of up to 4 KiB, every 4999th in a larger one
// (97th and 9973rd under -short).
func (d *walDamageDB) offsets() []int {
	n := len(d.data)
	if stress() && n <= 4<<10 {
		return seq(0, n)
	}
	seen := map[int]bool{}
	mark := func(from, to, step int64) {
		for o := max(from, 0); o < min(to, int64(n)); o += step {
			seen[int(o)] = true
		}
	}
	short := testing.Short()
	lastStep := int64(1)
	if short && d.ends[d.n-1]-d.starts[d.n-1] > 256 {
		lastStep = 3
	}
	if d.ends[d.n-1]-d.starts[d.n-1] <= 4<<10 {
		mark(d.starts[d.n-1], d.ends[d.n-1], lastStep)
	}
	edges := slices.Clone(d.starts)
	if short && d.n > 3 {
		edges = []int64{d.starts[0], d.starts[d.n/2], d.starts[d.n-2], d.starts[d.n-1]}
	}
	for b := int64(0); b < int64(n); b += record.BlockSize {
		edges = append(edges, b)
	}
	for _, e := range edges {
		if short {
			mark(e, e+record.HeaderSize, 1)
		} else {
			mark(e-2, e+record.HeaderSize+2, 1)
		}
	}
	stride := map[[2]bool]int64{{false, false}: 11, {false, true}: 4999, {true, false}: 97, {true, true}: 9973}[[2]bool{short, n > 4<<10}]
	if stress() {
		stride = 97
	}
	mark(0, int64(n), stride)
	return slices.Sorted(maps.Keys(seen))
}

// TestWALFlipIsReportedByOpenAndCheck flips one bit of each byte of the WAL
// of a closed database whose every put was synced: Check calls the WAL
// DAMAGED, and Open fails naming the WAL and an offset in the damaged record
// (TolerateCorruptedTailRecords, AbsoluteConsistency) or opens without that
// record and says so in Metrics().Recovery: the puts before it
// (PointInTimeRecovery) or all but it (SkipAnyCorruptedRecords). The last
// record is no exception: a flip there is damage, not a torn tail.
func TestWALFlipIsReportedByOpenAndCheck(t *testing.T) {
	for name, d := range walDamageDBs(t) {
		t.Run(name, func(t *testing.T) {
			for _, off := range d.offsets() {
				data := bytes.Clone(d.data)
				data[off] ^= 1 << (off % 8)
				k := d.recordAt(off)
				fs := d.withWAL(t, data)
				what := fmt.Sprintf("flip at %d of %d (record %d of %d)", off, len(data), k, d.n)
				rep, err := Check("/db", &Options{FS: fs})
				if err != nil {
					t.Fatalf("%s: Check: %v", what, err)
				}
				f := fileOf(t, rep, d.wal)
				if k < 0 { // block padding is not read
					if f.Status != CheckOK || !rep.OK() {
						t.Fatalf("%s: padding flip: %s\n%s", what, f.Status, rep)
					}
					continue
				}
				if f.Status != CheckDamaged || !errors.Is(f.Err, ErrCorruption) || !strings.Contains(f.Err.Error(), d.wal) ||
					rep.OK() || !strings.Contains(rep.String(), "DAMAGE FOUND") {
					t.Fatalf("%s: Check does not call the WAL damaged: %s, %v\n%s", what, f.Status, f.Err, rep)
				}
				for _, mode := range []WALRecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords} {
					r := d.open(t, fs, mode)
					what := fmt.Sprintf("%s: %s", mode, what)
					switch mode {
					case TolerateCorruptedTailRecords, AbsoluteConsistency:
						var ce *base.CorruptionError
						if r.err == nil || !errors.As(r.err, &ce) || !strings.Contains(ce.File, d.wal) ||
							ce.Offset < d.starts[k] || ce.Offset >= d.ends[k] {
							t.Fatalf("%s: Open: %v, want corruption naming %s at an offset in [%d, %d)", what, r.err, d.wal, d.starts[k], d.ends[k])
						}
						continue
					case PointInTimeRecovery:
						if r.err != nil || !slices.Equal(r.present, seq(0, k)) {
							t.Fatalf("%s: Open kept %v, %v; want the puts before %d", what, r.present, r.err, k)
						}
						d.lossReported(t, what, r, d.n-k, d.starts[k], "damage")
					case SkipAnyCorruptedRecords:
						if r.err != nil || !slices.Equal(r.present, slices.Delete(seq(0, d.n), k, k+1)) {
							t.Fatalf("%s: Open kept %v, %v; want every put but %d", what, r.present, r.err, k)
						}
						d.lossReported(t, what, r, 1, d.starts[k], "damage")
					}
				}
			}
		})
	}
}

// TestTruncatedWALTailIsRecoverable cuts the WAL inside its last record, as
// a crash in the middle of the append would: Check calls it recoverable,
// saying it is a torn tail, and Open keeps every put before it in every
// mode but AbsoluteConsistency, which fails.
func TestTruncatedWALTailIsRecoverable(t *testing.T) {
	for name, d := range walDamageDBs(t) {
		t.Run(name, func(t *testing.T) {
			last := d.n - 1
			cuts := int64(40) // every byte under SHALE_STRESS=1
			switch {
			case stress():
				cuts = d.ends[last] - d.starts[last]
			case testing.Short():
				cuts = 10
			}
			step := max(1, (d.ends[last]-d.starts[last])/cuts)
			for cut := d.starts[last] + 1; cut < d.ends[last]; cut += step {
				checkTornWAL(t, d, fmt.Sprintf("cut at %d", cut), d.data[:cut], seq(0, last))
			}
		})
	}
}

// checkTornWAL checks a copy of d whose WAL, data, ends in a torn tail
// after the puts kept: Check calls the WAL recoverable (a torn tail) and the
// database undamaged; Open keeps exactly those puts and reports the loss,
// but under AbsoluteConsistency, which refuses the tail. A tail of zeros
// only is a clean end.
func checkTornWAL(t *testing.T, d *walDamageDB, what string, data []byte, kept []int) {
	t.Helper()
	fs := d.withWAL(t, data)
	rr := record.NewReader(bytes.NewReader(data), d.wal)
	for {
		if _, err := rr.Next(); err != nil {
			break
		}
	}
	tornAt, dropped := rr.TornTail()
	rep, err := Check("/db", &Options{FS: fs})
	if err != nil {
		t.Fatalf("%s: Check: %v", what, err)
	}
	f := fileOf(t, rep, d.wal)
	switch {
	case !rep.OK():
		t.Fatalf("%s: Check found damage in a torn WAL\n%s", what, rep)
	case dropped == 0 && f.Status != CheckOK:
		t.Fatalf("%s: Check: %s, %v; the WAL ends cleanly\n%s", what, f.Status, f.Err, rep)
	case dropped > 0 && (f.Status != CheckRecoverable || !strings.Contains(f.Err.Error(), "torn tail")):
		t.Fatalf("%s: Check: %s, %v; want a recoverable torn tail\n%s", what, f.Status, f.Err, rep)
	}
	for _, mode := range []WALRecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTimeRecovery, SkipAnyCorruptedRecords} {
		r := d.open(t, fs, mode)
		what := fmt.Sprintf("%s: %s", mode, what)
		if mode == AbsoluteConsistency && dropped > 0 {
			expectCorruption(t, r.err, d.wal)
			continue
		}
		if r.err != nil || !slices.Equal(r.present, kept) {
			t.Fatalf("%s: Open kept %v, %v; want %v", what, r.present, r.err, kept)
		}
		if dropped > 0 {
			d.lossReported(t, what, r, 1, tornAt, "torn tail")
		}
	}
}

// TestCrashTornWALTailIsRecoverable crashes a database whose last puts were
// made without Sync: the crash clone keeps the synced puts, and what a power
// loss can add of the unsynced append — any prefix of it, or its sectors up
// to a boundary with zeros after them — is a torn tail: Open keeps every
// synced put, Check finds no damage.
func TestCrashTornWALTailIsRecoverable(t *testing.T) {
	d, synced, tears := crashTornWALs(t)
	// keptOf returns the puts a WAL holding data keeps: the synced ones and
	// the unsynced ones whose records are intact in it.
	keptOf := func(data []byte) []int {
		rr := record.NewReader(bytes.NewReader(data), d.wal)
		n := 0
		for {
			if _, err := rr.Next(); err != nil {
				break
			}
			n++
		}
		if n < synced {
			t.Fatalf("a torn tail of %d bytes lost synced puts: %d records intact", len(data), n)
		}
		return seq(0, n)
	}
	for _, tear := range tears {
		checkTornWAL(t, d, tear.what, tear.data, keptOf(tear.data))
	}
}

// walCopy is a WAL's content after some damage or tear.
type walCopy struct {
	what string
	data []byte
}

// crashTornWALs makes a database whose last puts (after synced of them)
// were made without Sync, and returns its crash clone (the WAL as synced)
// with the WALs a power loss can leave instead: every prefix of the unsynced
// append (every 7th byte, 61st under -short, every one under
// SHALE_STRESS=1), and the whole append with its sectors from a boundary
// on never written.
func crashTornWALs(t *testing.T) (*walDamageDB, int, []walCopy) {
	t.Helper()
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.Logger = discardLogger()
	o.WriteBufferSize = 8 << 20
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const synced, unsynced = 6, 5
	val := func(i int) string { return fmt.Sprintf("v%02d-%s", i, strings.Repeat("u", 100+i*83)) }
	for i := range synced + unsynced {
		if err := db.Put(walDamageKey(i), []byte(val(i)), &WriteOptions{Sync: i < synced}); err != nil {
			t.Fatal(err)
		}
	}
	crash := fs.CrashClone()
	wal := findFile(t, crash, "/db", base.FileTypeLog)
	for _, name := range listNames(t, crash, "/db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeLog && len(readFile(t, crash, "/db/"+name)) > 0 {
			wal = name
		}
	}
	durable, live := walRecords(t, readFile(t, crash, "/db/"+wal)), walRecords(t, readFile(t, fs, "/db/"+wal))
	if len(live) <= len(durable) || !bytes.Equal(live[:len(durable)], durable) {
		t.Fatalf("WAL %s: %d bytes synced of %d written", wal, len(durable), len(live))
	}
	d := &walDamageDB{fs: crash, wal: wal, n: synced + unsynced, val: val}
	var tears []walCopy
	step := 7
	switch {
	case stress():
		step = 1
	case testing.Short():
		step = 61
	}
	for cut := len(durable) + 1; cut < len(live); cut += step {
		tears = append(tears, walCopy{fmt.Sprintf("power loss keeping %d of %d WAL bytes", cut, len(live)), live[:cut]})
	}
	for s := (len(durable) + 511) &^ 511; s < len(live); s += 512 {
		data := bytes.Clone(live)
		clear(data[s:])
		tears = append(tears, walCopy{fmt.Sprintf("power loss with the WAL's sectors from %d not written", s), data})
	}
	// Synced writes zero-fill the WAL ahead of its records, so the
	// unsynced appends went into zeros inside the file's size: a crash in
	// the middle of a copy, or a page written back in the middle of one
	// before a power loss, leaves them cut at any byte, zeros after.
	full := readFile(t, fs, "/db/"+wal)
	if len(full) <= len(live) || len(full)%(32<<10) != 0 {
		t.Fatalf("WAL %s is %d bytes with records to %d: not zero-filled ahead", wal, len(full), len(live))
	}
	for cut := len(durable) + 1; cut < len(live); cut += step {
		data := bytes.Clone(full)
		clear(data[cut:])
		tears = append(tears, walCopy{fmt.Sprintf("power loss cutting the appends into the WAL's zeros at %d of %d bytes", cut, len(live)), data})
	}
	return d, synced, tears
}

package mergeiter

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/rangedel"
)

// refEntry is an entry of the reference list with the child it came from.
type refEntry struct {
	itertest.Entry
	child int
}

// randomEntries returns n distinct entries sorted in internal order, with
// unique seqnums.
func randomEntries(rng *rand.Rand, n, nkeys int) []itertest.Entry {
	kinds := []base.Kind{base.KindSet, base.KindDelete, base.KindMerge, base.KindSingleDelete, base.KindBlobIndex}
	seqs := rng.Perm(n * 2)
	es := make([]itertest.Entry, n)
	for i := range es {
		k := itertest.UserKey(rng.IntN(nkeys))
		seq := base.SeqNum(seqs[i] + 1)
		es[i] = itertest.Entry{
			Key:   base.MakeInternalKey(k, seq, kinds[rng.IntN(len(kinds))]),
			Value: []byte(fmt.Sprintf("v%s@%d", k, seq)),
		}
	}
	itertest.SortEntries(es)
	return es
}

// splitRandom distributes entries over k children; with dupes, some entries
// are put into two children, producing equal internal keys.
func splitRandom(rng *rand.Rand, es []itertest.Entry, k int, dupes bool) ([][]itertest.Entry, []refEntry) {
	parts := make([][]itertest.Entry, k)
	var ref []refEntry
	for _, e := range es {
		c := rng.IntN(k)
		parts[c] = append(parts[c], e)
		ref = append(ref, refEntry{e, c})
		if dupes && k > 1 && rng.IntN(10) == 0 {
			d := (c + 1 + rng.IntN(k-1)) % k
			// A distinct value tells the copies apart.
			dup := itertest.Entry{Key: e.Key, Value: fmt.Appendf(nil, "%s/dup%d", e.Value, d)}
			parts[d] = append(parts[d], dup)
			ref = append(ref, refEntry{dup, d})
		}
	}
	for _, p := range parts {
		itertest.SortEntries(p)
	}
	sort.SliceStable(ref, func(i, j int) bool {
		c := base.InternalCompare(bytes.Compare, ref[i].Key, ref[j].Key)
		if c == 0 {
			return ref[i].child < ref[j].child
		}
		return c < 0
	})
	return parts, ref
}

// refCursor models an InternalIterator over a flat sorted list.
type refCursor struct {
	n     int
	pos   int
	valid bool
	keyOf func(i int) []byte
}

func (r *refCursor) set(p int) bool {
	r.pos = p
	r.valid = p >= 0 && p < r.n
	return r.valid
}

func (r *refCursor) seekGE(k []byte) bool {
	return r.set(sort.Search(r.n, func(i int) bool { return bytes.Compare(r.keyOf(i), k) >= 0 }))
}

func (r *refCursor) seekLT(k []byte) bool {
	return r.set(sort.Search(r.n, func(i int) bool { return bytes.Compare(r.keyOf(i), k) >= 0 }) - 1)
}

func (r *refCursor) next() bool {
	if !r.valid {
		return false
	}
	return r.set(r.pos + 1)
}

func (r *refCursor) prev() bool {
	if !r.valid {
		return false
	}
	return r.set(r.pos - 1)
}

// runRandomOps drives it and the reference through the same random
// operations and fails on the first difference.
func runRandomOps(t *testing.T, seed uint64, rng *rand.Rand, it base.InternalIterator, ref []itertest.Entry, nkeys, nops int) {
	t.Helper()
	rc := &refCursor{n: len(ref), keyOf: func(i int) []byte { return ref[i].Key.UserKey }}
	var trace []string
	for op := 0; op < nops; op++ {
		var got, want bool
		var desc string
		switch r := rng.IntN(10); {
		case r == 0:
			desc, got, want = "First", it.First(), rc.set(0)
		case r == 1:
			desc, got, want = "Last", it.Last(), rc.set(len(ref)-1)
		case r == 2:
			k := itertest.RandomSeekKey(rng, nkeys)
			desc, got, want = fmt.Sprintf("SeekGE(%s)", k), it.SeekGE(k), rc.seekGE(k)
		case r == 3:
			k := itertest.RandomSeekKey(rng, nkeys)
			desc, got, want = fmt.Sprintf("SeekLT(%s)", k), it.SeekLT(k), rc.seekLT(k)
		case r < 7:
			desc, got, want = "Next", it.Next(), rc.next()
		default:
			desc, got, want = "Prev", it.Prev(), rc.prev()
		}
		trace = append(trace, desc)
		if len(trace) > 12 {
			trace = trace[1:]
		}
		if err := it.Error(); err != nil {
			t.Fatalf("seed %d: %s: unexpected error %v", seed, desc, err)
		}
		if got != want {
			t.Fatalf("seed %d: op %d %s: got valid=%v, want %v (ref pos %d)\nlast ops: %v", seed, op, desc, got, want, rc.pos, trace)
		}
		if !got {
			continue
		}
		e := ref[rc.pos]
		k := it.Key()
		if !bytes.Equal(k.UserKey, e.Key.UserKey) || k.Trailer != e.Key.Trailer || !bytes.Equal(it.Value(), e.Value) {
			t.Fatalf("seed %d: op %d %s: got %s=%q, want %s=%q\nlast ops: %v", seed, op, desc, k, it.Value(), e.Key, e.Value, trace)
		}
	}
}

func TestMergeRandom(t *testing.T) {
	for iter := 0; iter < 200; iter++ {
		seed := itertest.Seed(iter)
		rng := rand.New(rand.NewPCG(seed, 0))
		nkeys := 1 + rng.IntN(40)
		es := randomEntries(rng, rng.IntN(150), nkeys)
		k := 1 + rng.IntN(5)
		parts, ref := splitRandom(rng, es, k, rng.IntN(2) == 0)
		iters := make([]base.InternalIterator, k)
		for i := range parts {
			iters[i] = &itertest.SliceIter{Entries: parts[i]}
		}
		cmp := bytes.Compare
		if iter%2 == 1 {
			// The same order through a function that is not
			// bytes.Compare: the heap's general path.
			cmp = func(a, b []byte) int { return bytes.Compare(a, b) }
		}
		m := New(cmp, iters...)
		if m.bytewise != (iter%2 == 0) {
			t.Fatalf("iteration %d: bytewise %v", iter, m.bytewise)
		}
		flat := make([]itertest.Entry, len(ref))
		for i := range ref {
			flat[i] = ref[i].Entry
		}
		runRandomOps(t, seed, rng, m, flat, nkeys, 300)
		if err := m.Close(); err != nil {
			t.Fatalf("seed %d: close: %v", seed, err)
		}
		for i, it := range iters {
			if !it.(*itertest.SliceIter).Closed() {
				t.Fatalf("seed %d: child %d not closed", seed, i)
			}
		}
	}
}

// TestMergeFullScans checks complete scans in both directions, and a
// direction switch at every position, against the reference.
func TestMergeFullScans(t *testing.T) {
	seed := itertest.Seed(0)
	rng := rand.New(rand.NewPCG(seed, 1))
	es := randomEntries(rng, 300, 50)
	parts, ref := splitRandom(rng, es, 4, true)
	iters := make([]base.InternalIterator, len(parts))
	for i := range parts {
		iters[i] = &itertest.SliceIter{Entries: parts[i]}
	}
	m := New(bytes.Compare, iters...)
	check := func(i int, what string) {
		t.Helper()
		if k := m.Key(); base.InternalCompare(bytes.Compare, k, ref[i].Key) != 0 || !bytes.Equal(m.Value(), ref[i].Value) {
			t.Fatalf("seed %d: %s at %d: got %s, want %s", seed, what, i, k, ref[i].Key)
		}
	}
	n := 0
	for ok := m.First(); ok; ok = m.Next() {
		check(n, "forward")
		n++
	}
	if n != len(ref) {
		t.Fatalf("seed %d: forward scan saw %d entries, want %d", seed, n, len(ref))
	}
	n = len(ref) - 1
	for ok := m.Last(); ok; ok = m.Prev() {
		check(n, "backward")
		n--
	}
	if n != -1 {
		t.Fatalf("seed %d: backward scan stopped at %d", seed, n)
	}
	for p := 0; p < len(ref); p++ {
		m.First()
		for j := 0; j < p; j++ {
			m.Next()
		}
		if p > 0 {
			if !m.Prev() {
				t.Fatalf("seed %d: Prev at %d failed", seed, p)
			}
			check(p-1, "prev-after-next")
			if !m.Next() {
				t.Fatalf("seed %d: Next at %d failed", seed, p-1)
			}
			check(p, "next-after-prev")
		}
	}
}

func TestMergeErrors(t *testing.T) {
	seed := itertest.Seed(0)
	rng := rand.New(rand.NewPCG(seed, 2))
	for trial := 0; trial < 50; trial++ {
		es := randomEntries(rng, 100, 30)
		parts, _ := splitRandom(rng, es, 3, false)
		iters := make([]base.InternalIterator, 3)
		bad := rng.IntN(3)
		for i := range parts {
			s := &itertest.SliceIter{Entries: parts[i]}
			if i == bad {
				s.FailAfter = 1 + rng.IntN(len(parts[i])+2)
			}
			iters[i] = s
		}
		m := New(bytes.Compare, iters...)
		ok := m.First()
		steps := 0
		for ok {
			ok = m.Next()
			steps++
		}
		// The failing child's op budget ran out before the scan ended
		// unless the scan never reached it; when it did, the error must
		// surface and stop the scan.
		s := iters[bad].(*itertest.SliceIter)
		if s.Error() != nil && !errors.Is(m.Error(), itertest.ErrInjected) {
			t.Fatalf("seed %d: child failed but Error() = %v", seed, m.Error())
		}
		if s.Error() == nil && m.Error() != nil {
			t.Fatalf("seed %d: spurious error %v", seed, m.Error())
		}
		if m.Next() || m.Prev() {
			t.Fatalf("seed %d: moved after exhaustion/failure", seed)
		}
		if err := m.Close(); s.Error() != nil && !errors.Is(err, itertest.ErrInjected) {
			t.Fatalf("seed %d: Close = %v, want injected", seed, err)
		}
	}
	// Close returns the first close error.
	e1, e2 := errors.New("close 1"), errors.New("close 2")
	m := New(bytes.Compare, &itertest.SliceIter{}, &itertest.SliceIter{CloseErr: e1}, &itertest.SliceIter{CloseErr: e2})
	if err := m.Close(); err != e1 {
		t.Fatalf("Close = %v, want %v", err, e1)
	}
}

func TestMergeNextNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	parts, _ := splitRandom(rng, randomEntries(rng, 1000, 200), 4, false)
	iters := make([]base.InternalIterator, 4)
	for i := range parts {
		iters[i] = &itertest.SliceIter{Entries: parts[i]}
	}
	m := New(bytes.Compare, iters...)
	m.First()
	allocs := testing.AllocsPerRun(500, func() {
		if !m.Next() {
			m.First()
		}
		m.Prev()
		m.Next()
	})
	if allocs != 0 {
		t.Fatalf("Next/Prev allocate: %v per run", allocs)
	}
}

func BenchmarkMergeNext4(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	es := make([]itertest.Entry, 100000)
	for i := range es {
		es[i] = itertest.Entry{Key: base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", i)), base.SeqNum(i+1), base.KindSet), Value: []byte("value")}
	}
	parts, _ := splitRandom(rng, es, 4, false)
	iters := make([]base.InternalIterator, 4)
	for i := range parts {
		iters[i] = &itertest.SliceIter{Entries: parts[i], Alias: true}
	}
	m := New(bytes.Compare, iters...)
	m.First()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !m.Next() {
			m.First()
		}
	}
}

// scriptChild is one child of a merge script: its entries and, when the
// script gave a "|", its range tombstones (an empty list for none after it).
type scriptChild struct {
	entries []itertest.Entry
	dels    *rangedel.List
	hasDels bool
}

// TestMerge runs testdata/merge, in the scripts' notation (see itertest).
// "define" gives one child a line, newest first: entries, then optionally
// "|" and the child's range tombstones; "(empty)" is a child with no
// entries. "iter [snapshot=N]" merges them (applying the tombstones with
// SetRangeDels when some child has a "|") and runs the operations of
// runScriptOps.
func TestMerge(t *testing.T) {
	var children []scriptChild
	datadriven.RunTest(t, "testdata/merge", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "define":
			children = nil
			for _, line := range strings.Split(td.Input, "\n") {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				points, tombs, hasDels := strings.Cut(line, "|")
				var c scriptChild
				if p := strings.TrimSpace(points); p != "(empty)" {
					c.entries = parseScriptEntries(t, td, p)
				}
				if hasDels {
					ts, err := itertest.ParseTombstones(tombs)
					if err != nil {
						td.Fatalf(t, "%v", err)
					}
					c.dels = rangedel.NewList(bytes.Compare, rangedel.Fragment(bytes.Compare, ts))
					c.hasDels = true
				}
				children = append(children, c)
			}
			return ""
		case "iter":
			iters := make([]base.InternalIterator, len(children))
			kids := make([]*itertest.SliceIter, len(children))
			dels := make([]*rangedel.List, len(children))
			anyDels := false
			for i, c := range children {
				kids[i] = &itertest.SliceIter{Entries: c.entries}
				iters[i] = kids[i]
				dels[i] = c.dels
				anyDels = anyDels || c.hasDels
			}
			m := New(bytes.Compare, iters...)
			if anyDels {
				snap := base.SeqNumMax
				if td.HasArg("snapshot") {
					var s uint64
					td.ScanArgs(t, "snapshot", &s)
					snap = base.SeqNum(s)
				}
				m.SetRangeDels(snap, dels)
			} else if td.HasArg("snapshot") {
				td.Fatalf(t, "snapshot= without range tombstones")
			}
			return runScriptOps(t, td, m, nil, func() {
				for i, s := range kids {
					if !s.Closed() {
						td.Fatalf(t, "child %d not closed", i)
					}
				}
			})
		}
		td.Fatalf(t, "unknown command %q", td.Cmd)
		return ""
	})
}

func parseScriptEntries(t *testing.T, td *datadriven.TestData, s string) []itertest.Entry {
	es, err := itertest.ParseEntries(s)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	itertest.SortEntries(es)
	return es
}

// runScriptOps runs the operations of td's input on it, one a line: first,
// last, next, prev, seek-ge k, seek-lt k, close, and scan and scan-reverse
// (First then Next, or Last then Prev, to the end, on one line). Each
// prints the entry, "." when not positioned, or the error, followed by what
// note returns (when not nil). It fails when Key or Value disagree with
// the returned bool. It closes it at the end if the script did not, and
// calls closed after Close.
func runScriptOps(t *testing.T, td *datadriven.TestData, it base.InternalIterator, note func() string, closed func()) string {
	t.Helper()
	var b strings.Builder
	emit := func(line, result string) {
		if note != nil {
			if n := note(); n != "" {
				result += " " + n
			}
		}
		fmt.Fprintf(&b, "%s: %s\n", line, result)
	}
	isClosed := false
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		ok, known, err := itertest.Move(it, f)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		if !known {
			switch f[0] {
			case "scan", "scan-reverse":
				start, step := it.First, it.Next
				if f[0] == "scan-reverse" {
					start, step = it.Last, it.Prev
				}
				var seen []string
				for ok = start(); ok; ok = step() {
					seen = append(seen, describeScriptIter(t, it, ok))
				}
				if last := describeScriptIter(t, it, ok); last != "." || len(seen) == 0 {
					seen = append(seen, last)
				}
				emit(line, strings.Join(seen, " "))
				continue
			case "close":
				isClosed = true
				emit(line, itertest.DescribeErr(it.Close()))
				if closed != nil {
					closed()
				}
				continue
			default:
				td.Fatalf(t, "unknown operation %q", line)
			}
		}
		emit(line, describeScriptIter(t, it, ok))
	}
	if !isClosed {
		if err := it.Close(); err != nil {
			td.Fatalf(t, "Close: %v", err)
		}
		if closed != nil {
			closed()
		}
	}
	return b.String()
}

// describeScriptIter prints it after a positioning call that returned ok,
// checking that Key and Value agree with it.
func describeScriptIter(t *testing.T, it base.InternalIterator, ok bool) string {
	t.Helper()
	if !ok {
		if k := it.Key(); k.UserKey != nil || k.Trailer != 0 || it.Value() != nil {
			t.Fatalf("not positioned, but Key %s, Value %q", k, it.Value())
		}
		if err := it.Error(); err != nil {
			return itertest.DescribeErr(err)
		}
		return "."
	}
	if err := it.Error(); err != nil {
		t.Fatalf("positioned at %s with error %v", it.Key(), err)
	}
	return itertest.FormatEntry(it.Key(), it.Value())
}

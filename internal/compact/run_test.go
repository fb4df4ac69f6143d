package compact

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/rangedel"
)

// entry is a point entry of the test model.
type entry struct {
	key   base.InternalKey
	value []byte
}

// sliceIter is an InternalIterator over sorted entries.
type sliceIter struct {
	es  []entry
	pos int
	err error // returned by Error once exhausted
}

func newSliceIter(es []entry) *sliceIter {
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b entry) int { return base.InternalCompare(bytes.Compare, a.key, b.key) })
	return &sliceIter{es: es}
}

func (s *sliceIter) valid() bool { return s.pos >= 0 && s.pos < len(s.es) }
func (s *sliceIter) SeekGE(key []byte) bool {
	s.pos = sort.Search(len(s.es), func(i int) bool { return bytes.Compare(s.es[i].key.UserKey, key) >= 0 })
	return s.valid()
}
func (s *sliceIter) SeekLT(key []byte) bool {
	s.pos = sort.Search(len(s.es), func(i int) bool { return bytes.Compare(s.es[i].key.UserKey, key) >= 0 }) - 1
	return s.valid()
}
func (s *sliceIter) First() bool { s.pos = 0; return s.valid() }
func (s *sliceIter) Last() bool  { s.pos = len(s.es) - 1; return s.valid() }
func (s *sliceIter) Next() bool  { s.pos++; return s.valid() }
func (s *sliceIter) Prev() bool  { s.pos--; return s.valid() }
func (s *sliceIter) Key() base.InternalKey {
	// Hand out a scratch copy that is clobbered on the next call, to catch
	// callers that keep keys past a positioning call.
	k := s.es[s.pos].key
	k.UserKey = append([]byte(nil), k.UserKey...)
	return k
}
func (s *sliceIter) Value() []byte { return s.es[s.pos].value }
func (s *sliceIter) Error() error  { return s.err }
func (s *sliceIter) Close() error  { return nil }

// memOutput is an in-memory OutputWriter.
type memOutput struct {
	points  []entry
	tombs   []rangedel.Tombstone
	size    uint64
	closed  bool
	failAdd bool
}

func (m *memOutput) Add(key base.InternalKey, value []byte) error {
	if m.closed {
		panic("Add after Close")
	}
	if len(m.tombs) > 0 {
		panic("Add after AddRangeTombstone")
	}
	if m.failAdd {
		return errors.New("injected add failure")
	}
	m.points = append(m.points, entry{key.Clone(), slices.Clone(value)})
	m.size += uint64(key.Size() + len(value))
	return nil
}

func (m *memOutput) AddRangeTombstone(start, end []byte, seq base.SeqNum) error {
	if m.closed {
		panic("AddRangeTombstone after Close")
	}
	m.tombs = append(m.tombs, rangedel.Tombstone{Start: slices.Clone(start), End: slices.Clone(end), Seq: seq})
	m.size += uint64(len(start) + len(end) + 8)
	return nil
}

func (m *memOutput) EstimatedSize() uint64 { return m.size }

func (m *memOutput) Close() error {
	if m.closed {
		panic("double Close")
	}
	m.closed = true
	return nil
}

// fragment splits tombstones into sorted, non-overlapping spans with seqnums
// newest first: the test's own reference for rangedel.Fragment.
func fragment(ts []rangedel.Tombstone) []rangedel.Span {
	var bounds [][]byte
	for _, t := range ts {
		bounds = append(bounds, t.Start, t.End)
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, func(a, b []byte) bool { return bytes.Equal(a, b) })
	var spans []rangedel.Span
	for i := 0; i+1 < len(bounds); i++ {
		var seqs []base.SeqNum
		for _, t := range ts {
			if bytes.Compare(t.Start, bounds[i]) <= 0 && bytes.Compare(bounds[i+1], t.End) <= 0 {
				seqs = append(seqs, t.Seq)
			}
		}
		if len(seqs) > 0 {
			slices.SortFunc(seqs, func(a, b base.SeqNum) int { return -cmpSeq(a, b) })
			spans = append(spans, rangedel.Span{Start: bounds[i], End: bounds[i+1], Seqs: seqs})
		}
	}
	return spans
}

func cmpSeq(a, b base.SeqNum) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// read returns what a reader at snap sees for key: its value, or "" with
// found=false. Merge and BlobIndex read like Set.
func read(points []entry, tombs []rangedel.Tombstone, key []byte, snap base.SeqNum, merger bool) (string, bool) {
	// The key's visible versions, newest first.
	var vs []*entry
	for i := range points {
		e := &points[i]
		if bytes.Equal(e.key.UserKey, key) && e.key.SeqNum() <= snap {
			vs = append(vs, e)
		}
	}
	slices.SortFunc(vs, func(a, b *entry) int { return cmp.Compare(b.key.SeqNum(), a.key.SeqNum()) })
	deleted := func(e *entry) bool {
		if e.key.Kind().IsTombstone() {
			return true
		}
		for _, t := range tombs {
			if t.Seq <= snap && t.Seq > e.key.SeqNum() && bytes.Compare(t.Start, key) <= 0 && bytes.Compare(key, t.End) < 0 {
				return true
			}
		}
		return false
	}
	if len(vs) == 0 || deleted(vs[0]) {
		return "", false
	}
	if !merger || vs[0].key.Kind() != base.KindMerge {
		return string(vs[0].value), true
	}
	var ops [][]byte
	var baseValue []byte
	var baseKind base.Kind
	hasBase := false
	for _, e := range vs {
		if deleted(e) {
			break
		}
		if e.key.Kind() != base.KindMerge {
			baseValue, baseKind, hasBase = e.value, e.key.Kind(), true
			break
		}
		ops = append([][]byte{e.value}, ops...)
	}
	v, _ := testMerger{}.FullMerge(key, baseValue, baseKind, hasBase, ops)
	return string(v), true
}

// testMerger joins the base ("-" for none; a blob index resolved as
// "blob(index)") and the operands with "+"; PartialMerge refuses every
// third pair, so that some operands stay apart.
type testMerger struct{}

func (testMerger) FullMerge(key, baseValue []byte, baseKind base.Kind, hasBase bool, ops [][]byte) ([]byte, error) {
	b := []byte("-")
	if hasBase {
		b = baseValue
		if baseKind == base.KindBlobIndex {
			b = fmt.Appendf(nil, "blob(%s)", baseValue)
		}
	}
	for _, op := range ops {
		b = append(append(slices.Clip(b), '+'), op...)
	}
	return b, nil
}

func (testMerger) PartialMerge(key, left, right []byte) ([]byte, bool) {
	if (len(left)+len(right))%3 == 0 {
		return nil, false
	}
	return append(append(append([]byte{}, left...), '+'), right...), true
}

type modelCase struct {
	below     []entry // entries below the output level: never compacted
	input     []entry
	tombs     []rangedel.Tombstone
	snapshots []base.SeqNum
	keys      [][]byte
	elide     bool // pass Elide* funcs derived from below
	// keepShadowed sets RunOptions.KeepShadowedTombstones.
	keepShadowed bool
	// merger sets RunOptions.Merger to testMerger.
	merger bool
}

// genCase builds a random history on a few keys. Keys are either "normal"
// (Set/Delete/Merge/BlobIndex in any order) or SingleDelete keys, which
// alternate Set and SingleDelete as the SingleDelete contract requires. The
// first seqnums go below the output level.
func genCase(rng *rand.Rand) modelCase {
	var c modelCase
	nkeys := 1 + rng.IntN(6)
	sdKey := make([]bool, nkeys)
	lastSet := make([]bool, nkeys)
	for i := range nkeys {
		c.keys = append(c.keys, []byte{'a' + byte(i)})
		sdKey[i] = rng.IntN(3) == 0
	}
	c.keys = append(c.keys, []byte{'a' + byte(nkeys)}) // never written
	total := 1 + rng.IntN(40)
	nbelow := 0
	if rng.IntN(2) == 0 {
		nbelow = rng.IntN(total/2 + 1)
	}
	c.elide = rng.IntN(4) != 0
	c.keepShadowed = rng.IntN(2) == 0
	c.merger = rng.IntN(2) == 0
	kinds := []base.Kind{base.KindSet, base.KindSet, base.KindDelete, base.KindMerge, base.KindBlobIndex}
	if c.merger {
		kinds = append(kinds, base.KindMerge, base.KindMerge, base.KindMerge)
	}
	for seq := base.SeqNum(1); seq <= base.SeqNum(total); seq++ {
		if int(seq) > nbelow && rng.IntN(6) == 0 {
			a, b := rng.IntN(nkeys+1), rng.IntN(nkeys+1)
			if a > b {
				a, b = b, a
			}
			c.tombs = append(c.tombs, rangedel.Tombstone{
				Start: []byte{'a' + byte(a)}, End: []byte{'a' + byte(b) + 1}, Seq: seq})
			continue
		}
		k := rng.IntN(nkeys)
		var kind base.Kind
		if sdKey[k] {
			kind = base.KindSet
			if lastSet[k] {
				kind = base.KindSingleDelete
			}
			lastSet[k] = !lastSet[k]
		} else {
			kind = kinds[rng.IntN(len(kinds))]
		}
		var value []byte
		if !kind.IsTombstone() {
			value = fmt.Appendf(nil, "v%d", seq)
		}
		e := entry{base.MakeInternalKey(c.keys[k], seq, kind), value}
		if int(seq) <= nbelow {
			c.below = append(c.below, e)
		} else {
			c.input = append(c.input, e)
		}
	}
	for s := base.SeqNum(0); s <= base.SeqNum(total); s++ {
		if rng.IntN(8) == 0 {
			c.snapshots = append(c.snapshots, s)
		}
	}
	return c
}

func runCase(t *testing.T, c modelCase, target uint64) ([]*memOutput, Stats, error) {
	t.Helper()
	var outs []*memOutput
	o := RunOptions{
		Input:                  newSliceIter(c.input),
		RangeDels:              fragment(c.tombs),
		Snapshots:              c.snapshots,
		TargetFileSize:         target,
		KeepShadowedTombstones: c.keepShadowed,
		NewOutput: func() (OutputWriter, error) {
			m := &memOutput{}
			outs = append(outs, m)
			return m, nil
		},
	}
	if c.merger {
		o.Merger = testMerger{}
	}
	if c.elide {
		o.ElideTombstone = func(k []byte) bool {
			for _, e := range c.below {
				if bytes.Equal(e.key.UserKey, k) {
					return false
				}
			}
			return true
		}
		o.ElideRangeTombstone = func(start, end []byte) bool {
			for _, e := range c.below {
				if bytes.Compare(start, e.key.UserKey) <= 0 && bytes.Compare(e.key.UserKey, end) < 0 {
					return false
				}
			}
			return true
		}
	}
	st, err := Run(o)
	return outs, st, err
}

func stripeOf(snaps []base.SeqNum, seq base.SeqNum) int {
	return sort.Search(len(snaps), func(i int) bool { return snaps[i] >= seq })
}

func dumpCase(c modelCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "snapshots %v\nbelow:", c.snapshots)
	for _, e := range c.below {
		fmt.Fprintf(&b, " %s", e.key)
	}
	b.WriteString("\ninput:")
	for _, e := range newSliceIter(c.input).es {
		fmt.Fprintf(&b, " %s", e.key)
	}
	b.WriteString("\ntombstones:")
	for _, t := range c.tombs {
		fmt.Fprintf(&b, " [%s,%s)#%d", t.Start, t.End, t.Seq)
	}
	fmt.Fprintf(&b, "\nelide=%v keepShadowed=%v merger=%v\n", c.elide, c.keepShadowed, c.merger)
	return b.String()
}

// checkCase verifies Run's output for c against the reader model and the
// structural promises of Run. It returns a description of the first problem.
func checkCase(t *testing.T, c modelCase, target uint64) string {
	outs, st, err := runCase(t, c, target)
	if err != nil {
		return fmt.Sprintf("Run: %v", err)
	}
	return checkOutputs(c, outs, st)
}

func checkOutputs(c modelCase, outs []*memOutput, st Stats) string {
	var outPoints []entry
	var outTombs []rangedel.Tombstone
	var prevLast []byte
	for i, m := range outs {
		if !m.closed {
			return fmt.Sprintf("output %d not closed", i)
		}
		if len(m.points) == 0 && (i != len(outs)-1 || len(m.tombs) == 0) {
			return fmt.Sprintf("output %d is empty or tombstone-only but not last", i)
		}
		for j, p := range m.points {
			if j > 0 && base.InternalCompare(bytes.Compare, m.points[j-1].key, p.key) >= 0 {
				return fmt.Sprintf("output %d: %s after %s", i, p.key, m.points[j-1].key)
			}
		}
		if len(m.points) > 0 {
			first := m.points[0].key.UserKey
			if prevLast != nil && bytes.Compare(prevLast, first) >= 0 {
				return fmt.Sprintf("output %d starts at %q, previous output ends at %q", i, first, prevLast)
			}
			for _, tb := range m.tombs {
				// The file's tombstones lie in [first point, next file's first point).
				if i > 0 && bytes.Compare(tb.Start, first) < 0 {
					return fmt.Sprintf("output %d: tombstone starts at %q before its first key %q", i, tb.Start, first)
				}
				if i+1 < len(outs) && len(outs[i+1].points) > 0 && bytes.Compare(tb.End, outs[i+1].points[0].key.UserKey) > 0 {
					return fmt.Sprintf("output %d: tombstone ends at %q after next file starts", i, tb.End)
				}
			}
			prevLast = m.points[len(m.points)-1].key.UserKey
		}
		for _, tb := range m.tombs {
			if bytes.Compare(tb.Start, tb.End) >= 0 {
				return fmt.Sprintf("output %d: empty tombstone [%q,%q)", i, tb.Start, tb.End)
			}
		}
		outPoints = append(outPoints, m.points...)
		outTombs = append(outTombs, m.tombs...)
	}
	// Every output entry comes from the input (but for merges), and within
	// one stripe at most one version of a key survives under its
	// operands, or with keepShadowed a value and the tombstone it hides.
	inSet := map[string]bool{}
	for _, e := range c.input {
		inSet[string(e.key.AppendEncoded(nil))+string(e.value)] = true
	}
	seen := map[string]int{} // versions per key and stripe, operands aside
	newest := map[string]base.Kind{}
	for _, p := range outPoints {
		if !inSet[string(p.key.AppendEncoded(nil))+string(p.value)] && !(c.merger && bytes.Contains(p.value, []byte("+"))) {
			return fmt.Sprintf("output entry %s not in the input", p.key)
		}
		id := fmt.Sprintf("%s/%d", p.key.UserKey, stripeOf(c.snapshots, p.key.SeqNum()))
		if p.key.Kind() == base.KindMerge {
			if seen[id] > 0 {
				return fmt.Sprintf("operand %s under a value of its stripe", p.key)
			}
			continue
		}
		switch seen[id] {
		case 0:
			newest[id] = p.key.Kind()
		case 1:
			if !c.keepShadowed || newest[id].IsTombstone() || !p.key.Kind().IsTombstone() {
				return fmt.Sprintf("two versions of %q in one stripe survive (%s)", p.key.UserKey, p.key)
			}
		default:
			return fmt.Sprintf("three versions of %q in one stripe survive (%s)", p.key.UserKey, p.key)
		}
		seen[id]++
	}
	// With keepShadowed, a key deleted in the input that has data below the
	// output level keeps a tombstone above that data.
	if c.keepShadowed {
		for _, k := range c.keys {
			if msg := checkDeleteKept(c, k, outPoints, outTombs); msg != "" {
				return msg
			}
		}
	}
	tombStripe := map[string]bool{}
	for _, tb := range outTombs {
		id := fmt.Sprintf("%s/%s/%d", tb.Start, tb.End, stripeOf(c.snapshots, tb.Seq))
		if tombStripe[id] {
			return fmt.Sprintf("two tombstones [%q,%q) in one stripe survive", tb.Start, tb.End)
		}
		tombStripe[id] = true
	}
	if int64(len(c.input)) != st.InputEntries || int64(len(outPoints)) != st.OutputEntries ||
		st.InputEntries != st.OutputEntries+st.DroppedShadowed+st.DroppedTombstones+st.DroppedByRangeDel+st.Merged {
		return fmt.Sprintf("stats %+v do not add up (input %d, output %d)", st, len(c.input), len(outPoints))
	}
	// Every reader sees the same thing before and after.
	before := append(slices.Clone(c.below), c.input...)
	after := append(slices.Clone(c.below), outPoints...)
	for _, snap := range append(slices.Clone(c.snapshots), base.SeqNumMax) {
		for _, k := range c.keys {
			v1, ok1 := read(before, c.tombs, k, snap, c.merger)
			v2, ok2 := read(after, outTombs, k, snap, c.merger)
			if v1 != v2 || ok1 != ok2 {
				return fmt.Sprintf("key %q at snapshot %d: before (%q,%v) after (%q,%v)", k, snap, v1, ok1, v2, ok2)
			}
		}
	}
	return ""
}

// checkDeleteKept reports a key with data below the output level that a
// tombstone of the input deletes and no tombstone of the output does.
func checkDeleteKept(c modelCase, k []byte, outPoints []entry, outTombs []rangedel.Tombstone) string {
	if !slices.ContainsFunc(c.below, func(e entry) bool { return bytes.Equal(e.key.UserKey, k) }) {
		return ""
	}
	covers := func(ps []entry, ts []rangedel.Tombstone) bool {
		for _, p := range ps {
			if bytes.Equal(p.key.UserKey, k) && p.key.Kind().IsTombstone() {
				return true
			}
		}
		for _, tb := range ts {
			if bytes.Compare(tb.Start, k) <= 0 && bytes.Compare(k, tb.End) < 0 {
				return true
			}
		}
		return false
	}
	if covers(c.input, c.tombs) && !covers(outPoints, outTombs) {
		return fmt.Sprintf("key %q: the input deletes its data below, the output keeps no tombstone of it", k)
	}
	return ""
}

func TestRunRandomized(t *testing.T) {
	seed := uint64(os.Getpid()) ^ 0x5eed
	if v := os.Getenv("SHALE_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatal(err)
		}
	}
	iters := 3000
	if os.Getenv("SHALE_STRESS") == "1" {
		iters = 300000
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	dropped := Stats{}
	for i := range iters {
		caseSeed := rng.Uint64()
		c := genCase(rand.New(rand.NewPCG(caseSeed, 1)))
		target := []uint64{1, 20, 60, 1 << 20}[i%4]
		if msg := checkCase(t, c, target); msg != "" {
			t.Fatalf("case seed %d (SHALE_SEED=%d), target %d: %s\n%s", caseSeed, seed, target, msg, dumpCase(c))
		}
		_, st, _ := runCase(t, c, target)
		dropped.DroppedShadowed += st.DroppedShadowed
		dropped.DroppedTombstones += st.DroppedTombstones
		dropped.DroppedByRangeDel += st.DroppedByRangeDel
		dropped.KeptShadowed += st.KeptShadowed
		dropped.Merged += st.Merged
	}
	// The generator must exercise every kind of drop.
	if dropped.DroppedShadowed == 0 || dropped.DroppedTombstones == 0 || dropped.DroppedByRangeDel == 0 || dropped.KeptShadowed == 0 || dropped.Merged == 0 {
		t.Fatalf("generator too weak: %+v", dropped)
	}
}

// TestRunCheckerCatchesBugs makes sure the model check can fail: outputs
// that lose a version a snapshot sees, or keep two versions of one stripe,
// are reported.
func TestRunCheckerCatchesBugs(t *testing.T) {
	a := []byte("a")
	c := modelCase{
		input: []entry{
			{base.MakeInternalKey(a, 5, base.KindSet), []byte("new")},
			{base.MakeInternalKey(a, 4, base.KindSet), []byte("mid")},
			{base.MakeInternalKey(a, 3, base.KindSet), []byte("old")},
		},
		snapshots: []base.SeqNum{3},
		keys:      [][]byte{a},
	}
	outs, st, err := runCase(t, c, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if msg := checkOutputs(c, outs, st); msg != "" {
		t.Fatalf("correct output rejected: %s", msg)
	}
	if got := len(outs[0].points); got != 2 || st.DroppedShadowed != 1 {
		t.Fatalf("want 2 survivors and 1 shadowed, got %d, %+v", got, st)
	}
	lost := &memOutput{points: outs[0].points[:1], closed: true}
	st2 := st
	st2.OutputEntries, st2.DroppedShadowed = 1, 2
	if msg := checkOutputs(c, []*memOutput{lost}, st2); !strings.Contains(msg, "snapshot 3") {
		t.Fatalf("lost version not caught: %q", msg)
	}
	kept := &memOutput{points: newSliceIter(c.input).es, closed: true}
	st3 := Stats{InputEntries: 3, OutputEntries: 3}
	if msg := checkOutputs(c, []*memOutput{kept}, st3); !strings.Contains(msg, "one stripe") {
		t.Fatalf("shadowed version not caught: %q", msg)
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }

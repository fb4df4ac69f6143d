package compact

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/rangedel"
)

func ik(key string, seq base.SeqNum, kind base.Kind) base.InternalKey {
	return base.MakeInternalKey([]byte(key), seq, kind)
}

func set(key string, seq base.SeqNum) entry {
	return entry{ik(key, seq, base.KindSet), fmt.Appendf(nil, "%s%d", key, seq)}
}

// describe prints outputs as "file: points | tombstones" lines, in the
// scripts' notation.
func describe(outs []*memOutput) string {
	var b strings.Builder
	for i, m := range outs {
		fmt.Fprintf(&b, "%d:", i)
		for _, p := range m.points {
			b.WriteString(" " + itertest.FormatEntry(p.key, p.value))
		}
		if len(m.tombs) > 0 {
			b.WriteString(" |")
			for _, t := range m.tombs {
				b.WriteString(" " + itertest.FormatTombstone(t.Start, t.End, t.Seq))
			}
		}
		if !m.closed {
			b.WriteString(" (open)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestRun runs testdata/run. "run" compacts its input: point entries and
// range tombstones in the scripts' notation (see itertest), in any order
// and on any number of lines, and "grandparent" lines in the picker's file
// notation. Arguments: target= (TargetFileSize, default 1 GiB),
// snapshots=(...), elide=(points,ranges) (pass ElideTombstone and
// ElideRangeTombstone, which allow elision for every key but those of
// below=(...)), secondary=(lo-hi@seq,...) (secondary tombstones, the
// attribute of a Set being its value read as a decimal number, none when it
// is not one), merge (RunOptions.Merger is testMerger: "+" joins, every
// third pair refused by PartialMerge), merge-fail=X (testMerger failing
// every FullMerge with an operand X, with OnMergeError set), and raw (feed the entries in the
// order written instead of sorting them). It prints each output (points | tombstones, "(open)" if
// left open), the Stats (with secondary=, also the secondary counts), and
// the error.
func TestRun(t *testing.T) {
	datadriven.RunTest(t, "testdata/run", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "run" {
			td.Fatalf(t, "unknown command %q", td.Cmd)
		}
		o := RunOptions{TargetFileSize: 1 << 30}
		td.MaybeScanArgs(t, "target", &o.TargetFileSize)
		if arg, ok := td.Arg("snapshots"); ok {
			for i := range arg.Vals {
				var s uint64
				arg.Scan(t, i, &s)
				o.Snapshots = append(o.Snapshots, base.SeqNum(s))
			}
		}
		if arg, ok := td.Arg("secondary"); ok {
			for _, v := range arg.Vals {
				var tomb manifest.SecondaryTombstone
				if _, err := fmt.Sscanf(v, "%d-%d@%d", &tomb.Lo, &tomb.Hi, &tomb.Seq); err != nil {
					td.Fatalf(t, "secondary=%s: want lo-hi@seq", v)
				}
				o.SecondaryTombstones = append(o.SecondaryTombstones, tomb)
			}
			o.SecondaryDeleteKey = func(_, value []byte) (uint64, bool) {
				n, err := strconv.ParseUint(string(value), 10, 64)
				return n, err == nil
			}
		}
		if td.HasArg("merge") {
			o.Merger = testMerger{}
		}
		var mergeErrs []string
		if arg, ok := td.Arg("merge-fail"); ok {
			o.Merger = failingMerger{bad: arg.Vals[0]}
			o.OnMergeError = func(key []byte, err error) error {
				mergeErrs = append(mergeErrs, fmt.Sprintf("%s: %v", key, err))
				return nil
			}
		}
		var below []string
		if arg, ok := td.Arg("below"); ok {
			below = arg.Vals
		}
		if arg, ok := td.Arg("elide"); ok {
			for _, v := range arg.Vals {
				switch v {
				case "points":
					o.ElideTombstone = func(k []byte) bool { return !slices.Contains(below, string(k)) }
				case "ranges":
					o.ElideRangeTombstone = func(start, end []byte) bool {
						for _, k := range below {
							if bytes.Compare(start, []byte(k)) <= 0 && bytes.Compare([]byte(k), end) < 0 {
								return false
							}
						}
						return true
					}
				default:
					td.Fatalf(t, "elide=%s: want points or ranges", v)
				}
			}
		}
		var es []itertest.Entry
		var tombs []rangedel.Tombstone
		for _, line := range strings.Split(td.Input, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "grandparent "); ok {
				o.Grandparents = append(o.Grandparents, parseFile(t, rest))
				continue
			}
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "[") {
					tb, err := itertest.ParseTombstone(f)
					if err != nil {
						td.Fatalf(t, "%v", err)
					}
					tombs = append(tombs, tb)
					continue
				}
				e, err := itertest.ParseEntry(f)
				if err != nil {
					td.Fatalf(t, "%v", err)
				}
				es = append(es, e)
			}
		}
		if !td.HasArg("raw") {
			itertest.SortEntries(es)
		}
		input := &itertest.SliceIter{Entries: es}
		defer input.Close()
		o.Input = input
		o.RangeDels = fragment(tombs)
		var outs []*memOutput
		o.NewOutput = func() (OutputWriter, error) {
			m := &memOutput{}
			outs = append(outs, m)
			return m, nil
		}
		st, err := Run(o)
		var b strings.Builder
		if len(outs) == 0 {
			b.WriteString("no outputs\n")
		}
		b.WriteString(describe(outs))
		fmt.Fprintf(&b, "stats: in=%d out=%d shadowed=%d tombstones=%d range-deleted=%d\n",
			st.InputEntries, st.OutputEntries, st.DroppedShadowed, st.DroppedTombstones, st.DroppedByRangeDel)
		if o.Merger != nil {
			fmt.Fprintf(&b, "merged: %d\n", st.Merged)
		}
		for _, e := range mergeErrs {
			fmt.Fprintf(&b, "merge error: %s\n", e)
		}
		if o.SecondaryTombstones != nil {
			fmt.Fprintf(&b, "secondary: dropped=%d to-delete=%d\n", st.DroppedBySecondary, st.SecondaryToDelete)
		}
		if err != nil {
			if errors.Is(err, base.ErrCorruption) {
				fmt.Fprintf(&b, "error (ErrCorruption): %v\n", err)
			} else {
				fmt.Fprintf(&b, "error: %v\n", err)
			}
		}
		return b.String()
	})
}

func TestRunErrors(t *testing.T) {
	t.Run("add failure closes outputs", func(t *testing.T) {
		var outs []*memOutput
		o := RunOptions{
			Input:          newSliceIter([]entry{set("a", 1), set("b", 1), set("c", 1)}),
			TargetFileSize: 1,
			NewOutput: func() (OutputWriter, error) {
				m := &memOutput{failAdd: len(outs) == 1}
				outs = append(outs, m)
				return m, nil
			},
		}
		if _, err := Run(o); err == nil || !strings.Contains(err.Error(), "injected") {
			t.Fatalf("want injected error, got %v", err)
		}
		if len(outs) != 2 || !outs[0].closed || !outs[1].closed {
			t.Fatalf("outputs not all closed: %s", describe(outs))
		}
	})
	t.Run("new output failure", func(t *testing.T) {
		want := errors.New("disk full")
		o := RunOptions{
			Input:     newSliceIter([]entry{set("a", 1)}),
			NewOutput: func() (OutputWriter, error) { return nil, want },
		}
		if _, err := Run(o); !errors.Is(err, want) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("iterator error", func(t *testing.T) {
		it := newSliceIter([]entry{set("a", 1)})
		it.err = base.CorruptionErrorf("000007.sst", 40, "bad block")
		var outs []*memOutput
		o := RunOptions{Input: it, NewOutput: func() (OutputWriter, error) {
			m := &memOutput{}
			outs = append(outs, m)
			return m, nil
		}}
		if _, err := Run(o); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("got %v", err)
		}
		if len(outs) != 1 || !outs[0].closed {
			t.Fatalf("output not closed: %s", describe(outs))
		}
	})
}

// countingOutput is an OutputWriter that keeps nothing, for allocation tests.
type countingOutput struct{ n uint64 }

func (c *countingOutput) Add(key base.InternalKey, value []byte) error {
	c.n += uint64(key.Size() + len(value))
	return nil
}
func (c *countingOutput) AddRangeTombstone([]byte, []byte, base.SeqNum) error { return nil }
func (c *countingOutput) EstimatedSize() uint64                               { return c.n }
func (c *countingOutput) Close() error                                        { return nil }

// stableIter hands out keys without copying, as a real iterator does.
type stableIter struct{ sliceIter }

func (s *stableIter) Key() base.InternalKey { return s.es[s.pos].key }

func TestRunAllocations(t *testing.T) {
	allocs := func(n int) float64 {
		var es []entry
		for i := range n {
			k := fmt.Sprintf("k%06d", i)
			es = append(es, entry{ik(k, 3, base.KindSingleDelete), nil}, entry{ik(k, 2, base.KindSet), []byte("v")}, entry{ik(k, 1, base.KindSet), []byte("v")})
		}
		it := &stableIter{*newSliceIter(es)}
		out := &countingOutput{}
		tombs := fragment([]rangedel.Tombstone{{Start: []byte("k000001"), End: []byte("k000100"), Seq: 2}})
		return testing.AllocsPerRun(5, func() {
			out.n = 0
			_, err := Run(RunOptions{Input: it, RangeDels: tombs, Snapshots: []base.SeqNum{1}, TargetFileSize: 1 << 30,
				NewOutput: func() (OutputWriter, error) { return out, nil }})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(10), allocs(2000)
	if large > small+4 {
		t.Fatalf("allocations grow with entries: %v for 10 keys, %v for 2000", small, large)
	}
}

// failingMerger is testMerger whose FullMerge fails when an operand is bad.
type failingMerger struct{ bad string }

func (m failingMerger) FullMerge(key, baseValue []byte, baseKind base.Kind, hasBase bool, ops [][]byte) ([]byte, error) {
	for _, op := range ops {
		if string(op) == m.bad {
			return nil, fmt.Errorf("bad operand %q", op)
		}
	}
	return testMerger{}.FullMerge(key, baseValue, baseKind, hasBase, ops)
}

func (m failingMerger) PartialMerge(key, left, right []byte) ([]byte, bool) {
	return testMerger{}.PartialMerge(key, left, right)
}

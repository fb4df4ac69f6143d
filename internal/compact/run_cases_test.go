package compact

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/internal/rangedel"
)

func ik(key string, seq base.SeqNum, kind base.Kind) base.InternalKey {
	return base.MakeInternalKey([]byte(key), seq, kind)
}

func set(key string, seq base.SeqNum) entry {
	return entry{ik(key, seq, base.KindSet), fmt.Appendf(nil, "%s%d", key, seq)}
}

// describe prints outputs as "file: points | tombstones" lines.
func describe(outs []*memOutput) string {
	var b strings.Builder
	for i, m := range outs {
		fmt.Fprintf(&b, "%d:", i)
		for _, p := range m.points {
			fmt.Fprintf(&b, " %s#%d,%s", p.key.UserKey, p.key.SeqNum(), p.key.Kind())
		}
		if len(m.tombs) > 0 {
			b.WriteString(" |")
			for _, t := range m.tombs {
				fmt.Fprintf(&b, " [%s,%s)#%d", t.Start, t.End, t.Seq)
			}
		}
		if !m.closed {
			b.WriteString(" (open)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func runSimple(t *testing.T, o RunOptions, input []entry) ([]*memOutput, Stats, error) {
	t.Helper()
	var outs []*memOutput
	o.Input = newSliceIter(input)
	o.NewOutput = func() (OutputWriter, error) {
		m := &memOutput{}
		outs = append(outs, m)
		return m, nil
	}
	st, err := Run(o)
	return outs, st, err
}

func TestRunCases(t *testing.T) {
	always := func([]byte) bool { return true }
	alwaysRange := func(_, _ []byte) bool { return true }
	testCases := []struct {
		name  string
		o     RunOptions
		input []entry
		tombs []rangedel.Tombstone
		want  string
	}{{
		name:  "cut between user keys only",
		o:     RunOptions{TargetFileSize: 1, Snapshots: []base.SeqNum{2}},
		input: []entry{set("a", 3), set("a", 2), set("a", 1), set("b", 4), set("c", 5)},
		want:  "0: a#3,SET a#2,SET\n1: b#4,SET\n2: c#5,SET\n",
	}, {
		name:  "range tombstone split at cuts, tail in last file",
		o:     RunOptions{TargetFileSize: 1},
		input: []entry{set("b", 9), set("d", 9), set("f", 9)},
		tombs: []rangedel.Tombstone{{Start: []byte("a"), End: []byte("z"), Seq: 5}},
		want:  "0: b#9,SET | [a,d)#5\n1: d#9,SET | [d,f)#5\n2: f#9,SET | [f,z)#5\n",
	}, {
		name:  "tombstones after the last key and between files",
		o:     RunOptions{TargetFileSize: 1},
		input: []entry{set("b", 9), set("m", 9)},
		tombs: []rangedel.Tombstone{{Start: []byte("c"), End: []byte("e"), Seq: 5}, {Start: []byte("p"), End: []byte("q"), Seq: 6}},
		want:  "0: b#9,SET | [c,e)#5\n1: m#9,SET | [p,q)#6\n",
	}, {
		name:  "only range tombstones survive",
		o:     RunOptions{TargetFileSize: 1},
		input: []entry{set("b", 1)},
		tombs: []rangedel.Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 5}, {Start: []byte("b"), End: []byte("d"), Seq: 7}},
		want:  "0: | [a,b)#5 [b,c)#7 [c,d)#7\n",
	}, {
		name:  "tombstones coalesced per stripe",
		o:     RunOptions{TargetFileSize: 100, Snapshots: []base.SeqNum{6}},
		tombs: []rangedel.Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 5}, {Start: []byte("a"), End: []byte("c"), Seq: 4}, {Start: []byte("a"), End: []byte("c"), Seq: 8}, {Start: []byte("a"), End: []byte("c"), Seq: 9}},
		want:  "0: | [a,c)#9 [a,c)#5\n",
	}, {
		name:  "nothing survives: no output",
		o:     RunOptions{TargetFileSize: 100, ElideTombstone: always, ElideRangeTombstone: alwaysRange},
		input: []entry{{ik("a", 5, base.KindDelete), nil}, set("a", 3), set("b", 2)},
		tombs: []rangedel.Tombstone{{Start: []byte("b"), End: []byte("c"), Seq: 4}},
		want:  "",
	}, {
		name:  "oldest-stripe seq elided, newer stripe kept",
		o:     RunOptions{TargetFileSize: 100, Snapshots: []base.SeqNum{5}, ElideRangeTombstone: alwaysRange},
		input: []entry{set("b", 9), set("b", 2)},
		tombs: []rangedel.Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 4}, {Start: []byte("a"), End: []byte("c"), Seq: 8}},
		want:  "0: b#9,SET | [a,c)#8\n",
	}, {
		name:  "delete kept above a snapshot, elided below",
		o:     RunOptions{TargetFileSize: 100, Snapshots: []base.SeqNum{4}, ElideTombstone: always},
		input: []entry{{ik("a", 6, base.KindDelete), nil}, set("a", 5), set("a", 3), {ik("b", 2, base.KindDelete), nil}, set("b", 1)},
		want:  "0: a#6,DEL a#3,SET\n",
	}, {
		name:  "delete kept when older data may exist below",
		o:     RunOptions{TargetFileSize: 100},
		input: []entry{{ik("a", 6, base.KindDelete), nil}, set("a", 5)},
		want:  "0: a#6,DEL\n",
	}, {
		name:  "single delete annihilates its set only within a stripe",
		o:     RunOptions{TargetFileSize: 100, Snapshots: []base.SeqNum{4}},
		input: []entry{{ik("a", 9, base.KindSingleDelete), nil}, set("a", 8), {ik("a", 7, base.KindSingleDelete), nil}, set("a", 3), {ik("b", 6, base.KindSingleDelete), nil}, set("b", 2), {ik("c", 6, base.KindSingleDelete), nil}, {ik("c", 5, base.KindDelete), nil}},
		want:  "0: a#9,SINGLEDEL a#3,SET b#6,SINGLEDEL b#2,SET c#6,SINGLEDEL\n",
	}, {
		// A Set below the output level may outlive the SingleDelete that
		// was meant for it (dropped earlier as shadowed by a newer Set):
		// when the newer pair annihilates, the SingleDelete must stay.
		name:  "single delete kept over data that may exist below",
		o:     RunOptions{TargetFileSize: 100, ElideTombstone: func(k []byte) bool { return string(k) != "a" }},
		input: []entry{{ik("a", 331, base.KindSingleDelete), nil}, set("a", 187), {ik("b", 331, base.KindSingleDelete), nil}, set("b", 187)},
		want:  "0: a#331,SINGLEDEL\n",
	}, {
		name:  "annihilated pair hides older versions of its stripe",
		o:     RunOptions{TargetFileSize: 100, ElideTombstone: always},
		input: []entry{{ik("a", 331, base.KindSingleDelete), nil}, set("a", 187), set("a", 97)},
		want:  "",
	}, {
		name:  "range tombstone drops only what its stripe hides",
		o:     RunOptions{TargetFileSize: 100, Snapshots: []base.SeqNum{3}},
		input: []entry{set("b", 7), set("b", 4), set("b", 2), set("d", 5)},
		tombs: []rangedel.Tombstone{{Start: []byte("a"), End: []byte("c"), Seq: 6}},
		want:  "0: b#7,SET b#2,SET d#5,SET | [a,c)#6\n",
	}, {
		name:  "merge and blob index pass through like set",
		o:     RunOptions{TargetFileSize: 100},
		input: []entry{{ik("a", 3, base.KindMerge), []byte("m")}, set("a", 2), {ik("b", 1, base.KindBlobIndex), []byte("x")}},
		want:  "0: a#3,MERGE b#1,BLOBINDEX\n",
	}}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.RangeDels = fragment(tc.tombs)
			outs, _, err := runSimple(t, tc.o, tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(outs); got != tc.want {
				t.Fatalf("got:\n%swant:\n%s", got, tc.want)
			}
		})
	}
}

func TestRunGrandparentCut(t *testing.T) {
	gp := func(n base.FileNum, a, b string, size uint64) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: n, Size: size, Smallest: ik(a, 1, base.KindSet), Largest: ik(b, 1, base.KindSet)}
	}
	o := RunOptions{
		TargetFileSize: 1 << 20,
		// Limit 10 MiB: cut once passed grandparents exceed it.
		Grandparents: []*manifest.FileMetadata{gp(1, "a", "b", 6<<20), gp(2, "c", "d", 6<<20), gp(3, "e", "f", 1), gp(4, "g", "h", 20<<20)},
	}
	input := []entry{set("a", 1), set("c", 1), set("e", 1), set("f", 1), set("g", 1), set("i", 1), set("j", 1)}
	outs, _, err := runSimple(t, o, input)
	if err != nil {
		t.Fatal(err)
	}
	// At "e" the output has passed files 1 and 2 (12 MiB): cut. At "i" the
	// new output has passed 3 and 4: cut again.
	want := "0: a#1,SET c#1,SET\n1: e#1,SET f#1,SET g#1,SET\n2: i#1,SET j#1,SET\n"
	if got := describe(outs); got != want {
		t.Fatalf("got:\n%swant:\n%s", got, want)
	}
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
	for _, tc := range []struct {
		name  string
		input []entry
	}{
		{"range delete as point entry", []entry{{ik("a", 1, base.KindRangeDelete), []byte("b")}}},
		{"unknown kind", []entry{{ik("a", 1, base.Kind(0x42)), nil}}},
		{"keys out of order", []entry{set("b", 1), set("a", 1)}},
		{"versions out of order", []entry{set("a", 1), set("a", 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs []*memOutput
			// The slice iterator would sort: feed the entries as given.
			it := &sliceIter{es: tc.input}
			o := RunOptions{Input: it, NewOutput: func() (OutputWriter, error) {
				m := &memOutput{}
				outs = append(outs, m)
				return m, nil
			}}
			if _, err := Run(o); !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("want corruption, got %v", err)
			}
			for _, m := range outs {
				if !m.closed {
					t.Fatal("output left open")
				}
			}
		})
	}
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

package compact

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// parseFile parses "num:smallest-largest size=N [compacting] [marked]
// [seq=N] [entries=N] [dels=N] [rangedels=N] [raw=K/V] [blocks=N/D]
// [rangedel-bytes=N]"; a largest ending in ")" is a range-delete sentinel
// (exclusive). seq sets both seqnums (default: the file number); raw the
// raw key and value sizes; blocks the data blocks and how many of them are
// tombstone-dense.
func parseFile(t testing.TB, line string) *manifest.FileMetadata {
	fields := strings.Fields(line)
	num, rng, ok := strings.Cut(fields[0], ":")
	lo, hi, ok2 := strings.Cut(rng, "-")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || !ok2 || err != nil {
		t.Fatalf("bad file %q", line)
	}
	f := &manifest.FileMetadata{FileNum: base.FileNum(n), SmallestSeq: base.SeqNum(n), LargestSeq: base.SeqNum(n)}
	f.Smallest = base.MakeInternalKey([]byte(lo), base.SeqNum(n), base.KindSet)
	if h, ok := strings.CutSuffix(hi, ")"); ok {
		f.Largest = base.MakeRangeDeleteSentinel([]byte(h))
	} else {
		f.Largest = base.MakeInternalKey([]byte(hi), base.SeqNum(n), base.KindSet)
	}
	for _, fl := range fields[1:] {
		switch {
		case strings.HasPrefix(fl, "size="):
			f.Size, err = strconv.ParseUint(fl[5:], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
		case fl == "compacting":
			f.Compacting = true
		case fl == "marked":
			f.MarkedForCompaction = true
		case strings.HasPrefix(fl, "seq="):
			n := parseUint(t, fl[4:])
			f.SmallestSeq, f.LargestSeq = base.SeqNum(n), base.SeqNum(n)
		case strings.HasPrefix(fl, "entries="):
			f.NumEntries = parseUint(t, fl[8:])
		case strings.HasPrefix(fl, "dels="):
			f.NumDeletions = parseUint(t, fl[5:])
		case strings.HasPrefix(fl, "rangedels="):
			f.NumRangeDeletions = parseUint(t, fl[10:])
		case strings.HasPrefix(fl, "raw="):
			k, val, _ := strings.Cut(fl[4:], "/")
			f.RawKeySize, f.RawValueSize = parseUint(t, k), parseUint(t, val)
		case strings.HasPrefix(fl, "blocks="):
			b, d, _ := strings.Cut(fl[7:], "/")
			f.NumDataBlocks, f.NumTombstoneDenseBlocks = parseUint(t, b), parseUint(t, d)
		case fl == "attr=none":
			f.Secondary = manifest.SecondaryRange{Known: true}
		case strings.HasPrefix(fl, "attr="):
			lo, hi, _ := strings.Cut(fl[5:], "-")
			f.Secondary = manifest.SecondaryRange{Known: true, Min: parseUint(t, lo), Max: parseUint(t, hi), Count: max(1, f.NumEntries)}
		case strings.HasPrefix(fl, "applied="):
			f.SecondaryApplied = base.SeqNum(parseUint(t, fl[8:]))
		case strings.HasPrefix(fl, "rangedel-bytes="):
			f.RangeDeletionsBytesEstimate = parseUint(t, fl[15:])
		default:
			t.Fatalf("bad file attribute %q", fl)
		}
	}
	return f
}

func parseUint(t testing.TB, s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

func fileNums(files []*manifest.FileMetadata) string {
	var s []string
	for _, f := range files {
		s = append(s, strconv.FormatUint(uint64(f.FileNum), 10))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func fmtTarget(t uint64) string {
	if t == math.MaxUint64 {
		return "-"
	}
	return strconv.FormatUint(t, 10)
}

func describeVersion(v *manifest.Version, o *Options) string {
	var b strings.Builder
	for l, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:", l)
		for _, f := range files {
			end := string(f.Largest.UserKey) + "]"
			if f.Largest.IsExclusiveSentinel() {
				end = string(f.Largest.UserKey) + ")"
			}
			fmt.Fprintf(&b, " %d:[%s-%s", f.FileNum, f.Smallest.UserKey, end)
			if f.Compacting {
				b.WriteString("*")
			}
		}
		b.WriteString("\n")
	}
	baseLevel, targets := TargetSizes(v, o)
	var ts, ss []string
	for l, s := range Scores(v, o) {
		ts = append(ts, fmtTarget(targets[l]))
		ss = append(ss, strconv.FormatFloat(s, 'f', 2, 64))
	}
	fmt.Fprintf(&b, "base=L%d targets=%s scores=%s\n", baseLevel, strings.Join(ts, ","), strings.Join(ss, ","))
	return b.String()
}

func describeCompaction(c *Compaction) string {
	if c == nil {
		return "none\n"
	}
	return fmt.Sprintf("L%d->L%d reason=%s score=%.2f inputs=%s%s grandparents=%s range=[%s,%s] max-output=%d trivial=%v\n",
		c.Level, c.OutputLevel, c.Reason, c.Score, fileNums(c.Inputs[0]), fileNums(c.Inputs[1]),
		fileNums(c.Grandparents), c.Smallest, c.Largest, c.MaxOutputFileSize, c.IsTrivialMove())
}

func scanOptions(t testing.TB, td *datadriven.TestData) Options {
	o := Options{NumLevels: 4, L0CompactionTrigger: 2, MaxBytesForLevelBase: 100,
		MaxBytesForLevelMultiplier: 10, TargetFileSizeBase: 10}
	td.MaybeScanArgs(t, "num-levels", &o.NumLevels)
	td.MaybeScanArgs(t, "l0-trigger", &o.L0CompactionTrigger)
	td.MaybeScanArgs(t, "base", &o.MaxBytesForLevelBase)
	td.MaybeScanArgs(t, "mult", &o.MaxBytesForLevelMultiplier)
	td.MaybeScanArgs(t, "target-file", &o.TargetFileSizeBase)
	td.MaybeScanArgs(t, "target-file-mult", &o.TargetFileSizeMultiplier)
	td.MaybeScanArgs(t, "max-compaction", &o.MaxCompactionBytes)
	td.MaybeScanArgs(t, "l0-slowdown", &o.L0SlowdownWritesTrigger)
	td.MaybeScanArgs(t, "dense-threshold", &o.TombstoneDenseCompactionThreshold)
	o.DynamicLevelBytes = td.HasArg("dynamic")
	o.DisableDeleteAware = td.HasArg("no-delete-aware")
	o.EnsureDefaults()
	return o
}

// scanEnv reads "snapshot=N" (the earliest live snapshot) of pick-auto.
func scanEnv(t testing.TB, td *datadriven.TestData) PickEnv {
	var env PickEnv
	if td.HasArg("snapshot") {
		var s uint64
		td.ScanArgs(t, "snapshot", &s)
		env.HasSnapshots, env.EarliestSnapshot = true, base.SeqNum(s)
	}
	return env
}

// describeCompensated lists each file's size and compensated size.
func describeCompensated(v *manifest.Version, p *Picker) string {
	var b strings.Builder
	a := averagesOf(v)
	fmt.Fprintf(&b, "averages: key=%.1f value=%.1f compression=%.2f\n", a.keySize, a.valueSize, a.compression)
	for l, files := range v.Levels {
		for _, f := range files {
			fmt.Fprintf(&b, "L%d %d: size=%d compensated=%d\n", l, f.FileNum, f.Size, p.compensatedSize(f, &a))
		}
	}
	return b.String()
}

// TestPicker runs the scripts of testdata/picker*: "define" draws a
// version (one "Ln" line per level, then one file per line; secondary=
// (lo-hi@seq,...) gives it live secondary tombstones) and resets the
// Picker; "pick-auto [snapshot=N]" picks with it ("apply" marks the inputs
// compacting, as the DB does); "pick-manual level= [start=] [end=]";
// "done" clears every Compacting flag, and "done-inputs" removes the last
// picked compaction's inputs from the version (as if it had run and its
// outputs had gone elsewhere); "compensated" prints every file's
// compensated size.
func TestPicker(t *testing.T) {
	for _, path := range []string{"testdata/picker", "testdata/picker_deletes"} {
		t.Run(path, func(t *testing.T) { runPickerScript(t, path) })
	}
}

func runPickerScript(t *testing.T, path string) {
	var v *manifest.Version
	var o Options
	var p *Picker
	var last *Compaction
	datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "define":
			o = scanOptions(t, td)
			p = NewPicker(o)
			v = &manifest.Version{Levels: make([][]*manifest.FileMetadata, o.NumLevels)}
			if arg, ok := td.Arg("secondary"); ok {
				for _, s := range arg.Vals {
					var st manifest.SecondaryTombstone
					if _, err := fmt.Sscanf(s, "%d-%d@%d", &st.Lo, &st.Hi, &st.Seq); err != nil {
						td.Fatalf(t, "secondary=%s: want lo-hi@seq", s)
					}
					v.SecondaryTombstones = append(v.SecondaryTombstones, st)
				}
			}
			level := -1
			for _, line := range strings.Split(td.Input, "\n") {
				line = strings.TrimSpace(line)
				switch {
				case line == "":
				case line[0] == 'L':
					l, err := strconv.Atoi(line[1:])
					if err != nil {
						t.Fatal(err)
					}
					level = l
				default:
					v.Levels[level] = append(v.Levels[level], parseFile(t, line))
				}
			}
			return describeVersion(v, &o)
		case "pick-auto":
			env := scanEnv(t, td)
			needs := p.NeedsCompaction(v, env)
			c := p.PickAuto(v, env)
			if needs != (c != nil) {
				t.Fatalf("NeedsCompaction = %v, but PickAuto picked %v", needs, c)
			}
			last = c
			if c != nil && td.HasArg("apply") {
				for _, in := range c.Inputs {
					for _, f := range in {
						if f.Compacting {
							t.Fatalf("picked file %d that is already compacting", f.FileNum)
						}
						f.Compacting = true
					}
				}
			}
			return describeCompaction(c)
		case "pick-manual":
			var level int
			var start, end []byte
			td.ScanArgs(t, "level", &level)
			if td.HasArg("start") {
				var s string
				td.ScanArgs(t, "start", &s)
				start = []byte(s)
			}
			if td.HasArg("end") {
				var s string
				td.ScanArgs(t, "end", &s)
				end = []byte(s)
			}
			return describeCompaction(PickManual(v, &o, level, start, end))
		case "done":
			for _, files := range v.Levels {
				for _, f := range files {
					f.Compacting = false
				}
			}
			return describeVersion(v, &o)
		case "done-inputs":
			if last == nil {
				t.Fatal("done-inputs without a picked compaction")
			}
			for _, in := range last.Inputs {
				for _, f := range in {
					for l := range v.Levels {
						v.Levels[l] = slices.DeleteFunc(v.Levels[l], func(g *manifest.FileMetadata) bool { return g == f })
					}
				}
			}
			return describeVersion(v, &o)
		case "compensated":
			return describeCompensated(v, p)
		}
		t.Fatalf("unknown command %q", td.Cmd)
		return ""
	})
}

func TestTargetSizes(t *testing.T) {
	const inf = math.MaxUint64
	files := func(sizes ...uint64) []*manifest.FileMetadata {
		var fs []*manifest.FileMetadata
		for i, s := range sizes {
			k := []byte{'a' + byte(i)}
			fs = append(fs, &manifest.FileMetadata{Size: s, Smallest: base.MakeInternalKey(k, 1, base.KindSet), Largest: base.MakeInternalKey(k, 1, base.KindSet)})
		}
		return fs
	}
	testCases := []struct {
		name    string
		dynamic bool
		levels  map[int][]*manifest.FileMetadata
		base    int
		targets []uint64
	}{
		{"static", false, nil, 1, []uint64{100, 100, 1000, 10000, 100000, 1e6, 1e7}},
		{"empty: L0 goes to the last level", true, nil, 6, []uint64{100, inf, inf, inf, inf, inf, inf}},
		// Last level 50: fits under base; base is the last level, clamped up to 100.
		{"small last level", true, map[int][]*manifest.FileMetadata{6: files(50)}, 6, []uint64{100, inf, inf, inf, inf, inf, 100}},
		// 5000 -> 500 -> 50 <= 100: base L4 of 50, clamped to 100.
		{"base moves up", true, map[int][]*manifest.FileMetadata{6: files(2000, 3000)}, 4, []uint64{100, inf, inf, inf, 100, 500, 5000}},
		{"exact powers", true, map[int][]*manifest.FileMetadata{6: files(1e6)}, 2, []uint64{100, inf, 100, 1000, 1e4, 1e5, 1e6}},
		// Even L1 would hold 1e4: L1 gets 100 and the multiplier holds.
		{"L1 too large", true, map[int][]*manifest.FileMetadata{6: files(1e9)}, 1, []uint64{100, 100, 1000, 1e4, 1e5, 1e6, 1e7}},
		// The largest level, not the last, anchors: L4 holds the most.
		{"data in two levels", true, map[int][]*manifest.FileMetadata{4: files(3), 6: files(5000)}, 4, []uint64{100, inf, inf, inf, 100, 500, 5000}},
		// First non-empty L2 would get 5000/1e4 = 0 <= 100/10: base stays L2
		// with 11, the multiplier is kept from there.
		{"more levels than needed", true, map[int][]*manifest.FileMetadata{2: files(1), 6: files(5000)}, 2, []uint64{100, inf, 100, 110, 1100, 11000, 110000}},
		// L0 of 240 > base: base L4 sized 240, multiplier sqrt(5000/240).
		{"L0 backlog", true, map[int][]*manifest.FileMetadata{0: files(30, 30, 30, 30, 30, 30, 30, 30), 6: files(5000)}, 4, []uint64{100, inf, inf, inf, 240, 1095, 4997}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, 7)}
			for l, fs := range tc.levels {
				v.Levels[l] = fs
			}
			o := &Options{NumLevels: 7, MaxBytesForLevelBase: 100, MaxBytesForLevelMultiplier: 10, DynamicLevelBytes: tc.dynamic}
			baseLevel, targets := TargetSizes(v, o)
			if baseLevel != tc.base || !slices.Equal(targets, tc.targets) {
				t.Fatalf("got base L%d %v, want L%d %v", baseLevel, targets, tc.base, tc.targets)
			}
			if o.NumLevels != 7 || o.L0CompactionTrigger != 0 {
				t.Fatal("TargetSizes modified the caller's options")
			}
		})
	}
}

// TestPickAutoRandomized checks invariants of picking over random versions:
// never a compacting file, L1+ inputs are clean cuts, every output-level
// file overlapping the inputs is included, and no L0 file left behind
// overlaps an L0 input.
func TestPickAutoRandomized(t *testing.T) {
	seed := uint64(42)
	rng := newRand(seed)
	cmp := base.DefaultComparer.Compare
	for iter := range 2000 {
		o := Options{NumLevels: 2 + rng.IntN(5), L0CompactionTrigger: 1 + rng.IntN(4), MaxBytesForLevelBase: 50,
			MaxBytesForLevelMultiplier: 4, TargetFileSizeBase: 10, DynamicLevelBytes: rng.IntN(2) == 0}
		v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, o.NumLevels)}
		num := base.FileNum(1)
		for l := 0; l < o.NumLevels; l++ {
			k := byte('a')
			for rng.IntN(4) != 0 && k < 'z' {
				lo := k + byte(rng.IntN(3))
				hi := min(lo+byte(rng.IntN(4)), 'z')
				f := &manifest.FileMetadata{FileNum: num, Size: uint64(1 + rng.IntN(40)),
					Smallest: base.MakeInternalKey([]byte{lo}, 1, base.KindSet), Largest: base.MakeInternalKey([]byte{hi}, 1, base.KindSet),
					Compacting: rng.IntN(5) == 0, MarkedForCompaction: rng.IntN(8) == 0}
				num++
				v.Levels[l] = append(v.Levels[l], f)
				if l > 0 {
					k = hi // neighbours may share a boundary key
					if rng.IntN(2) == 0 {
						k++
					}
				} else {
					k = byte('a' + rng.IntN(20))
				}
			}
		}
		c := PickAuto(v, &o, PickEnv{})
		if c == nil {
			continue
		}
		fail := func(msg string) {
			t.Fatalf("iter %d (seed %d): %s\n%s%s", iter, seed, msg, describeVersion(v, &o), describeCompaction(c))
		}
		r := userRange{start: c.Smallest, end: c.Largest}
		for i, in := range c.Inputs {
			if anyCompacting(in) {
				fail("picked a compacting file")
			}
			lvl := c.Level
			if i == 1 {
				lvl = c.OutputLevel
			}
			if lvl == c.Level && i == 1 && len(in) > 0 {
				fail("rewrite with output-level inputs")
			}
			if len(in) == 0 {
				continue
			}
			inRange := rangeOf(cmp, userRange{}, in, false)
			for _, f := range levelFiles(v, lvl) {
				if fileOverlaps(cmp, f, inRange) && !slices.Contains(in, f) {
					fail(fmt.Sprintf("file %d of L%d overlaps the inputs but is left out", f.FileNum, lvl))
				}
			}
		}
		if c.Level != c.OutputLevel {
			for _, f := range levelFiles(v, c.OutputLevel) {
				if fileOverlaps(cmp, f, r) && !slices.Contains(c.Inputs[1], f) {
					fail(fmt.Sprintf("output-level file %d overlaps but is not an input", f.FileNum))
				}
			}
		}
	}
}

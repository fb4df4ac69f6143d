package compact

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

func TestPersistenceTTLs(t *testing.T) {
	const s = time.Second
	testCases := []struct {
		d    time.Duration
		t    float64
		n    int
		want []time.Duration
	}{
		// Two levels: all of d goes to the first.
		{1000 * s, 10, 2, []time.Duration{1000 * s}},
		// d·9/99 and ten times that.
		{1000 * s, 10, 3, []time.Duration{90909090909, 909090909091}},
		// d·9/999, ·10, ·100.
		{1000 * s, 10, 4, []time.Duration{9009009009, 90090090090, 900900900901}},
		// T=2, L=4: d/7, 2d/7, 4d/7.
		{7 * s, 2, 4, []time.Duration{1 * s, 2 * s, 4 * s}},
		// T=4, L=3: d/5, 4d/5.
		{5 * s, 4, 3, []time.Duration{1 * s, 4 * s}},
		// T <= 1 splits evenly.
		{9 * s, 1, 4, []time.Duration{3 * s, 3 * s, 3 * s}},
		{time.Second, 10, 1, nil},
		{0, 10, 3, nil},
	}
	for _, tc := range testCases {
		got := PersistenceTTLs(tc.d, tc.t, tc.n)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("PersistenceTTLs(%v, %g, %d) = %v, want %v", tc.d, tc.t, tc.n, got, tc.want)
		}
	}
	// Every level but the last gets T times the one above (to rounding),
	// and the values add up to d exactly, for many shapes.
	for _, d := range []time.Duration{time.Nanosecond * 7, time.Second, 3 * time.Second, 61 * time.Minute, 30 * 24 * time.Hour} {
		for _, mult := range []float64{1, 1.5, 2, 10, 1000} {
			for n := 2; n <= manifest.NumLevelsMax+1; n++ {
				ttls := PersistenceTTLs(d, mult, n)
				if len(ttls) != n-1 {
					t.Fatalf("PersistenceTTLs(%v, %g, %d) has %d values, want %d", d, mult, n, len(ttls), n-1)
				}
				var sum time.Duration
				for i, v := range ttls {
					if v < 0 {
						t.Fatalf("PersistenceTTLs(%v, %g, %d)[%d] = %v < 0", d, mult, n, i, v)
					}
					sum += v
					// Each value is rounded to the nanosecond (through
					// its running sum, so by under 2 ns).
					if i > 0 && i < n-2 && math.Abs(float64(v)-mult*float64(ttls[i-1])) > 2*mult+2 {
						t.Fatalf("PersistenceTTLs(%v, %g, %d): ttl[%d] = %v, want %g times ttl[%d] = %v", d, mult, n, i, v, mult, i-1, ttls[i-1])
					}
				}
				if sum != d {
					t.Fatalf("PersistenceTTLs(%v, %g, %d) = %v adds up to %v, want %v", d, mult, n, ttls, sum, d)
				}
			}
		}
	}
}

// TestComputeDeadlines checks what L is (L0, and the base level down to the
// bottom level) and that the memtable has half of L0's deadline.
func TestComputeDeadlines(t *testing.T) {
	file := func(size uint64) []*manifest.FileMetadata {
		k := []byte("k")
		return []*manifest.FileMetadata{{Size: size, Smallest: base.MakeInternalKey(k, 1, base.KindSet), Largest: base.MakeInternalKey(k, 1, base.KindSet)}}
	}
	const d = 1110 * time.Second
	testCases := []struct {
		name    string
		dynamic bool
		levels  map[int][]*manifest.FileMetadata
		chain   int
		mem     time.Duration
		want    string
	}{
		// Dynamic, nothing below L0: base = bottom = L6. Chain L0, L6: L0
		// has all of d, the memtable half of it.
		{"dynamic empty", true, nil, 2, d / 2, "[18m30s 18m30s 18m30s 18m30s 18m30s 18m30s 18m30s]"},
		// Dynamic with base L4: chain L0, L4, L5, L6: d·9/999 = 10s,
		// d·99/999 = 110s and d; levels outside the chain get d.
		{"dynamic base L4", true, map[int][]*manifest.FileMetadata{6: file(5000)}, 4, 5 * time.Second, "[10s 18m30s 18m30s 18m30s 1m50s 18m30s 18m30s]"},
		// Static, data down to L2: chain L0, L1, L2: d/11, d.
		{"static to L2", false, map[int][]*manifest.FileMetadata{2: file(1)}, 3, 50454545454, "[1m40.909090909s 18m30s 18m30s 18m30s 18m30s 18m30s 18m30s]"},
		// Static with an empty level between base and bottom.
		{"static gap", false, map[int][]*manifest.FileMetadata{1: file(1), 3: file(1)}, 4, 5 * time.Second, "[10s 1m50s 18m30s 18m30s 18m30s 18m30s 18m30s]"},
		// Static with nothing below L0: L0 compacts into L1, the bottom.
		{"static empty", false, nil, 2, d / 2, "[18m30s 18m30s 18m30s 18m30s 18m30s 18m30s 18m30s]"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, 7)}
			for l, fs := range tc.levels {
				v.Levels[l] = fs
			}
			o := &Options{NumLevels: 7, MaxBytesForLevelBase: 100, MaxBytesForLevelMultiplier: 10,
				DynamicLevelBytes: tc.dynamic, DeletePersistenceThreshold: d}
			dl := ComputeDeadlines(v, o)
			if dl.ChainLen != tc.chain || dl.Memtable != tc.mem || fmt.Sprint(dl.Levels) != tc.want {
				t.Fatalf("got chain %d mem %v levels %v, want chain %d mem %v levels %s", dl.ChainLen, dl.Memtable, dl.Levels, tc.chain, tc.mem, tc.want)
			}
			// The deadline of the level just above the bottom, and of the
			// bottom, is the threshold: the TTLs of the chain add up to it.
			if dl.Levels[dl.BottomLevel] != d || (dl.BottomLevel > dl.BaseLevel && dl.Levels[dl.BottomLevel-1] != d) ||
				(dl.BottomLevel == dl.BaseLevel && dl.Levels[0] != d) {
				t.Fatalf("the chain's deadlines do not end at the threshold: %+v", dl)
			}
		})
	}
	if dl := ComputeDeadlines(&manifest.Version{Levels: make([][]*manifest.FileMetadata, 7)}, &Options{}); dl.Threshold != 0 || dl.Levels != nil {
		t.Fatalf("threshold 0 gives %+v", dl)
	}
}

// parseFadeFile parses a picker file line (see parseFile) with FADE's
// attributes: "tomb=S" (a tombstone written at unix second S),
// "tomb=unknown" (tombstones, time not recorded), "seq=N" (the file's
// largest seqnum) and "blobs=N,M" (the blob files it references).
func parseFadeFile(t testing.TB, line string) *manifest.FileMetadata {
	var rest []string
	var tomb string
	var blobs []base.FileNum
	seq := -1
	for _, fl := range strings.Fields(line) {
		switch {
		case strings.HasPrefix(fl, "tomb="):
			tomb = fl[5:]
		case strings.HasPrefix(fl, "blobs="):
			for _, n := range strings.Split(fl[6:], ",") {
				blobs = append(blobs, base.FileNum(parseUint(t, n)))
			}
		case strings.HasPrefix(fl, "seq="):
			n, err := strconv.Atoi(fl[4:])
			if err != nil {
				t.Fatal(err)
			}
			seq = n
		default:
			rest = append(rest, fl)
		}
	}
	f := parseFile(t, strings.Join(rest, " "))
	f.NumEntries = 10
	f.BlobFiles = blobs
	switch tomb {
	case "":
	case "unknown":
		f.NumDeletions = 1
	default:
		s, err := strconv.ParseInt(tomb, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		f.NumDeletions = 1
		f.OldestTombstoneTime = uint64(s) * uint64(time.Second)
	}
	if seq >= 0 {
		f.LargestSeq = base.SeqNum(seq)
		f.SmallestSeq = min(f.SmallestSeq, f.LargestSeq)
	}
	return f
}

// parseFadeBlob parses a blob file line, "N [garbage=S] [bytes=B]": blob
// file N of B bytes of blobs (default 1000), holding 100 bytes of garbage
// dated unix second S.
func parseFadeBlob(t testing.TB, line string) *manifest.BlobFileMetadata {
	fields := strings.Fields(line)
	b := &manifest.BlobFileMetadata{FileNum: base.FileNum(parseUint(t, fields[0])), TotalCount: 10, TotalBytes: 1000, Size: 1100}
	for _, fl := range fields[1:] {
		if n, ok := strings.CutPrefix(fl, "bytes="); ok {
			b.TotalBytes = parseUint(t, n)
			b.Size = b.TotalBytes + 100
			continue
		}
		g, ok := strings.CutPrefix(fl, "garbage=")
		if !ok {
			t.Fatalf("bad blob file attribute %q", fl)
		}
		b.GarbageCount, b.GarbageBytes = 1, 100
		b.OldestGarbageTime = parseUint(t, g) * uint64(time.Second)
	}
	return b
}

// describeDeadlines prints the chain and, per file with tombstones and
// blob file with dated garbage, when it expires and whether it has.
func describeDeadlines(v *manifest.Version, o *Options, now time.Time) string {
	var b strings.Builder
	dl := ComputeDeadlines(v, o)
	fmt.Fprintf(&b, "chain=%d base=L%d bottom=L%d memtable=%v", dl.ChainLen, dl.BaseLevel, dl.BottomLevel, dl.Memtable)
	for l, d := range dl.Levels {
		if l == 0 || (l >= dl.BaseLevel && l <= dl.BottomLevel) {
			fmt.Fprintf(&b, " L%d=%v", l, d)
		}
	}
	if o.BlobFiles || len(v.BlobFiles) > 0 {
		fmt.Fprintf(&b, " blob=%v", dl.Blob)
	}
	b.WriteString("\n")
	state := func(at int64) string {
		if now.UnixNano() >= at {
			return "expired"
		}
		return "live"
	}
	for l, files := range v.Levels {
		for _, f := range files {
			at, ok := dl.ExpiresAt(f, l)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "  L%d %d: expires %ds %s\n", l, f.FileNum, at/int64(time.Second), state(at))
		}
	}
	for _, bf := range v.BlobFiles {
		if at, ok := dl.BlobExpiresAt(bf); ok {
			fmt.Fprintf(&b, "  blob %d: expires %ds %s\n", bf.FileNum, at/int64(time.Second), state(at))
		}
	}
	return b.String()
}

// TestPickerFade runs testdata/picker_fade: "define threshold=<duration>
// now=<unix s> [snapshot=<seq>] [blob-files]" (plus the picker options of
// TestPicker) draws a version as in testdata/picker, with tomb=, seq= and
// blobs= attributes (parseFadeFile) and, after a line "blobs", blob files
// (parseFadeBlob), and prints the deadlines; "now t=<unix s>" moves the
// clock; "snapshot seq=<n>" sets the oldest snapshot ("snapshot" alone:
// none); "pick-auto [apply]" and "done" are TestPicker's.
func TestPickerFade(t *testing.T) {
	var v *manifest.Version
	var o Options
	var p *Picker
	var now time.Time
	oldestSnap := base.SeqNumMax
	datadriven.RunTest(t, "testdata/picker_fade", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "define":
			o = scanOptions(t, td)
			var threshold string
			td.ScanArgs(t, "threshold", &threshold)
			d, err := time.ParseDuration(threshold)
			if err != nil {
				t.Fatal(err)
			}
			var secs int64
			td.ScanArgs(t, "now", &secs)
			now = time.Unix(secs, 0)
			oldestSnap = base.SeqNumMax
			if td.HasArg("snapshot") {
				var s uint64
				td.ScanArgs(t, "snapshot", &s)
				oldestSnap = base.SeqNum(s)
			}
			o.DeletePersistenceThreshold = d
			o.Now = func() time.Time { return now }
			o.BlobFiles = td.HasArg("blob-files")
			p = NewPicker(o)
			v = &manifest.Version{Levels: make([][]*manifest.FileMetadata, o.NumLevels)}
			// Lines after "blobs" are blob files (parseFadeBlob).
			const blobs = -2
			level := -1
			for _, line := range strings.Split(td.Input, "\n") {
				line = strings.TrimSpace(line)
				switch {
				case line == "":
				case line == "blobs":
					level = blobs
				case line[0] == 'L':
					l, err := strconv.Atoi(line[1:])
					if err != nil {
						t.Fatal(err)
					}
					level = l
				case level == blobs:
					v.BlobFiles = append(v.BlobFiles, parseFadeBlob(t, line))
				default:
					v.Levels[level] = append(v.Levels[level], parseFadeFile(t, line))
				}
			}
			return describeDeadlines(v, &o, now)
		case "now":
			var secs int64
			td.ScanArgs(t, "t", &secs)
			now = time.Unix(secs, 0)
			return describeDeadlines(v, &o, now)
		case "snapshot":
			oldestSnap = base.SeqNumMax
			if td.HasArg("seq") {
				var s uint64
				td.ScanArgs(t, "seq", &s)
				oldestSnap = base.SeqNum(s)
			}
			return "ok\n"
		case "pick-auto":
			env := PickEnv{HasSnapshots: oldestSnap != base.SeqNumMax, EarliestSnapshot: oldestSnap}
			c := p.PickAuto(v, env)
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
		case "done":
			for _, files := range v.Levels {
				for _, f := range files {
					f.Compacting = false
				}
			}
			return "ok\n"
		}
		t.Fatalf("unknown command %q", td.Cmd)
		return ""
	})
}

package compact

import (
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// blobVersion returns a version with one L0 table per entry of l0 (each
// referencing its own blob file of that many live bytes), one L6 table of
// l6Size bytes referencing a blob file of older bytes, and the options
// that score it (the dynamic mode: L0 compacts into L6).
func blobVersion(l0 []uint64, l6Size, older uint64) (*manifest.Version, *Options) {
	o := &Options{DynamicLevelBytes: true}
	o.EnsureDefaults()
	v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, o.NumLevels)}
	v.BlobFiles = append(v.BlobFiles, &manifest.BlobFileMetadata{FileNum: 1, TotalBytes: older + 100, GarbageBytes: 100})
	v.Levels[6] = []*manifest.FileMetadata{{FileNum: 2, Size: l6Size, BlobFiles: []base.FileNum{1},
		Smallest: base.MakeInternalKey([]byte("a"), 1, base.KindSet), Largest: base.MakeInternalKey([]byte("z"), 1, base.KindSet)}}
	for i, b := range l0 {
		n := base.FileNum(10 + 2*i)
		v.BlobFiles = append(v.BlobFiles, &manifest.BlobFileMetadata{FileNum: n + 1, TotalBytes: b})
		f := &manifest.FileMetadata{FileNum: n, Size: 1 << 10, BlobFiles: []base.FileNum{n + 1},
			Smallest:    base.MakeInternalKey([]byte("a"), base.SeqNum(n), base.KindSet),
			Largest:     base.MakeInternalKey([]byte("z"), base.SeqNum(n), base.KindSet),
			SmallestSeq: base.SeqNum(n), LargestSeq: base.SeqNum(n)}
		v.Levels[0] = append([]*manifest.FileMetadata{f}, v.Levels[0]...) // newest first
	}
	return v, o
}

func TestL0BlobScore(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name          string
		l0            []uint64
		l6Size, older uint64
		want          float64
	}{
		// One memtable's blob values against 7 older ones: 1/8 of the
		// live bytes, a score of 1 from one L0 file.
		{"one flush of eight", []uint64{64 * mib}, 1 * mib, 7 * 64 * mib, 1},
		{"one flush of sixteen", []uint64{64 * mib}, 1 * mib, 15 * 64 * mib, 0.5},
		{"two flushes of sixteen", []uint64{64 * mib, 64 * mib}, 1 * mib, 14 * 64 * mib, 1},
		// Large tables below (values mostly inline): the compaction would
		// rewrite more table bytes than the blob bytes it frees, so the
		// blob score stays below 1 and the file count decides.
		{"big tables", []uint64{8 * mib}, 256 * mib, 8 * mib, 8.0 / (256 + 1.0/1024)},
		{"no blob values", nil, 1 * mib, 64 * mib, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, o := blobVersion(tc.l0, tc.l6Size, tc.older)
			baseLevel, _ := TargetSizes(v, o)
			if got := l0BlobScore(v, baseLevel); got < tc.want*0.999 || got > tc.want*1.001 {
				t.Fatalf("l0BlobScore = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestL0BlobScorePicks checks that one L0 table referencing an eighth of the
// live blob bytes is compacted, and that its compacting files leave the
// score.
func TestL0BlobScorePicks(t *testing.T) {
	v, o := blobVersion([]uint64{64 << 20}, 1<<20, 7*64<<20)
	if s := Scores(v, o)[0]; s < 1 {
		t.Fatalf("L0 score %v with one L0 file holding 1/8 of the blob bytes, want >= 1", s)
	}
	p := NewPicker(*o)
	c := p.PickAuto(v, PickEnv{})
	if c == nil || c.Level != 0 || c.Reason != ReasonL0 {
		t.Fatalf("picked %v, want an L0 compaction", c)
	}
	v.Levels[0][0].Compacting = true
	if s := Scores(v, o)[0]; s != 0 {
		t.Fatalf("L0 score %v with its only file compacting, want 0", s)
	}
}

// TestBlobGCSelectionBoundsRelocation: with a bound, the files below the
// cutoff that the inputs reference are taken forced first (oldest first),
// then by garbage ratio (highest first), while their estimated shares fit;
// the first is taken whatever its share; files the inputs do not reference,
// or at or above the cutoff, never; no bound selects nothing (nil: every
// file below the cutoff relocates).
func TestBlobGCSelectionBoundsRelocation(t *testing.T) {
	const mib = 1 << 20
	blob := func(n base.FileNum, total, garbage uint64) *manifest.BlobFileMetadata {
		return &manifest.BlobFileMetadata{FileNum: n, TotalBytes: total, GarbageBytes: garbage}
	}
	table := func(n base.FileNum, size uint64, blobs ...base.FileNum) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: n, Size: size, BlobFiles: blobs}
	}
	// Blob files 1-5 are below the cutoff 6; 6 is not.
	// Live bytes: 1: 60, 2: 20, 3: 40, 4: 30, 5: 50, 6: 10 MiB.
	// Garbage ratios: 1: 0.4, 2: 0.8, 3: 0.6, 4: 0.7, 5: 0.5, 6: 0.9.
	v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, 7)}
	v.BlobFiles = []*manifest.BlobFileMetadata{
		blob(1, 100*mib, 40*mib), blob(2, 100*mib, 80*mib), blob(3, 100*mib, 60*mib),
		blob(4, 100*mib, 70*mib), blob(5, 100*mib, 50*mib), blob(6, 100*mib, 90*mib),
	}
	// a references 1-4 and 6 alone; b and c share 5 (half each); d
	// references 5 too but is not an input.
	a := table(20, 1*mib, 1, 2, 3, 4, 6)
	b := table(21, 1*mib, 5)
	c := table(22, 1*mib, 5)
	d := table(23, 2*mib, 5)
	v.Levels[5] = []*manifest.FileMetadata{b, c}
	v.Levels[6] = []*manifest.FileMetadata{a, d}
	inputs := []*manifest.FileMetadata{a, b, c}
	sorted := func(m map[base.FileNum]bool) []base.FileNum {
		var out []base.FileNum
		for n := range m {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name     string
		inputs   []*manifest.FileMetadata
		maxBytes int64
		force    float64
		want     []base.FileNum // nil: no selection (every file relocates)
		left     []base.FileNum
		among    map[base.FileNum]struct{}
	}{
		{"no bound", inputs, 0, 1, nil, nil, nil},
		{"negative is no bound", inputs, -1, 1, nil, nil, nil},
		// By ratio: 2 (20), 4 (30), 3 (40), 5 (share 50*2/4 = 25), 1 (60).
		{"first only", inputs, 1 * mib, 1, []base.FileNum{2}, []base.FileNum{1, 3, 4, 5}, nil},
		{"two fit", inputs, 50 * mib, 1, []base.FileNum{2, 4}, []base.FileNum{1, 3, 5}, nil},
		{"stops at the first that does not fit", inputs, 89 * mib, 1, []base.FileNum{2, 4}, []base.FileNum{1, 3, 5}, nil},
		{"three fit", inputs, 90 * mib, 1, []base.FileNum{2, 3, 4}, []base.FileNum{1, 5}, nil},
		{"shared file's share", inputs, 115 * mib, 1, []base.FileNum{2, 3, 4, 5}, []base.FileNum{1}, nil},
		{"all", inputs, 1 << 40, 1, []base.FileNum{1, 2, 3, 4, 5}, nil, nil},
		// Forced files (ratio >= 0.6: 2, 3, 4) first, oldest first: 2, 3,
		// then 4; then 5 (0.5), then 1.
		{"forced first", inputs, 60 * mib, 0.6, []base.FileNum{2, 3}, []base.FileNum{1, 4, 5}, nil},
		{"only referenced files", []*manifest.FileMetadata{d}, 1 << 40, 1, []base.FileNum{5}, nil, nil},
		{"nothing referenced", []*manifest.FileMetadata{table(30, 1, 6)}, 1 << 40, 1, []base.FileNum{}, nil, nil},
		// Among 1, 3 and 5 only (what a continued compaction owes): by
		// ratio 3 (40), 5 (25), 1 (60).
		{"among", inputs, 70 * mib, 1, []base.FileNum{3, 5}, []base.FileNum{1}, map[base.FileNum]struct{}{1: {}, 3: {}, 5: {}}},
		{"among, first always", inputs, 1, 1, []base.FileNum{3}, []base.FileNum{1, 5}, map[base.FileNum]struct{}{1: {}, 3: {}, 5: {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, left := BlobGCSelection(v, tc.inputs, 6, tc.maxBytes, tc.force, tc.among)
			if !slices.Equal(left, tc.left) {
				t.Errorf("left out %v, want %v", left, tc.left)
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("got %v, want nil (no bound)", sorted(got))
				}
				return
			}
			if got == nil {
				t.Fatalf("got nil, want %v", tc.want)
			}
			if g := sorted(got); !slices.Equal(g, tc.want) && !(len(g) == 0 && len(tc.want) == 0) {
				t.Fatalf("got %v, want %v", g, tc.want)
			}
		})
	}
}

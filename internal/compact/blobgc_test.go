package compact

import (
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

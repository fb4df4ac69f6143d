package compact

import (
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
)

// TestEstimatePendingCompactionBytes checks the estimate on a tree whose
// numbers can be followed by hand (static level targets of 100 bytes at
// L1, times 10 below).
func TestEstimatePendingCompactionBytes(t *testing.T) {
	table := func(n base.FileNum, size uint64) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: n, Size: size, SmallestSeq: base.SeqNum(n), LargestSeq: base.SeqNum(n),
			Smallest: base.MakeInternalKey([]byte("a"), base.SeqNum(n), base.KindSet),
			Largest:  base.MakeInternalKey([]byte("z"), base.SeqNum(n), base.KindSet)}
	}
	o := &Options{MaxBytesForLevelBase: 100}
	o.EnsureDefaults()
	v := &manifest.Version{Levels: make([][]*manifest.FileMetadata, o.NumLevels)}
	if got := EstimatePendingCompactionBytes(v, o); got != 0 {
		t.Fatalf("empty tree: %d", got)
	}
	v.Levels[1] = []*manifest.FileMetadata{table(1, 100)}
	v.Levels[2] = []*manifest.FileMetadata{table(2, 500)}
	// L1 at its target, L0 below its trigger: nothing due.
	v.Levels[0] = []*manifest.FileMetadata{table(13, 10), table(12, 10), table(11, 10)}
	if got := EstimatePendingCompactionBytes(v, o); got != 0 {
		t.Fatalf("nothing due: %d", got)
	}
	// A fourth L0 file: L0 (40) and L1 (100) are rewritten, and L1 ends
	// 40 over its target, which pushes 40 bytes into L2 at a fan-out of
	// 500/140: 40 + 100 + 40*(500/140+1) = 322.
	v.Levels[0] = append([]*manifest.FileMetadata{table(14, 10)}, v.Levels[0]...)
	if got := EstimatePendingCompactionBytes(v, o); got != 322 {
		t.Fatalf("L0 due: %d, want 322", got)
	}
}

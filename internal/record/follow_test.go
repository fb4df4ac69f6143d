package record

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestReaderAtFollowsAGrowingFile reads a file that grows by prefixes of
// its final bytes (what a follower sees of a file another process appends
// to, records cut anywhere) with one NewReaderAt per look, each starting
// at the EndOffset the previous look reached: every record is returned
// once, in order, at its offset, and no look reports damage.
func TestReaderAtFollowsAGrowingFile(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	for iter := range 20 {
		n := 1 + rng.IntN(150)
		recs := make([][]byte, n)
		for i := range recs {
			size := rng.IntN(300)
			switch rng.IntN(8) {
			case 0:
				size = rng.IntN(3 * BlockSize)
			case 1:
				size = BlockSize - HeaderSize - rng.IntN(20)
			}
			recs[i] = payload(i+iter, size)
		}
		w := writeRecords(t, recs, nil, 0)
		var got [][]byte
		var offs []int64
		pos, visible := int64(0), 0
		for looks := 0; len(got) < n; looks++ {
			if looks > 10*n+100 {
				t.Fatalf("seed %d iter %d: stuck at %d of %d records", seed, iter, len(got), n)
			}
			visible = min(len(w.file), visible+rng.IntN(2*BlockSize))
			r := NewReaderAt(bytes.NewReader(w.file[:visible]), testFile, pos)
			for {
				rec, err := r.Next()
				if err == io.EOF {
					if d := r.TailDamage(); d != nil {
						t.Fatalf("seed %d iter %d: a prefix of %d bytes read from %d reports damage: %v", seed, iter, visible, pos, d)
					}
					break
				}
				if err != nil {
					t.Fatalf("seed %d iter %d: from %d of a %d-byte prefix: %v", seed, iter, pos, visible, err)
				}
				got = append(got, bytes.Clone(rec))
				offs = append(offs, r.Offset())
				pos = r.EndOffset()
			}
		}
		for i := range n {
			if !bytes.Equal(got[i], recs[i]) || offs[i] != w.offsets[i] {
				t.Fatalf("seed %d iter %d: record %d differs (offset %d, want %d)", seed, iter, i, offs[i], w.offsets[i])
			}
		}
		if pos != w.ends[n-1] {
			t.Fatalf("seed %d iter %d: ended at %d, want %d", seed, iter, pos, w.ends[n-1])
		}
	}
}

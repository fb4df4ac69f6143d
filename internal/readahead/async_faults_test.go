package readahead

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// faultyFile fails reads at random: with an error, or short (fewer bytes,
// no error), so that windows and prefetches come back failed or cut.
type faultyFile struct {
	*fakeFile
	mu  sync.Mutex
	rng *rand.Rand
}

var errFaulty = errors.New("injected read failure")

func (f *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	k := f.rng.IntN(20)
	cut := 0
	if len(p) > 0 {
		cut = f.rng.IntN(len(p))
	}
	f.mu.Unlock()
	switch k {
	case 0:
		return 0, errFaulty
	case 1:
		// Short, as a device returns a prefix (aligned for direct IO).
		n, err := f.fakeFile.ReadAt(p, off)
		cut -= cut % f.align
		if err == nil && cut < n {
			clear(p[cut:])
			n = cut
		}
		return n, err
	}
	return f.fakeFile.ReadAt(p, off)
}

// TestAsyncRandomizedFaults runs random forward runs, backward runs and
// jumps, with blocks of random sizes (some longer than the straddle room),
// cached blocks and two-phase reads (NoteRead), through the double buffer
// over a file whose reads fail or come back short at random: whatever Read
// serves is the file's bytes, an error is the injected one, and Release
// returns.
func TestAsyncRandomizedFaults(t *testing.T) {
	withSplit(t, func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 3))
		reader := newPortable(t)
		for trial := 0; trial < 40; trial++ {
			align := []int{1, 512, 4096}[rng.IntN(3)]
			f := &faultyFile{fakeFile: newFakeFile(3<<20, align), rng: rand.New(rand.NewPCG(seed, uint64(trial)))}
			limit := int64(1<<20 + rng.IntN(1<<20))
			var offs []int64
			var lens []int
			for off := int64(0); off < limit; {
				n := 500 + rng.IntN(9000)
				if rng.IntN(10) == 0 {
					n = 60<<10 + rng.IntN(40<<10) // around straddleRoom
				}
				n = int(min(int64(n), limit-off))
				offs, lens = append(offs, off), append(lens, n)
				off += int64(n)
			}
			cfg := Config{MaxAuto: int64(8<<10) << rng.IntN(7), Limit: limit, Alignment: align, Reader: reader, Async: true}
			if rng.IntN(3) == 0 {
				cfg.Size = int64(1 + rng.IntN(600<<10))
			}
			var s State
			s.Init(f, cfg)
			served, failed := 0, 0
			i := rng.IntN(len(offs))
			dir := 1
			for step := 0; step < 3000; step++ {
				switch rng.IntN(40) {
				case 0:
					i = rng.IntN(len(offs))
				case 1:
					dir = -dir
				case 2:
					s.NoteCached(offs[i], lens[i])
				case 3:
					s.NoteRead(offs[i], lens[i])
				default:
					b, err := s.Read(offs[i], lens[i])
					switch {
					case err != nil && !errors.Is(err, errFaulty):
						t.Fatalf("trial %d: Read(%d, %d): %v", trial, offs[i], lens[i], err)
					case err != nil:
						failed++
					case b != nil && !bytes.Equal(b, f.data[offs[i]:offs[i]+int64(lens[i])]):
						t.Fatalf("trial %d: Read(%d, %d) served wrong bytes", trial, offs[i], lens[i])
					case b != nil:
						served++
					}
				}
				i += dir
				if i < 0 || i >= len(offs) {
					i = rng.IntN(len(offs))
				}
			}
			c := s.Release()
			if c.BytesUsed > c.BytesIssued {
				t.Fatalf("trial %d: used %d > issued %d", trial, c.BytesUsed, c.BytesIssued)
			}
			if served == 0 {
				t.Fatalf("trial %d: nothing served (%d failed)", trial, failed)
			}
		}
	})
}

package readahead

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestFileEndUnaligned scans up to the end of a file whose size is not a
// multiple of the alignment, with the limit at the end of the file, inside
// the last aligned block, or past it: every block is served (the last one
// too: the window's short read at the end of the file is not a failure),
// every read is aligned, none starts at or past the end of the file, and
// NoteCached between reads never reads the file.
func TestFileEndUnaligned(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	reader := newPortable(t)
	for trial := range 60 {
		align := []int{512, 4096}[trial%2]
		size := 200<<10 + 1 + rng.IntN(align-1)
		limit := int64(size)
		switch trial % 3 {
		case 1:
			limit = int64(size) + int64(rng.IntN(3*align)) // the caller's limit passes the end
		case 2:
			limit = int64(size) - int64(rng.IntN(align/2)) // the limit inside the last block
		}
		cfg := Config{MaxAuto: 256 << 10, Limit: limit, Alignment: align}
		switch trial % 4 {
		case 1:
			cfg.Size = int64(1 + rng.IntN(64<<10))
		case 2:
			cfg.Reader, cfg.Async = reader, true
		case 3:
			cfg.Size, cfg.Reader, cfg.Async = int64(1+rng.IntN(64<<10)), reader, true
		}
		name := fmt.Sprintf("trial %d (size %d, limit %d, align %d, %+v)", trial, size, limit, align, cfg)
		f := newFakeFile(size, align)
		var s State
		s.Init(f, cfg)
		// Blocks of random sizes from 0 up to min(limit, size).
		var offs []int64
		var lens []int
		for off := int64(0); off < min(limit, int64(size)); {
			n := int(min(int64(1+rng.IntN(6000)), min(limit, int64(size))-off))
			offs, lens = append(offs, off), append(lens, n)
			off += int64(n)
		}
		served := 0
		for i := range offs {
			if i%7 == 3 {
				s.drain()
				before := len(f.takeReads())
				s.NoteCached(offs[i], lens[i])
				s.drain()
				if r := f.takeReads(); len(r) != 0 {
					t.Fatalf("%s: NoteCached read the file: %v (and %d reads before)", name, r, before)
				}
				continue
			}
			b, err := s.Read(offs[i], lens[i])
			if err != nil {
				t.Fatalf("%s: Read(%d, %d): %v", name, offs[i], lens[i], err)
			}
			if b != nil {
				served++
				if string(b) != string(f.data[offs[i]:offs[i]+int64(lens[i])]) {
					t.Fatalf("%s: Read(%d, %d) served wrong bytes", name, offs[i], lens[i])
				}
			} else if i == len(offs)-1 && (cfg.Size > 0 || s.runLen >= autoTrigger) {
				t.Fatalf("%s: the last block [%d, %d) was not served", name, offs[i], offs[i]+int64(lens[i]))
			}
			s.drain()
			for _, r := range f.takeReads() {
				if r.off%int64(align) != 0 || r.n%align != 0 {
					t.Fatalf("%s: unaligned read %v", name, r)
				}
				if r.off >= int64(size) {
					t.Fatalf("%s: read %v starts at or past the end of the file", name, r)
				}
				if r.off+int64(r.n) > vfs.AlignUp(limit, align) {
					t.Fatalf("%s: read %v passes the limit rounded up", name, r)
				}
			}
		}
		s.Release()
		if served == 0 {
			t.Fatalf("%s: nothing served", name)
		}
	}
}

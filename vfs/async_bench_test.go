package vfs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkRandomReads reads 64 random 4 KiB blocks per op from a 64 MiB
// file three ways: a loop of preads, the portable reader's goroutines, and
// one io_uring batch. syscalls/read counts preads, or io_uring_enter calls
// (submitting and reaping) per read. The plain variants read from the page
// cache (the cost of issuing reads); the cold/ variants first evict the
// file from the page cache, outside the timer, so that every read goes to
// the device (where evictRange can: Linux).
func BenchmarkRandomReads(b *testing.B) {
	const (
		fileSize  = 64 << 20
		blockSize = 4 << 10
		perOp     = 64
	)
	name := filepath.Join(b.TempDir(), "data")
	chunk := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range chunk {
		chunk[i] = byte(rng.Uint32())
	}
	w, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	for range fileSize / len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil { // clean pages, so that evictRange can drop them
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f, err := Default.Open(name, RandomAccess)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	offsets := make([]int64, 1<<16)
	for i := range offsets {
		offsets[i] = int64(rng.IntN(fileSize/blockSize)) * blockSize
	}
	reqs := make([]ReadRequest, perOp)
	for i := range reqs {
		reqs[i] = ReadRequest{File: f, Buf: make([]byte, blockSize)}
	}
	next := 0
	// setOffsets points reqs at the next 64 blocks (and evicts them when
	// cold).
	setOffsets := func(b *testing.B, cold bool) {
		for i := range reqs {
			reqs[i].Off = offsets[next]
			next = (next + 1) % len(offsets)
		}
		if cold {
			// The whole file: a block's range alone would leave it cached
			// when the kernel keeps it in a larger folio.
			b.StopTimer()
			evictRange(f, 0, 0)
			b.StartTimer()
		}
	}
	pread := func(b *testing.B, cold bool) {
		b.SetBytes(perOp * blockSize)
		for range b.N {
			setOffsets(b, cold)
			for i := range reqs {
				if _, err := f.ReadAt(reqs[i].Buf, reqs[i].Off); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(1, "syscalls/read")
	}
	batched := func(b *testing.B, r AsyncReader, cold bool) {
		defer r.Close()
		b.SetBytes(perOp * blockSize)
		before := r.Stats()
		reaper, _ := r.(interface{ reaperEnters() uint64 })
		var reaped0 uint64
		if reaper != nil {
			reaped0 = reaper.reaperEnters()
		}
		for range b.N {
			setOffsets(b, cold)
			if err := r.MultiRead(reqs); err != nil {
				b.Fatal(err)
			}
		}
		st := r.Stats()
		reads := float64(st.Reads - before.Reads)
		if r.Kind() == "portable" {
			b.ReportMetric(1, "syscalls/read") // one pread each
			return
		}
		enters := float64(st.Enters - before.Enters)
		if reaper != nil {
			enters += float64(reaper.reaperEnters() - reaped0)
		}
		b.ReportMetric(enters/reads, "syscalls/read")
	}

	for _, cold := range []bool{false, true} {
		prefix := ""
		if cold {
			if !evictRange(f, 0, 0) {
				continue
			}
			prefix = "cold/"
		}
		b.Run(prefix+"seq-pread", func(b *testing.B) { pread(b, cold) })
		b.Run(prefix+"goroutines", func(b *testing.B) {
			batched(b, NewAsyncReader(AsyncOptions{DisableIOUring: true, QueueDepth: perOp}), cold)
		})
		b.Run(prefix+"io_uring", func(b *testing.B) {
			var once sync.Once
			r := NewAsyncReader(AsyncOptions{QueueDepth: perOp, Logf: func(format string, args ...any) {
				once.Do(func() { b.Logf(format, args...) })
			}})
			if r.Kind() != "io_uring" {
				r.Close()
				b.Skip("io_uring unavailable")
			}
			batched(b, r, cold)
		})
	}
}

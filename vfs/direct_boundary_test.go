//go:build linux || darwin || windows

package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// TestDirectBoundaryReads reads a file through a DirectIO handle at every
// offset and length near block boundaries, with aligned and misaligned
// buffers, and compares count, error and bytes with a buffered handle's
// ReadAt of the same file (short reads at the end of the file included).
func TestDirectBoundaryReads(t *testing.T) {
	dir := testDir(t)
	probe, err := Default.Create(Default.PathJoin(dir, "probe"), DirectIO)
	if err != nil {
		t.Fatal(err)
	}
	align := Alignment(probe)
	probe.Close()
	for _, size := range []int{0, 1, align - 1, align, 2*align + 1, 3*align - 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			name := Default.PathJoin(dir, fmt.Sprintf("f%d", size))
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i*7 + i>>8 + 1)
			}
			writeFile(t, Default, name, string(data))
			buffered, err := Default.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer buffered.Close()
			direct, err := Default.Open(name, DirectIO)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			var offs []int64
			for k := 0; k <= 4; k++ {
				for d := -2; d <= 2; d++ {
					if off := k*align + d; off >= 0 {
						offs = append(offs, int64(off))
					}
				}
			}
			lens := []int{1, 2, align - 1, align, align + 1, 2*align - 1, 2 * align, 2*align + 1, 3*align + 3}
			type want struct {
				n   int
				err error
				b   []byte
			}
			var reqs []ReadRequest
			var wants []want
			for _, off := range offs {
				for _, n := range lens {
					for _, shift := range []int{0, 1} {
						w := make([]byte, n)
						wn, werr := buffered.ReadAt(w, off)
						got := AlignedBuffer(n+shift, align)[shift:]
						gn, gerr := direct.ReadAt(got, off)
						if gn != wn || (gerr == nil) != (werr == nil) || (werr == io.EOF) != (gerr == io.EOF) {
							t.Fatalf("size %d: ReadAt(len %d, off %d, shift %d) = %d, %v; buffered gives %d, %v", size, n, off, shift, gn, gerr, wn, werr)
						}
						if !bytes.Equal(got[:gn], w[:wn]) {
							t.Fatalf("size %d: ReadAt(len %d, off %d, shift %d): bytes differ from the buffered read", size, n, off, shift)
						}
						reqs = append(reqs, ReadRequest{File: direct, Off: off, Buf: AlignedBuffer(n+shift, align)[shift:]})
						wants = append(wants, want{wn, werr, w[:wn]})
					}
				}
			}
			// The same requests as one batch through each async reader
			// (io_uring reads the aligned ones natively).
			for _, tr := range asyncTestReaders() {
				r := tr.make(t, AsyncOptions{QueueDepth: 16})
				batch := append([]ReadRequest(nil), reqs...)
				for i := range batch {
					batch[i].Buf = AlignedBuffer(len(reqs[i].Buf)+1, align)[1:]
					if AddrAligned(reqs[i].Buf, align) {
						batch[i].Buf = AlignedBuffer(len(reqs[i].Buf), align)
					}
				}
				r.Submit(batch).Wait()
				r.Close()
				for i, req := range batch {
					w := wants[i]
					if req.N != w.n || (req.Err == nil) != (w.err == nil) || (req.Err == io.EOF) != (w.err == io.EOF) || !bytes.Equal(req.Buf[:req.N], w.b) {
						t.Fatalf("size %d, %s reader: read of %d at %d = %d, %v; buffered gives %d, %v", size, tr.name, len(req.Buf), req.Off, req.N, req.Err, w.n, w.err)
					}
				}
			}
		})
	}
}

// TestDirectOddWritesReopen writes a DirectIO file in pieces of odd sizes
// (some crossing the write buffer), syncing now and then, and checks after
// Close that the file has exactly the bytes written and their size, read
// buffered and direct, and that OpenReadWrite appends after them.
func TestDirectOddWritesReopen(t *testing.T) {
	dir := testDir(t)
	name := Default.PathJoin(dir, "000001.log")
	f, err := Default.Create(name, DirectIO)
	if err != nil {
		t.Fatal(err)
	}
	align := Alignment(f)
	rng := rand.New(rand.NewPCG(5, 5))
	var model []byte
	sizes := []int{1, align - 1, 2, align + 1, 3, 256<<10 - 1, 5, 256<<10 + 7, align, 0, 2*align + 5, 1}
	for i, n := range sizes {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		if k, err := f.Write(p); k != n || err != nil {
			t.Fatalf("write %d (%d bytes) = %d, %v", i, n, k, err)
		}
		model = append(model, p...)
		if i%3 == 2 {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		fi, err := os.Stat(name)
		if err != nil || fi.Size() != int64(len(model)) {
			t.Fatalf("%s: size %d, %v; want %d", what, fi.Size(), err, len(model))
		}
		for _, opts := range [][]OpenOption{nil, {DirectIO}} {
			g, err := Default.Open(name, opts...)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(model)+align)
			n, err := g.ReadAt(got, 0)
			g.Close()
			if n != len(model) || err != io.EOF || !bytes.Equal(got[:n], model) {
				t.Fatalf("%s: reopened with %v: %d bytes, %v; want %d bytes equal to what was written", what, opts, n, err, len(model))
			}
		}
	}
	check("after Close")
	a, err := Default.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	model = append(model, "tail"...)
	check("after an append")
	if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v, want os.ErrClosed", err)
	}
}

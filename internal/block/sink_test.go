package block

import (
	"bytes"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// hintFile records the hints a Sink gives its file.
type hintFile struct {
	vfs.File
	preallocs, writebacks [][2]int64
	truncates             []int64
}

func (f *hintFile) Preallocate(off, n int64) error {
	f.preallocs = append(f.preallocs, [2]int64{off, n})
	return f.File.Preallocate(off, n)
}

func (f *hintFile) StartWriteback(off, n int64) error {
	f.writebacks = append(f.writebacks, [2]int64{off, n})
	return f.File.StartWriteback(off, n)
}

func (f *hintFile) Truncate(size int64) error {
	f.truncates = append(f.truncates, size)
	return f.File.Truncate(size)
}

// TestSinkHints: a Sink writes everything through, preallocates in steps
// of the target size plus 10% ahead of the writes, starts writeback every
// bytesPerSync bytes over contiguous ranges, and Trim cuts the file back to
// what was written; with neither option it gives no hint at all.
func TestSinkHints(t *testing.T) {
	fs := vfs.NewMem()
	mf, err := fs.Create("/s")
	if err != nil {
		t.Fatal(err)
	}
	f := &hintFile{File: mf}
	s := NewSink(f, 1000, 700)
	var want []byte
	for i := 0; i < 30; i++ {
		p := bytes.Repeat([]byte{byte(i)}, 150)
		if n, err := s.Write(p); err != nil || n != len(p) {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		want = append(want, p...)
	}
	if s.Written() != int64(len(want)) {
		t.Fatalf("Written %d, wrote %d", s.Written(), len(want))
	}
	// Steps of 1100 bytes, each reserved before the write that needs it.
	var next int64
	for _, p := range f.preallocs {
		if p[0] != next || p[1] <= 0 || (p[0]+p[1])%1100 != 0 {
			t.Fatalf("preallocations %v, not contiguous steps of 1100", f.preallocs)
		}
		next = p[0] + p[1]
	}
	if next < s.Written() || next-s.Written() >= 1100 {
		t.Fatalf("reserved up to %d for %d bytes written", next, s.Written())
	}
	next = 0
	for _, w := range f.writebacks {
		if w[0] != next || w[1] < 700 {
			t.Fatalf("writebacks %v: not contiguous ranges of at least 700 bytes", f.writebacks)
		}
		next = w[0] + w[1]
	}
	if len(f.writebacks) != len(want)/750 {
		t.Fatalf("%d writebacks for %d bytes", len(f.writebacks), len(want))
	}
	if err := s.Trim(); err != nil {
		t.Fatal(err)
	}
	if len(f.truncates) != 1 || f.truncates[0] != int64(len(want)) {
		t.Fatalf("truncations %v, want one to %d", f.truncates, len(want))
	}
	got := make([]byte, len(want))
	if n, err := mf.ReadAt(got, 0); n != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes (%v), not what was written", n, err)
	}

	plain := &hintFile{File: mf}
	s = NewSink(plain, 0, 0)
	if _, err := s.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := s.Trim(); err != nil {
		t.Fatal(err)
	}
	if len(plain.preallocs)+len(plain.writebacks)+len(plain.truncates) != 0 {
		t.Fatalf("hints without options: %v %v %v", plain.preallocs, plain.writebacks, plain.truncates)
	}
}

// TestSinkTrimCutsZerosAhead: zeros written ahead of the data (noted with
// NoteExtended) are cut off by Trim even when nothing was preallocated.
func TestSinkTrimCutsZerosAhead(t *testing.T) {
	mem := vfs.NewMem()
	f, err := mem.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := NewSink(f, 0, 0)
	if _, err := s.Write(bytes.Repeat([]byte{7}, 100)); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteZeros(f, 100, 4000); err != nil {
		t.Fatal(err)
	}
	s.NoteExtended(4100)
	if _, err := s.Write([]byte{8}); err != nil {
		t.Fatal(err)
	}
	if err := s.Trim(); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); err != nil || size != 101 {
		t.Fatalf("size after Trim: %d, %v; want 101", size, err)
	}
}

package sstable

import (
	"github.com/shaledb/shale/internal/testdir"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// ioCountingFile records the IO hints a Writer gives its file.
type ioCountingFile struct {
	vfs.File
	writebacks        [][2]int64 // (off, n) of each StartWriteback
	preallocs         [][2]int64
	truncates         []int64
	syncs, dataSyncs  int
	writtenAtDataSync int64
	written           int64
}

func (f *ioCountingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written += int64(n)
	return n, err
}
func (f *ioCountingFile) StartWriteback(off, n int64) error {
	f.writebacks = append(f.writebacks, [2]int64{off, n})
	return f.File.StartWriteback(off, n)
}
func (f *ioCountingFile) Preallocate(off, n int64) error {
	f.preallocs = append(f.preallocs, [2]int64{off, n})
	return f.File.Preallocate(off, n)
}
func (f *ioCountingFile) Truncate(size int64) error {
	f.truncates = append(f.truncates, size)
	return f.File.Truncate(size)
}
func (f *ioCountingFile) Sync() error { f.syncs++; return f.File.Sync() }
func (f *ioCountingFile) SyncData() error {
	f.dataSyncs++
	f.writtenAtDataSync = f.written
	return f.File.SyncData()
}

func writeCountedTable(t *testing.T, o WriterOptions) (*ioCountingFile, *WriterMetadata, []kv) {
	t.Helper()
	rng, _ := newRand(t)
	fs := vfs.NewMem()
	mf, err := fs.Create("/t.sst")
	if err != nil {
		t.Fatal(err)
	}
	f := &ioCountingFile{File: mf}
	entries := randomEntries(rng, 20000)
	o.Compression = NoCompression
	w := NewWriter(f, "t.sst", o)
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if int64(m.Size) != f.written {
		t.Fatalf("metadata size %d, bytes written %d", m.Size, f.written)
	}
	// The table reads back whole.
	rf, err := fs.Open("/t.sst")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(rf, ReaderOptions{FileName: "t.sst"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it := r.NewIter(IterOptions{})
	got := readAll(t, it)
	it.Close()
	if len(got) != len(entries) {
		t.Fatalf("read back %d entries, wrote %d", len(got), len(entries))
	}
	return f, m, entries
}

// TestWriterStartsWriteback: with BytesPerSync, writeback is started over
// consecutive ranges of about BytesPerSync bytes (at most one bufio buffer
// more) covering the file, and the table is finished with SyncData.
func TestWriterStartsWriteback(t *testing.T) {
	const bps = 512 << 10
	f, m, _ := writeCountedTable(t, WriterOptions{BytesPerSync: bps})
	size := int64(m.Size)
	if size < 4*bps {
		t.Fatalf("table of %d bytes is too small for the test", size)
	}
	if want := size / bps; int64(len(f.writebacks)) < want*2/3 || int64(len(f.writebacks)) > want {
		t.Fatalf("%d StartWriteback calls for %d bytes with BytesPerSync %d; want about %d", len(f.writebacks), size, bps, want)
	}
	var next int64
	for i, wb := range f.writebacks {
		if wb[0] != next || wb[1] < bps || wb[1] > bps+256<<10 {
			t.Fatalf("writeback %d is [%d, +%d); want it to start at %d and cover %d to %d bytes", i, wb[0], wb[1], next, bps, bps+256<<10)
		}
		next = wb[0] + wb[1]
	}
	if size-next >= bps {
		t.Fatalf("writeback covers up to %d of %d bytes", next, size)
	}
	if f.dataSyncs != 1 || f.syncs != 0 || f.writtenAtDataSync != size {
		t.Fatalf("SyncData %d times (after %d bytes), Sync %d times; want one SyncData after all %d bytes and no Sync", f.dataSyncs, f.writtenAtDataSync, f.syncs, size)
	}
	if len(f.preallocs) != 0 || len(f.truncates) != 0 {
		t.Fatalf("without TargetFileSize: %d preallocations, %d truncations; want none", len(f.preallocs), len(f.truncates))
	}
}

// TestWriterPreallocates: with TargetFileSize, the file is preallocated in
// steps ahead of the writes, and what is left unused is trimmed at Close.
func TestWriterPreallocates(t *testing.T) {
	const target = 1 << 20
	f, m, _ := writeCountedTable(t, WriterOptions{TargetFileSize: target, BytesPerSync: -1})
	size := int64(m.Size)
	if len(f.writebacks) != 0 {
		t.Fatalf("BytesPerSync < 0 started writeback %d times", len(f.writebacks))
	}
	step := int64(target + target/10)
	var next int64
	for i, p := range f.preallocs {
		if p[0] != next || p[1] <= 0 || p[1]%step != 0 {
			t.Fatalf("preallocation %d is [%d, +%d); want it to start at %d, in steps of %d", i, p[0], p[1], next, step)
		}
		next = p[0] + p[1]
	}
	if next < size || next-size >= step || int64(len(f.preallocs)) > (size+step-1)/step {
		t.Fatalf("preallocated %d bytes in %d calls for a %d-byte table (step %d)", next, len(f.preallocs), size, step)
	}
	if len(f.truncates) != 1 || f.truncates[0] != size {
		t.Fatalf("truncations %v; want one, to the table size %d", f.truncates, size)
	}
	if f.dataSyncs != 1 || f.syncs != 0 {
		t.Fatalf("SyncData %d, Sync %d; want 1 and 0", f.dataSyncs, f.syncs)
	}
}

// TestWriterDirectIO writes a table to a DirectIO file on the OS file
// system (with preallocation and writeback) and reads it back, also with
// DirectIO.
func TestWriterDirectIO(t *testing.T) {
	rng, _ := newRand(t)
	entries := randomEntries(rng, 3000)
	path := testdir.New(t) + "/d.sst"
	f, err := vfs.Default.Create(path, vfs.DirectIO)
	if err != nil {
		t.Skipf("no direct IO here: %v", err)
	}
	w := NewWriter(f, path, WriterOptions{TargetFileSize: 64 << 10, BytesPerSync: 128 << 10})
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	rf, err := vfs.Default.Open(path, vfs.DirectIO)
	if err != nil {
		t.Fatal(err)
	}
	if sz, err := rf.Size(); err != nil || sz != int64(m.Size) {
		t.Fatalf("direct table size %d, %v; metadata says %d", sz, err, m.Size)
	}
	r, err := NewReader(rf, ReaderOptions{FileName: path})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it := r.NewIter(IterOptions{})
	got := readAll(t, it)
	it.Close()
	if len(got) != len(entries) {
		t.Fatalf("read back %d entries, wrote %d", len(got), len(entries))
	}
	for i := range got {
		if !equalKV(got[i], entries[i]) {
			t.Fatalf("entry %d differs: %s vs %s", i, got[i].key, entries[i].key)
		}
	}
}

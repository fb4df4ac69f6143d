package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// These tests hold the Windows file layer to POSIX behaviour; .ci/wine.sh
// runs them under Wine.

func mustCreateOS(t *testing.T, name string, opts ...OpenOption) File {
	t.Helper()
	f, err := Default.Create(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func mustWrite(t *testing.T, f File, p []byte) {
	t.Helper()
	if n, err := f.Write(p); n != len(p) || err != nil {
		t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
	}
}

func mustReadAt(t *testing.T, f File, n int, off int64) []byte {
	t.Helper()
	p := make([]byte, n)
	got, err := f.ReadAt(p, off)
	if got != n || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt(%d bytes at %d) = %d, %v", n, off, got, err)
	}
	return p
}

// randBytes returns n bytes from rng.
func randBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// TestWindowsReadAtKeepsWritePosition: ReadFile at an OVERLAPPED offset moves
// a synchronous handle's file pointer, which Write must not follow.
func TestWindowsReadAtKeepsWritePosition(t *testing.T) {
	name := Default.PathJoin(testDir(t), "f")
	f := mustCreateOS(t, name)
	mustWrite(t, f, []byte("0123456789"))
	if got := mustReadAt(t, f, 3, 2); string(got) != "234" {
		t.Fatalf("ReadAt = %q", got)
	}
	mustWrite(t, f, []byte("abc"))
	if got := mustReadAt(t, f, 13, 0); string(got) != "0123456789abc" {
		t.Fatalf("after read then write: %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// OpenReadWrite appends after the existing bytes, reads or not.
	g, err := Default.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got := mustReadAt(t, g, 2, 0); string(got) != "01" {
		t.Fatalf("ReadAt = %q", got)
	}
	mustWrite(t, g, []byte("XY"))
	if got := mustReadAt(t, g, 15, 0); string(got) != "0123456789abcXY" {
		t.Fatalf("after reopen: %q", got)
	}
}

func TestWindowsReadAtEOF(t *testing.T) {
	f := mustCreateOS(t, Default.PathJoin(testDir(t), "f"))
	mustWrite(t, f, []byte("hello"))
	p := make([]byte, 8)
	if n, err := f.ReadAt(p, 2); n != 3 || err != io.EOF || string(p[:n]) != "llo" {
		t.Fatalf("straddling read = %d %q, %v; want 3 \"llo\", EOF", n, p[:n], err)
	}
	if n, err := f.ReadAt(p, 5); n != 0 || err != io.EOF {
		t.Fatalf("read at end = %d, %v; want 0, EOF", n, err)
	}
	if n, err := f.ReadAt(p, 1000); n != 0 || err != io.EOF {
		t.Fatalf("read past end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := f.ReadAt(p, -1); err == nil || err == io.EOF {
		t.Fatalf("read at -1 = %v, want an error", err)
	}
}

// TestWindowsConcurrentReadAtWrite appends records while readers check every
// record below the published size; positional reads must neither see stale
// data nor disturb the writer.
func TestWindowsConcurrentReadAtWrite(t *testing.T) {
	seed := testSeed(t)
	name := Default.PathJoin(testDir(t), "log")
	w := mustCreateOS(t, name)
	r, err := Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	const recSize, records = 64, 2000
	record := func(i int) []byte {
		p := make([]byte, recSize)
		for j := range p {
			p[j] = byte(i*31 + j)
		}
		return p
	}
	var published atomic.Int64 // bytes written
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			p := make([]byte, recSize)
			file := r
			if g%2 == 0 {
				file = w // the writer's own handle too
			}
			for !done.Load() {
				n := published.Load() / recSize
				if n == 0 {
					continue
				}
				i := rng.Int64N(n)
				if _, err := file.ReadAt(p, i*recSize); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(p, record(int(i))) {
					errs <- fmt.Errorf("record %d at %d read back wrong", i, i*recSize)
					return
				}
			}
		}()
	}
	for i := range records {
		mustWrite(t, w, record(i))
		published.Store(int64(i+1) * recSize)
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if size, err := w.Size(); err != nil || size != recSize*records {
		t.Fatalf("Size = %d, %v; want %d", size, err, recSize*records)
	}
}

// TestWindowsRenameRemoveWhileOpen: with FILE_SHARE_DELETE and POSIX-style
// delete and rename, open handles keep reading while names move and vanish.
func TestWindowsRenameRemoveWhileOpen(t *testing.T) {
	dir := testDir(t)
	a, b := Default.PathJoin(dir, "a"), Default.PathJoin(dir, "b")
	writeFile(t, Default, a, "old a")
	writeFile(t, Default, b, "new b")
	ra, err := Default.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := Default.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()

	// Replace a, which is open, with b, which is open too.
	if err := Default.Rename(b, a); err != nil {
		t.Fatalf("rename over an open file: %v", err)
	}
	if got, err := readFile(Default, a); err != nil || got != "new b" {
		t.Fatalf("a after rename = %q, %v", got, err)
	}
	if got := string(mustReadAt(t, ra, 5, 0)); got != "old a" {
		t.Fatalf("old handle of a reads %q", got)
	}
	_, err = Default.Stat(b)
	mustNotExist(t, err, "Stat(b) after rename")

	// Remove a while rb (now its handle) reads it; the name is free at once.
	if err := Default.Remove(a); err != nil {
		t.Fatalf("remove of an open file: %v", err)
	}
	_, err = Default.Stat(a)
	mustNotExist(t, err, "Stat(a) after remove")
	if got := string(mustReadAt(t, rb, 5, 0)); got != "new b" {
		t.Fatalf("handle of removed file reads %q", got)
	}
	if names, err := Default.List(dir); err != nil || len(names) != 0 {
		t.Fatalf("List after removing everything = %q, %v", names, err)
	}
	writeFile(t, Default, a, "fresh")
	if got, err := readFile(Default, a); err != nil || got != "fresh" {
		t.Fatalf("recreated a = %q, %v", got, err)
	}
	if got := string(mustReadAt(t, rb, 5, 0)); got != "new b" {
		t.Fatalf("handle of removed file reads %q after recreate", got)
	}
}

// TestWindowsRemoveAside runs the fallback of Remove (rename aside, then
// delete) directly, since on Windows 10 the POSIX delete succeeds first.
func TestWindowsRemoveAside(t *testing.T) {
	dir := testDir(t)
	a := Default.PathJoin(dir, "a")
	writeFile(t, Default, a, "data")
	f, err := Default.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := windows.UTF16PtrFromString(a)
	if err := removeAside(a, p); err != nil {
		t.Fatal(err)
	}
	_, err = Default.Stat(a)
	mustNotExist(t, err, "Stat after removeAside")
	if names, _ := Default.List(dir); len(names) != 0 {
		t.Fatalf("List shows %q", names)
	}
	if got := string(mustReadAt(t, f, 4, 0)); got != "data" {
		t.Fatalf("open handle reads %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, removeAside(a, p), "removeAside of a missing file")
}

// TestWindowsTruncate grows and shrinks a file; Write stays where it was.
func TestWindowsTruncate(t *testing.T) {
	f := mustCreateOS(t, Default.PathJoin(testDir(t), "f"))
	mustWrite(t, f, []byte("abcdef"))
	if err := f.Truncate(10); err != nil {
		t.Fatal(err)
	}
	if got := mustReadAt(t, f, 10, 0); string(got) != "abcdef\x00\x00\x00\x00" {
		t.Fatalf("after growing: %q", got)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 3 {
		t.Fatalf("size %d after Truncate(3)", size)
	}
	mustWrite(t, f, []byte("Z")) // at 6, as ftruncate leaves the offset
	if got := mustReadAt(t, f, 7, 0); string(got) != "abc\x00\x00\x00Z" {
		t.Fatalf("write after shrinking: %q", got)
	}
	if err := f.Truncate(-1); err == nil {
		t.Fatal("Truncate(-1) succeeded")
	}
}

// TestWindowsPreallocateAdvisory: Preallocate never changes the visible size
// or content, and succeeds even where the system cannot reserve (Wine).
func TestWindowsPreallocateAdvisory(t *testing.T) {
	f := mustCreateOS(t, Default.PathJoin(testDir(t), "f"))
	mustWrite(t, f, []byte("abc"))
	if err := f.Preallocate(0, 1<<20); err != nil {
		t.Fatalf("Preallocate: %v", err)
	}
	if size, err := f.Size(); err != nil || size != 3 {
		t.Fatalf("Size after Preallocate = %d, %v", size, err)
	}
	var std fileStandardInfo
	h := f.(*osFile).handle
	if err := windows.GetFileInformationByHandleEx(h, windows.FileStandardInfo,
		(*byte)(unsafe.Pointer(&std)), uint32(unsafe.Sizeof(std))); err == nil {
		t.Logf("allocation size after Preallocate(0, 1 MiB): %d", std.AllocationSize)
	}
	mustWrite(t, f, []byte("def"))
	if got := mustReadAt(t, f, 6, 0); string(got) != "abcdef" {
		t.Fatalf("content %q", got)
	}
	if err := f.Preallocate(-1, 10); err == nil {
		t.Fatal("Preallocate at -1 succeeded")
	}
}

func TestWindowsIsUnsupported(t *testing.T) {
	for _, err := range []error{windows.ERROR_INVALID_PARAMETER, windows.ERROR_NOT_SUPPORTED,
		windows.ERROR_CALL_NOT_IMPLEMENTED, windows.ERROR_INVALID_FUNCTION} {
		if !isUnsupported(err) {
			t.Errorf("isUnsupported(%v) = false", err)
		}
	}
	if isUnsupported(windows.ERROR_DISK_FULL) || isUnsupported(windows.ERROR_ACCESS_DENIED) {
		t.Error("a real failure counted as unsupported")
	}
}

// TestWindowsDirectIO writes a file with DirectIO in random pieces from
// unaligned buffers, with truncations, and reads random ranges back, against
// a byte-slice model; raw ReadFile/WriteFile calls must all be aligned.
func TestWindowsDirectIO(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	name := Default.PathJoin(testDir(t), "000001.sst")
	f := mustCreateOS(t, name, DirectIO)
	align := Alignment(f)
	if align < minSectorSize || align > maxSectorSize || align&(align-1) != 0 {
		t.Fatalf("Alignment = %d", align)
	}
	t.Logf("sector size %d", align)
	var model []byte
	var pos int64
	check := func(step int) {
		t.Helper()
		size, err := f.Size()
		if err != nil || size != int64(len(model)) {
			t.Fatalf("seed %d step %d: Size = %d, %v; model %d", seed, step, size, err, len(model))
		}
		for range 4 {
			off := rng.Int64N(int64(len(model)) + 10)
			n := rng.IntN(3*align) + 1
			p := make([]byte, n+1)[1:] // usually unaligned
			got, err := f.ReadAt(p, off)
			want := model[min(off, int64(len(model))):min(off+int64(n), int64(len(model)))]
			if got != len(want) || !bytes.Equal(p[:got], want) {
				t.Fatalf("seed %d step %d: ReadAt(%d at %d) = %d, %v; model has %d", seed, step, n, off, got, err, len(want))
			}
			if (got < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
				t.Fatalf("seed %d step %d: ReadAt(%d at %d) = %d, %v", seed, step, n, off, got, err)
			}
		}
	}
	for step := range 200 {
		switch op := rng.IntN(10); {
		case op < 6: // small unaligned write
			p := randBytes(rng, rng.IntN(2*align))
			mustWrite(t, f, p)
			model = writeModel(model, pos, p)
			pos += int64(len(p))
		case op < 8: // large write, aligned buffer when pos happens to be aligned
			p := AlignedBuffer(align*(1+rng.IntN(4)), align)
			copy(p, randBytes(rng, len(p)))
			if rng.IntN(2) == 0 {
				p = p[:len(p)-rng.IntN(align)]
			}
			mustWrite(t, f, p)
			model = writeModel(model, pos, p)
			pos += int64(len(p))
		case op < 9:
			// Shrink, or grow so that later writes land inside the file.
			size := rng.Int64N(int64(len(model)) + int64(2*align) + 1)
			if err := f.Truncate(size); err != nil {
				t.Fatal(err)
			}
			if size <= int64(len(model)) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, size-int64(len(model)))...)
			}
		default: // aligned read straight into an aligned buffer
			if len(model) >= align {
				off := AlignDown(rng.Int64N(int64(len(model))), align)
				p := AlignedBuffer(align, align)
				n, err := f.ReadAt(p, off)
				want := model[off:min(off+int64(align), int64(len(model)))]
				if n != len(want) || !bytes.Equal(p[:n], want) || (n < align) != (err == io.EOF) {
					t.Fatalf("seed %d step %d: aligned ReadAt at %d = %d, %v", seed, step, off, n, err)
				}
			}
		}
		check(step)
	}
	st := f.(*osFile).direct.stats()
	t.Logf("direct stats %+v", st)
	if st.unaligned != 0 {
		t.Fatalf("seed %d: %d unaligned requests reached the direct handle", seed, st.unaligned)
	}
	if st.bounceReads == 0 || st.stagedWrites == 0 {
		t.Fatalf("seed %d: bounce path unused: %+v", seed, st)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, buffered and direct, the file is the model.
	for _, opts := range [][]OpenOption{nil, {DirectIO}} {
		g, err := Default.Open(name, opts...)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(model)+1)
		n, err := g.ReadAt(got, 0)
		if n != len(model) || err != io.EOF || !bytes.Equal(got[:n], model) {
			t.Fatalf("seed %d: reopened (%v) reads %d bytes, %v; model %d", seed, opts, n, err, len(model))
		}
		g.Close()
	}
}

// writeModel writes p at off into model, growing it with zeros; an empty
// write changes nothing, as on POSIX.
func writeModel(model []byte, off int64, p []byte) []byte {
	if len(p) == 0 {
		return model
	}
	if end := int(off) + len(p); end > len(model) {
		model = append(model, make([]byte, end-len(model))...)
	}
	copy(model[off:], p)
	return model
}

// TestWindowsDirectIOAlignedPath: aligned requests skip the bounce buffer.
func TestWindowsDirectIOAlignedPath(t *testing.T) {
	name := Default.PathJoin(testDir(t), "f")
	f := mustCreateOS(t, name, DirectIO)
	align := Alignment(f)
	p := AlignedBuffer(4*align, align)
	for i := range p {
		p[i] = byte(i * 7)
	}
	mustWrite(t, f, p)
	q := AlignedBuffer(2*align, align)
	if n, err := f.ReadAt(q, int64(align)); n != len(q) || err != nil || !bytes.Equal(q, p[align:3*align]) {
		t.Fatalf("aligned ReadAt = %d, %v", n, err)
	}
	st := f.(*osFile).direct.stats()
	if st.alignedReads != 1 || st.bounceReads != 0 || st.alignedWrites != 1 || st.stagedWrites != 0 || st.unaligned != 0 {
		t.Fatalf("aligned requests took the wrong path: %+v", st)
	}
	// A buffered file needs no alignment.
	g := mustCreateOS(t, Default.PathJoin(testDir(t), "g"))
	if a := Alignment(g); a != 1 {
		t.Fatalf("Alignment of a buffered file = %d", a)
	}
	// The raw path refuses what it must never be given.
	d := f.(*osFile).direct
	if _, err := d.rawRead(f.(*osFile), q[1:], 0); !errors.Is(err, errUnalignedDirectIO) {
		t.Fatalf("rawRead of an unaligned buffer: %v", err)
	}
	if d.stats().unaligned != 1 {
		t.Fatal("unaligned raw read not counted")
	}
}

// TestWindowsNoAllocs: the read and write paths allocate nothing per call.
func TestWindowsNoAllocs(t *testing.T) {
	dir := testDir(t)
	f := mustCreateOS(t, Default.PathJoin(dir, "f"))
	d := mustCreateOS(t, Default.PathJoin(dir, "d"), DirectIO)
	align := Alignment(d)
	data := AlignedBuffer(8*align, align)
	mustWrite(t, f, data)
	mustWrite(t, d, data)
	p := make([]byte, 100)
	ap := AlignedBuffer(align, align)
	w := make([]byte, 10)
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"ReadAt", func() { _, _ = f.ReadAt(p, 7) }},
		{"Write", func() { _, _ = f.Write(w) }},
		{"direct aligned ReadAt", func() { _, _ = d.ReadAt(ap, int64(align)) }},
		{"direct bounce ReadAt", func() { _, _ = d.ReadAt(p, 7) }},
		{"direct staged Write", func() { _, _ = d.Write(w) }},
	} {
		c.fn() // warm pools and staging buffers
		if n := testing.AllocsPerRun(50, c.fn); n != 0 {
			t.Errorf("%s: %.1f allocations per call", c.name, n)
		}
	}
}

func TestWindowsRemoveAllTree(t *testing.T) {
	dir := testDir(t)
	top := Default.PathJoin(dir, "top")
	if err := Default.MkdirAll(Default.PathJoin(top, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"x", "a/y", "a/b/z"} {
		writeFile(t, Default, Default.PathJoin(top, n), n)
	}
	if err := Default.RemoveAll(top); err != nil {
		t.Fatal(err)
	}
	_, err := os.Stat(top)
	mustNotExist(t, err, "Stat after RemoveAll")
	if names, _ := Default.List(dir); len(names) != 0 {
		t.Fatalf("List = %q", names)
	}
}

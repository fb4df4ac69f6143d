package blob

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/vfs"
)

// record is one key and value written to a blob file by a test.
type record struct {
	key, value []byte
}

func newRand(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7))
}

// randomRecords returns n records with keys of 0 to 40 bytes and values of
// every kind a blob file meets: empty, tiny, compressible runs and text,
// and random (incompressible) bytes, up to tens of KiB.
func randomRecords(rng *rand.Rand, n int) []record {
	recs := make([]record, n)
	for i := range recs {
		key := make([]byte, rng.IntN(41))
		for j := range key {
			key[j] = byte(rng.IntN(256))
		}
		var v []byte
		switch rng.IntN(6) {
		case 0:
			v = nil
		case 1:
			v = []byte{byte(rng.IntN(256))}
		case 2:
			v = bytes.Repeat([]byte{byte(rng.IntN(256))}, 1+rng.IntN(40<<10))
		case 3:
			v = []byte(fmt.Sprintf("value %d %s", i, bytes.Repeat([]byte("abcdefgh"), rng.IntN(2000))))
		default:
			v = make([]byte, rng.IntN(20<<10))
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
		}
		recs[i] = record{key, v}
	}
	return recs
}

// writeBlob writes recs to a blob file in a MemFS and returns its bytes, the
// indexes Add returned and the metadata.
func writeBlob(t testing.TB, o WriterOptions, recs []record) ([]byte, []Index, *WriterMetadata) {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create("/b.blob")
	if err != nil {
		t.Fatal(err)
	}
	if o.FileName == "" {
		o.FileName = "b.blob"
	}
	w := NewWriter(f, o)
	xs := make([]Index, len(recs))
	for i, rc := range recs {
		if xs[i], err = w.Add(rc.key, rc.value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return readMem(t, fs, "/b.blob"), xs, m
}

func readMem(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sz, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, sz)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}

// openBytes opens a Reader over data.
func openBytes(data []byte, o ReaderOptions) (*Reader, error) {
	if o.FileName == "" {
		o.FileName = "b.blob"
	}
	return NewReader(&bytesFile{b: data}, o)
}

// iterAll reads every record of r with o and returns them with their
// indexes and the iterator's error.
func iterAll(r *Reader, o IterOptions) ([]record, []Index, error) {
	it := r.NewIter(o)
	var recs []record
	var xs []Index
	for it.Next() {
		recs = append(recs, record{it.Key(), it.Value()})
		xs = append(xs, it.Index())
	}
	return recs, xs, it.Close()
}

// checkRecords fails t unless got equals want, record by record.
func checkRecords(t testing.TB, got, want []record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].key, want[i].key) || !bytes.Equal(got[i].value, want[i].value) {
			t.Fatalf("record %d: key %q (%d value bytes), want %q (%d)", i, got[i].key, len(got[i].value), want[i].key, len(want[i].value))
		}
	}
}

// isCorruption fails t unless err matches base.ErrCorruption.
func isCorruption(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("%s: %v, want corruption", what, err)
	}
}

// bytesFile is a read-only vfs.File over a byte slice.
type bytesFile struct{ b []byte }

func (f *bytesFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(f.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (f *bytesFile) Close() error                      { return nil }
func (f *bytesFile) Write(p []byte) (int, error)       { return 0, errors.New("read-only") }
func (f *bytesFile) Sync() error                       { return nil }
func (f *bytesFile) SyncData() error                   { return nil }
func (f *bytesFile) StartWriteback(off, n int64) error { return nil }
func (f *bytesFile) Size() (int64, error)              { return int64(len(f.b)), nil }
func (f *bytesFile) Preallocate(off, n int64) error    { return nil }
func (f *bytesFile) Truncate(size int64) error         { return errors.New("read-only") }

// alignedFile stands in for a file opened with direct IO: it reports an
// alignment (through the fileAlignment hook), fails every read that is not
// aligned in offset, length and address, and counts its reads.
type alignedFile struct {
	bytesFile
	align int

	mu    sync.Mutex
	reads int
}

func (f *alignedFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	f.reads++
	f.mu.Unlock()
	if !vfs.IsAligned(p, off, f.align) {
		return 0, fmt.Errorf("unaligned direct read: offset %d, length %d", off, len(p))
	}
	return f.bytesFile.ReadAt(p, off)
}

// useAlignedFiles makes Readers see alignedFile's alignment for the test.
func useAlignedFiles(t *testing.T) {
	old := fileAlignment
	fileAlignment = func(f vfs.File) int {
		if a, ok := f.(*alignedFile); ok {
			return a.align
		}
		return old(f)
	}
	t.Cleanup(func() { fileAlignment = old })
}

// allOptions are the writer options the round-trip tests cover: every
// compression with every checksum type.
func allOptions() []WriterOptions {
	var out []WriterOptions
	for _, c := range []Compression{DefaultCompression, NoCompression, SnappyCompression, ZstdCompression} {
		for _, s := range []ChecksumType{ChecksumDefault, ChecksumCRC32C, ChecksumXXHash64} {
			out = append(out, WriterOptions{Compression: c, Checksum: s, FileNum: 7})
		}
	}
	return out
}

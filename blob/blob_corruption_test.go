package blob

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/vfs"
)

// smallBlobFile is a file of a few records, compressed and not, for tests
// that damage every byte.
func smallBlobFile(t *testing.T, sum ChecksumType) ([]byte, []record, []Index) {
	t.Helper()
	recs := []record{
		{[]byte("alpha"), []byte("one")},
		{nil, nil},
		{[]byte("gamma"), bytes.Repeat([]byte("compressible "), 20)},
		{[]byte("delta"), []byte("\x00\x01\x02\x03 not worth compressing")},
	}
	data, xs, _ := writeBlob(t, WriterOptions{Compression: ZstdCompression, Checksum: sum}, recs)
	return data, recs, xs
}

// TestEveryByteFlipDetected flips bits of every byte of a small file (with
// each checksum type): the file fails to open, or the iterator fails, or a
// Get fails, always with corruption, and no read returns data that was not
// written. VerifyFileChecksum fails as well.
func TestEveryByteFlipDetected(t *testing.T) {
	for _, sum := range []ChecksumType{ChecksumCRC32C, ChecksumXXHash64} {
		data, recs, xs := smallBlobFile(t, sum)
		for pos := range data {
			for _, mask := range []byte{0x01, 0x10, 0x80, 0xff} {
				what := fmt.Sprintf("%s: byte %d ^ %#x", sum, pos, mask)
				mut := append([]byte(nil), data...)
				mut[pos] ^= mask
				if !flipDetected(t, what, mut, recs, xs) {
					t.Fatalf("%s: damage not detected", what)
				}
			}
		}
	}
}

// flipDetected opens and reads the damaged file mut, failing t on any
// wrong data or an error other than corruption, and reports whether the
// damage was found.
func flipDetected(t *testing.T, what string, mut []byte, recs []record, xs []Index) bool {
	t.Helper()
	r, err := openBytes(mut, ReaderOptions{})
	if err != nil {
		isCorruption(t, what+": open", err)
		return true
	}
	detected := false
	for i, x := range xs {
		v, err := r.Get(x, recs[i].key)
		if err != nil {
			isCorruption(t, what+": Get", err)
			detected = true
		} else if !bytes.Equal(v, recs[i].value) {
			t.Fatalf("%s: Get %d returned wrong data %q", what, i, v)
		}
	}
	// The same through a ValueReader, in file order (from readahead
	// windows after the first reads).
	vr := r.NewValueReader(nil)
	for i, x := range xs {
		v, err := vr.Get(x, recs[i].key, false)
		if err != nil {
			isCorruption(t, what+": ValueReader.Get", err)
			detected = true
		} else if !bytes.Equal(v, recs[i].value) {
			t.Fatalf("%s: ValueReader.Get %d returned wrong data %q", what, i, v)
		}
	}
	vr.Close()
	got, _, err := iterAll(r, IterOptions{ReadaheadSize: -1})
	if err != nil {
		isCorruption(t, what+": iterator", err)
		detected = true
	}
	// What the iterator returned before it stopped was written.
	for i, rc := range got {
		if i >= len(recs) || !bytes.Equal(rc.key, recs[i].key) || !bytes.Equal(rc.value, recs[i].value) {
			t.Fatalf("%s: the iterator returned wrong record %d: %q", what, i, rc.key)
		}
	}
	// The file checksum finds every damage before the footer too, but
	// the reads must not need it.
	if err := r.VerifyFileChecksum(); err == nil {
		t.Fatalf("%s: the file checksum missed the damage", what)
	} else {
		isCorruption(t, what+": file checksum", err)
	}
	return detected
}

// TestTruncationsHaveNoFooter: every prefix of a finished file, empty
// included, is an unfinished file, and a file with bytes after its footer
// has no footer at its end either.
func TestTruncationsHaveNoFooter(t *testing.T) {
	data, _, _ := smallBlobFile(t, ChecksumCRC32C)
	for n := 0; n < len(data); n++ {
		_, err := openBytes(data[:n], ReaderOptions{})
		if !errors.Is(err, ErrNoFooter) || !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d of %d bytes: %v, want no footer", n, len(data), err)
		}
		var ce *base.CorruptionError
		if !errors.As(err, &ce) || ce.File != "b.blob" {
			t.Fatalf("truncated to %d: %v does not name the file", n, err)
		}
	}
	for _, tail := range [][]byte{{0}, []byte("garbage after the footer")} {
		if _, err := openBytes(append(append([]byte(nil), data...), tail...), ReaderOptions{}); !errors.Is(err, ErrNoFooter) {
			t.Fatalf("%d bytes after the footer: %v, want no footer", len(tail), err)
		}
	}
}

// TestUnfinishedFileHasNoFooter: a writer that stops after its buffer
// reached the file (Abort, or a crash before Close) leaves a file the
// Reader refuses as unfinished, and so does a crash before the footer was
// synced.
func TestUnfinishedFileHasNoFooter(t *testing.T) {
	rng := newRand(t)
	fs := vfs.NewMem()
	f, err := fs.Create("/u.blob")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{FileName: "u.blob"})
	for w.Size() < 3*writeBufferSize {
		if _, err := w.Add([]byte("k"), randomRecords(rng, 1)[0].value); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	data := readMem(t, fs, "/u.blob")
	if len(data) < writeBufferSize {
		t.Fatalf("the aborted writer left %d bytes", len(data))
	}
	if _, err := openBytes(data, ReaderOptions{FileName: "u.blob"}); !errors.Is(err, ErrNoFooter) {
		t.Fatalf("aborted file: %v, want no footer", err)
	}
	if _, err := w.Add([]byte("k"), nil); err == nil {
		t.Fatal("Add after Abort succeeded")
	}

	// A crash before Close's sync keeps only what was synced: nothing.
	fs2 := vfs.NewMem()
	f2, err := fs2.Create("/c.blob")
	if err != nil {
		t.Fatal(err)
	}
	w2 := NewWriter(f2, WriterOptions{})
	for i := 0; i < 100; i++ {
		if _, err := w2.Add([]byte("k"), bytes.Repeat([]byte{byte(i)}, 10000)); err != nil {
			t.Fatal(err)
		}
	}
	crashed := fs2.CrashClone()
	if _, err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.Stat("/c.blob"); err == nil {
		_, err = openBytes(readMem(t, crashed, "/c.blob"), ReaderOptions{})
		if !errors.Is(err, ErrNoFooter) {
			t.Fatalf("crashed before Close: %v, want no footer", err)
		}
	}
}

// TestForeignFilesAreCorruption: bytes that are not a blob file, or a blob
// file of a format version or with flags this reader does not know, are
// corruption, not an unfinished file.
func TestForeignFilesAreCorruption(t *testing.T) {
	data, _, _ := smallBlobFile(t, ChecksumCRC32C)
	foreign := map[string][]byte{
		"zeros": make([]byte, 200),
		"text":  bytes.Repeat([]byte("not a blob file "), 20),
		"header only": func() []byte {
			b := append([]byte(nil), data[:HeaderLen]...)
			return append(b, make([]byte, FooterLen)...)
		}(),
	}
	for _, edit := range []struct {
		name string
		at   int
		b    byte
	}{{"version 2", 8, 2}, {"checksum type 2", 12, 2}, {"compression 3", 13, 3}, {"flags", 14, 1}} {
		b := append([]byte(nil), data...)
		b[edit.at] = edit.b
		// Reseal the header, so that the field itself is what is refused.
		binary.LittleEndian.PutUint32(b[16:], block.Checksum(ChecksumCRC32C, b[:16]))
		foreign[edit.name] = b
	}
	for name, b := range foreign {
		_, err := openBytes(b, ReaderOptions{})
		isCorruption(t, name, err)
		if name != "header only" && errors.Is(err, ErrNoFooter) {
			t.Fatalf("%s: %v reported as an unfinished file", name, err)
		}
	}
}

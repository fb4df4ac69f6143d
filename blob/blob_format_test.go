package blob

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/block"
	"github.com/shaledb/shale/internal/checksum"
)

func TestIndexRoundTrip(t *testing.T) {
	rng := newRand(t)
	cases := []Index{
		{FileNum: 0, Offset: 0, Size: 0, Compression: NoCompression},
		{FileNum: 1, Offset: HeaderLen + lengthLen, Size: 1, Compression: SnappyCompression},
		{FileNum: math.MaxUint64, Offset: math.MaxUint64 - block.MaxLen - block.TrailerLen, Size: block.MaxLen, Compression: ZstdCompression},
	}
	for i := 0; i < 1000; i++ {
		cases = append(cases, Index{
			FileNum:     base.FileNum(rng.Uint64() >> rng.IntN(64)),
			Offset:      rng.Uint64() >> (1 + rng.IntN(63)),
			Size:        uint64(rng.IntN(block.MaxLen + 1)),
			Compression: []Compression{NoCompression, SnappyCompression, ZstdCompression}[rng.IntN(3)],
		})
	}
	for _, x := range cases {
		enc := EncodeIndex(nil, x)
		if len(enc) > MaxIndexLen {
			t.Fatalf("%s: encoding of %d bytes, above MaxIndexLen", x, len(enc))
		}
		if enc[0] != byte(IndexKindBlob) {
			t.Fatalf("%s: kind byte %d", x, enc[0])
		}
		got, err := DecodeIndex("t.sst", enc)
		if err != nil {
			t.Fatalf("%s: %v", x, err)
		}
		if got != x {
			t.Fatalf("decoded %s, encoded %s", got, x)
		}
		// Appending keeps what dst held.
		if enc2 := EncodeIndex([]byte("pre"), x); !bytes.Equal(enc2[3:], enc) || string(enc2[:3]) != "pre" {
			t.Fatalf("%s: EncodeIndex does not append", x)
		}
	}
}

func TestDecodeIndexRejectsMalformed(t *testing.T) {
	good := EncodeIndex(nil, Index{FileNum: 5, Offset: 300, Size: 200, Compression: SnappyCompression})
	cases := map[string][]byte{
		"empty":                     nil,
		"kind 0 (inlined ttl)":      append([]byte{0}, good[1:]...),
		"kind 2 (blob ttl)":         append([]byte{2}, good[1:]...),
		"kind 3":                    append([]byte{3}, good[1:]...),
		"kind 0xff":                 append([]byte{0xff}, good[1:]...),
		"kind only":                 {1},
		"truncated varint":          {1, 5, 0xac},
		"no size":                   {1, 5, 0xac, 0x02},
		"no compression":            {1, 5, 0xac, 0x02, 0x48},
		"compression 2":             {1, 5, 0xac, 0x02, 0x48, 2},
		"compression 0xff":          {1, 5, 0xac, 0x02, 0x48, 0xff},
		"trailing byte":             append(append([]byte(nil), good...), 0),
		"non-minimal file number":   {1, 0x85, 0x00, 0xac, 0x02, 0x48, 1},
		"non-minimal zero":          {1, 0x80, 0x00, 0xac, 0x02, 0x48, 1},
		"overflowing varint":        {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 1, 0},
		"eleven-byte varint":        {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 1, 0},
		"size above block.MaxLen":   binary.AppendUvarint([]byte{1, 5, 1}, block.MaxLen+1),
		"offset plus size overflow": binary.AppendUvarint(binary.AppendUvarint([]byte{1, 5}, math.MaxUint64-10), 10),
	}
	// The last two need their compression byte.
	cases["size above block.MaxLen"] = append(cases["size above block.MaxLen"], 0)
	cases["offset plus size overflow"] = append(cases["offset plus size overflow"], 0)
	for name, b := range cases {
		x, err := DecodeIndex("t.sst", b)
		if err == nil {
			t.Errorf("%s (%x): decoded %s", name, b, x)
			continue
		}
		isCorruption(t, name, err)
		var ce *base.CorruptionError
		if !errors.As(err, &ce) || ce.File != "t.sst" {
			t.Errorf("%s: error %v does not name the table", name, err)
		}
	}
}

// TestEncodeIndexRefusesDefaultCompression: an index whose compression is
// not one a record is stored with is a broken invariant, not an encoding.
func TestEncodeIndexRefusesDefaultCompression(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("EncodeIndex accepted DefaultCompression")
		}
	}()
	EncodeIndex(nil, Index{Compression: DefaultCompression})
}

// TestFileLayout checks the bytes of a file against the format drawn in
// doc.go: header fields, each record's length, block and trailer at the
// offsets its Index names, the footer and the file checksum.
func TestFileLayout(t *testing.T) {
	for _, o := range allOptions() {
		recs := []record{{[]byte("k1"), []byte("v1")}, {nil, nil}, {[]byte("key3"), bytes.Repeat([]byte("z"), 5000)}}
		data, xs, m := writeBlob(t, o, recs)
		wantSum, wantComp := o.Checksum, o.Compression
		if wantSum == ChecksumDefault {
			wantSum = ChecksumCRC32C
		}
		if wantComp == DefaultCompression {
			wantComp = NoCompression
		}
		if got := binary.LittleEndian.Uint64(data); got != headerMagic {
			t.Fatalf("header magic %#x", got)
		}
		if got := binary.LittleEndian.Uint32(data[8:]); got != FormatVersion {
			t.Fatalf("version %d", got)
		}
		if ChecksumType(data[12]) != wantSum {
			t.Fatalf("checksum type %d, want %s", data[12], wantSum)
		}
		if code, _ := typeCode(wantComp); data[13] != code {
			t.Fatalf("compression byte %d, want %s", data[13], wantComp)
		}
		if data[14] != 0 || data[15] != 0 {
			t.Fatalf("flags %x", data[14:16])
		}
		if got := binary.LittleEndian.Uint32(data[16:]); got != block.Checksum(wantSum, data[:16]) {
			t.Fatalf("header checksum %#x", got)
		}
		off := uint64(HeaderLen)
		var values uint64
		for i, x := range xs {
			if x.FileNum != 7 || x.Offset != off+lengthLen {
				t.Fatalf("record %d: index %s, record at %d", i, x, off)
			}
			if n := binary.LittleEndian.Uint32(data[off:]); uint64(n) != x.Size {
				t.Fatalf("record %d: length %d, index size %d", i, n, x.Size)
			}
			blk := data[x.Offset : x.Offset+x.Size+block.TrailerLen]
			if code, _ := typeCode(x.Compression); blk[x.Size] != code {
				t.Fatalf("record %d: trailer type %d, index %s", i, blk[x.Size], x.Compression)
			}
			if got := binary.LittleEndian.Uint32(blk[x.Size+1:]); got != block.Checksum(wantSum, blk[:x.Size+1]) {
				t.Fatalf("record %d: trailer checksum", i)
			}
			contents, msg := block.Decompress(blk[x.Size], blk[:x.Size])
			if msg != "" {
				t.Fatalf("record %d: %s", i, msg)
			}
			want := append(binary.AppendUvarint(nil, uint64(len(recs[i].key))), recs[i].key...)
			want = append(want, recs[i].value...)
			if !bytes.Equal(contents, want) {
				t.Fatalf("record %d: contents %q", i, contents)
			}
			if wantComp == NoCompression && x.Compression != NoCompression {
				t.Fatalf("record %d compressed with %s by a writer asked for none", i, x.Compression)
			}
			off = x.Offset + x.Size + block.TrailerLen
			values += uint64(len(recs[i].value))
		}
		if uint64(len(data)) != off+FooterLen || m.Size != uint64(len(data)) {
			t.Fatalf("records end at %d, file of %d bytes, metadata size %d", off, len(data), m.Size)
		}
		ft := data[off:]
		if binary.LittleEndian.Uint64(ft) != 3 || binary.LittleEndian.Uint64(ft[8:]) != values {
			t.Fatalf("footer counts %d blobs of %d bytes", binary.LittleEndian.Uint64(ft), binary.LittleEndian.Uint64(ft[8:]))
		}
		var fileSum uint64
		if wantSum == ChecksumXXHash64 {
			fileSum = checksum.XXHash64(data[:off])
		} else {
			fileSum = uint64(checksum.CRC32C(data[:off]))
		}
		if got := binary.LittleEndian.Uint64(ft[16:]); got != fileSum || m.FileChecksum != fileSum || m.Checksum != wantSum {
			t.Fatalf("file checksum %#x, metadata %#x (%s), want %#x", got, m.FileChecksum, m.Checksum, fileSum)
		}
		if got := binary.LittleEndian.Uint32(ft[24:]); got != block.Checksum(wantSum, ft[:24]) {
			t.Fatalf("footer checksum %#x", got)
		}
		if binary.LittleEndian.Uint64(ft[28:]) != footerMagic {
			t.Fatalf("footer magic")
		}
		if m.Count != 3 || m.ValueBytes != values || m.FileNum != 7 {
			t.Fatalf("metadata %+v", m)
		}
	}
}

// TestRoundTripEveryCompressionAndChecksum writes random records with every
// compression and checksum type and reads each back by Get, by the iterator
// and by the file checksum.
func TestRoundTripEveryCompressionAndChecksum(t *testing.T) {
	rng := newRand(t)
	for _, o := range allOptions() {
		recs := randomRecords(rng, 50+rng.IntN(100))
		data, xs, m := writeBlob(t, o, recs)
		r, err := openBytes(data, ReaderOptions{FileNum: 7})
		if err != nil {
			t.Fatalf("%s/%s: %v", o.Compression, o.Checksum, err)
		}
		p := r.Properties()
		if p.Count != uint64(len(recs)) || p.ValueBytes != m.ValueBytes || p.Size != uint64(len(data)) || p.FileChecksum != m.FileChecksum {
			t.Fatalf("properties %+v, metadata %+v", p, m)
		}
		compressed := 0
		for i, x := range xs {
			v, err := r.Get(x, recs[i].key)
			if err != nil {
				t.Fatalf("%s/%s: Get %d: %v", o.Compression, o.Checksum, i, err)
			}
			if !bytes.Equal(v, recs[i].value) {
				t.Fatalf("%s/%s: Get %d returned another value", o.Compression, o.Checksum, i)
			}
			if x.Compression != NoCompression {
				compressed++
			}
		}
		if (o.Compression == SnappyCompression || o.Compression == ZstdCompression) && compressed == 0 {
			t.Fatalf("%s: no record stored compressed", o.Compression)
		}
		got, gotXs, err := iterAll(r, IterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, got, recs)
		for i := range xs {
			if gotXs[i] != xs[i] {
				t.Fatalf("iterator index %s, writer's %s", gotXs[i], xs[i])
			}
		}
		if err := r.VerifyFileChecksum(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

// TestEmptyBlobFile: a file finished without records opens and iterates to
// nothing.
func TestEmptyBlobFile(t *testing.T) {
	data, _, m := writeBlob(t, WriterOptions{}, nil)
	if len(data) != HeaderLen+FooterLen || m.Count != 0 || m.Size != uint64(len(data)) {
		t.Fatalf("empty file of %d bytes, metadata %+v", len(data), m)
	}
	r, err := openBytes(data, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := iterAll(r, IterOptions{})
	if err != nil || len(got) != 0 {
		t.Fatalf("iterated %d records, %v", len(got), err)
	}
	if err := r.VerifyFileChecksum(); err != nil {
		t.Fatal(err)
	}
}

func TestWriterRefusesInvalidOptions(t *testing.T) {
	for _, o := range []WriterOptions{{Compression: 9}, {Checksum: 2}, {Checksum: 4}} {
		f := &discardFile{}
		w := NewWriter(f, o)
		if _, err := w.Add([]byte("k"), []byte("v")); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("%+v: Add returned %v, want invalid argument", o, err)
		}
		if _, err := w.Close(); !errors.Is(err, base.ErrInvalidArgument) {
			t.Fatalf("%+v: Close returned %v, want invalid argument", o, err)
		}
		if f.n != 0 || !f.closed {
			t.Fatalf("%+v: %d bytes written, closed %v", o, f.n, f.closed)
		}
	}
}

// TestWriterClosedRefusesAdd: Add and Close after Close are errors, not
// writes.
func TestWriterClosedRefusesAdd(t *testing.T) {
	f := &discardFile{}
	w := NewWriter(f, WriterOptions{})
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	n := f.n
	if _, err := w.Add([]byte("k"), []byte("v")); err == nil {
		t.Fatal("Add after Close succeeded")
	}
	if _, err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if f.n != n {
		t.Fatal("the writer wrote after Close")
	}
}

// TestWriterBuffersWrites: records reach the file in large writes, not one
// call per record.
func TestWriterBuffersWrites(t *testing.T) {
	f := &discardFile{}
	w := NewWriter(f, WriterOptions{})
	for i := 0; i < 10000; i++ {
		if _, err := w.Add([]byte("key"), []byte("a small value")); err != nil {
			t.Fatal(err)
		}
	}
	if f.writes > 0 {
		t.Fatalf("%d writes before the buffer filled", f.writes)
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if f.writes > 2 || f.n != int64(m.Size) || f.syncs != 1 || !f.closed {
		t.Fatalf("%d writes of %d bytes (file %d), %d syncs, closed %v", f.writes, f.n, m.Size, f.syncs, f.closed)
	}
}

// discardFile is a writable vfs.File that counts what it is asked to do.
type discardFile struct {
	bytesFile
	n             int64
	writes, syncs int
	closed        bool
}

func (f *discardFile) Write(p []byte) (int, error) {
	f.n += int64(len(p))
	f.writes++
	return len(p), nil
}
func (f *discardFile) SyncData() error { f.syncs++; return nil }
func (f *discardFile) Close() error    { f.closed = true; return nil }

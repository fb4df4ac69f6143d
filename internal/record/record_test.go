package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/checksum"
)

const testFile = "000042.log"

// payload returns a deterministic payload of n bytes with no zero byte, so
// that trailing-zero rules never blur expected torn-tail sizes.
func payload(seed, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((seed*131+i*7)%255 + 1)
	}
	return p
}

type written struct {
	file    []byte
	recs    [][]byte
	offsets []int64
	ends    []int64
}

// writeRecords frames recs, flushing after every record with probability
// flushProb.
func writeRecords(t testing.TB, recs [][]byte, rng *rand.Rand, flushProb float64) written {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	out := written{recs: recs}
	for _, r := range recs {
		off, err := w.WriteRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		out.offsets = append(out.offsets, off)
		out.ends = append(out.ends, w.Size())
		if rng != nil && rng.Float64() < flushProb {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Size() != int64(buf.Len()) {
		t.Fatalf("Size %d, file %d bytes", w.Size(), buf.Len())
	}
	out.file = buf.Bytes()
	return out
}

type readResult struct {
	recs    [][]byte
	offsets []int64
	err     error // the error that ended reading (io.EOF or other)
}

// readAll reads until the first error.
func readAll(file []byte) (readResult, *Reader) { return readAllMapped(file, 0) }

func checkPrefix(t *testing.T, got readResult, w written, n int) {
	t.Helper()
	if len(got.recs) != n {
		t.Fatalf("got %d records, want %d", len(got.recs), n)
	}
	for i := range n {
		if !bytes.Equal(got.recs[i], w.recs[i]) {
			t.Fatalf("record %d: got %d bytes, want %d bytes (content differs)", i, len(got.recs[i]), len(w.recs[i]))
		}
		if got.offsets[i] != w.offsets[i] {
			t.Fatalf("record %d: offset %d, want %d", i, got.offsets[i], w.offsets[i])
		}
	}
}

func TestRoundTripSizes(t *testing.T) {
	room := BlockSize - HeaderSize
	sizes := []int{0, 1, room, room - 1, room + 1, BlockSize, 3*BlockSize + 123, 5 * room, 0, 2, BlockSize - 2*HeaderSize - 1}
	var recs [][]byte
	for i, n := range sizes {
		recs = append(recs, payload(i, n))
	}
	for i := range 1000 {
		recs = append(recs, payload(i, i%17))
	}
	w := writeRecords(t, recs, nil, 0)
	got, r := readAll(w.file)
	if got.err != io.EOF {
		t.Fatalf("err %v, want io.EOF", got.err)
	}
	checkPrefix(t, got, w, len(recs))
	if off, dropped := r.TornTail(); dropped != 0 || off != int64(len(w.file)) {
		t.Fatalf("TornTail = %d, %d; want %d, 0", off, dropped, len(w.file))
	}
	// A record of exactly room bytes fills its block: the next starts at the
	// following block boundary, with no empty fragment in between.
	w = writeRecords(t, [][]byte{payload(0, room), payload(1, 1)}, nil, 0)
	if w.offsets[1] != BlockSize || len(w.file) != BlockSize+HeaderSize+1 {
		t.Fatalf("record after a block-filling record starts at %d", w.offsets[1])
	}
	got, _ = readAll(w.file)
	checkPrefix(t, got, w, 2)
}

func TestRandomRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	for iter := range 20 {
		n := rng.IntN(200)
		recs := make([][]byte, n)
		for i := range recs {
			var size int
			switch rng.IntN(10) {
			case 0:
				size = rng.IntN(4 * BlockSize)
			case 1:
				size = BlockSize - HeaderSize - rng.IntN(20)
			default:
				size = rng.IntN(300)
			}
			recs[i] = make([]byte, size)
			for j := range recs[i] {
				recs[i][j] = byte(rng.Uint32())
			}
		}
		w := writeRecords(t, recs, rng, 0.3)
		got, r := readAll(w.file)
		if got.err != io.EOF {
			t.Fatalf("seed %d iter %d: err %v", seed, iter, got.err)
		}
		if len(got.recs) != n {
			t.Fatalf("seed %d iter %d: %d records, want %d", seed, iter, len(got.recs), n)
		}
		for i := range n {
			if !bytes.Equal(got.recs[i], recs[i]) || got.offsets[i] != w.offsets[i] {
				t.Fatalf("seed %d iter %d: record %d differs", seed, iter, i)
			}
		}
		if n > 0 && r.EndOffset() != w.ends[n-1] {
			t.Fatalf("seed %d: EndOffset %d, want %d", seed, r.EndOffset(), w.ends[n-1])
		}
	}
}

func TestHeaderEncoding(t *testing.T) {
	// The standard CRC32C check value, to be sure the table is Castagnoli.
	if c := checksum.CRC32C([]byte("123456789")); c != 0xe3069283 {
		t.Fatalf("crc32c check value %#x", c)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if _, err := w.WriteRecord([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b) != HeaderSize+5 {
		t.Fatalf("len %d", len(b))
	}
	c := crc32.Checksum([]byte("\x01hello"), crc32.MakeTable(crc32.Castagnoli))
	want := ((c >> 15) | (c << 17)) + 0xa282ead8
	if got := binary.LittleEndian.Uint32(b); got != want {
		t.Fatalf("crc %#x, want %#x", got, want)
	}
	if binary.LittleEndian.Uint16(b[4:]) != 5 || b[6] != fullFragment || string(b[7:]) != "hello" {
		t.Fatalf("header % x", b[:7])
	}
}

func TestPaddingAndFragmentTypes(t *testing.T) {
	// The first record leaves 6 bytes in block 0: they are zero padding.
	first := payload(1, BlockSize-HeaderSize-6)
	second := payload(2, 2*BlockSize)
	w := writeRecords(t, [][]byte{first, second}, nil, 0)
	if w.offsets[1] != BlockSize {
		t.Fatalf("second record at %d, want %d", w.offsets[1], BlockSize)
	}
	if !bytes.Equal(w.file[BlockSize-6:BlockSize], make([]byte, 6)) {
		t.Fatal("padding not zero")
	}
	// second spans blocks 1..3: FIRST, MIDDLE, LAST.
	for i, want := range []byte{firstFragment, middleFragment, lastFragment} {
		if typ := w.file[(1+i)*BlockSize+6]; typ != want {
			t.Fatalf("block %d: type %d, want %d", 1+i, typ, want)
		}
	}
	got, _ := readAll(w.file)
	checkPrefix(t, got, w, 2)
}

// TestTruncateEverywhere truncates a small multi-record file at every offset:
// the reader returns exactly the records that end before the cut, then io.EOF
// with the dropped bytes, never an error.
func TestTruncateEverywhere(t *testing.T) {
	var recs [][]byte
	for i := range 12 {
		recs = append(recs, payload(i, 3+i*11))
	}
	w := writeRecords(t, recs, nil, 0)
	checkTruncation(t, w, func(yield func(int)) {
		for cut := 0; cut <= len(w.file); cut++ {
			yield(cut)
		}
	})
}

// TestTruncateMultiBlock cuts a multi-block file near every fragment and block
// boundary and at a stride in between.
func TestTruncateMultiBlock(t *testing.T) {
	recs := [][]byte{payload(0, 100), payload(1, BlockSize+500), payload(2, 10),
		payload(3, 3*BlockSize), payload(4, 7), payload(5, BlockSize-HeaderSize-3), payload(6, 50)}
	w := writeRecords(t, recs, nil, 0)
	checkTruncation(t, w, func(yield func(int)) {
		seen := map[int]bool{}
		try := func(c int) {
			if c >= 0 && c <= len(w.file) && !seen[c] {
				seen[c] = true
				yield(c)
			}
		}
		for b := 0; b <= len(w.file); b += BlockSize {
			for d := -10; d <= 10; d++ {
				try(b + d)
			}
		}
		for _, o := range append(append([]int64(nil), w.offsets...), w.ends...) {
			for d := -10; d <= 10; d++ {
				try(int(o) + d)
			}
		}
		for c := 0; c <= len(w.file); c += 397 {
			try(c)
		}
	})
}

func checkTruncation(t *testing.T, w written, cuts func(func(int))) {
	t.Helper()
	cuts(func(cut int) {
		got, r := readAll(w.file[:cut])
		if got.err != io.EOF {
			t.Fatalf("cut %d: err %v, want io.EOF", cut, got.err)
		}
		n := 0
		for n < len(w.recs) && w.ends[n] <= int64(cut) {
			n++
		}
		checkPrefix(t, got, w, n)
		off, dropped := r.TornTail()
		var wantDropped int64
		if n < len(w.recs) && int64(cut) > w.offsets[n] {
			// Trailing zeros (here: header bytes) do not count as dropped.
			wantDropped = int64(len(bytes.TrimRight(w.file[w.offsets[n]:cut], "\x00")))
			if off != w.offsets[n] {
				t.Fatalf("cut %d: torn tail at %d, want %d", cut, off, w.offsets[n])
			}
		}
		if dropped != wantDropped {
			t.Fatalf("cut %d: dropped %d, want %d", cut, dropped, wantDropped)
		}
	})
}

// TestMiddleCorruption flips every byte of the middle record of a one-block
// file: each flip is reported as corruption at that record, after the records
// before it, and Next then resumes at the record after it.
func TestMiddleCorruption(t *testing.T) {
	recs := [][]byte{payload(0, 40), payload(1, 60), payload(2, 30), payload(3, 20)}
	w := writeRecords(t, recs, nil, 0)
	for i := w.offsets[1]; i < w.ends[1]; i++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			file := bytes.Clone(w.file)
			file[i] ^= x
			got, r := readAll(file)
			var ce *base.CorruptionError
			if !errors.As(got.err, &ce) || !errors.Is(got.err, base.ErrCorruption) {
				t.Fatalf("flip %#x at %d: err %v, want corruption", x, i, got.err)
			}
			if ce.File != testFile || ce.Offset != w.offsets[1] {
				t.Fatalf("flip at %d: error names %s at %d, want %s at %d", i, ce.File, ce.Offset, testFile, w.offsets[1])
			}
			checkPrefix(t, got, w, 1)
			rec, err := r.Next()
			if err != nil || !bytes.Equal(rec, recs[2]) || r.Offset() != w.offsets[2] {
				t.Fatalf("flip at %d: after skipping got %d bytes, %v", i, len(rec), err)
			}
			if r.SkippedBytes() != w.offsets[2]-w.offsets[1] {
				t.Fatalf("flip at %d: skipped %d", i, r.SkippedBytes())
			}
		}
	}
}

// TestMultiBlockCorruption damages a MIDDLE fragment of a record spanning
// blocks, and, separately, the length field of a record whose successors are
// in later blocks only.
func TestMultiBlockCorruption(t *testing.T) {
	recs := [][]byte{payload(0, 10), payload(1, 3*BlockSize), payload(2, 5), payload(3, 2*BlockSize)}
	w := writeRecords(t, recs, nil, 0)

	file := bytes.Clone(w.file)
	file[2*BlockSize+100] ^= 0x10 // inside the record's second fragment
	got, r := readAll(file)
	var ce *base.CorruptionError
	if !errors.As(got.err, &ce) || ce.Offset != 2*BlockSize {
		t.Fatalf("err %v, want corruption at %d", got.err, 2*BlockSize)
	}
	checkPrefix(t, got, w, 1)
	if off, _ := r.TornTail(); off != w.offsets[1] {
		t.Fatalf("TornTail offset %d, want %d", off, w.offsets[1])
	}
	rec, err := r.Next()
	if err != nil || !bytes.Equal(rec, recs[2]) {
		t.Fatalf("resume: %v", err)
	}

	file = bytes.Clone(w.file)
	file[w.offsets[2]+5] = 0x7f // length of record 2 now crosses its block
	got, _ = readAll(file)
	if !errors.As(got.err, &ce) || ce.Offset != w.offsets[2] {
		t.Fatalf("err %v, want corruption at %d", got.err, w.offsets[2])
	}
	checkPrefix(t, got, w, 2)
}

// TestLastRecordDamageIsReported flips every byte of the last record: the
// Reader ends the log there (io.EOF, TornTail naming the record), and since
// every byte of the record is present, TailDamage reports each flip, in the
// checksum, the length, the type or the payload. Cuts are torn writes.
func TestLastRecordDamageIsReported(t *testing.T) {
	recs := [][]byte{payload(0, 40), payload(1, 60), payload(2, 30)}
	w := writeRecords(t, recs, nil, 0)
	for i := w.offsets[2]; i < w.ends[2]; i++ {
		for _, x := range []byte{0x01, 0x10, 0x55, 0xff} {
			file := bytes.Clone(w.file)
			file[i] ^= x
			got, r := readAll(file)
			if got.err != io.EOF {
				t.Fatalf("flip %#x at %d: err %v, want io.EOF", x, i, got.err)
			}
			checkPrefix(t, got, w, 2)
			off, dropped := r.TornTail()
			if off != w.offsets[2] || dropped != w.ends[2]-w.offsets[2] {
				t.Fatalf("flip %#x at %d: TornTail %d, %d", x, i, off, dropped)
			}
			var ce *base.CorruptionError
			if err := r.TailDamage(); !errors.As(err, &ce) || ce.File != testFile || ce.Offset != w.offsets[2] {
				t.Fatalf("flip %#x at header byte %d: TailDamage %v, want corruption at %d", x, i-w.offsets[2], err, w.offsets[2])
			}
		}
	}
	// Truncation is a torn write, never damage.
	for cut := w.offsets[2] + 1; cut < w.ends[2]; cut++ {
		if _, r := readAll(w.file[:cut]); r.TailDamage() != nil {
			t.Fatalf("cut at %d reported as damage: %v", cut, r.TailDamage())
		}
	}
	// A multi-block last record whose LAST fragment is damaged.
	recs = append(recs, payload(3, 2*BlockSize))
	w = writeRecords(t, recs, nil, 0)
	file := bytes.Clone(w.file)
	file[len(file)-1] ^= 1
	got, r := readAll(file)
	if got.err != io.EOF {
		t.Fatalf("err %v", got.err)
	}
	checkPrefix(t, got, w, 3)
	if off, dropped := r.TornTail(); off != w.offsets[3] || dropped != int64(len(file))-w.offsets[3] {
		t.Fatalf("TornTail %d, %d", off, dropped)
	}
	if err := r.TailDamage(); err == nil || !strings.Contains(err.Error(), "complete but fails its checksum") ||
		!strings.Contains(err.Error(), "its fragment at offset") {
		t.Fatalf("a flipped bit in a whole LAST fragment: TailDamage %v", err)
	}
	// Zeros where sectors never reached the disk: a torn write.
	file = bytes.Clone(w.file)
	z := (int64(len(file)) - 1024) &^ 511
	clear(file[z : z+512])
	if _, r := readAll(file); r.TailDamage() != nil {
		t.Fatalf("a zeroed sector in the last fragment is reported as damage: %v", r.TailDamage())
	}
}

// TestTailDamageRule walks the rule of the package documentation case by
// case on a last record that crosses sector boundaries.
func TestTailDamageRule(t *testing.T) {
	// Record 1 ends at 400; record 2 (1500 bytes) runs from 400 to 1907,
	// over the sector boundaries at 512, 1024 and 1536.
	recs := [][]byte{payload(0, 400-HeaderSize), payload(1, 1500)}
	w := writeRecords(t, recs, nil, 0)
	start, end := int(w.offsets[1]), int(w.ends[1])
	if start != 400 || end != 1907 {
		t.Fatalf("layout: record 2 at [%d, %d)", start, end)
	}
	zero := func(b []byte, from, to int) []byte { clear(b[from:to]); return b }
	for _, tc := range []struct {
		name  string
		file  func(b []byte) []byte
		torn  bool
		match string // in the damage
	}{
		{"cut in the header", func(b []byte) []byte { return b[:start+3] }, true, ""},
		{"cut in the payload", func(b []byte) []byte { return b[:1000] }, true, ""},
		{"cut at a sector boundary", func(b []byte) []byte { return b[:1024] }, true, ""},
		{"zeros from a sector boundary to the end", func(b []byte) []byte { return zero(b, 1024, end) }, true, ""},
		{"a zeroed sector in the middle", func(b []byte) []byte { return zero(b, 1024, 1536) }, true, ""},
		{"zeros from a sector boundary, then preallocated zeros", func(b []byte) []byte {
			return append(zero(b, 1536, end), make([]byte, 4096)...)
		}, true, ""},
		{"zeros in the middle not covering a sector", func(b []byte) []byte { return zero(b, 1030, 1530) }, false, "checksum"},
		{"zeros of the last sector, but not to the end of the file", func(b []byte) []byte {
			return append(zero(b, 1536, end), payload(5, 20)...)
		}, false, "checksum"},
		{"a flipped bit with preallocated zeros after", func(b []byte) []byte {
			b[1200] ^= 4
			return append(b, make([]byte, 4096)...)
		}, false, "checksum"},
		{"a length flip that makes the record run past the end of the file", func(b []byte) []byte {
			b[start+4] ^= 0x20 // 1500 = 0x05dc becomes 1532
			return b
		}, false, "length field is damaged"},
		{"a length flip that makes the record run into preallocated zeros", func(b []byte) []byte {
			b[start+5] ^= 0x10
			return append(b, make([]byte, 8192)...)
		}, false, "length field is damaged"},
		{"a length flip past the block", func(b []byte) []byte { b[start+5] ^= 0x80; return b }, false, "runs past its block"},
		{"an unknown type", func(b []byte) []byte { b[start+6] = 9; return b }, false, "unknown fragment type"},
		{"a zero type in written data", func(b []byte) []byte { b[start+6] = 0; return b }, false, "unknown fragment type"},
		{"a zeroed header in written data", func(b []byte) []byte { return zero(b, start, start+HeaderSize) }, false, "zeroed fragment header"},
		{"garbage after the last record", func(b []byte) []byte { return append(b, payload(7, 300)...) }, false, "the record was written whole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r := readAll(tc.file(bytes.Clone(w.file)))
			if got.err != io.EOF {
				t.Fatalf("err %v, want io.EOF", got.err)
			}
			err := r.TailDamage()
			if _, dropped := r.TornTail(); dropped == 0 {
				t.Fatal("nothing dropped")
			}
			if tc.torn {
				if err != nil {
					t.Fatalf("a torn append is reported as damage: %v", err)
				}
				return
			}
			if !errors.Is(err, base.ErrCorruption) || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("TailDamage %v, want damage mentioning %q", err, tc.match)
			}
		})
	}
}

func TestZeroTail(t *testing.T) {
	recs := [][]byte{payload(0, 40), payload(1, BlockSize), payload(2, 30)}
	w := writeRecords(t, recs, nil, 0)
	for _, zeros := range []int{1, 6, 7, 100, 3 * BlockSize} {
		file := append(bytes.Clone(w.file), make([]byte, zeros)...)
		got, r := readAll(file)
		if got.err != io.EOF {
			t.Fatalf("%d zeros: err %v", zeros, got.err)
		}
		checkPrefix(t, got, w, 3)
		if off, dropped := r.TornTail(); off != int64(len(w.file)) || dropped != 0 {
			t.Fatalf("%d zeros: TornTail %d, %d", zeros, off, dropped)
		}
	}
	// A half-written multi-block record followed by zeros is a torn tail.
	file := append(bytes.Clone(w.file[:w.offsets[1]+BlockSize]), make([]byte, 2*BlockSize)...)
	got, r := readAll(file)
	if got.err != io.EOF {
		t.Fatalf("err %v", got.err)
	}
	checkPrefix(t, got, w, 1)
	if off, dropped := r.TornTail(); off != w.offsets[1] || dropped != BlockSize {
		t.Fatalf("TornTail %d, %d", off, dropped)
	}
	// Zeros in the middle, with a record after them, are corruption.
	file = append(bytes.Clone(w.file), make([]byte, BlockSize-len(w.file)%BlockSize)...)
	file = append(file, writeRecords(t, [][]byte{payload(9, 5)}, nil, 0).file...)
	got, _ = readAll(file)
	if !errors.Is(got.err, base.ErrCorruption) {
		t.Fatalf("err %v, want corruption", got.err)
	}
}

func TestGarbageTail(t *testing.T) {
	recs := [][]byte{payload(0, 40)}
	w := writeRecords(t, recs, nil, 0)
	file := append(bytes.Clone(w.file), payload(7, 3000)...)
	got, r := readAll(file)
	if got.err != io.EOF {
		t.Fatalf("err %v", got.err)
	}
	checkPrefix(t, got, w, 1)
	if off, dropped := r.TornTail(); off != w.ends[0] || dropped != 3000 {
		t.Fatalf("TornTail %d, %d", off, dropped)
	}
	// No writer wrote those bytes, and a crash leaves zeros, not others.
	if !errors.Is(r.TailDamage(), base.ErrCorruption) {
		t.Fatalf("garbage after the last record: TailDamage %v", r.TailDamage())
	}
}

// frag builds one fragment by hand.
func frag(typ byte, p []byte) []byte {
	b := []byte{0, 0, 0, 0, byte(len(p)), byte(len(p) >> 8), typ}
	b = append(b, p...)
	binary.LittleEndian.PutUint32(b, checksum.MaskedCRC32C(b[6:]))
	return b
}

func TestBadSequences(t *testing.T) {
	good := frag(fullFragment, []byte("good"))
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name    string
		file    []byte
		records int   // records before the error
		corrOff int64 // -1: torn tail expected
	}{
		{"orphan middle", cat(good, frag(middleFragment, []byte("m")), good), 1, 11},
		{"orphan last", cat(good, frag(lastFragment, []byte("l")), good), 1, 11},
		{"full inside record", cat(good, frag(firstFragment, []byte("f")), good), 1, 11},
		{"first inside record", cat(frag(firstFragment, []byte("f")), frag(firstFragment, []byte("g")), frag(lastFragment, []byte("h"))), 0, 0},
		{"unknown type", cat(good, frag(9, []byte("x")), good), 1, 11},
		{"zero type", cat(good, frag(0, []byte("x")), good), 1, 11},
		{"orphan at end", cat(good, frag(lastFragment, []byte("l"))), 1, -1},
		{"unfinished record", cat(good, frag(firstFragment, []byte("f")), frag(middleFragment, []byte("m"))), 1, -1},
		{"truncated header", cat(good, []byte{1, 2, 3}), 1, -1},
	} {
		// Of the tails, only a valid fragment out of place is damage: the
		// others end where the file does.
		wantDamage := tc.name == "orphan at end"
		got, r := readAll(tc.file)
		if len(got.recs) != tc.records {
			t.Errorf("%s: %d records, want %d", tc.name, len(got.recs), tc.records)
		}
		var ce *base.CorruptionError
		switch {
		case tc.corrOff < 0:
			if got.err != io.EOF {
				t.Errorf("%s: err %v, want io.EOF", tc.name, got.err)
			}
			if _, dropped := r.TornTail(); dropped == 0 {
				t.Errorf("%s: nothing dropped", tc.name)
			}
			if (r.TailDamage() != nil) != wantDamage {
				t.Errorf("%s: TailDamage %v", tc.name, r.TailDamage())
			}
		case !errors.As(got.err, &ce) || ce.Offset != tc.corrOff || ce.File != testFile:
			t.Errorf("%s: err %v, want corruption at %d", tc.name, got.err, tc.corrOff)
		}
	}
}

type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	p = p[:min(len(p), f.n)]
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func TestReadErrorIsNotCorruption(t *testing.T) {
	w := writeRecords(t, [][]byte{payload(0, 10), payload(1, 2*BlockSize)}, nil, 0)
	boom := errors.New("disk on fire")
	r := NewReader(&failingReader{r: bytes.NewReader(w.file), n: BlockSize + 3, err: boom}, testFile)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Next(); !errors.Is(err, boom) || errors.Is(err, base.ErrCorruption) {
			t.Fatalf("err %v, want %v", err, boom)
		}
	}
}

type failingWriter struct{ fail bool }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("no space")
	}
	return len(p), nil
}

func TestWriterErrorIsSticky(t *testing.T) {
	fw := &failingWriter{fail: true}
	w := NewWriter(fw)
	if _, err := w.WriteRecord([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush succeeded")
	}
	fw.fail = false
	if _, err := w.WriteRecord([]byte("b")); err == nil {
		t.Fatal("WriteRecord after failed Flush succeeded")
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush after failed Flush succeeded")
	}
}

func TestNoAllocs(t *testing.T) {
	w := NewWriter(io.Discard)
	p := payload(0, 100)
	allocs := testing.AllocsPerRun(1000, func() {
		for range 10 {
			if _, err := w.WriteRecord(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("writer: %v allocs per group", allocs)
	}
	var recs [][]byte
	for i := range 2000 {
		recs = append(recs, payload(i, 100+i%3*BlockSize/2))
	}
	file := writeRecords(t, recs, nil, 0).file
	r := NewReader(bytes.NewReader(file), testFile)
	if _, err := r.Next(); err != nil { // warm up buffers
		t.Fatal(err)
	}
	allocs = testing.AllocsPerRun(500, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.1 { // the record assembly buffer may grow once or twice
		t.Fatalf("reader: %v allocs per record", allocs)
	}
}

// TestTornSectorAtFragmentEdgeIsTorn: a power loss that writes some sectors of
// the last record and not others leaves zeros where the unwritten sectors
// are. When such a sector is only partly covered by the fragment (the
// fragment ends, or its header begins, inside it), the fragment holds fewer
// than 512 zero bytes, but the damage is still a torn write, not bit rot: a
// MANIFEST with it must open.
func TestTornSectorAtFragmentEdgeIsTorn(t *testing.T) {
	// Record 1 ends at 400 + headers; record 2 (300 bytes) crosses the
	// sector boundary at 512.
	recs := [][]byte{payload(0, 400-HeaderSize), payload(1, 300)}
	w := writeRecords(t, recs, nil, 0)
	if w.offsets[1] >= 512 || w.ends[1] <= 512 || w.ends[1] >= 1024 {
		t.Fatalf("layout: record 2 at [%d, %d) does not cross 512", w.offsets[1], w.ends[1])
	}
	// Sector 1 never written: the bytes of record 2 past 512 are zeros.
	file := bytes.Clone(w.file)
	clear(file[512:])
	got, r := readAll(file)
	if got.err != io.EOF {
		t.Fatalf("err %v, want io.EOF", got.err)
	}
	checkPrefix(t, got, w, 1)
	if r.TailDamage() != nil {
		t.Fatalf("a record whose end lies in a sector never written is reported as damage: %v", r.TailDamage())
	}
	// Sector 0 never rewritten after record 1 was synced, sector 1 written:
	// the first bytes of a header that straddles 512 are zeros.
	recs = [][]byte{payload(0, 508-HeaderSize), payload(1, 300)} // record 2's header at 508..515
	w = writeRecords(t, recs, nil, 0)
	if w.offsets[1] != 508 {
		t.Fatalf("layout: record 2 at %d, want 508", w.offsets[1])
	}
	file = bytes.Clone(w.file)
	clear(file[508:512])
	got, r = readAll(file)
	if got.err != io.EOF {
		t.Fatalf("err %v, want io.EOF", got.err)
	}
	checkPrefix(t, got, w, 1)
	if r.TailDamage() != nil {
		t.Fatalf("a header whose first sector was never written is reported as damage: %v", r.TailDamage())
	}
	// A flipped bit in the same record is still bit rot.
	file = bytes.Clone(w.file)
	file[w.ends[1]-10] ^= 4
	if _, r := readAll(file); r.TailDamage() == nil {
		t.Fatal("a flipped bit is not reported as damage")
	}
}

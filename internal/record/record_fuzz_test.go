package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/fuzzseed"
)

// readerEvent is one result of Reader.Next, for comparing two readers.
type readerEvent struct {
	rec      string
	off, end int64
	err      string
}

// FuzzReader feeds arbitrary bytes to the Reader: it must never panic or
// loop, everything it reports must lie inside the file, and reading the
// same bytes one byte per Read must give the same records, errors and torn
// tail. The multi-block seeds make input minimization slow; fuzz with
// -fuzzminimizetime=1s (as .ci/fuzz.sh does).
func FuzzReader(f *testing.F) {
	w := writeRecords(f, [][]byte{payload(0, 10), payload(1, BlockSize+10), payload(2, 3)}, nil, 0)
	f.Add(w.file)
	f.Add(w.file[:len(w.file)-5])
	f.Add(append(bytes.Clone(w.file[:20]), w.file[40:]...))
	f.Add(frag(firstFragment, []byte("abc")))
	f.Add([]byte{})
	// A record ending 6 bytes before a block boundary: the next fragment
	// starts after zero padding. (Multi-block seeds live here rather than
	// in testdata, to keep the corpus small.)
	f.Add(writeRecords(f, [][]byte{payload(6, BlockSize-HeaderSize-6), payload(7, 20)}, nil, 0).file)
	f.Fuzz(func(t *testing.T, data []byte) {
		events, tornOff, tornDropped := readAllEvents(t, bytes.NewReader(data), len(data))
		ev2, off2, dropped2 := readAllEvents(t, iotest.OneByteReader(bytes.NewReader(data)), len(data))
		if fmt.Sprint(events) != fmt.Sprint(ev2) || tornOff != off2 || tornDropped != dropped2 {
			t.Fatalf("reading whole blocks and single bytes differ:\n%v torn %d+%d\n%v torn %d+%d",
				events, tornOff, tornDropped, ev2, off2, dropped2)
		}
	})
}

func readAllEvents(t *testing.T, src io.Reader, size int) (events []readerEvent, tornOff, tornDropped int64) {
	r := NewReader(src, testFile)
	lastOff := int64(-1)
	// Each call returns a record, skips damage to an intact record, or
	// ends; so the number of calls is bounded by the file size.
	for calls := 0; ; calls++ {
		if calls > 2*size+2 {
			t.Fatalf("no progress after %d calls", calls)
		}
		rec, err := r.Next()
		if err == io.EOF {
			off, dropped := r.TornTail()
			if off < 0 || dropped < 0 || off+dropped > int64(size) {
				t.Fatalf("TornTail %d, %d of %d bytes", off, dropped, size)
			}
			// Damage is judged only of a tail that was dropped, and names
			// where it begins.
			if dmg := r.TailDamage(); dmg != nil {
				var ce *base.CorruptionError
				if dropped == 0 || !errors.As(dmg, &ce) || ce.File != testFile || ce.Offset != off {
					t.Fatalf("TailDamage %v with TornTail %d, %d", dmg, off, dropped)
				}
				events = append(events, readerEvent{err: dmg.Error()})
			}
			return events, off, dropped
		}
		if err != nil {
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || ce.File != testFile || ce.Offset < 0 || ce.Offset > int64(size) {
				t.Fatalf("unexpected error %v", err)
			}
			events = append(events, readerEvent{err: err.Error()})
			continue
		}
		if r.Offset() <= lastOff || r.EndOffset() > int64(size) || int64(len(rec)) > r.EndOffset()-r.Offset() {
			t.Fatalf("record at %d..%d after %d", r.Offset(), r.EndOffset(), lastOff)
		}
		lastOff = r.Offset()
		events = append(events, readerEvent{rec: string(rec), off: r.Offset(), end: r.EndOffset()})
	}
}

// FuzzWriterReader writes records split out of the input, then cuts the
// file at a point the input chooses: the Reader must return every record
// written before the cut, in order, and then end cleanly (a cut is a torn
// tail, never corruption).
func FuzzWriterReader(f *testing.F) {
	f.Add([]byte("a\x00bb\x00\x00ccc"), uint32(0), uint16(1))
	f.Add([]byte("x"), uint32(40), uint16(3000))
	f.Fuzz(func(t *testing.T, data []byte, cut uint32, scale uint16) {
		var recs [][]byte
		for _, p := range bytes.Split(data, []byte{0}) {
			// scale stretches records across block boundaries.
			recs = append(recs, bytes.Repeat(p, 1+int(scale)%4096))
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		var ends []int64
		for _, r := range recs {
			if _, err := w.WriteRecord(r); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			ends = append(ends, int64(buf.Len()))
		}
		file := buf.Bytes()
		n := int64(cut) % (int64(len(file)) + 1)
		r := NewReader(bytes.NewReader(file[:n]), testFile)
		for i, end := range ends {
			rec, err := r.Next()
			if end > n {
				if err != io.EOF {
					t.Fatalf("record %d ends at %d past the cut at %d: got %d bytes, %v", i, end, n, len(rec), err)
				}
				return
			}
			if err != nil || !bytes.Equal(rec, recs[i]) {
				t.Fatalf("record %d (%d bytes): got %d bytes, %v", i, len(recs[i]), len(rec), err)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the last record: %v", err)
		}
	})
}

// TestWriteFuzzSeeds writes the small FuzzReader seed corpus into testdata/fuzz
// when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it checks that it exists.
func TestWriteFuzzSeeds(t *testing.T) {
	small := writeRecords(t, [][]byte{[]byte("first"), []byte("second record"), []byte("3rd")}, nil, 0).file
	damaged := bytes.Clone(small)
	damaged[HeaderSize+1] ^= 0xff // the first record: damage followed by intact records
	zeroTail := append(bytes.Clone(small), make([]byte, 40)...)
	fuzzseed.Sync(t, map[string][][]any{
		"FuzzReader": {{small}, {damaged}, {zeroTail}, {small[:len(small)-2]},
			{append(frag(middleFragment, []byte("m")), frag(lastFragment, []byte("l"))...)}},
		"FuzzWriterReader": {{[]byte("a\x00bb\x00\x00ccc"), uint32(1 << 20), uint16(9)},
			{[]byte("x\x00y"), uint32(BlockSize + 9), uint16(BlockSize / 2)}},
	})
}

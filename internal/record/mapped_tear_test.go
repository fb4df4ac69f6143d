package record

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/shaledb/shale/internal/base"
)

// readAllMapped reads every record of file, with SetMappedWriteUnit(unit)
// (0: off, readAll).
func readAllMapped(file []byte, unit int64) (readResult, *Reader) {
	r := NewReader(bytes.NewReader(file), testFile)
	r.SetMappedWriteUnit(unit)
	var res readResult
	for {
		rec, err := r.Next()
		if err != nil {
			res.err = err
			return res, r
		}
		res.recs = append(res.recs, append([]byte(nil), rec...))
		res.offsets = append(res.offsets, r.Offset())
	}
}

// TestMappedTearIsTorn: a file written through a mapping of unit-sized
// windows whose last copy was cut at any byte (a prefix of the records,
// zeros to the window's end) is a torn tail with SetMappedWriteUnit,
// while without it some of those cuts read as damage; damage of a record
// written whole is still reported.
func TestMappedTearIsTorn(t *testing.T) {
	const unit = 2 * BlockSize
	recs := [][]byte{payload(0, 40), payload(1, 300), payload(2, BlockSize+500), payload(3, 90)}
	w := writeRecords(t, recs, nil, 0)
	if len(w.file) > unit {
		t.Fatalf("records of %d bytes do not fit the window", len(w.file))
	}
	damagedWithout := 0
	// Every byte of the second record, then every 7th.
	step := func(cut int64) int64 {
		if cut < w.ends[1] {
			return 1
		}
		return 7
	}
	for cut := w.offsets[1] + 1; cut < int64(len(w.file)); cut += step(cut) {
		file := make([]byte, unit)
		copy(file, w.file[:cut])
		got, r := readAllMapped(file, unit)
		if got.err != io.EOF {
			t.Fatalf("cut at %d: err %v", cut, got.err)
		}
		if err := r.TailDamage(); err != nil {
			t.Fatalf("cut at %d: TailDamage %v, want a torn tail", cut, err)
		}
		n := 0
		for n < len(w.ends) && w.ends[n] <= cut {
			n++
		}
		checkPrefix(t, got, w, n)
		if _, r := readAll(file); r.TailDamage() != nil {
			damagedWithout++
		}
	}
	if damagedWithout == 0 {
		t.Fatal("every cut is torn by the sector rule alone: the test shows nothing")
	}
	// A flipped byte in a record followed by intact ones is damage whatever
	// the file's size.
	file := make([]byte, unit)
	copy(file, w.file)
	file[w.offsets[1]+50] ^= 0x10
	got, r := readAllMapped(file, unit)
	var ce *base.CorruptionError
	if !errors.As(got.err, &ce) && !errors.As(r.TailDamage(), &ce) {
		t.Fatalf("a flipped byte amid intact records: err %v, TailDamage %v; want corruption", got.err, r.TailDamage())
	}
}

// TestMappedWholeRecordDamageIsReported: in a file grown ahead of its
// records (a zero-filled or mapped WAL), the last record present to its
// last byte and damaged — a flipped payload byte, or a length field made
// larger, which would look cut — is damage, not a torn copy; the same
// record cut inside its header or payload is torn.
func TestMappedWholeRecordDamageIsReported(t *testing.T) {
	const unit = 2 * BlockSize
	recs := [][]byte{payload(0, 40), payload(1, 300)}
	for i := range recs[1] {
		recs[1][i] |= 1 // no zero byte: the record's end is its last non-zero byte
	}
	w := writeRecords(t, recs, nil, 0)
	grown := func() []byte {
		file := make([]byte, unit)
		copy(file, w.file)
		return file
	}
	last := w.offsets[1]
	for _, tc := range []struct {
		name   string
		damage func(f []byte)
	}{
		{"payload byte", func(f []byte) { f[last+HeaderSize+100] ^= 0x40 }},
		{"last byte", func(f []byte) { f[w.ends[1]-1] ^= 0x02 }},
		{"length made larger", func(f []byte) { f[last+4] ^= 0x80 }},
	} {
		file := grown()
		tc.damage(file)
		_, r := readAllMapped(file, unit)
		var ce *base.CorruptionError
		if !errors.As(r.TailDamage(), &ce) {
			t.Errorf("%s: TailDamage %v, want damage", tc.name, r.TailDamage())
		}
	}
	for _, cut := range []int64{last + 3, last + HeaderSize + 1, last + HeaderSize + 150, w.ends[1] - 1} {
		file := grown()
		clear(file[cut:])
		got, r := readAllMapped(file, unit)
		if got.err != io.EOF || r.TailDamage() != nil || len(got.recs) != 1 {
			t.Errorf("cut at %d: %d records, err %v, TailDamage %v; want the first record and a torn tail", cut, len(got.recs), got.err, r.TailDamage())
		}
	}
}

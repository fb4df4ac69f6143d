package stresslog

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shale/internal/checksum"
	"github.com/shaledb/shale/vfs"
)

// writeRandomLog writes n batches to a log on a MemFS, acking all but
// (when inFlight) the last, and returns the file bytes and what was written.
func writeRandomLog(t *testing.T, rng *rand.Rand, n int, inFlight bool) ([]byte, []Batch) {
	t.Helper()
	fs := vfs.NewMem()
	w, err := Create(fs, "/log")
	if err != nil {
		t.Fatal(err)
	}
	var want []Batch
	for seq := uint64(1); seq <= uint64(n); seq++ {
		ops := make([]Op, 1+rng.IntN(6))
		for i := range ops {
			ops[i] = Op{Kind: OpKind(1 + rng.IntN(3)), Key: rng.Uint32() >> rng.IntN(32), Arg: rng.Uint32() >> rng.IntN(32)}
		}
		if err := w.Pending(seq, ops); err != nil {
			t.Fatal(err)
		}
		b := Batch{Seq: seq, Ops: ops}
		if seq < uint64(n) || !inFlight {
			if err := w.Acked(seq); err != nil {
				t.Fatal(err)
			}
			b.Acked = true
		}
		want = append(want, b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Read(fs, "/log")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Batches, want) && !(len(want) == 0 && len(l.Batches) == 0) {
		t.Fatalf("read back %+v, want %+v", l.Batches, want)
	}
	if l.Torn {
		t.Fatal("a whole log reads as torn")
	}
	f, _ := fs.Open("/log")
	size, _ := f.Size()
	data := make([]byte, size)
	f.ReadAt(data, 0)
	f.Close()
	return data, want
}

func TestRoundTripAndEveryTornTail(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for iter := 0; iter < 20; iter++ {
		data, want := writeRandomLog(t, rng, rng.IntN(8), rng.IntN(2) == 0)
		// Every prefix of the file is what a kill could leave: it must read
		// as a prefix of the records, marked torn unless it ends at a
		// record boundary.
		bounds := recordBounds(t, data)
		for cut := 0; cut <= len(data); cut++ {
			l, err := Decode("log", data[:cut])
			if err != nil {
				t.Fatalf("seed %d: prefix of %d bytes: %v", seed, cut, err)
			}
			whole := bounds[cut]
			if l.Torn == whole {
				t.Fatalf("seed %d: prefix of %d bytes: torn=%v, at a record boundary=%v", seed, cut, l.Torn, whole)
			}
			if !isPrefix(l.Batches, want) {
				t.Fatalf("seed %d: prefix of %d bytes read %+v, not a prefix of %+v", seed, cut, l.Batches, want)
			}
		}
	}
}

// recordBounds returns the offsets at which a record (or the header) ends.
func recordBounds(t *testing.T, data []byte) map[int]bool {
	b := map[int]bool{0: true, headerLen: true}
	for off := headerLen; off < len(data); {
		n, _ := decodeLength(binary.LittleEndian.Uint32(data[off+4:]))
		off += recHeaderLen + n
		b[off] = true
	}
	return b
}

// isPrefix reports whether got is want cut somewhere, where the last batch of
// got may have lost its ack (the ack record was cut off).
func isPrefix(got, want []Batch) bool {
	if len(got) > len(want) {
		return false
	}
	for i, g := range got {
		w := want[i]
		if i == len(got)-1 && !g.Acked {
			w.Acked = false
		}
		if !reflect.DeepEqual(g, w) {
			return false
		}
	}
	return true
}

func TestDamageInTheMiddleIsAnError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data, _ := writeRandomLog(t, rng, 5, false)
	bounds := recordBounds(t, data)
	for off := 0; off < len(data); off++ {
		bad := append([]byte(nil), data...)
		bad[off] ^= 0x40
		l, err := Decode("log", bad)
		if err == nil {
			// Only a flip inside the last record can read as a torn tail.
			last := 0
			for b := range bounds {
				if b < len(data) {
					last = max(last, b)
				}
			}
			if off < last || !l.Torn {
				t.Fatalf("flip at %d of %d: no error (torn=%v)", off, len(data), l.Torn)
			}
			continue
		}
		if !strings.HasPrefix(err.Error(), "shale: stresslog: log: ") {
			t.Fatalf("flip at %d: error %q does not name the file", off, err)
		}
	}
}

// record frames a payload as Writer does.
func record(payload ...byte) []byte {
	p := make([]byte, recHeaderLen, recHeaderLen+len(payload))
	p = append(p, payload...)
	binary.LittleEndian.PutUint32(p[4:8], encodeLength(len(payload)))
	binary.LittleEndian.PutUint32(p[0:4], checksum.CRC32C(p[4:]))
	return p
}

func TestOutOfOrderRecordsAreErrors(t *testing.T) {
	hdr := append([]byte(magic), version)
	pending := func(seq byte) []byte { return record('P', seq, 1, byte(OpPut), 5, 10) }
	ack := func(seq byte) []byte { return record('A', seq) }
	cat := func(parts ...[]byte) []byte {
		out := append([]byte(nil), hdr...)
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for name, data := range map[string][]byte{
		"two pendings":      cat(pending(1), pending(2)),
		"seq gap":           cat(pending(1), ack(1), pending(3)),
		"ack of another":    cat(pending(1), ack(2)),
		"ack without batch": cat(ack(1)),
		"double ack":        cat(pending(1), ack(1), ack(1)),
		"unknown type":      cat(record('X', 1)),
		"unknown op kind":   cat(record('P', 1, 1, 9, 5, 10)),
		"trailing bytes":    cat(record('A', 1, 0)),
		"bad magic":         append([]byte("xxSTRESS"), version),
		"bad version":       append([]byte(magic), 7),
		"zero length":       cat(make([]byte, recHeaderLen+4)),
	} {
		if _, err := Decode("log", data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	l, err := Decode("log", cat(pending(1), ack(1), pending(2)))
	if err != nil {
		t.Fatal(err)
	}
	if f := l.InFlight(); f == nil || f.Seq != 2 || len(l.Batches) != 2 || !l.Batches[0].Acked {
		t.Fatalf("in flight %+v of %+v", f, l.Batches)
	}
}

func TestWriterRejectsOutOfOrderCalls(t *testing.T) {
	w, err := Create(vfs.NewMem(), "/log")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Acked(1); err == nil {
		t.Error("ack before pending accepted")
	}
	if err := w.Pending(2, nil); err == nil {
		t.Error("pending 2 first accepted")
	}
	if err := w.Pending(1, []Op{{OpPut, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Acked(2); err == nil {
		t.Error("ack of 2 while 1 pending accepted")
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	w, err := Create(vfs.NewMem(), "/log")
	if err != nil {
		t.Fatal(err)
	}
	ops := []Op{{OpPut, 1, 100}, {OpDeleteRange, 3, 9}}
	seq := uint64(0)
	allocs := testing.AllocsPerRun(100, func() {
		seq++
		w.Pending(seq, ops)
		w.Acked(seq)
	})
	// MemFS itself copies the bytes it is given; the framing adds nothing.
	if allocs > 2 {
		t.Fatalf("%.1f allocations per batch", allocs)
	}
}

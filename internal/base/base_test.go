package base

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestInternalKeyEncodingAndOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []InternalKey
	for i := 0; i < 2000; i++ {
		uk := make([]byte, rng.IntN(4))
		for j := range uk {
			uk[j] = byte(rng.IntN(3))
		}
		kinds := []Kind{KindDelete, KindSet, KindMerge, KindSingleDelete, KindRangeDelete, KindBlobIndex}
		k := MakeInternalKey(uk, SeqNum(rng.Uint64N(uint64(SeqNumMax)+1)), kinds[rng.IntN(len(kinds))])
		enc := k.AppendEncoded(nil)
		dec, ok := DecodeInternalKey(enc)
		if !ok || !bytes.Equal(dec.UserKey, k.UserKey) || dec.Trailer != k.Trailer || dec.SeqNum() != k.SeqNum() || dec.Kind() != k.Kind() {
			t.Fatalf("round trip of %s gave %s", k, dec)
		}
		keys = append(keys, k)
	}
	for i := 0; i < len(keys); i++ {
		a, b := keys[i], keys[(i*7+3)%len(keys)]
		c := InternalCompare(bytes.Compare, a, b)
		want := bytes.Compare(a.UserKey, b.UserKey)
		if want == 0 {
			switch {
			case a.SeqNum() > b.SeqNum() || (a.SeqNum() == b.SeqNum() && a.Kind() > b.Kind()):
				want = -1
			case a.Trailer == b.Trailer:
				want = 0
			default:
				want = 1
			}
		}
		if c != want {
			t.Fatalf("InternalCompare(%s, %s) = %d, want %d", a, b, c, want)
		}
	}
	if _, ok := DecodeInternalKey([]byte("short")); ok {
		t.Fatal("a key shorter than a trailer must not decode")
	}
	if s := MakeSearchKey([]byte("k")); InternalCompare(bytes.Compare, s, MakeInternalKey([]byte("k"), SeqNumMax, KindSet)) >= 0 {
		t.Fatal("a search key must sort before every entry of its user key")
	}
	if !MakeRangeDeleteSentinel([]byte("e")).IsExclusiveSentinel() {
		t.Fatal("sentinel not recognized")
	}
}

func TestBytewiseSeparatorAndSuccessor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := DefaultComparer
	for i := 0; i < 20000; i++ {
		a := make([]byte, rng.IntN(5))
		b := make([]byte, rng.IntN(5))
		for j := range a {
			a[j] = []byte{0, 1, 0xfe, 0xff, 'a'}[rng.IntN(5)]
		}
		for j := range b {
			b[j] = []byte{0, 1, 0xfe, 0xff, 'b'}[rng.IntN(5)]
		}
		if bytes.Compare(a, b) >= 0 {
			a, b = b, a
		}
		if bytes.Equal(a, b) {
			continue
		}
		s := c.Separator(nil, a, b)
		if bytes.Compare(a, s) > 0 || bytes.Compare(s, b) >= 0 {
			t.Fatalf("Separator(%x, %x) = %x, not in [a, b)", a, b, s)
		}
		if len(s) > len(a) {
			t.Fatalf("Separator(%x, %x) = %x is longer than a", a, b, s)
		}
		if u := c.Successor(nil, a); bytes.Compare(u, a) < 0 {
			t.Fatalf("Successor(%x) = %x < a", a, u)
		}
	}
}

func TestFilenames(t *testing.T) {
	for _, ft := range []FileType{FileTypeLog, FileTypeTable, FileTypeBlob, FileTypeManifest, FileTypeOptions, FileTypeTemp} {
		name := MakeFilename(ft, 42)
		got, n, ok := ParseFilename(name)
		if !ok || got != ft || n != 42 {
			t.Fatalf("ParseFilename(%q) = %v, %d, %v", name, got, n, ok)
		}
	}
	for _, name := range []string{"CURRENT", "LOCK", "LOG", "LOG.old"} {
		if _, _, ok := ParseFilename(name); !ok {
			t.Fatalf("ParseFilename(%q) failed", name)
		}
	}
	for _, name := range []string{"", "foo", "12.txt", "x.sst", "MANIFEST-x", ".log"} {
		if _, _, ok := ParseFilename(name); ok {
			t.Fatalf("ParseFilename(%q) accepted a foreign name", name)
		}
	}
}

func TestErrors(t *testing.T) {
	err := CorruptionErrorf("000007.sst", 4096, "bad checksum")
	if !errors.Is(err, ErrCorruption) || errors.Is(err, ErrNotFound) {
		t.Fatal("CorruptionError must match ErrCorruption only")
	}
	if want := "shale: corruption in 000007.sst at offset 4096: bad checksum"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	if err := InvalidArgumentf("shale: Options.X is bad, got %d", 3); !errors.Is(err, ErrInvalidArgument) || err.Error() != "shale: Options.X is bad, got 3" {
		t.Fatalf("InvalidArgumentf: %v", err)
	}
}

// TestIsBytesCompare checks that only bytes.Compare itself takes the
// direct path, not another function of the same order.
func TestIsBytesCompare(t *testing.T) {
	same := func(a, b []byte) int { return bytes.Compare(a, b) }
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	for _, c := range []struct {
		name string
		cmp  Compare
		want bool
	}{
		{"bytes.Compare", bytes.Compare, true},
		{"DefaultComparer", DefaultComparer.Compare, true},
		{"same order", same, false},
		{"reverse", reverse, false},
		{"nil", nil, false},
	} {
		if got := IsBytesCompare(c.cmp); got != c.want {
			t.Errorf("IsBytesCompare(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

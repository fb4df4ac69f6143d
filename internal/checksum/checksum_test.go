package checksum

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCRC32CKnownValues checks CRC32C against the values of RFC 3720
// (iSCSI), appendix B.4, and LevelDB's crc32c_test.
func TestCRC32CKnownValues(t *testing.T) {
	zeros := make([]byte, 32)
	ones := make([]byte, 32)
	inc := make([]byte, 32)
	dec := make([]byte, 32)
	for i := range 32 {
		ones[i] = 0xff
		inc[i] = byte(i)
		dec[i] = byte(31 - i)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want uint32
	}{
		{"zeros", zeros, 0x8a9136aa},
		{"ones", ones, 0x62a8ab43},
		{"increasing", inc, 0x46dd794e},
		{"decreasing", dec, 0x113fdb5c},
		{"123456789", []byte("123456789"), 0xe3069283},
	} {
		if got := CRC32C(c.b); got != c.want {
			t.Errorf("CRC32C(%s) = %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestExtendCRC32C checks that a CRC built piece by piece equals the one of
// the concatenation, at every split point.
func TestExtendCRC32C(t *testing.T) {
	b := []byte("hello, world: a checksum in pieces")
	want := CRC32C(b)
	for i := 0; i <= len(b); i++ {
		if got := ExtendCRC32C(CRC32C(b[:i]), b[i:]); got != want {
			t.Fatalf("split at %d: %#x, want %#x", i, got, want)
		}
	}
	if got := ExtendCRC32C(0, b); got != want {
		t.Fatalf("ExtendCRC32C(0, b) = %#x, want %#x", got, want)
	}
}

// TestMask checks LevelDB's masking (crc32c_test's Mask test): masking
// changes the value, masking twice differs from once, and Unmask inverts
// Mask for any value.
func TestMask(t *testing.T) {
	crc := CRC32C([]byte("foo"))
	if Mask(crc) == crc || Mask(Mask(crc)) == Mask(crc) {
		t.Fatalf("Mask(%#x) = %#x, Mask twice %#x: masking must change the value", crc, Mask(crc), Mask(Mask(crc)))
	}
	if got := Unmask(Mask(crc)); got != crc {
		t.Fatalf("Unmask(Mask(%#x)) = %#x", crc, got)
	}
	if got := Unmask(Unmask(Mask(Mask(crc)))); got != crc {
		t.Fatalf("Unmask twice of Mask twice of %#x = %#x", crc, got)
	}
	// The formula as LevelDB writes it.
	// rotate_right(0x12345678, 15) = 0xacf02468, plus 0xa282ead8 mod 2^32.
	if got, want := Mask(0x12345678), uint32(0x4f730f40); got != want {
		t.Fatalf("Mask(0x12345678) = %#x, want %#x", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		v := rng.Uint32()
		if Unmask(Mask(v)) != v {
			t.Fatalf("Unmask(Mask(%#x)) = %#x", v, Unmask(Mask(v)))
		}
	}
	if MaskedCRC32C([]byte("foo")) != Mask(crc32.Checksum([]byte("foo"), crc32.MakeTable(crc32.Castagnoli))) {
		t.Fatal("MaskedCRC32C differs from Mask of the standard library's CRC-32C")
	}
}

// TestXXHash64 checks XXHash64 against the reference values of XXH64 with
// seed 0, and the digest against the one-shot form.
func TestXXHash64(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"", 0xef46db3751d8e999},
		{"a", 0xd24ec4f1a98c6e5b},
		{"abc", 0x44bc2cf5ad770999},
	} {
		if got := XXHash64([]byte(c.in)); got != c.want {
			t.Errorf("XXHash64(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
	b := []byte("some bytes hashed in two writes")
	d := NewXXHash64()
	d.Write(b[:7])
	d.Write(b[7:])
	if d.Sum64() != XXHash64(b) {
		t.Fatalf("digest %#x, one-shot %#x", d.Sum64(), XXHash64(b))
	}
	d.Reset()
	d.Write(b)
	if d.Sum64() != XXHash64(b) {
		t.Fatal("digest after Reset differs")
	}
}

package benchdata

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func TestFormatKey(t *testing.T) {
	for _, c := range []struct {
		k    int64
		size int
		want string
	}{{0, 4, "0000"}, {42, 4, "0042"}, {999999, 16, "0000000000999999"}, {7, 1, "7"}} {
		buf := make([]byte, c.size)
		FormatKey(buf, c.k)
		if string(buf) != c.want {
			t.Errorf("FormatKey(%d, %d) = %q, want %q", c.k, c.size, buf, c.want)
		}
	}
}

func TestCompressibleBytes(t *testing.T) {
	b := CompressibleBytes(1<<16, 0.5)
	if len(b) != 1<<16 {
		t.Fatalf("len %d", len(b))
	}
	for i, c := range b {
		if c < ' ' || c > '~' {
			t.Fatalf("byte %d = %#x is not printable", i, c)
		}
	}
	ratio := float64(len(snappy.Encode(nil, b))) / float64(len(b))
	if ratio < 0.4 || ratio > 0.75 {
		t.Errorf("snappy compresses the values to %.2f of their size, want about 0.5", ratio)
	}
	if !bytes.Equal(b, CompressibleBytes(1<<16, 0.5)) {
		t.Error("two calls gave different bytes: engines would not see the same data")
	}
}

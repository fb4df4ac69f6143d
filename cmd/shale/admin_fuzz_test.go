package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/fuzzseed"
)

// FuzzDecodeKey checks the CLI's key and value parsing. Without --hex an
// argument is its own bytes. With --hex, an argument parses when, after at
// most one "0x"/"0X" prefix, it is valid hex; then printing the bytes gives
// that hex in lower case, and both the printed form and the printed form
// with a prefix parse back to the same bytes. A refused argument names
// what was being parsed.
func FuzzDecodeKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		raw := &adminFlags{}
		if b, err := raw.decode("key", s); err != nil || string(b) != s || raw.encode(b) != s {
			t.Fatalf("plain %q: %q, %v", s, b, err)
		}
		h := &adminFlags{hex: true}
		b, err := h.decode("key", s)
		digits := s
		if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
			digits = s[2:]
		}
		valid := len(digits)%2 == 0 && strings.Trim(digits, "0123456789abcdefABCDEF") == ""
		if (err == nil) != valid {
			t.Fatalf("hex %q: %x, %v (valid hex: %v)", s, b, err, valid)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "key ") {
				t.Fatalf("error does not name the argument: %v", err)
			}
			return
		}
		enc := h.encode(b)
		if enc != strings.ToLower(digits) {
			t.Fatalf("hex %q prints as %q", s, enc)
		}
		for _, form := range []string{enc, "0x" + enc, "0X" + strings.ToUpper(enc)} {
			if b2, err := h.decode("key", form); err != nil || !bytes.Equal(b2, b) {
				t.Fatalf("hex %q: printed form %q parses to %x, %v; want %x", s, form, b2, err, b)
			}
		}
	})
}

// TestWriteFuzzSeeds writes the FuzzDecodeKey seed corpus into
// testdata/fuzz when SHALE_WRITE_FUZZ_SEEDS=1; otherwise it checks that it
// exists.
func TestWriteFuzzSeeds(t *testing.T) {
	var seeds [][]any
	for _, s := range []string{"", "0x", "0xDEADbeef", "00ff", "abc", "key with spaces", "0X0x12", "0x0X12", "\xff\x00", "zz"} {
		seeds = append(seeds, []any{s})
	}
	fuzzseed.Sync(t, map[string][][]any{"FuzzDecodeKey": seeds, "FuzzDumpReader": dumpSeeds(t)})
}

// encodeDump returns the dump of entries (in key order).
func encodeDump(t testing.TB, entries ...[2]string) []byte {
	var b bytes.Buffer
	w := newDumpWriter(&b)
	for _, e := range entries {
		if err := w.add([]byte(e[0]), []byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// dumpSeeds are FuzzDumpReader's seeds: dumps written by dumpWriter (empty,
// one entry, several with binary and empty keys and values), a cut one, a
// damaged one, and a foreign file.
func dumpSeeds(t testing.TB) [][]any {
	full := encodeDump(t, [2]string{"", "empty key"}, [2]string{"a", ""}, [2]string{"b\x00\xff", strings.Repeat("v", 300)})
	damaged := bytes.Clone(full)
	damaged[20] ^= 0x10
	return [][]any{
		{encodeDump(t)},
		{encodeDump(t, [2]string{"key", "value"})},
		{full},
		{full[:len(full)/2]},
		{damaged},
		{[]byte("not a dump file at all")},
	}
}

// FuzzDumpReader checks the dump decoder: any bytes give entries and then
// the end, or an error matching errDumpCorrupt that names the file, never
// a panic or an allocation beyond what the input holds; and bytes that
// decode whole are exactly what dumpWriter writes for the entries read.
func FuzzDumpReader(f *testing.F) {
	for _, s := range dumpSeeds(f) {
		f.Add(s[0].([]byte))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newDumpReader(bytes.NewReader(data), "fuzz.dump")
		var entries [][2]string
		for err == nil {
			var ok bool
			if ok, err = r.next(); err == nil && !ok {
				break
			}
			if err == nil {
				entries = append(entries, [2]string{string(r.key), string(r.value)})
			}
		}
		if err != nil {
			if !errors.Is(err, errDumpCorrupt) || !strings.Contains(err.Error(), "fuzz.dump at offset") {
				t.Fatalf("error %v does not report a damaged dump with its offset", err)
			}
			return
		}
		if again := encodeDump(t, entries...); !bytes.Equal(again, data) {
			t.Fatalf("decoded %d entries that encode to %x, not the input %x", len(entries), again, data)
		}
	})
}

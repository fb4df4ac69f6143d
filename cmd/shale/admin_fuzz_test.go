package main

import (
	"bytes"
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
	fuzzseed.Sync(t, map[string][][]any{"FuzzDecodeKey": seeds})
}

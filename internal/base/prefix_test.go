package base

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFixedPrefixTransform(t *testing.T) {
	tr := NewFixedPrefixTransform(3)
	if got := tr.Name(); got != "rocksdb.FixedPrefix.3" {
		t.Errorf("Name() = %q", got)
	}
	for _, c := range []struct {
		key      string
		inDomain bool
		prefix   string
	}{
		{"", false, ""}, {"a", false, ""}, {"ab", false, ""},
		{"abc", true, "abc"}, {"abcd", true, "abc"}, {"abc\x00\xff", true, "abc"},
	} {
		if got := tr.InDomain([]byte(c.key)); got != c.inDomain {
			t.Errorf("InDomain(%q) = %v, want %v (keys shorter than n are out of the domain)", c.key, got, c.inDomain)
		}
		if c.inDomain {
			p := tr.Transform([]byte(c.key))
			if string(p) != c.prefix {
				t.Errorf("Transform(%q) = %q, want %q", c.key, p, c.prefix)
			}
			if cap(p) != len(p) {
				t.Errorf("Transform(%q) has spare capacity: an append would write into the key", c.key)
			}
		}
	}
}

func TestCappedPrefixTransform(t *testing.T) {
	tr := NewCappedPrefixTransform(3)
	if got := tr.Name(); got != "rocksdb.CappedPrefix.3" {
		t.Errorf("Name() = %q", got)
	}
	for _, c := range []struct{ key, prefix string }{
		{"", ""}, {"a", "a"}, {"ab", "ab"}, {"abc", "abc"}, {"abcd", "abc"},
	} {
		if !tr.InDomain([]byte(c.key)) {
			t.Errorf("InDomain(%q) = false: every key is in a capped transform's domain", c.key)
		}
		if p := tr.Transform([]byte(c.key)); string(p) != c.prefix {
			t.Errorf("Transform(%q) = %q, want %q", c.key, p, c.prefix)
		}
	}
}

func TestParseSliceTransform(t *testing.T) {
	for _, c := range []struct {
		in, name     string
		known, fails bool
	}{
		{"", "", true, false},
		{"nullptr", "", true, false},
		{"rocksdb.FixedPrefix.8", "rocksdb.FixedPrefix.8", true, false},
		{"rocksdb.CappedPrefix.12", "rocksdb.CappedPrefix.12", true, false},
		{"fixed:4", "rocksdb.FixedPrefix.4", true, false},
		{"capped:2", "rocksdb.CappedPrefix.2", true, false},
		{"rocksdb.FixedPrefix.x", "", true, true},
		{"rocksdb.FixedPrefix.0", "", true, true},
		{"capped:-1", "", true, true},
		{"my.own.extractor", "", false, false},
	} {
		tr, known, err := ParseSliceTransform(c.in)
		if known != c.known || (err != nil) != c.fails {
			t.Errorf("ParseSliceTransform(%q): known %v, err %v", c.in, known, err)
			continue
		}
		name := ""
		if tr != nil {
			name = tr.Name()
		}
		if name != c.name {
			t.Errorf("ParseSliceTransform(%q) names %q, want %q", c.in, name, c.name)
		}
	}
}

// TestPrefixTransformsContiguous checks the property prefix seeks rely on:
// in bytewise order, a key between two keys of one prefix is in the domain
// with that prefix.
func TestPrefixTransformsContiguous(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := make([][]byte, 3000)
	for i := range keys {
		k := make([]byte, rng.IntN(6))
		for j := range k {
			k[j] = "ab\x00\xff"[rng.IntN(4)]
		}
		keys[i] = k
	}
	slices.SortFunc(keys, bytes.Compare)
	for _, tr := range []SliceTransform{NewFixedPrefixTransform(1), NewFixedPrefixTransform(3), NewCappedPrefixTransform(2), NewCappedPrefixTransform(4)} {
		first := map[string]int{}
		last := map[string]int{}
		for i, k := range keys {
			if !tr.InDomain(k) {
				continue
			}
			p := string(tr.Transform(k))
			if _, ok := first[p]; !ok {
				first[p] = i
			}
			last[p] = i
		}
		for p, lo := range first {
			for i := lo; i <= last[p]; i++ {
				if !HasPrefix(tr, keys[i], []byte(p)) {
					t.Fatalf("%s: key %q sorts between keys of prefix %q without having it", tr.Name(), keys[i], p)
				}
			}
		}
	}
}

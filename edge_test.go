package shale

import (
	"bytes"
	"errors"
	"testing"
)

// TestEdgeKeysAndValues covers the empty key, empty and nil values, binary
// keys with 0x00/0xff, and a value larger than the write buffer, through a
// flush and a reopen.
func TestEdgeKeysAndValues(t *testing.T) {
	db, fs := openMem(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB > 16 KiB buffer
	cases := map[string][]byte{
		"":                    []byte("empty key"),
		"nil-value":           nil,
		"empty-value":         {},
		"\x00":                []byte("zero byte"),
		"\xff\xff\xff":        []byte("high bytes"),
		"a\x00b":              []byte("embedded zero"),
		"big":                 big,
		string(big[:100<<10]): []byte("100 KiB key"),
	}
	check := func(stage string) {
		t.Helper()
		for k, want := range cases {
			got, err := db.Get([]byte(k), nil)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: Get(%.20q) = %d bytes, %v; want %d bytes", stage, k, len(got), err, len(want))
			}
		}
		n := 0
		it := db.NewIterator(nil)
		var prev []byte
		for ok := it.First(); ok; ok = it.Next() {
			if n > 0 && bytes.Compare(prev, it.Key()) >= 0 {
				t.Fatalf("%s: keys out of order", stage)
			}
			prev = append(prev[:0], it.Key()...)
			n++
		}
		it.Close()
		if n != len(cases) {
			t.Fatalf("%s: scan saw %d keys, want %d", stage, n, len(cases))
		}
	}
	for k, v := range cases {
		if err := db.Put([]byte(k), v, nil); err != nil {
			t.Fatalf("Put(%.20q): %v", k, err)
		}
	}
	check("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	db = reopenMem(t, db, fs)
	defer db.Close()
	check("reopened")
	if err := db.Delete([]byte(""), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(nil, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted empty key: %v", err)
	}
}

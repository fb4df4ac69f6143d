//go:build rocksdb

package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestRocksDBMultiGetMatchesGet checks the batched MultiGet, which calls
// RocksDB's C API directly, against get: the same keys found, each value
// read whole, missing and repeated keys included, from the memtable and
// from tables.
func TestRocksDBMultiGetMatchesGet(t *testing.T) {
	e, err := openRocksDB(filepath.Join(t.TempDir(), "rocksdb"), engineConfig{cacheSize: 1 << 20, writeBufferSize: 8 << 20, bloomBits: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100+i) }
	for i := 0; i < 200; i += 2 {
		if err := e.put(fmt.Appendf(nil, "key%04d", i), value(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, flushed := range []bool{false, true} {
		if flushed {
			if err := e.flush(); err != nil {
				t.Fatal(err)
			}
			if n := e.(*rocksdbEngine).db.GetProperty("rocksdb.num-files-at-level0"); n == "0" {
				t.Fatal("no level-0 table after flush")
			}
		}
		r := e.newReader().(*rocksdbReader)
		for start := 0; start < 200; start += 7 {
			keys := [][]byte{}
			for i := start; i < start+7; i++ {
				keys = append(keys, fmt.Appendf(nil, "key%04d", i))
			}
			keys = append(keys, keys[0]) // a key twice in one batch
			want := 0
			for _, k := range keys {
				ok, err := r.get(k)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					want++
				}
			}
			got, err := r.multiGet(keys)
			if err != nil || got != want {
				t.Fatalf("flushed %v, keys from %d: multiGet found %d (%v), get found %d", flushed, start, got, err, want)
			}
		}
		// The last value multiGet read is the last key's, whole.
		if _, err := r.multiGet([][]byte{[]byte("nosuch"), []byte("key0010")}); err != nil || !bytes.Equal(r.val, value(10)) {
			t.Fatalf("multiGet's value %q (%v), want %q", r.val, err, value(10))
		}
		if n, err := r.multiGet([][]byte{[]byte("nosuch")}); n != 0 || err != nil {
			t.Fatalf("multiGet of a missing key: %d %v", n, err)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
)

// TestMeasureSpace checks measureSpace against a database whose live bytes
// are known (overwritten and deleted keys do not count; values in blob
// files and in the memtable do) and whose file sizes it sums by kind.
func TestMeasureSpace(t *testing.T) {
	fs := vfs.NewMem()
	opts := &shale.Options{FS: fs, CreateIfMissing: true, EnableBlobFiles: true, MinBlobSize: 100}
	db, err := shale.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var want uint64
	put := func(i, size int) {
		k := []byte(fmt.Sprintf("key%04d", i))
		if err := db.Put(k, bytes.Repeat([]byte{'v'}, size), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		put(i, 50+i%2*500) // inline and blob values
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		put(i, 10) // overwrites, left in the memtable
	}
	for i := 100; i < 150; i++ {
		if err := db.Delete([]byte(fmt.Sprintf("key%04d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		switch {
		case i < 100:
			want += 7 + 10
		case i >= 150:
			want += uint64(7 + 50 + i%2*500)
		}
	}
	s, err := measureSpace(db, fs, "/db")
	if err != nil {
		t.Fatal(err)
	}
	if s.live != want || s.keys != 150 {
		t.Fatalf("live %d bytes in %d keys, want %d in 150", s.live, s.keys, want)
	}
	if s.tables == 0 || s.blobs == 0 || s.wals == 0 || s.disk <= s.tables+s.blobs+s.wals {
		t.Fatalf("disk %d: tables %d, blob files %d, WALs %d: want each part and a MANIFEST", s.disk, s.tables, s.blobs, s.wals)
	}
	if a := s.amplification(); a != float64(s.disk)/float64(want) {
		t.Fatalf("amplification %v", a)
	}
}

package shale

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shale/vfs"
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

// TestReopenAfterHugeBatchOfTinyEntries replays a synced batch whose
// skiplist nodes need far more arena than its bytes: recovery must size the
// memtable for the nodes too.
func TestReopenAfterHugeBatchOfTinyEntries(t *testing.T) {
	fs := vfs.NewMem()
	o := testOptions(fs)
	o.WriteBufferSize = 4 << 10
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for i := 0; i < 100000; i++ {
		b.Delete([]byte{byte(i)})
	}
	b.Put([]byte("last"), []byte("v"))
	if err := db.Write(b, &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open("/db", o)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("last"), nil); err != nil || string(v) != "v" {
		t.Fatalf("Get(last) = %q, %v", v, err)
	}
}

// TestCloseKeepsUnloggedWrites races DisableWAL writers with Close: every
// acknowledged write survives the clean Close.
func TestCloseKeepsUnloggedWrites(t *testing.T) {
	for round := 0; round < 5; round++ {
		fs := vfs.NewMem()
		db, err := Open("/db", testOptions(fs))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var acked []string
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					k := fmt.Sprintf("w%d-%d", w, i)
					if err := db.Put([]byte(k), []byte(k), &WriteOptions{DisableWAL: true}); err != nil {
						return
					}
					mu.Lock()
					acked = append(acked, k)
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		db, err = Open("/db", testOptions(fs))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range acked {
			if _, err := db.Get([]byte(k), nil); err != nil {
				t.Fatalf("round %d: acknowledged unlogged write %s lost: %v", round, k, err)
			}
		}
		db.Close()
	}
}

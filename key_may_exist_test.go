package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestKeyMayExist checks KeyMayExist against Get over random writes, deletes,
// range deletes and flushes, with blob files and without, at the latest
// state and at a snapshot: every key Get finds may exist, a value it returns
// is Get's, and most absent keys are ruled out (by memtables and blooms).
func TestKeyMayExist(t *testing.T) {
	for _, blobs := range []bool{false, true} {
		t.Run(fmt.Sprintf("blobs=%v", blobs), func(t *testing.T) {
			opts := testOptions(vfs.NewMem())
			if blobs {
				setBlobTestOptions(opts)
			}
			d, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			rng := rand.New(rand.NewPCG(7, 9))
			key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
			const n = 3000
			var snap *Snapshot
			for op := range 6000 {
				i := rng.IntN(n)
				switch r := rng.IntN(20); {
				case r < 14:
					err = d.Put(key(i), []byte(fmt.Sprintf("value-%d-%d-%s", i, op, bytes.Repeat([]byte("x"), rng.IntN(40)))), nil)
				case r < 18:
					err = d.Delete(key(i), nil)
				case r < 19:
					err = d.DeleteRange(key(i), key(i+rng.IntN(20)), nil)
				default:
					err = d.Flush()
				}
				if err != nil {
					t.Fatal(err)
				}
				if op == 3000 {
					snap = d.NewSnapshot()
				}
			}
			defer snap.Release()
			check := func(ro *ReadOptions, what string) {
				ruledOut, absent := 0, 0
				for i := range n + 500 { // 500 keys never written
					want, err := d.Get(key(i), ro)
					if err != nil && !errors.Is(err, ErrNotFound) {
						t.Fatal(err)
					}
					may, v, found := d.KeyMayExist(key(i), ro)
					switch {
					case err == nil && !may:
						t.Fatalf("%s: %s exists (%q) but KeyMayExist says it does not", what, key(i), want)
					case found && (err != nil || !bytes.Equal(v, want)):
						t.Fatalf("%s: %s: KeyMayExist found %q, Get %q, %v", what, key(i), v, want, err)
					case found && !may:
						t.Fatalf("%s: %s: a value found but may not exist", what, key(i))
					}
					if err != nil {
						absent++
						if !may {
							ruledOut++
						}
					}
				}
				if absent == 0 || ruledOut*2 < absent {
					t.Errorf("%s: %d of %d absent keys ruled out, want most", what, ruledOut, absent)
				}
				t.Logf("%s: %d of %d absent keys ruled out", what, ruledOut, absent)
			}
			check(nil, "latest")
			check(&ReadOptions{Snapshot: snap}, "snapshot")
			if err := d.CompactRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			check(nil, "compacted")
			check(&ReadOptions{Snapshot: snap}, "compacted snapshot")
		})
	}
}

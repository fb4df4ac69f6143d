package shale

import (
	"errors"
	"fmt"
	"github.com/shaledb/shale/internal/testdir"
	"math/rand/v2"
	"testing"

	"github.com/shaledb/shale/vfs"
)

// TestIteratorAfterDBClose checks that an iterator left open across
// DB.Close fails with ErrClosed from then on, as Close documents, instead
// of reading on through closed table files: on disk a closed file's
// descriptor may be reused by another file (a direct-IO read then returned
// another file's bytes, caught as a checksum mismatch). Done with a
// prefetch in flight (AsyncIO), buffered and direct.
func TestIteratorAfterDBClose(t *testing.T) {
	for _, direct := range []bool{false, true} {
		for _, async := range []bool{false, true} {
			t.Run(fmt.Sprintf("direct=%v/async=%v", direct, async), func(t *testing.T) {
				o := readaheadOptions(vfs.Default)
				o.BlockCacheSize = -1
				o.UseDirectReads = direct
				db, err := Open(testdir.New(t), o)
				if err != nil {
					if direct {
						t.Skipf("no direct IO here: %v", err)
					}
					t.Fatal(err)
				}
				fillReadaheadDB(t, db, rand.New(rand.NewPCG(1, 1)), 8000)
				it := db.NewIterator(&ReadOptions{AsyncIO: async})
				ok := it.First()
				for i := 0; ok && i < 50; i++ {
					ok = it.Next()
				}
				if !ok {
					t.Fatalf("scan before Close stopped: %v", it.Err())
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				for step, f := range []func() bool{it.Next, it.Prev, it.First, it.Last,
					func() bool { return it.Seek([]byte("key0004000")) },
					func() bool { return it.SeekForPrev([]byte("key0004000")) }} {
					if f() || it.Valid() || it.Key() != nil {
						t.Fatalf("call %d after DB.Close: iterator valid at %q", step, it.Key())
					}
					if err := it.Err(); !errors.Is(err, ErrClosed) {
						t.Fatalf("call %d after DB.Close: Err() = %v, want ErrClosed", step, err)
					}
				}
				it.Close() // releases what it holds; must not panic or hang
			})
		}
	}
}

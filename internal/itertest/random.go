package itertest

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/shaledb/shale/internal/base"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0: time-based)")

// Seed returns the seed for run i of a randomized test: the -seed flag when
// set, otherwise one based on the time.
func Seed(i int) uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return uint64(time.Now().UnixNano()) + uint64(i)
}

// UserKey returns the i-th user key of a test key space ("k000", "k001", …).
func UserKey(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }

// RandomSeekKey returns a key that may or may not exist among nkeys keys: an
// existing one, one just after or before it, or one beyond the key space.
func RandomSeekKey(rng *rand.Rand, nkeys int) []byte {
	k := UserKey(rng.IntN(nkeys+2) - 1)
	switch rng.IntN(4) {
	case 0:
		k = append(k, 'a')
	case 1:
		k = k[:len(k)-1]
	}
	return k
}

// SortEntries sorts es in internal key order (bytewise user keys), keeping
// the order of equal keys.
func SortEntries(es []Entry) {
	sort.SliceStable(es, func(i, j int) bool {
		return base.InternalCompare(bytes.Compare, es[i].Key, es[j].Key) < 0
	})
}

package dbiter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/itertest"
)

// randomBound returns a random iterator bound, nil a third of the time.
func randomBound(rng *rand.Rand, nkeys int) []byte {
	if rng.IntN(3) == 0 {
		return nil
	}
	return itertest.RandomSeekKey(rng, nkeys)
}

// randomSnapshot returns a random snapshot, SeqNumMax a quarter of the
// time.
func randomSnapshot(rng *rand.Rand, max base.SeqNum) base.SeqNum {
	if rng.IntN(4) == 0 {
		return base.SeqNumMax
	}
	return base.SeqNum(rng.IntN(int(max) + 2))
}

// runOps applies random operations to it and to a cursor over the model and
// compares them after every step.
func runOps(t *testing.T, ctx string, rng *rand.Rand, it *Iter, keys, vals [][]byte, nkeys, nops int) {
	t.Helper()
	n := len(keys)
	search := func(k []byte) int {
		return sort.Search(n, func(i int) bool { return bytes.Compare(keys[i], k) >= 0 })
	}
	// pos is -1 after running off the start, n after running off the end.
	pos, positioned := 0, false
	var trace []string
	for op := 0; op < nops; op++ {
		var got bool
		var desc string
		switch r := rng.IntN(12); {
		case r == 0:
			desc, got, pos = "First", it.First(), min(0, n)
		case r == 1:
			desc, got, pos = "Last", it.Last(), n-1
		case r == 2:
			k := itertest.RandomSeekKey(rng, nkeys)
			desc, got, pos = fmt.Sprintf("SeekGE(%s)", k), it.SeekGE(k), search(k)
		case r == 3:
			k := itertest.RandomSeekKey(rng, nkeys)
			desc, got, pos = fmt.Sprintf("SeekLT(%s)", k), it.SeekLT(k), search(k)-1
		case r == 4:
			k := itertest.RandomSeekKey(rng, nkeys)
			p := search(k)
			if p < n && bytes.Equal(keys[p], k) {
				p++
			}
			desc, got, pos = fmt.Sprintf("SeekForPrev(%s)", k), it.SeekForPrev(k), p-1
		case r < 8:
			desc, got = "Next", it.Next()
			switch {
			case !positioned:
				pos = 0
			case pos < n:
				pos++
			}
		default:
			desc, got = "Prev", it.Prev()
			switch {
			case !positioned:
				pos = n - 1
			case pos >= 0:
				pos--
			}
		}
		positioned = true
		trace = append(trace, desc)
		if len(trace) > 12 {
			trace = trace[1:]
		}
		if err := it.Error(); err != nil {
			t.Fatalf("%s: %s: unexpected error %v", ctx, desc, err)
		}
		want := pos >= 0 && pos < n
		if got != want || it.Valid() != want {
			t.Fatalf("%s: op %d %s: got %v (Valid %v), want %v (model pos %d of %d)\nlast ops: %v",
				ctx, op, desc, got, it.Valid(), want, pos, n, trace)
		}
		if !want {
			if it.Key() != nil {
				t.Fatalf("%s: %s: Key %q when not valid", ctx, desc, it.Key())
			}
			continue
		}
		if !bytes.Equal(it.Key(), keys[pos]) || !bytes.Equal(it.Value(), vals[pos]) {
			t.Fatalf("%s: op %d %s: got %s=%s, want %s=%s\nlast ops: %v",
				ctx, op, desc, it.Key(), it.Value(), keys[pos], vals[pos], trace)
		}
	}
}
